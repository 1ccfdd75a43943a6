"""A newcomer's first hour (issue 13), through the real `kenning` command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# every test starts real processes (a second or more each on a busy machine)
pytestmark = pytest.mark.slow

KENNING = [sys.executable, "-m", "kenning"]


def kenning(*args: str, home: Path | None = None, stdin: str | None = None, cwd: Path | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "COLUMNS": "80", **(env or {})}
    environ.pop("KENNING_HOME", None)
    if home is not None:
        environ["KENNING_HOME"] = str(home)
    return subprocess.run([*KENNING, *args], input=stdin if stdin is not None else "", capture_output=True,
                          text=True, env=environ, cwd=cwd, timeout=300)


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


# ---------------------------------------------------------------- item 8: the basics
@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    result = ok(kenning(flag))
    assert result.stdout.strip().startswith("kenning 0.") and result.stderr == ""


def test_short_help_everywhere():
    assert "Usage: kenning [OPTIONS] COMMAND" in ok(kenning("-h")).stdout
    assert "Example: kenning search" in ok(kenning("search", "-h")).stdout
    assert "Usage: kenning config get" in ok(kenning("config", "get", "-h")).stdout


def test_python_dash_m_kenning_is_the_cli(home):
    ok(kenning("write", "python -m kenning writes like the executable", "--scope", "x", home=home))
    assert json.loads(ok(kenning("list", "--json", home=home)).stdout)[0]["content"].startswith("python -m")


def test_help_has_no_boxes_and_no_stray_breaks():
    text = ok(kenning("--help")).stdout
    assert "╭" not in text and "│" not in text
    assert "Commands:" in text and "\n\n\n" not in text


# ---------------------------------------------------------------- item 5: pay only for what is used
PROBE = """
import atexit, sys
heavy = ("torch", "sentence_transformers", "numpy", "pydantic", "kenning.memory.facade", "rich.console")
atexit.register(lambda: sys.stderr.write("LOADED " + " ".join(m for m in heavy if m in sys.modules) + "\\n"))
sys.argv = ["kenning", *sys.argv[1:]]
from kenning.__main__ import main
main()
"""


def loaded(*args: str, home: Path | None = None) -> set[str]:
    environ = {**os.environ, **({"KENNING_HOME": str(home)} if home else {})}
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=environ,
                          timeout=300)
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED")][-1]
    return set(line.split()[1:])


def test_help_and_version_import_nothing_heavy():
    assert loaded("--version") == set()
    assert loaded("--help") == set()
    assert loaded("search", "--help").isdisjoint({"torch", "numpy", "kenning.memory.facade", "rich.console"})


def test_lexical_commands_never_load_torch(home):
    ok(kenning("write", "The auth service listens on port 8443", "--scope", "x", home=home))
    for args in (("search", "auth", "--mode", "bm25"), ("list",), ("info",), ("config", "get"), ("health",),
                 ("write", "The billing job runs nightly at 02:00 UTC", "--scope", "x"), ("models",)):
        assert "torch" not in loaded(*args, home=home), args


# ---------------------------------------------------------------- item 9: usage errors
@pytest.mark.parametrize("args,message,hint", [
    (["search", "x", "--bogus"], "error: No such option: --bogus", "hint: see `kenning search --help`"),
    (["search"], "error: Missing argument 'QUERY'.", "hint: see `kenning search --help`"),
    (["serach", "x"], "error: No such command 'serach'.", "hint: see `kenning --help`"),
    (["search", "x", "--limit", "many"], "error: Invalid value for '--limit'", "hint: see `kenning search --help`"),
])
def test_usage_error_is_one_line_and_a_hint(args, message, hint):
    result = kenning(*args)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith(message) and lines[1] == hint, result.stderr


# ---------------------------------------------------------------- item 3: stdin and trivial text
def test_write_dash_reads_stdin(home):
    result = ok(kenning("write", "-", "--scope", "x", "--json", home=home,
                        stdin="The release checklist lives in docs/release.md\n"))
    mid = json.loads(result.stdout)["id"]
    assert json.loads(ok(kenning("show", mid, "--json", home=home)).stdout)["content"] == \
        "The release checklist lives in docs/release.md"


@pytest.mark.parametrize("text", ["-", "x", "...", " ?! "])
def test_one_character_or_punctuation_is_refused(home, text):
    for args, stdin in ((["write", text], "") if text != "-" else (["write", "-"], "-"), (["write", "-"], text)):
        result = kenning(*args, "--scope", "x", home=home, stdin=stdin)
        assert result.returncode == 2 and "too short to remember" in result.stderr
    assert not (home / "kenning.sqlite3").exists() or json.loads(ok(kenning("list", "--json", home=home)).stdout) == []


def test_import_dash_reads_stdin(home):
    lines = '{"text": "The staging cluster runs in eu-west-1"}\n{"text": "Backups run nightly at 02:00 UTC"}\n'
    report = json.loads(ok(kenning("import", "-", "--json", home=home, stdin=lines)).stdout)
    assert report["committed"] == 2 and [ln["label"] for ln in report["lines"]] == ["stdin:1", "stdin:2"]


def test_a_progress_bar_leaves_nothing_on_a_stderr_that_is_no_terminal(home):
    """A log or a pipe gets neither the bar's frames nor the blank line a stopped bar used to leave."""
    lines = "".join(json.dumps({"text": f"Service {i} listens on port {8000 + i}"}) + "\n" for i in range(30))
    done = ok(kenning("import", "-", home=home, stdin=lines))
    assert done.stderr == "" and done.stdout.startswith("imported 30")
    rebuilt = ok(kenning("rebuild", "lexical", home=home))
    assert rebuilt.stderr == "", repr(rebuilt.stderr)


# ---------------------------------------------------------------- item 1: import runs the gates
NOTES = "\n".join(json.dumps(r) for r in [
    {"text": "The wifi password=Sunflower2024xyz"},
    {"text": "The auth service listens on port 8443"},
    {"text": "The auth service listens on port 8443"},
    {"text": "I am currently running the migration, step 3 of 5 right now"},
    {"text": "Deploys go through the staging cluster before production", "scopes": ["ops"]},
    {"text": "The user prefers dark mode", "category": "user-inference"},
]) + "\n"


def test_import_gates_each_line_and_reports_why(home, tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text(NOTES)
    done = kenning("import", str(notes), "--json", home=home)
    assert done.returncode == 1, done.stderr  # a gate refused lines: a script can tell, as from a refused write
    report = json.loads(done.stdout)
    statuses = [(ln["status"], ln.get("gate")) for ln in report["lines"]]
    assert statuses == [("refused", "credentials"), ("committed", None), ("duplicate", "duplicates"),
                        ("refused", "durability"), ("committed", None), ("refused", "user_claims")]
    assert report["lines"][2]["match"] == f"{notes}:2"
    assert report["lines"][0]["code"] == "credential_warning" and report["lines"][3]["code"] == "transient_warning"
    assert "Sunflower2024xyz" not in json.dumps(report)
    texts = [m["content"] for m in json.loads(ok(kenning("list", "--json", home=home)).stdout)]
    assert sorted(texts) == ["Deploys go through the staging cluster before production",
                             "The auth service listens on port 8443"]
    again = kenning("import", str(notes), home=home)
    assert again.returncode == 1
    assert f"{notes}:2 duplicate (duplicates): memory " in again.stdout
    assert again.stdout.splitlines()[-1] == "imported 0 memories from 6 lines; 3 refused, 3 duplicate"
    assert len(json.loads(ok(kenning("list", "--json", home=home)).stdout)) == 2


def test_a_reimport_lists_at_most_twenty_lines_of_a_kind_and_exits_0_on_duplicates_alone(home, tmp_path):
    notes = tmp_path / "many.jsonl"
    notes.write_text("".join(json.dumps({"text": f"Service number {i} listens on port {8000 + i}"}) + "\n"
                             for i in range(25)))
    assert kenning("import", str(notes), home=home).returncode == 0
    (tmp_path / "copy.jsonl").write_text(notes.read_text().replace("Service", "service"))  # other text, same words
    again = kenning("import", str(tmp_path / "copy.jsonl"), home=home)
    assert again.returncode == 0, again.stderr  # duplicates are no failure
    lines = again.stdout.splitlines()
    assert sum(" duplicate (duplicates): " in line for line in lines) == 20
    assert "... and 5 more duplicate lines (`kenning import --json` lists every line)" in lines
    assert lines[-1] == "imported 0 memories from 25 lines; 25 duplicate"


def test_import_no_gates_says_what_it_skips(home, tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text(NOTES)
    result = ok(kenning("import", str(notes), "--no-gates", home=home))
    assert "--no-gates: did not check credentials (secrets), durability (run-state wording), user claims and " \
           "near-duplicates" in " ".join(result.stderr.split())
    assert result.stdout.strip() == "imported 6 memories from 6 lines"
    assert "--no-gates" in ok(kenning("import", "--help")).stdout


def test_a_bad_line_still_imports_nothing(home, tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"text": "A fine memory about kites"}\n{"text": ""}\n')
    result = kenning("import", str(notes), home=home)
    assert result.returncode == 2 and f"{notes}:2" in result.stderr and "nothing was imported" in result.stderr


# ---------------------------------------------------------------- item 10: a default scope
def test_default_scope_outside_a_repository_is_global(home, tmp_path):
    result = ok(kenning("write", "Plain notes go to the global scope", home=home, cwd=tmp_path))
    assert "note: scope global: the default outside a git repository; choose another with --scope" in result.stderr
    assert json.loads(ok(kenning("list", "--json", home=home, cwd=tmp_path)).stdout)[0]["scopes"] == ["global"]


def test_default_scope_inside_a_repository_is_its_project(home, tmp_path):
    repo = tmp_path / "shopfront"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    result = ok(kenning("write", "The shopfront uses Postgres 16", home=home, cwd=repo))
    assert "scope projects:shopfront: the default inside this git repository" in result.stderr
    assert json.loads(ok(kenning("list", "--json", home=home, cwd=repo)).stdout)[0]["scopes"] == ["projects:shopfront"]


# ---------------------------------------------------------------- item 6: which store, and no accidental stores
@pytest.mark.parametrize("command", [["search", "x"], ["list"], ["show", "01X"], ["health"], ["scopes"],
                                     ["tombstones"], ["pending"], ["config", "get"], ["episodes", "list"],
                                     ["remove", "01X", "--reason", "r"]])
def test_a_typo_in_the_store_path_creates_nothing(tmp_path, command):
    typo = tmp_path / "kennnig"
    for result in (kenning("--store", str(typo), *command), kenning(*command, home=typo)):
        assert result.returncode == 2 and result.stderr.startswith(f"error: no kenning store at {typo}")
        assert not typo.exists()
    assert "(set by $KENNING_HOME)" in kenning(*command, home=typo).stderr
    assert "(given with --store)" in kenning("--store", str(typo), *command).stderr


def test_info_says_which_store_and_why(home, tmp_path):
    missing = ok(kenning("info", home=home))
    assert f"store: {home}" in missing.stdout and "why: set by $KENNING_HOME" in missing.stdout
    assert "no store here yet" in missing.stdout and not home.exists()
    ok(kenning("write", "The auth service listens on port 8443", "--scope", "x", home=home))
    report = json.loads(ok(kenning("info", "--json", home=home)).stdout)
    assert report["store"] == str(home) and report["chosen_because"] == "set by $KENNING_HOME"
    assert report["memories"] == 1 and report["schema_version"] >= 4 and report["read_only"] is False
    local = tmp_path / "project"
    (local / ".kenning").mkdir(parents=True)
    assert "found .kenning/ in the current directory" in ok(kenning("info", cwd=local)).stdout
    assert "given with --store" in ok(kenning("--store", str(home), "info")).stdout
    default = ok(kenning("info", "--json", cwd=tmp_path, env={"XDG_DATA_HOME": str(tmp_path / "xdg")}))
    assert json.loads(default.stdout)["chosen_because"].startswith("the default")


# ---------------------------------------------------------------- item 5: config get|set
def test_config_set_changes_the_default_mode(home):
    ok(kenning("write", "The auth service listens on port 8443", "--scope", "x", home=home))
    assert ok(kenning("config", "get", "default_mode", home=home)).stdout.strip() == "hybrid"
    assert ok(kenning("config", "set", "default_mode", "bm25", home=home)).stdout.strip() == "default_mode = bm25"
    found = json.loads(ok(kenning("search", "auth port", "--json", home=home)).stdout)
    assert found["mode"] == "bm25" and found["legs_run"] == ["bm25"]
    everything = ok(kenning("config", "get", home=home)).stdout
    assert "default_mode = bm25" in everything and "write_enabled = true" in everything
    ok(kenning("config", "set", "write_enabled", "false", home=home))
    refused = json.loads(kenning("write", "Another memory about ports", "--scope", "x", "--json", home=home).stdout)
    assert refused["status"] == "writes_disabled" and refused["gate"] == "write_enabled"
    for bad in (["config", "set", "default_mode", "fuzzy"], ["config", "set", "colour", "blue"],
                ["config", "get", "colour"]):
        result = kenning(*bad, home=home)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr


# ---------------------------------------------------------------- items 11 and 12: output people can read
ULID_CHARS = 26


def test_search_and_list_at_80_columns_keep_ids_whole_and_show_scopes(home):
    text = ("Install the semantic leg with pip install kenning[embeddings] and check [bold]markup[/bold] "
            "prints as written; this sentence is long enough to wrap at eighty columns")
    mid = json.loads(ok(kenning("write", text, "--scope", "projects:a-rather-long-scope-name", "--scope", "ops",
                                "--json", home=home)).stdout)["id"]
    for args in (("search", "semantic leg markup", "--mode", "bm25"), ("list",)):
        shown = ok(kenning(*args, home=home)).stdout
        id_line = next(line for line in shown.splitlines() if mid in line)
        assert "projects:a-rather-long-scope-name, ops" in id_line
        assert "kenning[embeddings]" in shown and "[bold]markup[/bold]" in shown
    assert ok(kenning("list", home=home)).stdout.startswith("1 memory, newest first")


def test_empty_listings_say_so_in_words(home):
    ok(kenning("write", "A memory so that the store exists", "--scope", "x", home=home))
    ok(kenning("config", "set", "default_mode", "bm25", home=home))
    assert ok(kenning("tombstones", home=home)).stdout.strip() == "no removed memories"
    assert ok(kenning("pending", home=home)).stdout.strip() == "no pending writes"
    assert ok(kenning("list", "--scope", "nothing-here", home=home)).stdout.startswith("no memories")
    assert ok(kenning("search", "zebra", home=home)).stdout.strip() == "no memory matches that query"
    for args in (("tombstones",), ("pending",), ("list", "--scope", "none"), ("health",)):
        out = ok(kenning(*args, home=home)).stdout
        assert "┏" not in out and "memorie(s)" not in out and "(s)" not in out, args


def test_show_prints_lists_and_times_plainly(home):
    mid = json.loads(ok(kenning("write", "The auth service listens on port 8443", "--scope", "ops", "--scope",
                                "projects:auth", "--json", home=home)).stdout)["id"]
    shown = ok(kenning("show", mid, home=home)).stdout
    assert "scopes: ops, projects:auth" in shown and "['" not in shown
    created = next(line for line in shown.splitlines() if line.startswith("created: "))
    listed = ok(kenning("list", home=home)).stdout
    assert created.removeprefix("created: ") in listed  # one time format in every command
    assert len(created.removeprefix("created: ")) == len("2026-12-01 12:00")


# ---------------------------------------------------------------- item 7: a read-only store
def _as_unprivileged() -> list[str]:
    """A prefix that runs a command without the power to ignore file permissions (root has it)."""
    if os.geteuid() != 0:
        return []
    import shutil

    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be made to bind")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", "--bounding-set", caps, "--inh-caps", caps, "--"]


def test_a_read_only_store_serves_reads_and_names_the_cause_of_a_refused_write(tmp_path):
    store = tmp_path / "store"
    mid = json.loads(ok(kenning("--store", str(store), "write", "The auth service listens on port 8443",
                                "--scope", "x", "--json")).stdout)["id"]
    for path in store.iterdir():
        path.chmod(0o444)
    store.chmod(0o555)
    prefix = _as_unprivileged()
    probe = subprocess.run([*prefix, sys.executable, "-c", f"open({str(store / 'kenning.sqlite3')!r}, 'r+b')"],
                           capture_output=True)
    if probe.returncode == 0:
        pytest.skip("this process can write a read-only file (a privileged runner)")

    def run(*args):
        environ = {**os.environ, "COLUMNS": "80"}
        environ.pop("KENNING_HOME", None)
        return subprocess.run([*prefix, *KENNING, "--store", str(store), *args], capture_output=True, text=True,
                              env=environ, timeout=300)

    try:
        for args in (["search", "auth port"], ["search", "auth port", "--mode", "bm25"], ["list"], ["show", mid]):
            result = run(*args)
            assert result.returncode == 0 and "8443" in result.stdout, (args, result.stderr)
        assert json.loads(run("info", "--json").stdout)["read_only"] is True
        for args in (["write", "Another durable fact about kites", "--scope", "x"], ["remove", mid, "--reason", "r"],
                     ["config", "set", "default_mode", "bm25"]):
            refused = run(*args)
            assert refused.returncode == 2 and "is read-only for this user" in refused.stderr, (args, refused.stderr)
            assert "not a kenning store" not in refused.stderr and len(refused.stderr.splitlines()) == 1
    finally:
        store.chmod(0o755)


# ---------------------------------------------------------------- item 13: kenning serve in a terminal
def test_serve_in_a_terminal_says_it_waits_and_stops_on_the_first_ctrl_c(tmp_path):
    import pty
    import select
    import signal

    pytest.importorskip("mcp")
    controller, terminal = pty.openpty()
    environ = {**os.environ}
    environ.pop("KENNING_HOME", None)
    server = subprocess.Popen([*KENNING, "--store", str(tmp_path / "store"), "serve"], stdin=terminal,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ, cwd=tmp_path)
    os.close(terminal)
    try:
        said = b""
        while b"waiting for an MCP client on stdin" not in said:
            ready, _, _ = select.select([server.stderr], [], [], 120)
            assert ready, f"nothing on stderr; got {said!r}"
            chunk = os.read(server.stderr.fileno(), 4096)
            assert chunk, f"stderr closed early: {said!r}"
            said += chunk
        assert b"Ctrl-C" in said and str(tmp_path / "store").encode() in said
        server.send_signal(signal.SIGINT)  # what the terminal sends on Ctrl-C
        assert server.wait(timeout=30) == 130
    finally:
        if server.poll() is None:
            server.kill()
        os.close(controller)


# ---------------------------------------------------------------- item 15: the main job's report
def test_eval_report_explains_itself_and_judges_against_the_baseline(tmp_path):
    report = ok(kenning("eval", "run", "builtin", "--modes", "keyword,bm25"))
    lines = report.stdout.splitlines()
    for metric in ("nDCG@10", "R@10", "MRR@10", "p50/p95"):
        assert any(line.startswith(metric + " ") for line in lines), metric
    assert "The table scores the 65 queries that have a relevant memory. The other 15 have none" in report.stdout
    verdict = next(line for line in lines if line.startswith("verdict: "))
    assert "baselines/builtin.json" in verdict and ("as good as" in verdict or "WORSE than" in verdict)
    assert "cached in" not in report.stdout  # no vector leg ran, nothing was cached
    as_json = json.loads(ok(kenning("eval", "run", "builtin", "--modes", "bm25", "--json")).stdout)
    assert as_json["baseline"]["modes_compared"] == ["bm25"] and "regressions" in as_json["baseline"]
    alone = ok(kenning("eval", "run", "builtin", "--modes", "bm25", "--baseline", "none")).stdout
    assert "verdict" not in alone


@pytest.mark.embeddings
def test_eval_report_says_where_the_embedding_cache_is(tmp_path):
    cache = tmp_path / "cache"
    report = ok(kenning("eval", "run", "builtin", "--modes", "semantic", "--limit-queries", "3",
                        env={"KENNING_CACHE_DIR": str(cache)}))
    assert f"embeddings of the corpus are cached in {cache / 'embeddings.sqlite'}" in report.stdout
    assert (cache / "embeddings.sqlite").is_file()


def test_the_test_session_keeps_out_of_the_users_embedding_cache():
    cache = os.environ["KENNING_CACHE_DIR"]
    assert os.environ.get("KENNING_TEST_CACHE_DIR") or Path(cache).name.startswith("kenning-test-cache-")
    assert not cache.startswith(str(Path.home() / ".cache"))
