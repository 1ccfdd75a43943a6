"""A store indexed by an older token stream is re-indexed once when it is opened, which takes
seconds at 100,000 memories: the CLI says so on stderr before the wait (stdout, --json output and an
MCP server's protocol stay clean), and the library itself prints nothing, telling only its listeners
(memory/notices.py). The older stream is simulated by changing the stored tokenizer fingerprint."""

from __future__ import annotations

import json
import sqlite3

import pytest

import kenning
from kenning.memory import notices

from test_cli_inputs import kenning as run_kenning

pytestmark = pytest.mark.sqlite_only  # the older stream is simulated in the SQLite file's meta table

NOTICE = "note: rebuilding the lexical index of 3 memories for this version's token stream (once)\n"


def _store(path):
    with kenning.open_store(path) as s:
        for port in (8443, 9000, 7000):
            s.write(f"The service on port {port} belongs to team {port // 1000}", scopes=["x"])


def _made_by_an_older_stream(path) -> None:
    with sqlite3.connect(path / "kenning.sqlite3") as con:
        con.execute("UPDATE meta SET value = 'older-stream' WHERE key = 'tokenizer'")


def test_the_library_tells_its_listeners_once_and_prints_nothing(tmp_path, capfd, monkeypatch):
    path = tmp_path / "store"
    _store(path)
    _made_by_an_older_stream(path)
    heard = []
    monkeypatch.setattr(notices, "_listeners", [])
    capfd.readouterr()
    with kenning.open_store(path) as s:  # nobody listening: nothing said, nothing printed
        assert [h.id for h in s.search("port 8443", mode="bm25").hits]
    assert capfd.readouterr() == ("", "")
    _made_by_an_older_stream(path)
    notices.listen(heard.append)
    notices.listen(heard.append)
    for _ in range(2):
        kenning.open_store(path).close()
    assert heard == [NOTICE[len("note: "):-1]] and capfd.readouterr() == ("", "")
    with kenning.open_store(tmp_path / "new") as s:  # a new store has nothing to rebuild, nothing to say
        s.write("The first memory of a new store", scopes=["x"])
    assert heard == [NOTICE[len("note: "):-1]]


def test_the_cli_says_it_on_stderr_before_the_wait_and_keeps_stdout_clean(tmp_path):
    """A search of such a store waited in silence (about 10 s at 100,000 memories)."""
    path = tmp_path / "store"
    _store(path)
    for args in (["search", "port 8443", "--mode", "bm25", "--json"], ["search", "port 8443", "--mode", "bm25"],
                 ["list", "--json"], ["serve"]):  # the fast search path, the typer path, the MCP server (stdin at EOF)
        _made_by_an_older_stream(path)
        done = run_kenning(tmp_path, "--store", str(path), *args)
        assert (done.returncode, done.stderr) == (0, NOTICE), (args, done.stderr)
        if "--json" in args:
            json.loads(done.stdout)
        elif args == ["serve"]:
            assert done.stdout == ""
        again = run_kenning(tmp_path, "--store", str(path), *args)
        assert (again.returncode, again.stderr) == (0, ""), args  # once: the index is current now
