"""A PostgreSQL database behind the same seam as store/db.py's SQLite Database.

The lifecycle modules receive a connection-like object from ``transaction()`` and ``read()`` and
speak kenning's SQL dialect to it (``dialect.py`` says it in PostgreSQL). The discipline matches
SQLite's: every change is one transaction that first bumps ``kenning_generation`` (whose row lock
queues writers, as BEGIN IMMEDIATE does, so a check-then-write inside a transaction sees every
earlier commit); ``data_version()`` changes when another process committed, never for our own
commits, so in-process caches (the lexicon, the settings, the vector index) reload exactly when
someone else wrote. Connections come from a psycopg_pool pool; a thread inside a transaction reads
through that transaction's connection, so it sees its own uncommitted rows, as with SQLite.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .. import looks
from . import dialect, pool_logs, schema

# how long a connection may take when the URL and $PGCONNECT_TIMEOUT name no connect_timeout: a live
# server (through PgBouncer, with SCRAM, across a continent) answers within a second or two, while a host
# that does not answer at all (a VPN down) held every command 10 s; a server slower to wake (a serverless
# one resuming) is given more by ?connect_timeout=30 in its URL, which the fixed 10 s used to override
CONNECT_TIMEOUT_S = 5
RECONNECT_S = 10  # how long the pool's own retries of a lost server go on before the next call starts them anew
# a call waits this long for a pooled connection before asking whether the server is there at all
REACH_S = 2
# every connection speaks UTF-8, whatever PGCLIENTENCODING or the URL say: with LATIN1 there a search
# of a store holding one CJK memory failed ("has no equivalent in encoding LATIN1")
SESSION = {"autocommit": True, "client_encoding": "UTF8"}
LOCK_TIMEOUT_MS = 30_000  # as SQLite's busy_timeout: a writer waits this long for the one before it
COPY_FROM_ROWS = 64  # an executemany this long goes through COPY (see Connection._copy_in)
MIGRATE_LOCK = 0x6B656E6E  # pg_advisory_xact_lock key while a process migrates the schema
# READ COMMITTED whatever default_transaction_isolation says: writers queue on the generation row, and
# under REPEATABLE READ or SERIALIZABLE the one that waited failed ('could not serialize access')
BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"


def display_url(url: str) -> str:
    """The URL without its password (what errors, `kenning info` and the stats show)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:  # out of range, or not a number: shown as written (connecting says what is wrong)
        port = parts.netloc.rpartition(":")[2]
    netloc = f"{parts.username}:***@{host}" + (f":{port}" if port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def connect(url: str) -> Any:
    """A direct autocommit connection to ``url``. A URL psycopg cannot read (a % not followed by two
    hex digits, an unknown parameter) is InvalidInput saying why, the password masked: it was a
    traceback that printed a password holding an unescaped %."""
    import psycopg

    try:
        return psycopg.connect(url, connect_timeout=connect_timeout(url), **SESSION)
    except psycopg.ProgrammingError as exc:
        from urllib.parse import unquote

        from kenning.errors import InvalidInput

        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        secret = urlsplit(url).password
        for form in (secret, unquote(secret or "")):
            why = why.replace(form, "***") if form else why
        hint = "; write a % in the user or password as %25" if "percent" in why else ""
        raise InvalidInput(f"{display_url(url)} is not a URL PostgreSQL can read ({why}){hint}") from None


def connect_timeout(url: str) -> int:
    """The seconds a connection to ``url`` may take: the URL's connect_timeout, else $PGCONNECT_TIMEOUT's,
    read as libpq reads them (2 s at least), else CONNECT_TIMEOUT_S."""
    from psycopg.conninfo import conninfo_to_dict, timeout_from_conninfo

    params = conninfo_to_dict(url)
    given = "connect_timeout" in params or os.environ.get("PGCONNECT_TIMEOUT") is not None
    return timeout_from_conninfo(params) if given else CONNECT_TIMEOUT_S


class Cursor:
    """The part of sqlite3.Cursor kenning uses: fetchone, fetchall, iteration, rowcount, lastrowid."""

    def __init__(self, cursor: Any, lastrowid: int | None = None):
        self._cursor = cursor
        self.lastrowid = lastrowid
        self.rowcount = cursor.rowcount

    def fetchone(self):
        return self._cursor.fetchone() if self._cursor.description else None

    def fetchall(self):
        return self._cursor.fetchall() if self._cursor.description else []

    def __iter__(self):
        return iter(self.fetchall())


def _params(params: Any) -> Any:
    """SQLite stores a bool as 0/1; PostgreSQL's typed columns want the integer too."""
    if params is None:
        return ()
    return [int(p) if isinstance(p, bool) else p for p in params]


class Connection:
    """One pooled psycopg connection speaking kenning's SQL dialect (the sqlite3.Connection subset used)."""

    def __init__(self, conn: Any):
        self.raw = conn

    def execute(self, sql: str, params: Any = ()) -> Cursor:
        text, returning = dialect.with_returning(dialect.translate(sql))
        cursor = self.raw.execute(text, _params(params))
        if returning:
            row = cursor.fetchone()
            return Cursor(cursor, row[0] if row else None)
        return Cursor(cursor)

    def executemany(self, sql: str, rows: Any) -> Cursor:
        rows = [_params(r) for r in rows]
        cursor = self.raw.cursor()
        if not rows:
            return Cursor(cursor)
        text = dialect.translate(sql)
        insert = dialect.bulk_insert(text) if len(rows) >= COPY_FROM_ROWS else None
        if insert is None:
            cursor.executemany(text, rows)
        else:
            self._copy_in(cursor, *insert, rows)
        return Cursor(cursor)

    def _copy_in(self, cursor: Any, table: str, columns: str, tail: str, rows: list) -> None:
        """Many rows of one INSERT through COPY (a bulk import's rows, lexicon postings): one stream
        instead of a statement a row. A plain INSERT copies straight into the table; one with an
        ON CONFLICT clause copies into a scratch table first and inserts from it in the rows' order,
        so conflicts resolve as the row-by-row statements would (a key given twice: the last wins)."""
        derived = schema.DERIVED_COLUMNS.get(table, ())
        names = [c.strip() for c in columns.split(",")]
        types = None
        if derived == ("vec",) and "vec" not in names and schema.VECTOR_SOURCE in names:
            from kenning.store.postgres.vectors import column_binary

            # vec sent ready made in pgvector's binary form (no SQL derivation, no text to write or parse)
            at = names.index(schema.VECTOR_SOURCE)
            rows = [[*row, column_binary(row[at])] for row in rows]
            columns += ", vec"
            names.append("vec")
            types = self._column_types(cursor, table, names)
            if "DO UPDATE" in tail:
                tail += ", vec = EXCLUDED.vec"
        if not tail:
            self._copy_rows(cursor, table, columns, types, rows)
            return
        if "DO UPDATE" in tail:  # PostgreSQL refuses to update one row twice in a statement
            rows = dialect.last_per_key(table, columns, rows)
        scratch = f"kenning_bulk_{table}"
        cursor.execute(f"CREATE TEMP TABLE {scratch} ON COMMIT DROP AS SELECT {columns} FROM {table} WITH NO DATA")
        cursor.execute(f"ALTER TABLE {scratch} ADD COLUMN bulk_order BIGSERIAL")
        self._copy_rows(cursor, scratch, columns, types, rows)
        cursor.execute(f"INSERT INTO {table}({columns}) SELECT {columns} FROM {scratch} ORDER BY bulk_order {tail}")
        cursor.execute(f"DROP TABLE {scratch}")  # (a failure rolls the transaction back, and the table with it)

    @staticmethod
    def _copy_rows(cursor: Any, table: str, columns: str, types: list[int] | None, rows: list) -> None:
        """One COPY: in text, or in binary when ``types`` gives each column's type."""
        binary = " (FORMAT BINARY)" if types is not None else ""
        with cursor.copy(f"COPY {table}({columns}) FROM STDIN{binary}") as copy:
            if types is not None:
                copy.set_types(types)
            for row in rows:
                copy.write_row(row)

    def _column_types(self, cursor: Any, table: str, names: list[str]) -> list[int]:
        """The type oids of ``table``'s columns ``names`` (a binary COPY states them), with ``cursor``
        given a dumper that passes pgvector's binary form through for ``vector``."""
        from psycopg.types import TypeInfo

        info = self.raw.adapters.types.get("vector")
        if info is None:
            info = TypeInfo.fetch(self.raw, "vector")
            info.register(self.raw)
        cursor.adapters.register_dumper(None, _vector_dumper(info.oid))  # a cursor keeps its own adapters
        found = dict(self.raw.execute(
            "SELECT attname, atttypid::int FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
            "AND NOT attisdropped", (table,)).fetchall())
        return [found[name] for name in names]

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE


@functools.lru_cache(maxsize=None)
def _vector_dumper(oid: int) -> type:
    """A binary dumper for pgvector's type (its oid differs by database) that sends bytes as they are."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class VectorBinary(Dumper):
        format = Format.BINARY

        def dump(self, obj: bytes) -> bytes:
            return obj

    VectorBinary.oid = oid
    return VectorBinary


def _configure(conn: Any) -> None:
    """Per connection: sums and averages (NUMERIC in PostgreSQL) come back as int or float, as in SQLite;
    floats whole; a writer waits for a lock as long as SQLite's busy_timeout."""
    from psycopg.adapt import Loader

    class NumberLoader(Loader):
        def load(self, data):
            value = Decimal(bytes(data).decode())
            return int(value) if value == value.to_integral_value() else float(value)

    pool_logs.adopt(conn)
    conn.adapters.register_loader("numeric", NumberLoader)
    # floats come as text: extra_float_digits 0 (PGOPTIONS, an old postgresql.conf) rounded them to 15
    # digits, so a read or a migrate lost part of every stored time
    conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}; SET extra_float_digits = 1")
    see_pgvector(conn)


def see_pgvector(conn: Any) -> None:
    """Put pgvector's schema on the search path when it is not there: a store kept in a schema of its
    own (``?options=-csearch_path=...``) still finds the vector type and its operators."""
    row = conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
                       "WHERE e.extname = 'vector'").fetchone()
    if row is not None and row[0] not in conn.execute("SELECT current_schemas(false)").fetchone()[0]:
        conn.execute("SELECT set_config('search_path', current_setting('search_path') || ', ' || quote_ident(%s), false)",
                     (row[0],))


def require_driver() -> None:
    """psycopg and its pool are the postgres extra's: without them a postgresql:// store is one line
    naming the extra to install (it was a ModuleNotFoundError traceback, and `serve --http` named the
    http extra)."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        from kenning.errors import KenningError

        raise KenningError(f"a postgresql:// store needs the postgres extra ({exc.name or 'psycopg'} is not "
                           'installed); install it with: pip install "kenning[postgres]"') from None


class PostgresDatabase:
    """The store's tables in one PostgreSQL database (or schema, with ?options=-csearch_path=...)."""

    read_only = False
    _read_only_why = ""

    def __init__(self, url: str, pool_size: int = 4):
        require_driver()
        self.url = url
        self.path = display_url(url)
        with pg_errors(self.path):  # one direct connection first: a wrong URL fails at once, in one line
            with connect(url) as conn:
                require_schema(conn, self.path)  # before see_pgvector, which may append pgvector's schema
                see_pgvector(conn)
                self._migrate(conn)
                # a role that may only read, or a server that takes no writes, serves reads; every
                # transaction then says why it cannot write
                may_insert, server_reads_only = conn.execute(
                    "SELECT has_table_privilege('memories', 'INSERT'), "
                    "current_setting('transaction_read_only') = 'on'").fetchone()
                self.read_only = server_reads_only or not may_insert
                self._read_only_why = ("its server takes no writes: a standby, or default_transaction_read_only"
                                       if server_reads_only else "this role may not insert into its tables")
            self._pool_size = pool_size
            self._connect_s = connect_timeout(url)
            self.pool = self._new_pool()
            self.pool.open(wait=True, timeout=self._connect_s)
        self._local = threading.local()
        self.lock = threading.RLock()  # in-process state kept beside the database (lexicon, vector index)
        self._state = threading.Lock()
        self._generation: int | None = None  # the last generation known, our own commits included
        self._version = 0  # what data_version() reports: bumped when another process's commit is seen
        _OPEN.add(self)

    def _new_pool(self) -> Any:
        from psycopg_pool import ConnectionPool

        # reconnect_timeout: the pool's own retries (each delay twice the last) stop after a few seconds,
        # and the next call starts them anew; with the default (5 minutes) a server back after a
        # 35 s outage waited for a retry scheduled ~30 s later, and the call timed out meanwhile
        return ConnectionPool(self.url, min_size=1, max_size=self._pool_size, configure=_configure,
                              kwargs={**SESSION, "connect_timeout": self._connect_s},
                              open=False, name=pool_logs.POOL_NAME, reconnect_timeout=RECONNECT_S)

    def _forked(self) -> None:
        """In a forked child: a pool of its own. The inherited pool's connections are the parent's
        sessions (two processes speaking on one socket interleave their messages) and its worker
        threads did not come along (a child waited 30 s for a connection, then failed). psycopg
        never ends a connection in a process other than the one that opened it, so dropping the
        inherited pool leaves the parent's sessions as they are. Locks another parent thread held at
        the fork are made anew in place."""
        self.lock._at_fork_reinit()
        self._state._at_fork_reinit()
        self._local = threading.local()
        if self.pool.closed:
            return
        self.pool = self._new_pool()
        self.pool.open(wait=False)

    # ------------------------------------------------------------------ schema
    def _migrate(self, conn: Any) -> None:
        """Apply the missing schema steps in one transaction (one process at a time). A store already
        at this version is left without a statement that writes: a role that may only read (no CREATE
        on the schema) or a server that takes no writes failed to open it for a search."""
        import psycopg

        if not conn.execute("SELECT to_regclass('kenning_schema') IS NOT NULL").fetchone()[0]:
            _require_utf8(conn, self.path)
        elif self._current(conn.execute("SELECT MAX(version) FROM kenning_schema").fetchone()[0]):
            return
        with conn.transaction():
            # READ COMMITTED (see BEGIN): a stricter default took the snapshot before the lock's wait,
            # so a process that waited for another's creation saw no version and created it again
            conn.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS kenning_schema (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM kenning_schema").fetchone()
            version = row[0] if row else 0
            self._current(version)
            for step in range(version, schema.SCHEMA_VERSION):
                for statement in schema.MIGRATIONS[step]:
                    try:
                        conn.execute(statement)
                    except psycopg.errors.DuplicateTable as exc:
                        if version > 0:
                            raise
                        from kenning.errors import StorageError

                        raise StorageError(f"{self.path} already holds a table named {_relation(exc)} that is not "
                                           "kenning's; use another database or schema") from exc
                    except psycopg.Error as exc:
                        if statement.startswith("CREATE EXTENSION"):
                            from kenning.errors import KenningError

                            raise KenningError(
                                f"{self.path} needs the pgvector extension: have an administrator run "
                                f"`CREATE EXTENSION vector;` in that database ({str(exc).splitlines()[0]})") from exc
                        raise
            if row is None:
                conn.execute("INSERT INTO kenning_schema(version) VALUES (%s)", (schema.SCHEMA_VERSION,))
            elif version != schema.SCHEMA_VERSION:
                conn.execute("UPDATE kenning_schema SET version = %s", (schema.SCHEMA_VERSION,))

    def _current(self, version: int | None) -> bool:
        """Whether schema ``version`` (None: no row) is this kenning's; a newer one is refused."""
        if version is not None and version > schema.SCHEMA_VERSION:
            from kenning.errors import KenningError

            raise KenningError(f"{self.path} was written by a newer kenning (schema {version} > "
                               f"{schema.SCHEMA_VERSION}); upgrade kenning")
        return version == schema.SCHEMA_VERSION

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction; the generation bump first takes the write lock, so writers queue."""
        if self.read_only:
            from kenning.errors import ReadOnlyStore

            raise ReadOnlyStore(f"the store {self.path} is read-only ({self._read_only_why}): reads work, but "
                                "nothing can be written there")
        if getattr(self._local, "conn", None) is not None:
            raise RuntimeError("a transaction is already open in this thread")
        # self.lock as SQLite's transaction holds it: a write patches in-process state (the lexicon's
        # doc arrays) that a ranking in another thread reads under the same lock. Writers queue on the
        # generation row anyway; taken before a pool connection, so a waiting thread holds none.
        with self.lock, pg_errors(self.path), self._connection(lambda raw: raw.execute(BEGIN)) as (raw, _):
            wrapped = Connection(raw)
            self._local.conn = wrapped
            try:
                wait = getattr(self._local, "lock_timeout", None)
                if wait is not None:
                    raw.execute(f"SET LOCAL lock_timeout = {int(wait)}")
                generation = raw.execute("UPDATE kenning_generation SET n = n + 1 RETURNING n").fetchone()[0]
                yield wrapped
            except BaseException:
                raw.execute("ROLLBACK")
                if getattr(self._local, "looking", False):
                    self._local.seen = None  # it may have been read inside the transaction: look again
                raise
            else:
                raw.execute("COMMIT")
                self._committed(generation)
                if getattr(self._local, "looking", False):
                    self._local.seen = generation  # our own commit, in the block: no need to look again
            finally:
                self._local.conn = None

    def read(self, fn: Callable[[Connection], object]) -> object:
        current = getattr(self._local, "conn", None)
        if current is not None:
            return fn(current)
        with pg_errors(self.path), self._connection(lambda raw: fn(Connection(raw))) as (_, answer):
            return answer

    @contextmanager
    def _connection(self, first: Callable[[Any], Any]) -> Iterator[tuple[Any, Any]]:
        """A pool connection and what ``first(raw)`` answered on it. A pooled connection whose session
        the server ended (it restarted, failed over, or ended idle sessions) fails only when next used:
        the pool's idle connections, as stale, are then checked and ``first`` runs again on a live
        one, so the calls after a restart answer instead of saying 'cannot reach' once per pooled
        connection. A session the server is still ending passes the check and breaks a moment later
        (pg_terminate_backend and a failover end sessions one by one), so a broken connection is
        replaced again, once per connection the pool may hold. ``first`` must be safe to run again
        (a read, BEGIN)."""
        tries = self._pool_size + 1
        for attempt in range(tries):
            last = attempt == tries - 1
            raw = self._getconn(self._connect_s if attempt else self.pool.timeout)
            try:
                answer = first(raw)
                break
            except BaseException:
                self.pool.putconn(raw)  # (the pool discards a broken one)
                if last or not raw.broken:
                    raise
            self.pool.check()
        try:
            yield raw, answer
        finally:
            self.pool.putconn(raw)

    def _getconn(self, timeout: float) -> Any:
        """A pool connection within ``timeout`` seconds. None within REACH_S: one direct connection asks
        whether the server can be reached, and when it cannot, the call fails now with the reason
        (the pool waited its whole timeout, 30 s, for a stopped server, on every call); when it can,
        the pool is only busy and the call waits its turn for the rest of ``timeout``."""
        from psycopg_pool import PoolTimeout

        start = time.monotonic()
        try:
            return self.pool.getconn(timeout=min(timeout, REACH_S))
        except PoolTimeout:
            if timeout <= REACH_S:
                raise
        connect(self.url).close()  # a server that refuses new sessions now gives the pool none either
        return self.pool.getconn(timeout=max(timeout - (time.monotonic() - start), 0.1))

    # ------------------------------------------------------------------ capabilities (store/backend.py)
    # The server reads the lexicon's doc table fast enough: no blob of it kept in ``meta``.
    keeps_doc_snapshot = False
    flags_lexicon_changes = False  # no change flag: the lexicon's check at open always runs

    @contextmanager
    def bulk_writes(self) -> Iterator[None]:
        """Around a bulk import: nothing to set here (the server keeps its own buffers)."""
        yield

    @contextmanager
    def waiting_at_most(self, ms: int) -> Iterator[None]:
        """Transactions begun in this thread in the block wait at most ``ms`` for the write lock."""
        before = getattr(self._local, "lock_timeout", None)
        self._local.lock_timeout = max(int(ms), 1)  # 0 would mean no limit to PostgreSQL
        try:
            yield
        finally:
            self._local.lock_timeout = before

    def vector_leg(self, directory: Any):
        """Nearest neighbours for this store: pgvector, in the server (``directory`` holds nothing)."""
        from .vectors import PgVectors

        return PgVectors(self)

    def row_vectors(self, table: str):
        """Nearest neighbours over another vector table (transcript messages'): pgvector, in the
        server, as for memories, so every host sharing the store searches the same vectors."""
        from .vectors import PgVectors

        return PgVectors(self, table=table)

    def rows_without_vectors(self, rows: str, vectors: str, model: str) -> int:
        """How many rows of table ``rows`` have no vector of ``model`` in table ``vectors``: from
        the counts the schema's triggers keep (schema.COUNTED), where counting scans both tables."""
        if rows not in schema.COUNTED or vectors not in schema.COUNTED:
            raise ValueError(f"{rows} and {vectors} must be counted tables (schema.COUNTED)")
        return self.read(lambda c: c.raw.execute(
            "SELECT COALESCE(SUM(CASE WHEN tbl = %s THEN n ELSE -n END), 0) FROM kenning_row_counts "
            "WHERE tbl = %s OR (tbl = %s AND model_id = %s)", (rows, rows, vectors, model)).fetchone()[0])

    def _committed(self, generation: int) -> None:
        """Our own commit: unseen by data_version unless someone else committed since we last looked."""
        with self._state:
            if self._generation is not None and generation == self._generation + 1:
                self._generation = generation

    def one_generation(self) -> AbstractContextManager[bool]:
        """In the block this thread reads ``kenning_generation`` once, at the first ask, instead of at
        every one: a search asks for its settings, its lexicon, its vector count and its trust memo
        (3 to 7 round trips for one answer). A commit made meanwhile by another process is seen at
        the next block, as if it had landed just after this one began; this thread's own commits in
        the block are taken in as they happen. Yields whether this block is the outer one
        (store/looks.py)."""
        return looks.one_generation(self._local)

    def generation(self) -> int:
        """The commit counter (moved by every commit, ours included): read now, or once per
        ``one_generation`` block. What a value cached per store state is keyed by: read it before
        the value, so a commit landing in between makes the next look miss, never hit stale."""
        seen = getattr(self._local, "seen", None)
        if seen is not None:
            return seen
        generation = self.read(lambda c: c.raw.execute("SELECT n FROM kenning_generation").fetchone()[0])
        if getattr(self._local, "looking", False):
            self._local.seen = generation
        return generation

    def fresh_look(self) -> AbstractContextManager[None]:
        """Inside a ``one_generation`` block, reads that see every commit made so far (store/looks.py)."""
        return looks.fresh_look(self._local)

    def data_version(self) -> int:
        """Changes when another process (or Store object) committed; our own commits leave it unchanged."""
        held = getattr(self._local, "seen", None)
        generation = self.generation()
        with self._state:
            # a count this thread's one_generation block holds may predate another thread's commit:
            # going back to it would make the caches reload an older state (a lexicon whose doc
            # arrays miss a posting's document). A count read now is taken as it is.
            if generation != self._generation and (held is None or self._generation is None
                                                   or generation > self._generation):
                self._generation = generation
                self._version += 1
            return self._version

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.read(lambda c: c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone())
        return row[0] if row else default

    @staticmethod
    def set_meta(conn: Connection, key: str, value: str) -> None:
        conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                     (key, value))

    @contextmanager
    def log_only(self) -> Iterator[None]:
        """SQLite's hook for event-log-only work; here every commit moves the generation anyway."""
        yield

    def stamp(self) -> None:
        """None: knowing whether anything changed costs a round trip here, as much as the reads a memo
        would save, so the in-process memos of store/memo.py stay off for PostgreSQL."""
        return None

    def changes(self) -> int:
        """Grows with every committed transaction (by anyone): a refusal that wrote nothing leaves it alone."""
        return self.read(lambda c: c.raw.execute("SELECT n FROM kenning_generation").fetchone()[0])

    def size_bytes(self, directory: Any) -> int:
        """The store's bytes: its tables on the server (indexes and TOAST included) and this host's
        derived files (``kenning info`` counted the files alone: 0.0 MB for a store of any size)."""
        on_server = self.read(lambda c: c.raw.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(oid)), 0) FROM pg_class "
            "WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'm')").fetchone()[0])
        return int(on_server) + sum(p.stat().st_size for p in Path(directory).iterdir() if p.is_file())

    def tables(self) -> list[str]:
        """The store's tables, by name (those of the schema the URL points at)."""
        return [r[0] for r in self.read(lambda c: c.raw.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_name <> 'kenning_schema' ORDER BY table_name").fetchall())]

    @staticmethod
    def keys_loaded(conn: Connection) -> None:
        """After rows were inserted with their keys (``kenning migrate``): the sequences of the
        never-reused keys continue after the largest one copied."""
        for table in schema.SEQUENCE_KEYED:
            conn.raw.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                             f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)")

    @property
    def closed(self) -> bool:
        """Whether close() was called (a failing call can then be told from a failing server)."""
        return self.pool.closed

    def close(self) -> None:
        _OPEN.discard(self)
        self.pool.close()


# Every open PostgresDatabase of this process, for the fork hook
_OPEN: weakref.WeakSet[PostgresDatabase] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for db in list(_OPEN):
        try:
            db._forked()
        except Exception:  # noqa: BLE001 - the child's next call says what is wrong with the store
            pass


os.register_at_fork(after_in_child=_after_fork_in_child)


def _require_utf8(conn: Any, where: str) -> None:
    """A new store only in a UTF8 database: a LATIN1 one refuses every character outside Latin-1 (a CJK
    memory, an emoji in a transcript) at the write, long after the store was made."""
    encoding = conn.info.parameter_status("server_encoding")
    if encoding not in (None, "UTF8"):
        from kenning.errors import StorageError

        raise StorageError(f"{where} is encoded {encoding}, which cannot hold every character kenning keeps; "
                           "use a database created with ENCODING 'UTF8' (TEMPLATE template0)")


def _relation(exc: Any) -> str:
    """The name in PostgreSQL's 'relation "x" already exists' (or the message when it has no name)."""
    import re

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    found = re.search(r'relation "([^"]+)"', text)
    return found.group(1) if found else f"like one of kenning's ({text})"


def search_path_schema(conn: Any) -> str:
    """The schema the URL's search_path names first (the one a store's tables are created in)."""
    setting = conn.execute("SELECT current_setting('search_path')").fetchone()[0] or ""
    names = [n.strip() for n in setting.split(",") if n.strip()]
    named = [n for n in names if n != '"$user"' and n != "$user"]
    return (named[0] if named else setting or "public").strip('"')


def missing_schema(name: str, where: str) -> str:
    quoted = name if name.isidentifier() and name.islower() else '"' + name.replace('"', '""') + '"'
    return f"schema {name} does not exist in {where}; create it first (CREATE SCHEMA {quoted})"


def require_schema(conn: Any, where: str) -> None:
    """A StorageError when no schema of the search path exists (``?options=-csearch_path=team_a``
    before ``CREATE SCHEMA team_a``): there is nowhere to find or create the store's tables."""
    if conn.execute("SELECT current_schema()").fetchone()[0] is None:
        from kenning.errors import StorageError

        raise StorageError(missing_schema(search_path_schema(conn), where))


def holds_store(url: str) -> bool:
    """Whether the database (schema) ``url`` names holds a kenning store: creates nothing. A schema
    that does not exist, or a server that cannot be reached, is a StorageError."""
    require_driver()
    where = display_url(url)
    with pg_errors(where), connect(url) as conn:
        require_schema(conn, where)
        return conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_name = 'kenning_schema'").fetchone() is not None


@contextmanager
def pg_errors(where: str) -> Iterator[None]:
    """PostgreSQL's failures as the project's errors, as store/db.py's storage_errors does for SQLite."""
    import psycopg
    from psycopg_pool import PoolTimeout

    from kenning.errors import InvalidInput, StorageError

    try:
        yield
    except UnicodeEncodeError as exc:
        raise InvalidInput("the text is not valid Unicode (it holds a lone surrogate such as \\ud800); "
                           "send UTF-8 text") from exc
    except (OverflowError, psycopg.errors.NumericValueOutOfRange) as exc:
        raise InvalidInput(f"a number is too large ({exc})") from exc
    except psycopg.errors.DataError as exc:
        raise InvalidInput(f"a value the store cannot hold ({str(exc).splitlines()[0]})") from exc
    except psycopg.errors.InvalidSchemaName as exc:
        raise StorageError(f"{where}: the schema its search_path names does not exist "
                           f"({str(exc).strip().splitlines()[0]}); create it first (CREATE SCHEMA ...)") from exc
    except psycopg.errors.LockNotAvailable as exc:
        raise StorageError(f"{where} stayed locked by another process for too long; retry") from exc
    except psycopg.errors.DiskFull as exc:
        raise StorageError(f"the server of {where} is out of disk; the change under way was not written (what was "
                           "committed before it stays), free space and retry") from exc
    except psycopg.errors.ReadOnlySqlTransaction as exc:
        from kenning.errors import ReadOnlyStore

        raise ReadOnlyStore(f"{where} takes no writes now ({str(exc).splitlines()[0]}); reads work, "
                            "nothing was written") from exc
    except psycopg.errors.InsufficientPrivilege as exc:
        raise StorageError(f"{where}: this role may not do that ({str(exc).splitlines()[0]}); nothing was written") from exc
    except psycopg.errors.ProgramLimitExceeded as exc:
        raise InvalidInput(f"a value too large for the store's indexes ({str(exc).splitlines()[0]}); "
                           "nothing was written") from exc
    except psycopg.errors.QueryCanceled as exc:  # an OperationalError, but the server was reached
        raise StorageError(f"{where} cancelled a statement ({str(exc).splitlines()[0]}): its statement_timeout is "
                           "shorter than kenning needed, or an administrator cancelled it; nothing of it was "
                           "written, retry or raise the timeout for this role") from exc
    except psycopg.errors.ConnectionTimeout as exc:
        raise StorageError(f"cannot reach {where} (no answer within its connect_timeout: {CONNECT_TIMEOUT_S} s unless "
                           "the URL or $PGCONNECT_TIMEOUT gives one); check the server and the URL, or for a server "
                           "that is slow to answer give it more time (?connect_timeout=30)") from exc
    except (psycopg.OperationalError, PoolTimeout) as exc:
        raise StorageError(f"cannot reach {where} ({str(exc).strip().splitlines()[0] if str(exc).strip() else exc}); "
                           "check the server and the URL") from exc


def in_schema(url: str, name: str) -> str:
    """The URL of the same database with ``name`` as the schema its tables live in (a store per schema)."""
    from urllib.parse import quote

    parts = urlsplit(url)
    option = "options=" + quote(f"-csearch_path={name}", safe="")
    return urlunsplit(parts._replace(query=f"{parts.query}&{option}" if parts.query else option))


@contextmanager
def scratch_schema(url: str, name: str) -> Iterator[str]:
    """A new, empty schema on the server for a throwaway store (an evaluation run), dropped afterwards."""
    require_driver()
    if not name.isidentifier():
        raise ValueError(f"not a schema name: {name!r}")
    with pg_errors(display_url(url)), connect(url) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    try:
        yield in_schema(url, name)
    finally:
        with connect(url) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
