"""The PostgreSQL backend on its own terms: the dialect, the schema kept level with SQLite's, many
processes on one database, and clear errors. Runs against a real PostgreSQL (pgserver), in both
suite modes; the rest of the suite runs on PostgreSQL with KENNING_TEST_BACKEND=postgres."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import kenning
from kenning.errors import KenningError, StorageError
from kenning.store.postgres import dialect
from kenning.store.postgres.database import PostgresDatabase, display_url
from kenning.store.transfer import TABLES


def test_the_dialect_says_sqlite_idioms_in_postgresql():
    t = dialect.translate
    assert t("SELECT record FROM memories WHERE id = ? AND x IS ? AND y IS NOT ?") == (
        "SELECT record FROM memories WHERE id = %s AND x IS NOT DISTINCT FROM %s AND y IS DISTINCT FROM %s")
    assert t("SELECT json_extract(payload, '$.use_token') FROM events") == (
        "SELECT (payload::jsonb #>> '{use_token}') FROM events")
    assert t("SELECT value FROM events, json_each(events.payload, '$.hit_ids') WHERE kind = ?") == (
        "SELECT value FROM events, jsonb_array_elements_text(events.payload::jsonb #> '{hit_ids}') AS je(value) "
        "WHERE kind = %s")
    assert t("INSERT OR IGNORE INTO embed_queue(mem) VALUES (?)") == (
        "INSERT INTO embed_queue(mem) VALUES (%s) ON CONFLICT DO NOTHING")
    assert t("INSERT OR REPLACE INTO lex_segments(term, seg, postings) VALUES (?, ?, ?)") == (
        "INSERT INTO lex_segments(term, seg, postings) VALUES (%s, %s, %s) "
        "ON CONFLICT ((md5(term)), seg) DO UPDATE SET postings = EXCLUDED.postings")
    assert t("SELECT id FROM memories WHERE rowid IN (?) AND +removed_at IS NULL AND instr(content, '/') > 0") == (
        "SELECT id FROM memories WHERE rowid IN (%s) AND removed_at IS NULL AND strpos(content, '/') > 0")
    assert t("SELECT 'a?b%' || ? FROM meta WHERE value LIKE '50%'") == "SELECT 'a?b%%' || %s FROM meta WHERE value LIKE '50%%'"
    assert t("UPDATE transcript_ledgers SET offset = ? WHERE id = ?") == (
        'UPDATE transcript_ledgers SET "offset" = %s WHERE id = %s')
    assert t("INSERT INTO lex_counts(term, n) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET n = lex_counts.n + excluded.n") == (
        "INSERT INTO lex_counts(term, n) VALUES (%s, %s) ON CONFLICT ((md5(term))) DO UPDATE SET n = lex_counts.n + excluded.n")
    assert t("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value") == (
        "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
    with pytest.raises(ValueError, match="REPLACE_KEYS"):
        t("INSERT OR REPLACE INTO memories(id) VALUES (?)")


def _sqlite_columns(path: Path) -> dict[str, list[str]]:
    con = sqlite3.connect(path / "kenning.sqlite3")
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                        "AND name NOT LIKE 'sqlite_%'")]
    return {t: sorted(r[1] for r in con.execute(f"PRAGMA table_info({t})")) for t in tables}


def test_both_schemas_hold_the_same_tables_and_columns_and_migrate_copies_them_all(tmp_path, postgres_url):
    from kenning.store.backend import open_backend
    from kenning.store.db import LOCAL_TABLES, Database

    Database(tmp_path / "kenning.sqlite3").close()
    sqlite_side = {t: c for t, c in _sqlite_columns(tmp_path).items() if t not in LOCAL_TABLES}
    db = open_backend(postgres_url).db
    try:
        rows = db.read(lambda c: c.raw.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name NOT IN ('kenning_schema', 'kenning_generation', 'kenning_row_counts')").fetchall())
    finally:
        db.close()
    from kenning.store.postgres.schema import DERIVED_COLUMNS

    pg_side: dict[str, list[str]] = {}
    for table, column in rows:
        if column not in DERIVED_COLUMNS.get(table, ()):  # pgvector's copy of the vector bytes
            pg_side.setdefault(table, []).append(column)
    assert {t: sorted(c) for t, c in pg_side.items()} == sqlite_side
    assert {t: sorted(c) for t, c in TABLES.items()} == sqlite_side


def test_a_newer_schema_on_the_server_is_refused(postgres_url):
    PostgresDatabase(postgres_url).close()
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE kenning_schema SET version = version + 1")
    with pytest.raises(KenningError, match="newer kenning"):
        kenning.open_store(postgres_url)


def test_another_store_object_sees_a_commit_at_its_next_call(postgres_url, tmp_path):
    with kenning.open_store(postgres_url) as a, kenning.open_store(postgres_url) as b:
        assert b.search("auth port", mode="bm25").hits == []  # b has loaded its lexicon
        mid = a.write("The auth service listens on port 8443", scopes=["projects:auth"]).id
        assert [h.id for h in b.search("auth port", mode="bm25").hits] == [mid]
        a.configure(bm25_k1=1.7)
        assert b.config.bm25_k1 == 1.7
        b.remove(mid, reason="moved")
        assert a.search("auth port", mode="bm25").hits == []
    done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", postgres_url, "write",
                           "The billing job runs nightly", "--scope", "projects:billing", "--json"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with kenning.open_store(postgres_url) as c:
        assert [h.snippet for h in c.search("billing nightly", mode="bm25").hits] == ["The billing job runs nightly"]


def _writer(url: str, worker: int, n: int) -> None:
    with kenning.open_store(url) as s:
        for i in range(n):
            result = s.write(f"worker {worker} note {i}: the queue {worker}-{i} drains at {i} per second",
                             scopes=[f"w:{worker}"], force=True)
            assert result.status == "committed", result
            s.search(f"queue {worker}-{i}", mode="bm25")


def test_concurrent_processes_lose_no_write(postgres_url):
    import multiprocessing

    kenning.open_store(postgres_url).close()  # schema in place before the workers race
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_writer, args=(postgres_url, w, 25)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(300)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    with kenning.open_store(postgres_url) as s:
        assert s.count() == 100
        assert s.check()["ok"], s.check()
        for w in range(4):
            assert len(s.search(f"queue {w}-24", mode="bm25", limit=50).hits) >= 1


def test_the_password_never_shows_and_an_unreachable_server_is_one_clear_error(tmp_path):
    assert display_url("postgresql://kenning:s3cret@db.internal:5433/mem") == "postgresql://kenning:***@db.internal:5433/mem"
    sock = tmp_path / "nothing-here"
    sock.mkdir()
    url = f"postgresql://kenning:s3cret@/mem?host={sock}&connect_timeout=1"
    done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", url, "search", "x"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "cannot reach" in done.stderr and "s3cret" not in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_server_that_accepts_and_never_answers_is_given_the_urls_connect_timeout(tmp_path, monkeypatch):
    """A host that does not answer at all held every command the fixed 10 s connect_timeout, and a
    connect_timeout in the URL (or $PGCONNECT_TIMEOUT), which a server slow to wake needs, was overridden
    by it. The default is now 5 s; the URL's value, else the variable's, is the one used, and the error
    says how to give a slow server more time. A local socket that accepts and never speaks stands for the
    host (a real unrouted address is answered by this machine's network at once)."""
    import socket

    from kenning.store.postgres.database import CONNECT_TIMEOUT_S, connect_timeout

    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    assert connect_timeout("postgresql://kenning@db.internal/mem") == CONNECT_TIMEOUT_S == 5
    assert connect_timeout("postgresql://kenning@db.internal/mem?connect_timeout=30") == 30
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "20")
    assert connect_timeout("postgresql://kenning@db.internal/mem") == 20
    assert connect_timeout("postgresql://kenning@db.internal/mem?connect_timeout=1") == 2  # libpq's least
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        # the URL's 2 s, over $PGCONNECT_TIMEOUT's 20 s (still set)
        url = f"postgresql://kenning:s3cret@127.0.0.1:{silent.getsockname()[1]}/mem?connect_timeout=2"
        done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", url, "search", "x"],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "s3cret" not in done.stderr
    assert done.stderr.startswith("error: cannot reach postgresql://kenning:***@127.0.0.1:")
    assert "no answer within its connect_timeout" in done.stderr and "?connect_timeout=30" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("url, says", [
    ("postgresql://kenning:s3%cret@127.0.0.1:1/mem", "write a % in the user or password as %25"),
    ("postgresql://kenning:s3cret@127.0.0.1:99999/mem", "invalid port number"),
    ("postgresql://kenning:s3cret@127.0.0.1:1/mem?sslmod=require", 'invalid URI query parameter: "sslmod"'),
])
def test_a_url_postgresql_cannot_read_is_one_line_without_the_password(url, says, tmp_path):
    """A password with an unescaped %, a port out of range or a misspelt parameter was a traceback
    (psycopg's ProgrammingError, urllib's ValueError), and the first printed the password."""
    with pytest.raises(KenningError, match=re.escape(says)) as caught:
        kenning.open_store(url)
    assert "s3" not in str(caught.value)
    env = {**os.environ, "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    for args in (["--store", url, "search", "x"], ["--store", url, "info"], ["migrate", url, str(tmp_path / "copy")]):
        done = subprocess.run([sys.executable, "-m", "kenning", *args], capture_output=True, text=True, env=env,
                              timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr and "s3" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def _end_sessions(url: str) -> int:
    """What a server restart or failover does to a store's pooled connections: their sessions end."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        return len(admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                 "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall())


def test_the_calls_after_the_server_ended_the_pooled_sessions_answer(postgres_url):
    """After a restart each stale pooled connection failed one call with 'cannot reach' (an HTTP or
    MCP server answered 503s to a server that was up again); the pool now checks its idle
    connections at the first such failure and the call runs on a live one."""
    from contextlib import ExitStack

    db = PostgresDatabase(postgres_url)
    try:
        with ExitStack() as held:  # the pool grows to three connections, idle afterwards
            for _ in range(3):
                held.enter_context(db.pool.connection())
        assert _end_sessions(postgres_url) >= 3
        assert all("memories" in db.tables() for _ in range(3))
        _end_sessions(postgres_url)
        for n in range(3):
            with db.transaction() as c:
                c.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (f"probe{n}", "1"))
        assert [db.get_meta(f"probe{n}") for n in range(3)] == ["1"] * 3
    finally:
        db.close()
    with kenning.open_store(postgres_url) as s:
        kept = s.write("The auth service listens on port 8443", scopes=["ops"]).id
        _end_sessions(postgres_url)
        assert [h.id for h in s.search("auth port", mode="bm25").hits] == [kept]
        _end_sessions(postgres_url)
        assert s.write("The billing service listens on port 9443", scopes=["ops"]).status == "committed"


def _end_sessions_and_wait(url: str) -> None:
    """``_end_sessions``, returning once the ended sessions are gone (pg_terminate_backend only asks)."""
    import time

    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        ended = [pid for (pid,) in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")]
        for pid in ended:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 30
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (ended,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the ended sessions did not go"
            time.sleep(0.05)


def test_a_session_that_ends_just_after_the_pool_checked_it_is_replaced_too(postgres_url):
    """A failover or pg_terminate_backend ends sessions one by one: a connection the pool's check
    found alive may be gone a moment later, and the call's second try failed with 'cannot reach' (a
    CI run met it). The broken connection is replaced again, once per connection the pool holds."""
    db = PostgresDatabase(postgres_url)
    try:
        from contextlib import ExitStack

        with ExitStack() as held:
            for _ in range(3):
                held.enter_context(db.pool.connection())
        _end_sessions_and_wait(postgres_url)
        check, late = db.pool.check, []

        def check_then_end() -> None:  # the real check, then the server ends what it found alive, once
            check()
            if not late:
                late.append(True)
                _end_sessions_and_wait(postgres_url)

        db.pool.check = check_then_end
        with db.transaction() as c:
            c.execute("INSERT INTO meta(key, value) VALUES (?, ?)", ("late", "1"))
        assert late and db.get_meta("late") == "1"
    finally:
        db.close()


@pytest.mark.parametrize("how", ["role", "server"])
def test_a_store_this_connection_may_only_read_answers_reads_and_refuses_writes_in_one_line(how, postgres_url, tmp_path):
    """Opening ran CREATE TABLE IF NOT EXISTS first: a role granted SELECT only (no CREATE on the
    schema) and a server that takes no writes (a standby, default_transaction_read_only) failed every
    command, search included, the latter with a ReadOnlySqlTransaction traceback."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    from kenning.errors import ReadOnlyStore

    writer = kenning.open_store(postgres_url)
    kept = writer.write("The auth service listens on port 8443", scopes=["ops"]).id
    role = "reader_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        if how == "role":
            admin.execute(f"CREATE ROLE {role} LOGIN")
            admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
            parts = urlsplit(postgres_url)
            url = urlunsplit(parts._replace(netloc=parts.netloc.replace(parts.username, role, 1)))
        else:
            admin.execute(f"ALTER DATABASE {urlsplit(postgres_url).path.lstrip('/')} SET default_transaction_read_only = on")
            url = postgres_url
    try:
        if how == "server":  # a failover to a standby under an open store: its next write says so
            _end_sessions(postgres_url)
            with pytest.raises(ReadOnlyStore, match="takes no writes now"):
                writer.write("The billing service listens on port 9443", scopes=["ops"])
        with kenning.open_store(url) as s:
            assert [h.id for h in s.search("auth port", mode="bm25").hits] == [kept] and s.stats()["read_only"]
            with pytest.raises(ReadOnlyStore, match="role may not insert" if how == "role" else "server takes no writes"):
                s.write("The billing service listens on port 9443", scopes=["ops"])
        env = {**os.environ, "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
        cli = [sys.executable, "-m", "kenning", "--store", url]
        found = subprocess.run([*cli, "search", "auth port", "--json"], capture_output=True, text=True, env=env)
        assert found.returncode == 0 and json.loads(found.stdout)["hits"][0]["id"] == kept, found.stderr
        refused = subprocess.run([*cli, "write", "The billing service listens on port 9443", "--scope", "ops"],
                                 capture_output=True, text=True, env=env)
        assert refused.returncode != 0 and "read-only" in refused.stderr and "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    finally:
        writer.close()
        if how == "role":
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                admin.execute(f"DROP OWNED BY {role}")
                admin.execute(f"DROP ROLE {role}")


def test_a_statement_the_servers_statement_timeout_cancels_is_not_called_unreachable(postgres_url):
    """QueryCanceled is an OperationalError: a write that ran into the server's statement_timeout
    (here: waiting for a lock another session holds) said 'cannot reach ... check the server and the URL'."""
    from urllib.parse import urlsplit

    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {urlsplit(postgres_url).path.lstrip('/')} SET statement_timeout = 300")
    with kenning.open_store(postgres_url) as s, psycopg.connect(postgres_url) as blocker:
        blocker.execute("UPDATE kenning_generation SET n = n")  # holds the write lock until its rollback
        with pytest.raises(StorageError, match="statement_timeout") as caught:
            s.write("The auth service listens on port 8443", scopes=["ops"])
        assert "cannot reach" not in str(caught.value)
        blocker.rollback()
        assert s.write("The auth service listens on port 8443", scopes=["ops"]).status == "committed"


def test_every_connection_speaks_utf8_whatever_pgclientencoding_says(postgres_url, monkeypatch):
    """With PGCLIENTENCODING=LATIN1 in the environment a search of a store holding one CJK memory
    failed ('has no equivalent in encoding LATIN1'), and such a write was called a lone surrogate."""
    with kenning.open_store(postgres_url) as s:
        kept = s.write("The 東京 cache server listens on port 6379", scopes=["ops"]).id
    monkeypatch.setenv("PGCLIENTENCODING", "LATIN1")
    with kenning.open_store(postgres_url) as s:
        assert [h.id for h in s.search("cache server port", mode="bm25").hits] == [kept]
        assert s.write("The 大阪 mirror listens on port 6380", scopes=["ops"]).status == "committed"
        assert {m.content for m in s.list(auto_scope=False)} >= {"The 大阪 mirror listens on port 6380"}


def test_a_new_store_is_refused_in_a_database_not_encoded_utf8(postgres_url):
    """A LATIN1 database took a new store, then refused every write outside Latin-1 with a message
    about lone surrogates."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    from kenning.store.postgres.database import holds_store

    name = urlsplit(postgres_url).path.lstrip("/") + "_latin1"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    url = urlunsplit(urlsplit(postgres_url)._replace(path="/" + name))
    try:
        with pytest.raises(StorageError, match="encoded LATIN1.*ENCODING 'UTF8'"):
            kenning.open_store(url)
        assert not holds_store(url)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_stored_times_read_back_whole_whatever_extra_float_digits_says(postgres_url, monkeypatch):
    """Floats come back as text: with extra_float_digits 0 (PGOPTIONS, an old postgresql.conf) every
    stored time lost its last digits on a read, and kenning migrate copied the rounded values."""
    from datetime import datetime, timezone

    from kenning.store.transfer import rows

    written = datetime(2026, 1, 2, 3, 4, 5, 123457, tzinfo=timezone.utc)  # 16 digits as epoch seconds
    with kenning.open_store(postgres_url, clock=lambda: written) as s:
        for n in range(3):
            s.write(f"Worker {n} drains the jobs table every {n + 2} seconds", scopes=["ops"])

    def stored_times() -> list[tuple]:
        db = PostgresDatabase(postgres_url)
        try:
            return rows(db, "lex_docs")
        finally:
            db.close()

    before = stored_times()
    assert [r[4] for r in before] == [written.timestamp()] * 3
    monkeypatch.setenv("PGOPTIONS", "-c extra_float_digits=0")
    assert stored_times() == before


def test_writers_queue_whatever_isolation_level_the_server_defaults_to(postgres_url):
    """Writers queue on the generation row's lock; with default_transaction_isolation 'serializable'
    (or 'repeatable read') the one that waited failed with 'could not serialize access', said as
    'cannot reach': concurrent writes were lost."""
    import threading
    import time
    from urllib.parse import urlsplit

    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {urlsplit(postgres_url).path.lstrip('/')} "
                      "SET default_transaction_isolation = 'serializable'")
    first, second = PostgresDatabase(postgres_url), PostgresDatabase(postgres_url)
    failed: list[BaseException] = []

    def write_second() -> None:
        try:
            with second.transaction() as c:
                c.execute("INSERT INTO meta(key, value) VALUES ('second', '1')")
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            failed.append(exc)

    try:
        with first.transaction() as c:
            c.execute("INSERT INTO meta(key, value) VALUES ('first', '1')")
            waiter = threading.Thread(target=write_second)
            waiter.start()
            with psycopg.connect(postgres_url, autocommit=True) as watch:  # until the second waits for our lock
                deadline = time.monotonic() + 60
                while not watch.execute("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                                        "AND wait_event_type = 'Lock'").fetchone():
                    assert time.monotonic() < deadline, "the second writer never waited"
                    time.sleep(0.02)
        waiter.join()
        assert failed == [] and first.get_meta("first") == second.get_meta("second") == "1"
    finally:
        first.close()
        second.close()


def test_info_counts_the_tables_on_the_server_in_the_store_size(postgres_url):
    """The size counted the files of this host's cache folder alone: 0.0 MB for a store of any size."""
    import psycopg

    with kenning.open_store(postgres_url) as s:
        s.write("The auth service listens on port 8443", scopes=["ops"])
        with psycopg.connect(postgres_url) as watch:
            on_server = watch.execute("SELECT pg_total_relation_size('memories') + "
                                      "pg_total_relation_size('events')").fetchone()[0]
        assert s.stats()["size_bytes"] > on_server > 0


def test_a_store_another_process_creates_meanwhile_is_opened_whatever_the_isolation_level(postgres_url):
    """Under default_transaction_isolation 'serializable' a process that waited for another's creation
    of the tables read the version with a snapshot from before it, made them again and failed: 'already
    holds a table named memories that is not kenning's'."""
    import threading
    import time
    from urllib.parse import urlsplit

    import psycopg

    from kenning.store.postgres import schema
    from kenning.store.postgres.database import MIGRATE_LOCK

    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {urlsplit(postgres_url).path.lstrip('/')} "
                      "SET default_transaction_isolation = 'serializable'")
    outcome: list[object] = []

    def open_it() -> None:
        try:
            PostgresDatabase(postgres_url).close()
            outcome.append("opened")
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    with psycopg.connect(postgres_url, autocommit=True) as other:  # the other process, creating the tables
        other.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
        opener = threading.Thread(target=open_it)
        opener.start()
        deadline = time.monotonic() + 60
        while not other.execute("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                                "AND wait_event = 'advisory'").fetchone():
            assert time.monotonic() < deadline, "the opener never waited for the migration lock"
            time.sleep(0.02)
        other.execute("CREATE TABLE kenning_schema (version INTEGER NOT NULL)")
        for step in schema.MIGRATIONS:
            for statement in step:
                other.execute(statement)
        other.execute("INSERT INTO kenning_schema(version) VALUES (%s)", (schema.SCHEMA_VERSION,))
        other.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))
        opener.join()
    assert outcome == ["opened"]


def test_info_names_the_server_without_its_password(postgres_url):
    kenning.open_store(postgres_url).close()
    done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", postgres_url, "info", "--json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["exists"] and report["store"].startswith("postgresql://") and report["memories"] == 0


def test_a_transaction_waits_for_the_write_lock_at_most_as_long_as_asked(postgres_url):
    from kenning.errors import StorageError

    first, second = PostgresDatabase(postgres_url), PostgresDatabase(postgres_url)
    try:
        with first.transaction():
            with pytest.raises(StorageError, match="locked"):
                with second.waiting_at_most(50), second.transaction():
                    pass
        with second.waiting_at_most(50), second.transaction() as c:  # free again: it commits
            assert c.raw.execute("SHOW lock_timeout").fetchone()[0] == "50ms"
            c.execute("INSERT INTO meta(key, value) VALUES ('probe', '1')")
        assert second.get_meta("probe") == "1"
        with second.transaction() as c:  # outside the block: the connection's own limit again
            assert c.raw.execute("SHOW lock_timeout").fetchone()[0] == "30s"
    finally:
        first.close()
        second.close()


def test_a_long_executemany_goes_through_copy_and_ends_as_the_row_by_row_statements_would(postgres_url):
    """Bulk rows (an import, lexicon postings) are loaded with COPY; plain inserts, INSERT OR IGNORE
    with a key twice, INSERT OR REPLACE with a key twice (the last wins) and keys the server assigns
    in order all come out as one statement a row gives them."""
    from kenning.store.postgres.database import COPY_FROM_ROWS

    n = COPY_FROM_ROWS * 3
    results = {}
    for bulk in (True, False):
        db = PostgresDatabase(postgres_url)
        try:
            with db.transaction() as c:
                c.execute("DELETE FROM meta WHERE key LIKE 'bulk%'")
                c.execute("DELETE FROM lex_segments")
                c.execute("DELETE FROM embed_queue")
                c.execute("DELETE FROM events")
                c.execute("DELETE FROM lex_counts")
                rows = [(f"bulk{i}", f"v{i}\t'quote'\\n") for i in range(n)]
                chunks = [rows] if bulk else [[r] for r in rows]  # one long call, or calls too short for COPY
                for chunk in chunks:
                    c.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", chunk)
                queue = [(i % 50,) for i in range(n)]
                for chunk in ([queue] if bulk else [[q] for q in queue]):
                    c.executemany("INSERT OR IGNORE INTO embed_queue(mem) VALUES (?)", chunk)
                postings = [(f"term{i % 40}", i % 3, bytes([i % 256, 7])) for i in range(n)]
                for chunk in ([postings] if bulk else [[p] for p in postings]):
                    c.executemany("INSERT OR REPLACE INTO lex_segments(term, seg, postings) VALUES (?, ?, ?)", chunk)
                events = [(f"2026-01-01T00:00:{i % 60:02d}", "s", "write", f"m{i}") for i in range(n)]
                for chunk in ([events] if bulk else [[e] for e in events]):
                    c.executemany("INSERT INTO events(at, session, kind, memory_id) VALUES (?, ?, ?, ?)", chunk)
                counts = [(f"term{i}", i) for i in range(n)]  # added twice: the second call's rows all conflict
                for chunk in ([counts, counts] if bulk else [[r] for r in counts + counts]):
                    c.executemany("INSERT INTO lex_counts(term, n) VALUES (?, ?) "
                                  "ON CONFLICT(term) DO UPDATE SET n = lex_counts.n + excluded.n", chunk)
            results[bulk] = db.read(lambda c: (
                c.execute("SELECT term, n FROM lex_counts ORDER BY term").fetchall(),
                c.execute("SELECT key, value FROM meta WHERE key LIKE 'bulk%' ORDER BY key").fetchall(),
                c.execute("SELECT mem FROM embed_queue ORDER BY mem").fetchall(),
                c.execute("SELECT term, seg, postings FROM lex_segments ORDER BY term, seg").fetchall(),
                [r[1:] for r in c.execute("SELECT rowid, memory_id FROM events ORDER BY rowid").fetchall()]))
        finally:
            db.close()
    counted, meta, queue, segments, events = results[True]
    assert sorted((term, int(n)) for term, n in counted) == sorted((f"term{i}", 2 * i) for i in range(n))
    assert len(meta) == n and ("bulk1", "v1\t'quote'\\n") in [tuple(r) for r in meta]
    assert [r[0] for r in queue] == list(range(50))
    last = max(i for i in range(n) if i % 40 == 0 and i % 3 == 0)
    assert len(segments) == 40 * 3
    assert [tuple(r) for r in segments if r[0] == "term0" and r[1] == 0] == [("term0", 0, bytes([last % 256, 7]))]
    assert [r[0] for r in events] == [f"m{i}" for i in range(n)]  # keys assigned in the rows' order
    assert results[True] == results[False]


def _generation_reads(monkeypatch) -> list[str]:
    """Every statement that reads kenning_generation from now on, as it is sent."""
    import psycopg

    seen: list[str] = []
    execute = psycopg.Cursor.execute

    def spied(self, query, *args, **kwargs):
        if "FROM kenning_generation" in str(query):
            seen.append(str(query))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", spied)
    return seen


def test_a_search_reads_the_generation_once_and_sees_another_process_commit_at_the_next(
        postgres_url, tmp_path, monkeypatch):
    """The settings, the lexicon and the trust memo of one search share one look at
    kenning_generation; a memory another process writes (and a setting it changes) is still found
    by the next search of a Store that has already loaded its lexicon."""
    with kenning.open_store(postgres_url) as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
        s.search("auth port", mode="bm25")  # lexicon and settings loaded
        reads = _generation_reads(monkeypatch)
        first = s.search("auth port", mode="bm25")
        assert len(first.hits) == 1 and len(reads) == 1
        done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", postgres_url, "write",
                               "The auth port moved to 9443 behind the gateway", "--scope", "projects:auth", "--json"],
                              capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", postgres_url, "config", "set",
                               "bm25_k1", "1.7"], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        del reads[:]
        second = s.search("auth port", mode="bm25")
        assert len(second.hits) == 2 and len(reads) == 1
        assert s.config.bm25_k1 == 1.7


def test_a_search_holding_an_older_generation_does_not_make_another_threads_commit_look_foreign(postgres_url):
    """Threads share one Store (a server). A search's one_generation block holds the count it read
    first; another thread's commit meanwhile is the Store's own, so data_version must not change,
    neither in the block nor after it. Going back to the held count made the caches reload an older
    state (test_store_threads on PostgreSQL: a lexicon whose doc arrays missed a posting's document)."""
    import threading

    with kenning.open_store(postgres_url) as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
        db = s.db
        version = db.data_version()
        with db.one_generation():
            assert db.data_version() == version  # the block's count is read here and held
            writer = threading.Thread(target=lambda: s.write("The billing job runs nightly at two",
                                                             scopes=["projects:billing"]))
            writer.start()
            writer.join()
            assert db.data_version() == version
        assert db.data_version() == version
        assert [h.snippet for h in s.search("billing nightly", mode="bm25").hits] == ["The billing job runs nightly at two"]


def test_the_transcript_tables_row_counts_follow_every_change_and_show_in_other_connections(postgres_url):
    """schema 6's kenning_row_counts against count(*) after inserts row by row and through COPY,
    an upsert that replaces vectors, and deletes; read through another connection each time."""
    import psycopg

    from kenning.store.postgres.database import COPY_FROM_ROWS

    writer, reader = PostgresDatabase(postgres_url), PostgresDatabase(postgres_url)

    def counted(model: str) -> tuple[int, int]:
        with psycopg.connect(postgres_url) as conn:
            truth = conn.execute("SELECT (SELECT count(*) FROM transcript_messages) - "
                                 "(SELECT count(*) FROM transcript_embeddings WHERE model_id = %s)", (model,)).fetchone()[0]
        return reader.rows_without_vectors("transcript_messages", "transcript_embeddings", model), truth

    def messages(c, keys):
        c.executemany("INSERT INTO transcript_messages(rowid, ledger, line, at, speaker, text) VALUES (?, 1, ?, ?, 'user', 'hi')",
                      [(k, k, float(k)) for k in keys])

    def vectors(c, keys, model, statement="INSERT"):
        c.executemany(f"{statement} INTO transcript_embeddings(mem, model_id, vector) VALUES (?, ?, ?)",
                      [(k, model, bytes(8)) for k in keys])

    try:
        assert counted("a") == (0, 0)
        with writer.transaction() as c:
            c.execute("INSERT INTO transcript_sources(id, path, project, added) VALUES (1, '/t', 'p', 'now')")
            c.execute("INSERT INTO transcript_ledgers(id, source, path, size, mtime_ns, offset, head, tail) "
                      "VALUES (1, 1, '/t/a.jsonl', 0, 0, 0, '', '')")
            messages(c, range(1, 11))  # row by row
            messages(c, range(11, 11 + COPY_FROM_ROWS * 2))  # through COPY
        total = 10 + COPY_FROM_ROWS * 2
        assert counted("a") == (total, total)
        with writer.transaction() as c:
            vectors(c, range(1, 1 + COPY_FROM_ROWS), "a")  # COPY
            vectors(c, range(1, 4), "b")  # row by row
        assert counted("a") == (total - COPY_FROM_ROWS,) * 2 and counted("b") == (total - 3,) * 2
        with writer.transaction() as c:  # replaces five vectors of model a, adds two: a conflict is an update
            vectors(c, range(COPY_FROM_ROWS - 4, COPY_FROM_ROWS + 3), "a", "INSERT OR REPLACE")
            vectors(c, range(1, 1 + COPY_FROM_ROWS + 2), "a", "INSERT OR REPLACE")  # every one again, via COPY
        assert counted("a") == (total - COPY_FROM_ROWS - 2,) * 2
        with writer.transaction() as c:
            c.execute("DELETE FROM transcript_embeddings WHERE model_id != ?", ("a",))
            c.execute("DELETE FROM transcript_embeddings WHERE mem <= 5")
            c.execute("DELETE FROM transcript_messages WHERE rowid <= 20")
        assert counted("a") == (total - 20 - (COPY_FROM_ROWS + 2 - 5),) * 2 and counted("b") == (total - 20,) * 2
    finally:
        writer.close()
        reader.close()


def test_check_names_the_server_without_its_password_not_a_local_cache_folder(postgres_url):
    kenning.open_store(postgres_url).close()
    done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", postgres_url, "check", "--json"],
                          capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["store"].startswith("postgresql://")  # was: ~/.cache/kenning/servers/<hash>
