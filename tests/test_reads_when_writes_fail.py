"""A read never fails because its event row cannot be committed right now: on a full disk, or while
another process holds the write lock past the wait, a search, show or list answers and the session
closes; the queued read events wait for a later flush, or are dropped with one warning at close."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys

import pytest

import kenning
from kenning.memory import deferred
from test_deferred_events import committed as events  # event rows on disk, seen by another connection

pytestmark = pytest.mark.sqlite_only  # fills the SQLite file (max_page_count) and holds its write lock


@pytest.fixture
def home(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        s.import_records([{"content": f"the turbine blade {i} is inspected every spring", "scopes": ["t"]}
                          for i in range(5)])
    return tmp_path / "s"


def full(store) -> None:
    """The store's file may not grow by one page: SQLite answers "database or disk is full", as on a
    full disk."""
    conn = store._s.db.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def test_reads_on_a_full_disk_answer_and_the_close_drops_their_events_with_one_line(home, caplog, monkeypatch):
    monkeypatch.setattr(deferred, "FLUSH_AFTER", 3600.0)
    store = kenning.open_store(home)
    full(store)
    for _ in range(deferred.MAX_QUEUED + 10):  # past MAX_QUEUED: a read itself tries to commit the batch
        assert store.search("turbine blade", mode="bm25").hits
    mid = store.list(limit=1)[0].id
    assert store.show(mid)["id"] == mid
    with caplog.at_level(logging.WARNING, logger=deferred.__name__):
        store.close()
    assert any("is full" in r.getMessage() for r in caplog.records)
    with kenning.open_store(home) as again:  # nothing written half-way, and the store still writes
        assert again.count() == 5
        assert again.write("the gearbox oil is changed every autumn", scopes=["t"]).status == "committed"


def test_reads_on_a_full_disk_keep_their_events_until_there_is_room(home, monkeypatch):
    monkeypatch.setattr(deferred, "FLUSH_AFTER", 3600.0)
    store = kenning.open_store(home)
    full(store)
    searches = deferred.MAX_QUEUED + 10
    for _ in range(searches):
        store.search("turbine blade", mode="bm25")
    assert events(home) == 0
    store._s.db.conn.execute("PRAGMA max_page_count = 1073741823")  # room again
    store.close()
    assert events(home) == searches  # none lost: they stayed queued, in order


@pytest.fixture
def holder(home):
    """Another process's connection holding the store's write lock (BEGIN IMMEDIATE) until released."""
    con = sqlite3.connect(home / "kenning.sqlite3", isolation_level=None)
    yield con
    if con.in_transaction:
        con.execute("ROLLBACK")
    con.close()


def test_a_close_while_another_process_holds_the_write_lock_past_the_wait_drops_its_events_with_one_line(
        home, holder, caplog, monkeypatch):
    monkeypatch.setattr(deferred, "FLUSH_AFTER", 3600.0)
    store = kenning.open_store(home)
    store._s.db.conn.execute("PRAGMA busy_timeout = 50")
    holder.execute("BEGIN IMMEDIATE")
    assert store.search("turbine blade", mode="bm25").hits
    with caplog.at_level(logging.WARNING, logger=deferred.__name__):
        store.close()
    assert any("locked" in r.getMessage() for r in caplog.records)


def test_a_close_waits_for_the_lock_briefly_not_the_busy_timeout(home, holder, monkeypatch):
    """A CLI read closes its store as it exits; its close waited the full busy timeout (30 s) for
    another process's write lock before dropping the read events, so `kenning search` took 30 s."""
    from kenning.store import db

    shipped = deferred.CLOSE_WAIT_MS
    assert shipped <= db.BUSY_TIMEOUT_MS / 5
    monkeypatch.setattr(deferred, "FLUSH_AFTER", 3600.0)
    monkeypatch.setattr(deferred, "CLOSE_WAIT_MS", 60)  # the test's own lock is held for good: no need to wait 2 s
    store = kenning.open_store(home)
    waits = []
    real = store._s.db.waiting_at_most

    def recorded(ms):
        waits.append(ms)
        return real(ms)

    monkeypatch.setattr(store._s.db, "waiting_at_most", recorded)
    holder.execute("BEGIN IMMEDIATE")
    assert store.search("turbine blade", mode="bm25").hits
    store.close()
    assert waits == [60]
    holder.execute("ROLLBACK")
    assert events(home) == 0  # dropped (with one line), not committed late


def test_opening_a_store_takes_no_write_lock(home, holder, monkeypatch):
    """A writer in another process (an import's batch, a rebuild) keeps no reader from opening the
    store: a current schema needs no migration, so the open does not wait for the write lock."""
    from kenning.store import db

    monkeypatch.setattr(deferred, "FLUSH_AFTER", 3600.0)
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 50)
    holder.execute("BEGIN IMMEDIATE")
    store = kenning.open_store(home)
    assert len(store.search("turbine blade", mode="bm25").hits) == 5
    holder.execute("ROLLBACK")
    store.close()
    assert events(home) == 1


def test_a_cli_search_while_another_process_holds_the_write_lock_answers_without_a_traceback(home, holder):
    """The lock is held past the wait the close's flush gives it: the search still prints its hits
    and exits 0, with one line saying its read event was not logged."""
    holder.execute("BEGIN IMMEDIATE")
    code = ("import sys; from kenning.store import db; db.BUSY_TIMEOUT_MS = 50; "
            "from kenning.__main__ import main; sys.argv = ['kenning'] + sys.argv[1:]; main()")
    run = subprocess.run([sys.executable, "-c", code, "--store", str(home), "search", "turbine blade",
                          "--mode", "bm25"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "turbine blade" in run.stdout
    assert "Traceback" not in run.stderr
    assert "locked" in run.stderr


def grown_ledger_on_a_full_disk(home, tmp_path):
    """The store at ``home``, opened, with a ledger of one indexed message that has since gained 200
    lines, and its disk full: reading those lines in is a write that fails."""
    import json

    from kenning.recall.transcripts import index_for

    ledger = tmp_path / "notes.jsonl"

    def say(*texts):
        with open(ledger, "a") as f:
            f.writelines(json.dumps({"session": "s1", "ts": "2026-11-30T10:00:00Z", "role": "user", "text": t}) + "\n"
                         for t in texts)

    say("the turbine blade inspection found a crack on blade 3")
    store = kenning.open_store(home)
    index_for(store).add_source(ledger, project=tmp_path)
    say(*(f"the turbine gearbox log line {i} mentions vibration" for i in range(200)))
    full(store)
    return store


def test_a_recall_on_a_full_disk_answers_from_what_is_indexed_and_says_what_it_could_not_read(home, tmp_path):
    """A recall first takes in the lines a registered ledger gained since; on a full disk that write
    failed the whole recall, memories and all ('the disk ... is full'). It answers from what is indexed
    now, with a note naming the cause, and takes the new lines in once there is room."""
    from kenning.recall.recall import recall

    store = grown_ledger_on_a_full_disk(home, tmp_path)
    answer = recall(store, "turbine", limit=50, all_projects=True, mode="bm25")
    roles = [h["role"] for h in answer["hits"]]
    assert roles.count("memory") == 5 and roles.count("transcript") == 1
    assert "could not be indexed (the disk holding" in answer["note"] and "is full" in answer["note"]
    store._s.db.conn.execute("PRAGMA max_page_count = 1073741823")  # room again
    again = recall(store, "turbine", limit=50, all_projects=True, mode="bm25")
    assert [h["role"] for h in again["hits"]].count("transcript") > 1 and "note" not in again
    store.close()


def test_transcripts_list_on_a_full_disk_counts_what_is_indexed_and_says_what_it_could_not_read(home, tmp_path):
    """`kenning transcripts list` takes in the lines a ledger gained first; on a full disk that write failed
    the listing whole ('the disk ... is full'), as a recall did before 698c4aa."""
    from kenning.recall.transcripts import index_for

    store = grown_ledger_on_a_full_disk(home, tmp_path)
    index = index_for(store)
    assert [s["messages"] for s in index.sources()] == [1]  # was: StorageError, the disk ... is full
    listing = index.listing()
    assert listing["count"] == 1 and listing["sources"][0]["messages"] == 1
    assert "could not be indexed (the disk holding" in listing["note"] and "not in these counts" in listing["note"]
    store._s.db.conn.execute("PRAGMA max_page_count = 1073741823")  # room again
    again = index.listing()
    assert again["sources"][0]["messages"] == 201 and "note" not in again
    store.close()
