"""A PostgreSQL store whose server goes away and comes back: calls say so at once, a busy pool is
still waited for, the calls after the server returns answer, and the pool's complaints stay off
stderr. The tests run a real server of their own (pgserver), which they stop and start."""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from contextlib import ExitStack

import pytest

import kenning
from kenning.errors import StorageError
from kenning.store.postgres import database

pgserver = pytest.importorskip("pgserver")


@pytest.fixture(scope="module")
def _server():
    """A PostgreSQL server of this module's own, since its tests stop it."""
    data = tempfile.mkdtemp(prefix="kenning-test-pg-outage-")
    handle = pgserver.get_server(data, cleanup_mode=None)
    yield handle
    if handle.get_postmaster_info().is_running():
        pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=handle.pgdata, user=handle.system_user)
    shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def server(_server):
    """The module's server, running, with a new database (``url``) and ``stop()`` and ``start()``."""
    import uuid

    import psycopg

    _server.ensure_postgres_running()
    name = "t" + uuid.uuid4().hex[:20]
    with psycopg.connect(_server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")

    class Server:
        url = _server.get_uri(name)

        @staticmethod
        def stop() -> None:
            pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=_server.pgdata, user=_server.system_user)

        @staticmethod
        def start() -> None:
            _server.ensure_postgres_running()

    return Server


def test_a_call_while_the_server_is_down_says_it_cannot_reach_it_and_why(server):
    """Every call waited the pool's 30 s and then said only "couldn't get a connection after 30.00
    sec" (an MCP tool call, an HTTP 503 each half a minute late); a call now asks the server directly
    once the pool has none to give, and says at once why it cannot be reached."""
    with kenning.open_store(server.url) as s:
        kept = s.write("The auth service listens on port 8443", scopes=["ops"]).id
        server.stop()
        for call in (lambda: s.search("auth port", mode="bm25"),
                     lambda: s.write("The billing service listens on port 9443", scopes=["ops"])):
            with pytest.raises(StorageError, match="cannot reach") as caught:
                call()
            assert "couldn't get a connection" not in str(caught.value)
            assert "No such file or directory" in str(caught.value) or "refused" in str(caught.value)
        server.start()
        assert [h.id for h in s.search("auth port", mode="bm25").hits] == [kept]


def test_a_call_waits_its_turn_for_a_pool_that_is_only_busy(server, monkeypatch):
    """Asking the server directly must not fail a call whose pool is merely lent out: it waits on."""
    db = database.PostgresDatabase(server.url)
    asked = threading.Event()
    real_connect = database.connect

    def connect(url):
        asked.set()
        return real_connect(url)

    monkeypatch.setattr(database, "connect", connect)
    answered = []
    try:
        with ExitStack() as held:  # every connection of the pool lent out
            for _ in range(db.pool.max_size):
                held.enter_context(db.pool.connection())
            reader = threading.Thread(target=lambda: answered.append("memories" in db.tables()))
            reader.start()
            assert asked.wait(60), "the call never asked whether the server is there"
        reader.join(60)
    finally:
        db.close()
    assert answered == [True]


@pytest.mark.slow
def test_the_first_call_after_a_long_outage_answers_without_waiting_for_the_pools_backoff(server):
    """The pool retried a lost server with delays doubling from 1 s for 5 minutes: after a 35 s
    outage its next retry came some 30 s after the server was back, and the call in between waited
    for it and failed. The retries now stop after a few seconds and the next call starts them anew."""
    db = database.PostgresDatabase(server.url)
    try:
        server.stop()
        with pytest.raises(StorageError, match="cannot reach"):
            db.tables()  # the pool starts retrying here
        time.sleep(33)  # past the retry at ~31 s: the next one would come at ~63 s
        server.start()
        db.pool.timeout = 10  # what a call may wait in all; the server is there now
        assert "memories" in db.tables()
    finally:
        db.close()


def test_the_pools_warnings_about_a_lost_server_stay_off_stderr(server, caplog):
    """psycopg_pool logged "discarding closed connection" and "error connecting in 'pool-1'" for each
    connection and retry, which Python printed on stderr: in a CLI's output and, every few seconds, in
    an MCP server's log. kenning's own error already says the server cannot be reached."""
    caplog.set_level(logging.INFO, logger="psycopg.pool")
    with kenning.open_store(server.url) as s:
        s.write("The auth service listens on port 8443", scopes=["ops"])
        server.stop()
        for _ in range(2):
            with pytest.raises(StorageError, match="cannot reach"):
                s.search("auth port", mode="bm25")
    said = [r.getMessage() for r in caplog.records if r.name == "psycopg.pool" and r.levelno >= logging.WARNING]
    assert said == []
    assert any(r.name == "psycopg.pool" for r in caplog.records)  # the pool did log, at INFO and below
    # another pool of the same process is heard as before
    logging.getLogger("psycopg.pool").warning("error connecting in %r: %s", "pool-9", "refused")
    assert caplog.records[-1].getMessage() == "error connecting in 'pool-9': refused"
