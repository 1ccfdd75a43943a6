"""The fast ``kenning search`` (commands/search.py): the same bytes, exit codes and event rows as the
typer command, without importing typer, click, rich or (keyword and bm25: a plain answer) pydantic;
any other command line goes to typer."""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from kenning.cli import app
from kenning.commands import search as fast
from kenning.commands import support

# texts that exercise what rich does to printed text: tabs (expanded to 8-cell stops, wide
# characters count two), emoji codes (kept as written: the consoles have emoji off), control
# characters (shown as escapes), trailing blanks, long and non-ASCII lines
TRICKY = [
    "kites\tfly\tover the\thill, and kites\t\tagain",
    "kites :smile: and :not_an_emoji: and a:b:c and :thumbs_up-text: kites",
    "kites with an escape \x1b[31m red \x1b[0m and a bell \x07 and a carriage\rreturn",
    "kites 漢字\tbeside\tkites 東京 and ünïcödé kites",
    "kites " + "long " * 80 + "kites",
    "kites with trailing blanks   ",
    "kites\nover two lines\n\tindented kites",
    "plain kites about the auth port 8443",
]


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("fast-search")
    store_dir = home / "store"
    from kenning import open_store

    store = open_store(store_dir)
    store.import_records([{"content": text, "scopes": ["projects:kites" if i % 2 else "global"],
                           "category": "fact"} for i, text in enumerate(TRICKY)])
    store.close()
    return home


def _env(home: Path) -> dict[str, str]:
    (home / "no-models").mkdir(exist_ok=True)
    return {**os.environ, "KENNING_MODELS_DIR": str(home / "no-models"), "NO_COLOR": "1", "COLUMNS": "60"}


# ``python -m kenning`` (the fast path) or ``python -m kenning.cli`` (typer) with the library's clock
# fixed: the keyword leg's recency and the trust fields' ages read it, and two runs a second apart
# would differ in the sixth decimal of a score
FIXED_CLOCK = """
import sys
from datetime import datetime, timezone
import kenning.store.plain as plain  # before store/models.py imports it from there
plain.utcnow = lambda: datetime(2026, 12, 2, 1, 0, 0, tzinfo=timezone.utc)
module, sys.argv = sys.argv[1], ["kenning", *sys.argv[2:]]
if module == "kenning":
    from kenning.__main__ import main
else:
    from kenning.cli import main
main()
"""


def _run(home: Path, module: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", FIXED_CLOCK, module, *args], capture_output=True,
                          env=_env(home), cwd=home, timeout=300)


def _same(output: bytes) -> bytes:
    """The output with each search's own use token (new for every search) blanked."""
    return re.sub(rb"use_[0-9A-Z]{26}", b"use_TOKEN", output)


FORMS = [
    ["search", "kites", "--mode", "bm25"],
    ["search", "kites", "--mode", "keyword", "--limit", "10"],
    ["search", "--limit=8", "kites", "--mode=bm25", "--no-auto-scope"],
    ["search", "kites", "--mode", "bm25", "--json"],
    ["search", "kites", "--mode", "keyword", "--limit", "10", "--json", "--expand-top"],
    ["search", "kites", "-s", "projects:kites", "--scope", "global", "--mode", "bm25"],
    ["search", "kites", "--category", "fact", "--expand-top", "--mode", "keyword"],
    ["search", "auth port", "--mode", "bm25", "--expand-top"],
    ["search", "kites", "--since-prior-session", "--mode", "bm25"],
    ["search", "kites", "--why", "--mode", "keyword", "--limit", "3"],
    ["search", "nothing matches zebra", "--mode", "bm25"],
    ["search", "kites", "--limit", "0"],  # the library refuses: one line, exit 2
    ["search", " "],
    ["search", "kites", "--mode", "nonsense"],
    ["search", "kites", "--mode", ""],
    ["search", "kites", "--limit", "5", "--limit", "2", "--mode", "bm25"],  # the last one wins, as in click
]


@pytest.mark.parametrize("args", FORMS, ids=[" ".join(a) for a in FORMS])
def test_the_fast_path_prints_what_the_typer_command_prints(home, args):
    store = ["--store", str(home / "store")]
    assert fast.parse([*store, *args]) is not None  # these forms do take the fast path
    if "--since-prior-session" in args:
        # the first run's own search would be the second run's prior session: log one before both,
        # whichever form this worker ran first
        assert _run(home, "kenning", [*store, "search", "kites", "--mode", "bm25"]).returncode == 0
    quick, typed = _run(home, "kenning", [*store, *args]), _run(home, "kenning.cli", [*store, *args])
    assert (quick.returncode, _same(quick.stdout), quick.stderr) == (typed.returncode, _same(typed.stdout), typed.stderr)
    if "--json" in args:
        json.loads(quick.stdout)


def test_an_empty_mode_is_an_error_not_the_default_mode(home):
    for module in ("kenning", "kenning.cli"):
        done = _run(home, module, ["--store", str(home / "store"), "search", "kites", "--mode", ""])
        assert done.returncode == 2 and done.stdout == b""
        assert done.stderr == b"error: --mode is empty; choose one of keyword, bm25, semantic, hybrid\n"


def test_a_missing_store_is_the_same_error_and_creates_nothing(home):
    missing = str(home / "no-such-store")
    quick, typed = (_run(home, m, ["--store", missing, "search", "kites"]) for m in ("kenning", "kenning.cli"))
    assert quick.returncode == typed.returncode == 2
    assert quick.stderr == typed.stderr and b"no kenning store at" in quick.stderr
    assert not Path(missing).exists()


@pytest.mark.sqlite_only  # counts the event rows in the SQLite file
def test_each_search_logs_one_event_on_either_path(home):
    store = ["--store", str(home / "store")]

    def searches() -> int:
        with sqlite3.connect(home / "store" / "kenning.sqlite3") as c:
            return c.execute("SELECT count(*) FROM events WHERE kind = 'search'").fetchone()[0]

    before = searches()
    assert _run(home, "kenning", [*store, "search", "kites", "--mode", "bm25"]).returncode == 0
    assert searches() == before + 1
    assert _run(home, "kenning.cli", [*store, "search", "kites", "--mode", "bm25"]).returncode == 0
    assert searches() == before + 2


@pytest.mark.sqlite_only  # psycopg, which a PostgreSQL store needs, imports the email package itself
def test_the_fast_path_loads_no_typer_click_rich_or_pydantic(home):
    """Nor the Store modules a search never calls (writes with its gates, health, maintenance)."""
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: sys.stderr.write('LOADED ' + ' '.join(sorted(m for m in sys.modules "
             "if m.split('.')[0] in ('typer', 'click', 'rich', 'email', 'pydantic', 'pydantic_core') "
             "or m in ('kenning.memory.writes', 'kenning.store.models', 'kenning.memory.facade', "
             "'kenning.memory.health', 'kenning.memory.maintenance')) or ['nothing']) + '\\n'))\n"
             "sys.argv = ['kenning', *sys.argv[1:]]\n"
             "from kenning.__main__ import main\n"
             "main()\n")
    # (a hit whose text holds a tab is printed by rich: this query finds a plain one)
    done = subprocess.run([sys.executable, "-c", probe, "--store", str(home / "store"), "search", "auth port",
                           "--mode", "bm25"], capture_output=True, text=True, env=_env(home), cwd=home, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "LOADED nothing"
    # and the same probe sees typer when the command line is not the fast path's (so it can fail)
    help_run = subprocess.run([sys.executable, "-c", probe, "search", "--help"], capture_output=True, text=True,
                              env=_env(home), cwd=home, timeout=300)
    assert "typer" in help_run.stderr.splitlines()[-1]


@pytest.mark.parametrize("args", [
    [], ["search"], ["search", "--help"], ["search", "-h", "kites"], ["--version"], ["search", "a", "b"],
    ["search", "--", "kites"], ["search", "-"], ["search", "kites", "--limit"], ["search", "kites", "--limit", "-1"],
    ["search", "kites", "--limit", "five"], ["search", "kites", "--mode="], ["search", "kites", "--json=yes"],
    ["search", "kites", "-sx"], ["search", "kites", "--lim", "3"], ["search", "kites", "--store", "x"],
    ["--store"], ["--store", "--json", "search", "kites"], ["--stor", "x", "search", "kites"], ["list", "search"],
    ["write", "search"], ["-V", "search", "x"], ["search", "kites", "--scope", "-x"],
])
def test_any_other_command_line_goes_to_typer(args):
    assert fast.parse(args) is None


def test_parse_reads_the_options_as_click_does():
    parsed = fast.parse(["--store=/s", "search", "--mode", "bm25", "auth", "-s", "a", "--scope=b", "--limit", "7",
                         "--json", "--expand-top", "--category", "fact"])
    assert parsed == {"store": "/s", "query": "auth", "mode": "bm25", "scope": ["a", "b"], "category": "fact",
                      "limit": 7, "no_auto_scope": False, "expand_top": True, "since_prior_session": False,
                      "why": False, "as_json": True}
    assert fast.parse(["search", "auth"])["scope"] is None and fast.parse(["search", "auth"])["store"] is None


def test_the_fast_parser_knows_every_option_of_the_search_command():
    """A new option on `kenning search` must be taught to the fast parser (or it would be refused
    there and answered by typer: correct, but slow): the two lists must agree."""
    command = typer.main.get_command(app).commands["search"]
    names = {opt for p in command.params if p.param_type_name == "option" for opt in p.opts}
    assert names - {"-h", "--help"} == set(fast.VALUE_OPTIONS) | set(fast.FLAGS)
    flags = {opt for p in command.params if getattr(p, "is_flag", False) for opt in p.opts}
    assert flags - {"-h", "--help"} == set(fast.FLAGS)


@pytest.mark.parametrize("text", [*TRICKY, "", "a\tb", "\t", "x" * 300 + "   ", "a :smile:\tb", ":+1:",
                                  "\ud800 lone surrogate", "zero\u200bwidth", "e\u0301 combining", "tab\tat\tstops\t"])
def test_plain_out_writes_what_the_rich_console_writes(text, capsys):
    support.out.print(text)
    by_rich = capsys.readouterr().out
    fast.PlainOut().print(text)
    assert capsys.readouterr().out == by_rich


def test_plain_out_on_a_closed_pipe_exits_1_quietly(monkeypatch):
    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError

    monkeypatch.setattr(fast, "_quiet_stdout", lambda: None)
    monkeypatch.setattr(sys, "stdout", Closed())
    with pytest.raises(SystemExit) as exit_:
        fast.PlainOut().print("kites")
    assert exit_.value.code == 1
