"""A NUL character (\\x00) in a memory's text is refused the same way on every backend. SQLite used to
keep it while PostgreSQL refused the whole statement, so a SQLite store holding one could never be
migrated, and a PostgreSQL import of a file with one such line failed without naming the line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import kenning
from kenning.errors import InvalidInput


def test_a_write_or_update_with_a_nul_is_invalid_input_and_writes_nothing(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        with pytest.raises(InvalidInput, match="NUL"):
            s.write("The cache server listens on port 6379 \x00 in the data zone", scopes=["ops"])
        assert s.list(auto_scope=False) == []
        kept = s.write("The cache server listens on port 6379 in the data zone", scopes=["ops"]).id
        with pytest.raises(InvalidInput, match="NUL"):
            s.update(kept, text="The cache server listens on port 6380\x00 in the data zone")
        assert s.get(kept).content == "The cache server listens on port 6379 in the data zone"


def test_an_import_names_the_line_with_a_nul_and_imports_nothing(tmp_path):
    lines = [{"content": f"Queue worker w{i} drains the jobs table every {i + 2} seconds" + (" \x00" if i == 2 else ""),
              "scopes": ["ops"]} for i in range(5)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    done = subprocess.run([sys.executable, "-m", "kenning", "--store", str(tmp_path / "s"), "import", str(path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0 and f"{path.name}:3:" in done.stderr and "NUL" in done.stderr, done.stderr
    with kenning.open_store(tmp_path / "s") as s:
        assert s.list(auto_scope=False) == []  # was: all five kept, the NUL with them


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path):
    """A new store's place on each backend (PostgreSQL's through the test server, in both suite modes)."""
    return tmp_path / "s" if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def test_a_search_for_a_nul_leaves_the_event_log_readable(location):
    """The query is logged as JSON, where a NUL is \\u0000, which PostgreSQL's jsonb refuses: one such
    search made health, events, the overview and the session's settlement at close fail there for good."""
    with kenning.open_store(location) as s:
        kept = s.write("The deploy key rotates monthly on the build host", scopes=["ops"]).id
        assert [h.id for h in s.search("deploy\x00 key", mode="bm25").hits] == [kept]
        s.log_event("note", kept, {"said\x00": "a\x00b"})
    with kenning.open_store(location) as s:
        assert s.health()["total"] == 1 and s.scope_overview()["total"] == 1 and s.conflicts() == []
        logged = {e["kind"]: e["payload"] for e in s.events()}
        assert logged["search"]["query"] == "deploy\ufffd key" and logged["note"] == {"said\ufffd": "a\ufffdb"}


def test_an_event_kind_or_a_session_id_with_a_nul_is_refused_on_every_backend(location):
    """SQLite kept any of them (a session id, event kind or memory id no query names), PostgreSQL refused the first
    write or event of the session with 'a value the store cannot hold'."""
    with pytest.raises(InvalidInput, match="session_id"):
        kenning.open_store(location, session_id="agent\x00one")
    with kenning.open_store(location) as s:
        with pytest.raises(InvalidInput, match="event kind"):
            s.log_event("note\x00", None, {"a": "b"})
        with pytest.raises(InvalidInput, match="memory_id"):
            s.log_event("note", "01ARZ3NDEKTSV4RRFFQ69G5FAV\x00", {"a": "b"})
        s.log_event("note", None, {"a": "b"})
        assert [e["kind"] for e in s.events()] == ["note"]


def test_an_id_with_a_nul_is_not_found_on_every_backend(location):
    """PostgreSQL answered a look-up by such an id with 'a value the store cannot hold' (InvalidInput,
    HTTP 400), SQLite with NotFound (404)."""
    from kenning.errors import NotFound

    with kenning.open_store(location) as s:
        kept = s.write("The cache server listens on port 6379 in the data zone", scopes=["ops"]).id
        for call in (lambda: s.get(kept + "\x00"), lambda: s.show(kept + "\x00"),
                     lambda: s.remove(kept + "\x00", reason="retired"), lambda: s.record_use([kept + "\x00"], "applied")):
            with pytest.raises(NotFound):
                call()
        assert s.confirm_write("pending\x00").status == "not_found"
        assert s.get(kept).content == "The cache server listens on port 6379 in the data zone"


def test_an_event_filter_with_a_nul_finds_nothing_on_every_backend(location):
    """events(session=..., kinds=...) with a NUL found nothing on SQLite and raised
    'a value the store cannot hold' on PostgreSQL."""
    with kenning.open_store(location) as s:
        s.log_event("note", None, {"a": "b"})
        assert s.events(session="s\x00") == [] and s.events(kinds=["note\x00"]) == []
        assert [e["kind"] for e in s.events(kinds=["note", "other\x00"])] == ["note"]


def test_a_link_with_a_nul_is_treated_alike_on_every_backend(location):
    """A link note with a NUL was committed by SQLite (a store that could then not migrate) and
    refused by PostgreSQL as 'a value the store cannot hold'; a target with one was NotFound on SQLite
    only."""
    from kenning.errors import NotFound

    with kenning.open_store(location) as s:
        kept = s.write("The cache server listens on port 6379 in the data zone", scopes=["ops"]).id
        with pytest.raises(InvalidInput, match="link note holds a NUL"):
            s.write("The queue server listens on port 5672 in the data zone", scopes=["ops"],
                    links=[{"kind": "extends", "target": kept, "note": "same\x00zone"}])
        with pytest.raises(NotFound, match="link target"):
            s.write("The queue server listens on port 5672 in the data zone", scopes=["ops"],
                    links=[{"kind": "extends", "target": kept + "\x00"}])
        assert [m.id for m in s.list(auto_scope=False)] == [kept]

