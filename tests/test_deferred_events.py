"""Read events are queued and committed in batches: a search never takes the write lock, and nothing
that reads the log (since_prior_session, the outcome loop, the audit) misses a queued row."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time

import pytest

import kenning
from kenning.memory import deferred

pytestmark = pytest.mark.sqlite_only  # counts rows through a second SQLite connection, and holds its write lock


def committed(store_dir, kind="search") -> int:
    """Event rows another connection can see (what is on disk, not what a session holds queued)."""
    con = sqlite3.connect(store_dir / "kenning.sqlite3")
    try:
        return con.execute("SELECT COUNT(*) FROM events WHERE kind = ?", (kind,)).fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def slow_flush(monkeypatch):
    monkeypatch.setattr(deferred, "FLUSH_AFTER", 3600.0)


@pytest.fixture
def home(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        s.import_records([{"content": f"the billing service runs on port {8000 + i}", "scopes": ["t"]}
                          for i in range(20)])
    return tmp_path / "s"


def test_a_search_is_queued_and_every_reader_of_the_log_sees_it(home, slow_flush):
    store = kenning.open_store(home)
    store.search("billing port", mode="bm25")
    store.show(store.search("billing", mode="bm25").hits[0].id)
    assert committed(home) == 0 and committed(home, "show") == 0  # nothing on disk yet
    assert len(store.events(kinds=["search"])) == 2  # reading the log commits the queue first
    assert committed(home) == 2 and committed(home, "show") == 1
    store.close()


def test_close_commits_the_queue(home, slow_flush):
    store = kenning.open_store(home)
    for _ in range(3):
        store.search("billing", mode="keyword")
    store.list(limit=3)
    store.close()
    assert committed(home) == 3 and committed(home, "list") == 1


def test_a_process_that_exits_without_close_still_commits(home):
    code = ("import sys, kenning; from kenning.memory import deferred; deferred.FLUSH_AFTER = 3600.0; "
            "s = kenning.open_store(sys.argv[1]); s.search('billing', mode='bm25'); s.search('port', mode='bm25')")
    done = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert committed(home) == 2


def test_the_background_thread_commits_without_any_other_call(home, monkeypatch):
    monkeypatch.setattr(deferred, "FLUSH_AFTER", 0.05)
    store = kenning.open_store(home)
    store.search("billing", mode="bm25")
    deadline = time.monotonic() + 30
    while committed(home) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert committed(home) == 1
    store.close()


def test_since_prior_session_sees_another_sessions_queued_search(home, slow_flush):
    a = kenning.open_store(home, session_id="a")
    a.search("billing", mode="bm25")
    b = kenning.open_store(home, session_id="b")
    result = b.search("billing", mode="bm25", since_prior_session=True)
    assert result.note is None  # a's search counts as a prior session's event
    a.close(), b.close()


def test_own_write_commits_the_queue_first_so_the_log_keeps_its_order(home, slow_flush):
    store = kenning.open_store(home)
    store.search("billing", mode="bm25")
    store.write("the ledger service stores invoices in postgres", scopes=["t"])
    kinds = [e["kind"] for e in store.events(session=store.session_id)]
    assert kinds.index("search") < kinds.index("write")
    store.close()


def test_hits_settle_two_searches_later_and_at_the_end_of_the_turn(home, slow_flush):
    store = kenning.open_store(home)
    first = store.search("billing port", mode="bm25")
    store.search("billing", mode="bm25")
    store.search("port", mode="bm25")
    settled = [e for e in store.events(kinds=["use_settled"])]
    assert [e["payload"]["use_token"] for e in settled] == [first.use_token]
    applied = {e["memory_id"] for e in store.events(kinds=["outcome"]) if e["payload"].get("use_token") == first.use_token}
    assert applied == {h.id for h in first.hits}
    store.settle_uses()  # the two still open settle at the end of the turn
    assert len(store.events(kinds=["use_settled"])) == 3
    store.close()


def test_a_search_answers_while_another_connection_holds_the_write_lock(home, monkeypatch):
    monkeypatch.setattr(deferred, "FLUSH_AFTER", 0.05)
    store = kenning.open_store(home)
    store.search("billing", mode="bm25", record=False)  # warm
    blocker = sqlite3.connect(home / "kenning.sqlite3", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    answers = []
    reader = threading.Thread(target=lambda: answers.extend(
        store.search("billing", mode="bm25").hits for _ in range(5)))
    reader.start()
    reader.join(timeout=25)  # a search logging in its own transaction would wait the busy timeout (30 s)
    assert not reader.is_alive() and len(answers) == 5
    assert committed(home) == 0
    blocker.execute("COMMIT")
    blocker.close()
    assert len(store.events(kinds=["search"])) == 5
    store.close()


def test_a_failure_whose_message_says_closed_keeps_the_rows_for_the_next_try(home, monkeypatch):
    """The background flush dropped the queue when an error's text said "closed", meaning the store
    was closed behind the session; a PostgreSQL restart says "server closed the connection
    unexpectedly" of a store still open, and the next try gets through. Only a closed store drops."""
    monkeypatch.setattr(deferred, "FLUSH_AFTER", 0.05)
    real, failed = deferred.DeferredEvents.flush, []

    def fails_once(self, wait=True, wait_ms=None):
        if not failed:
            failed.append(True)
            raise sqlite3.OperationalError("server closed the connection unexpectedly")
        return real(self, wait, wait_ms)

    monkeypatch.setattr(deferred.DeferredEvents, "flush", fails_once)
    store = kenning.open_store(home)
    store.search("billing", mode="bm25")
    deadline = time.monotonic() + 30
    while committed(home) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert failed and committed(home) == 1
    store.close()
