"""`kenning migrate`: a store copied SQLite -> PostgreSQL -> SQLite comes back row for row, and the
PostgreSQL copy answers like the original. Runs against a real PostgreSQL (pgserver)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import kenning
import kenning.store.transfer
from kenning.memory.episodes import Episodes
from kenning.store.backend import open_backend
from kenning.store.transfer import TABLES, rows

pytestmark = pytest.mark.sqlite_only  # builds its SQLite source by hand; the suite's PG run would map it onto PG


def _full_store(path) -> dict:
    """A store holding one of everything migrate must carry."""
    with kenning.open_store(path) as s:
        keep = s.write("The auth service listens on port 8443", scopes=["projects:auth"]).id
        old = s.write("The billing job runs nightly at 02:00 UTC", scopes=["projects:billing", "team:ops"]).id
        s.write("The billing job runs hourly since the March change",
                scopes=["projects:billing"], links=[{"kind": "supersedes", "target": old}], force=True)
        gone = s.write("The staging database lives on host db-7", scopes=["projects:auth"]).id
        # opens with a timestamp: two vectors, the whole text's in embeddings.whole (retrieval/stamps.py)
        s.write("2024-07-01 09:30 - the auth gateway was moved to the new cluster", scopes=["projects:auth"],
                acknowledge_transient=True)
        s.remove(gone, reason="host retired")
        s.verify(keep, note="checked the config")
        s.record_use([keep], "applied", note="used it")
        pending = s.write("The user prefers tabs over spaces", scopes=["global"], category="user-inference")
        assert pending.status == "pending"
        s.search("auth port", mode="bm25")
        Episodes(s).write("tuned the pool size to 20", takeaway="pool 20 is enough")
        if s.semantic.availability().working:
            s.semantic.embed_pending()
        return {"keep": keep, "gone": gone}


def _dump(location) -> dict[str, list[tuple]]:
    opened = open_backend(location)
    try:
        return {table: rows(opened.db, table) for table in TABLES}
    finally:
        opened.db.close()


def _assert_pgvector_holds_the_bytes(url: str, expected_rows: int) -> None:
    """The vector leg's pgvector column carries each copied embedding bit for bit."""
    import numpy as np

    opened = open_backend(url)
    try:
        pairs = opened.db.read(lambda c: c.raw.execute("SELECT vector, vector_send(vec) FROM embeddings").fetchall())
    finally:
        opened.db.close()
    assert len(pairs) == expected_rows
    for stored, sent in pairs:
        assert np.array_equal(np.frombuffer(bytes(sent)[4:], ">f4").astype(np.float32).view(np.uint32),
                              np.frombuffer(bytes(stored), np.float32).view(np.uint32))


def test_round_trip_sqlite_postgres_sqlite_is_equal(tmp_path, postgres_url):
    source, back = tmp_path / "source", tmp_path / "back"
    ids = _full_store(source)
    before = _dump(source)
    assert all(before[t] for t in ("memories", "memory_scopes", "memory_links", "events", "pending_writes",
                                   "episodes", "lex_docs", "meta"))
    assert any(r[8] is not None for r in before["memories"])  # a tombstone
    assert bool(before["embeddings"]) == kenning.embeddings_available()  # vectors to carry, with the model
    assert any(r[5] is not None for r in before["embeddings"]) == kenning.embeddings_available()  # a whole vector
    kenning.store.transfer.migrate(source, postgres_url)
    assert _dump(postgres_url) == before
    _assert_pgvector_holds_the_bytes(postgres_url, len(before["embeddings"]))
    kenning.store.transfer.migrate(postgres_url, back)
    assert _dump(back) == before

    with kenning.open_store(source) as original, kenning.open_store(postgres_url) as copy:
        modes = ("bm25", "semantic", "hybrid") if original.semantic.availability().working else ("bm25",)
        for query in ("auth port", "billing job", "staging database", "when did the gateway move to the new cluster"):
            for mode in modes:
                assert ([(h.id, h.relevance) for h in copy.search(query, mode=mode).hits]
                        == [(h.id, h.relevance) for h in original.search(query, mode=mode).hits]), (query, mode)
        assert copy.get(ids["keep"]).last_verified_at is not None
        assert [t.memory.id for t in copy.tombstones()] == [ids["gone"]]
        assert len(copy.pending_writes(all_sessions=True)) == 1
        assert copy.store_id == original.store_id
        later = copy.write("The cache TTL is 300 seconds", scopes=["projects:auth"])  # keys continue after the copy
        assert later.status == "committed"


def test_migrate_refuses_a_destination_that_holds_a_store(tmp_path, postgres_url):
    with kenning.open_store(tmp_path / "a") as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
    with kenning.open_store(postgres_url) as s:
        s.write("Something already lives here", scopes=["projects:x"])
    with pytest.raises(kenning.InvalidInput, match="already holds a store"):
        kenning.store.transfer.migrate(tmp_path / "a", postgres_url)


def test_cli_migrate_reports_rows_and_refuses_in_one_line(tmp_path, postgres_url):
    with kenning.open_store(tmp_path / "a") as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
    cli = [sys.executable, "-m", "kenning.cli"]
    done = subprocess.run([*cli, "migrate", str(tmp_path / "a"), postgres_url, "--json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["rows"]["memories"] == 1 and report["rows"]["events"] >= 1
    again = subprocess.run([*cli, "migrate", str(tmp_path / "a"), postgres_url], capture_output=True, text=True)
    assert again.returncode == 2 and "already holds a store" in again.stderr and "Traceback" not in again.stderr
    found = subprocess.run([*cli, "--store", postgres_url, "search", "auth port", "--mode", "bm25", "--json"],
                           capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert [h["snippet"] for h in json.loads(found.stdout)["hits"]] == ["The auth service listens on port 8443"]


@pytest.mark.slow  # a real subprocess
def test_cli_migrate_shows_a_bar_on_stderr_and_the_counts_on_stdout(tmp_path):
    """Long work shows a progress bar on stderr, as import and index do: migrate printed only a line on
    stdout after each whole table, so a large table was minutes of silence."""
    from terminal import run_on_a_terminal

    with kenning.open_store(tmp_path / "a") as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
    # stderr a terminal: the bar is drawn there, as for a person
    done, drawn = run_on_a_terminal([sys.executable, "-m", "kenning.cli", "migrate", str(tmp_path / "a"),
                                     str(tmp_path / "b")], text=True, timeout=300)
    assert done.returncode == 0
    assert b"copying" in drawn
    assert "copying" not in done.stdout
    assert "  memories: 1 row\n" in done.stdout and "copied 1 memory and" in done.stdout


def test_a_row_postgresql_cannot_hold_is_named_by_its_table_and_nothing_is_copied(tmp_path, postgres_url):
    """A NUL an older kenning kept in SQLite (a transcript message's text) made migrate say only 'a value
    the store cannot hold', naming neither the table nor that nothing was copied."""
    import sqlite3

    from kenning.errors import InvalidInput

    ledger = tmp_path / "t.jsonl"
    ledger.write_text(json.dumps({"session": "s1", "ts": "2026-01-01T00:00:00Z", "role": "user",
                                  "text": "the heron migration finished"}) + "\n")
    with kenning.open_store(tmp_path / "a") as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
        from kenning.recall.transcripts import index_for

        index_for(s).add_source(ledger, project=str(tmp_path))
    with sqlite3.connect(tmp_path / "a" / "kenning.sqlite3") as con:  # as an older kenning kept it
        con.execute("UPDATE transcript_messages SET text = 'the heron migration' || char(0) || ' finished'")
    with pytest.raises(InvalidInput, match="transcript_messages table .* nothing was copied"):
        kenning.store.transfer.migrate(tmp_path / "a", postgres_url)
    with kenning.open_store(postgres_url) as copy:
        assert copy.count() == 0



@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_source_written_during_the_copy_is_copied_as_of_one_moment(tmp_path, request, backend):
    """A server or an agent writing to the source while migrate runs: each table was read in a
    transaction of its own, so a memory written after the memories table was read had its scopes
    and index rows copied without it ('FOREIGN KEY constraint failed', a traceback). Every table is
    now read from one snapshot: the copy is the store as it was when the copy began."""
    source = tmp_path / "source" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    with kenning.open_store(source) as s:
        for i in range(3):
            s.write(f"The pump station {i} is serviced every {i + 2} weeks", scopes=["ops"])
    writer = kenning.open_store(source)  # another writer on the same store (opened: its open writes nothing later)
    before = _dump(source)
    written = []

    def meanwhile(table, copied, total):
        written.append(writer.write(f"While copying {table} ({copied} rows) the valve {len(written)} was replaced",
                                    scopes=["ops"], force=True).status)

    try:
        kenning.store.transfer.migrate(source, tmp_path / "copy", progress=meanwhile)
    finally:
        writer.close()
    assert set(written) == {"committed"} and len(written) > len(TABLES)
    assert _dump(tmp_path / "copy") == before
