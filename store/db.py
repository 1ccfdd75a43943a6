"""The SQLite file: connection settings, schema, migrations and the one-transaction-per-write helper."""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from kenning.errors import says_damaged

from . import looks

DB_FILENAME = "kenning.sqlite3"

# Each entry migrates the schema from version i to i + 1; append, never edit a released step.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE memories (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        content TEXT NOT NULL,
        category TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        record TEXT NOT NULL,             -- the full Memory as JSON (fields may grow without DDL)
        removed_at TEXT,                  -- set: the row is a tombstone
        removed_reason TEXT
    );
    CREATE INDEX memories_live_updated ON memories(removed_at, updated);
    CREATE TABLE memory_scopes (
        scope TEXT NOT NULL,
        mem INTEGER NOT NULL REFERENCES memories(rowid),
        PRIMARY KEY (scope, mem)
    ) WITHOUT ROWID;
    CREATE INDEX memory_scopes_mem ON memory_scopes(mem);
    -- lexical index: one row per indexed text version (a text change gets a new lexid)
    CREATE TABLE lex_docs (
        lexid INTEGER PRIMARY KEY,
        mem INTEGER NOT NULL,
        length INTEGER NOT NULL,
        live INTEGER NOT NULL,
        ts REAL NOT NULL
    );
    CREATE INDEX lex_docs_mem ON lex_docs(mem, live);
    -- compacted postings: int32 lexids followed by int32 term frequencies
    CREATE TABLE lex_terms (term TEXT PRIMARY KEY, postings BLOB NOT NULL) WITHOUT ROWID;
    -- recent single writes, merged into lex_terms by compaction
    CREATE TABLE lex_delta (term TEXT NOT NULL, lexid INTEGER NOT NULL, tf INTEGER NOT NULL);
    CREATE INDEX lex_delta_term ON lex_delta(term);
    """,
    # 2: embeddings (data, not cache), the event log, pending writes and the episodes journal
    """
    CREATE TABLE embeddings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,  -- the vector index key: never reused, so a new vector gets a new key
        mem INTEGER NOT NULL,
        model_id TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        vector BLOB NOT NULL,             -- float32, L2-normalised
        UNIQUE (mem, model_id)
    );
    CREATE INDEX embeddings_model ON embeddings(model_id, content_hash);
    -- memories whose text has no embedding yet: written by a cold process, embedded by the next
    -- process that has the model loaded anyway
    CREATE TABLE embed_queue (mem INTEGER PRIMARY KEY);
    CREATE TABLE events (
        rowid INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        session TEXT NOT NULL,
        kind TEXT NOT NULL,
        memory_id TEXT,
        payload TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX events_session ON events(session, at);
    CREATE INDEX events_memory ON events(memory_id, kind, at);
    CREATE TABLE pending_writes (
        id TEXT PRIMARY KEY,
        session TEXT NOT NULL,
        created TEXT NOT NULL,
        expires TEXT NOT NULL,
        request TEXT NOT NULL             -- the write's arguments as JSON
    );
    CREATE TABLE episodes (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        session TEXT NOT NULL,
        parent_session TEXT,
        swarm_id TEXT,
        worktree TEXT,
        scopes TEXT NOT NULL,             -- JSON list
        takeaway TEXT,
        body TEXT NOT NULL,
        created TEXT NOT NULL,
        expires TEXT NOT NULL
    );
    CREATE INDEX episodes_worktree ON episodes(worktree, created);
    CREATE INDEX episodes_session ON episodes(session, created);
    """,
    # 3: origin columns (auto_scope filters on them), a link table (reverse links: superseded_by)
    # and events by kind (curation counts read search_miss events without scanning the log)
    """
    CREATE INDEX events_kind ON events(kind, at);
    ALTER TABLE memories ADD COLUMN origin_repo TEXT;
    ALTER TABLE memories ADD COLUMN origin_worktree TEXT;
    UPDATE memories SET origin_repo = json_extract(record, '$.origin.repo'),
                        origin_worktree = json_extract(record, '$.origin.worktree');
    CREATE INDEX memories_origin ON memories(origin_worktree, origin_repo);
    CREATE TABLE memory_links (
        source INTEGER NOT NULL REFERENCES memories(rowid),
        kind TEXT NOT NULL,
        target TEXT NOT NULL,             -- a memory id (links name ids, not rowids)
        note TEXT,
        PRIMARY KEY (source, kind, target)
    ) WITHOUT ROWID;
    CREATE INDEX memory_links_target ON memory_links(target, kind);
    INSERT OR IGNORE INTO memory_links(source, kind, target, note)
        SELECT m.rowid, json_extract(l.value, '$.kind'), json_extract(l.value, '$.target'),
               json_extract(l.value, '$.note')
        FROM memories m, json_each(m.record, '$.links') l;
    """,
    # 4: postings split into per-term segments of SEGMENT_DOCS lexids, so a merge rewrites one
    # segment instead of the whole list; dropping the tokenizer mark makes the next open rebuild
    """
    DROP TABLE lex_terms;
    CREATE TABLE lex_segments (
        term TEXT NOT NULL,
        seg INTEGER NOT NULL,             -- lexid // SEGMENT_DOCS of every posting in the blob
        postings BLOB NOT NULL,           -- int32 lexids (ascending) then int32 term frequencies
        PRIMARY KEY (term, seg)
    ) WITHOUT ROWID;
    DELETE FROM meta WHERE key = 'tokenizer';
    """,
    # 5: transcript recall (recall/): registered sources, the ledgers found under them with how far
    # each was read, their messages, and the messages' own lexical index (same layout as lex_*)
    """
    CREATE TABLE transcript_sources (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,        -- a ledger file or a folder searched for *.jsonl
        project TEXT,                     -- the project of ledgers that name no working directory
        added TEXT NOT NULL
    );
    CREATE TABLE transcript_ledgers (
        id INTEGER PRIMARY KEY,
        source INTEGER NOT NULL REFERENCES transcript_sources(id),
        path TEXT NOT NULL UNIQUE,
        format TEXT,                      -- claude-code | codex | generic, from the first line that tells
        size INTEGER NOT NULL,            -- size, mtime and offset when last read: the incremental key
        mtime_ns INTEGER NOT NULL,
        offset INTEGER NOT NULL,          -- bytes consumed (whole lines only)
        head TEXT NOT NULL,               -- digest of the first bytes read: a rewrite changes it
        tail TEXT NOT NULL,               -- digest of the last bytes before offset
        session TEXT,
        parent_session TEXT,              -- a sidechain / worker ledger's parent session
        project TEXT,                     -- the working directory the session ran in
        malformed INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL DEFAULT '{}'  -- the reader's carry-over between reads (JSON)
    );
    CREATE INDEX transcript_ledgers_source ON transcript_ledgers(source);
    CREATE TABLE transcript_messages (
        rowid INTEGER PRIMARY KEY,
        ledger INTEGER NOT NULL REFERENCES transcript_ledgers(id),
        line INTEGER NOT NULL,            -- 1-based line number in the ledger
        session TEXT,
        parent_session TEXT,
        sidechain INTEGER NOT NULL DEFAULT 0,
        ts TEXT,                          -- the line's own timestamp, as written
        at REAL NOT NULL,                 -- the same as epoch seconds (the file's mtime when it has none)
        speaker TEXT NOT NULL,            -- user | assistant | tool
        text TEXT NOT NULL
    );
    CREATE INDEX transcript_messages_ledger ON transcript_messages(ledger);
    CREATE TABLE tlex_docs (
        lexid INTEGER PRIMARY KEY,
        mem INTEGER NOT NULL,             -- a transcript_messages rowid
        length INTEGER NOT NULL,
        live INTEGER NOT NULL,
        ts REAL NOT NULL
    );
    CREATE INDEX tlex_docs_mem ON tlex_docs(mem, live);
    CREATE TABLE tlex_segments (
        term TEXT NOT NULL,
        seg INTEGER NOT NULL,
        postings BLOB NOT NULL,
        PRIMARY KEY (term, seg)
    ) WITHOUT ROWID;
    CREATE TABLE tlex_delta (term TEXT NOT NULL, lexid INTEGER NOT NULL, tf INTEGER NOT NULL);
    CREATE INDEX tlex_delta_term ON tlex_delta(term);
    """,
    # 6: transcript messages' vectors (recall/transcript_vectors.py); the key is never reused, so a
    # message rowid that comes back after a rewrite never meets its predecessor's vector
    """
    CREATE TABLE transcript_embeddings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        mem INTEGER NOT NULL,             -- a transcript_messages rowid
        model_id TEXT NOT NULL,
        vector BLOB NOT NULL,             -- float32, L2-normalised
        UNIQUE (mem, model_id)
    );
    """,
    # 7: what makes the lexical index's check at open O(1) (store/integrity.py): ``ok`` is set when a
    # full check found every live memory indexed exactly once, and any change to which memories or
    # index rows are live clears it, whoever makes the change (kenning, another tool, a statement
    # typed by hand); the WHEN clause keeps a bulk import to one cleared flag, not a write a row
    """
    CREATE TABLE lex_docs_checked (id INTEGER PRIMARY KEY CHECK (id = 1), ok INTEGER NOT NULL);
    INSERT INTO lex_docs_checked(id, ok) VALUES (1, 0);
    CREATE TRIGGER lex_docs_checked_docs_insert AFTER INSERT ON lex_docs
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
    CREATE TRIGGER lex_docs_checked_docs_update AFTER UPDATE OF mem, live ON lex_docs
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
    CREATE TRIGGER lex_docs_checked_docs_delete AFTER DELETE ON lex_docs
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
    CREATE TRIGGER lex_docs_checked_memories_insert AFTER INSERT ON memories
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
    CREATE TRIGGER lex_docs_checked_memories_update AFTER UPDATE OF rowid, removed_at ON memories
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
    CREATE TRIGGER lex_docs_checked_memories_delete AFTER DELETE ON memories
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
    """,
    # 8: what a write's duplicate probe reads, at a cost that does not grow with the store: each
    # memory's distinct content terms (retrieval.text.query_terms, space-separated; NULL, for rows
    # written before or after a tokenizer change, means "from the text"), so its candidates and
    # tombstones need no tokenizing; and each term's posting count in the segments (kept by every
    # merge), so ranking its terms by rarity reads one row a term, not one a segment
    """
    ALTER TABLE memories ADD COLUMN terms TEXT;
    CREATE TABLE lex_counts (term TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO lex_counts(term, n) SELECT term, SUM(length(postings)) / 8 FROM lex_segments GROUP BY term;
    CREATE TABLE tlex_counts (term TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO tlex_counts(term, n) SELECT term, SUM(length(postings)) / 8 FROM tlex_segments GROUP BY term;
    """,
    # 9: a memory that opens with a timestamp is ranked by the vector of its text without it
    # (retrieval/stamps.py) and labelled by the cosine of its whole text, whose vector this holds
    # (NULL for a memory with no stamp: its one vector is its whole text's)
    """
    ALTER TABLE embeddings ADD COLUMN whole BLOB;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
# SQLite's own bookkeeping, not data: PostgreSQL has no such table and `kenning migrate` copies none
LOCAL_TABLES = frozenset({"lex_docs_checked"})


BUSY_TIMEOUT_MS = 30_000  # how long a writer waits for the one before it
BULK_CACHE_KIB = 64 * 1024  # page cache of a bulk import (Database.bulk_writes); SQLite's default is 2 MB
# WAL pages a bulk import lets pile up before SQLite copies them into the database file (default 1,000):
# each batch rewrites the newest segment's postings rows, so a checkpoint every batch or two copied
# the same pages again and again
BULK_CHECKPOINT_PAGES = 16_384


class Database:
    """One connection per store object, serialised by a lock so a server's threads can share it."""

    def __init__(self, path: Path):
        self.path = path
        # a store this process may read but not write (permissions, a read-only mount) still serves
        # reads; every transaction then raises ReadOnlyStore naming that cause
        self.read_only = False
        self.lock = threading.RLock()
        self._log_changes = 0  # rows this connection changed in the event log alone (``log_only``)
        self._local = threading.local()  # per thread: inside ``one_generation``, and the data_version it read
        self._forks = 0  # how many times this process forked off from the one that opened the connection
        self._closed = False
        _OPEN.add(self)
        if path.is_file() and not _may_write(path):
            self._open_read_only()
            return
        self.conn = self._connect()
        try:
            _refuse_foreign(self.conn, path)  # first: it only reads, and may refuse the file
            self._configure()
            self._migrate()
        except sqlite3.OperationalError as exc:
            if not _permission_problem(exc) or not path.is_file():
                raise
            self.conn.close()
            _refuse_unreadable_log(path)
            self._open_read_only()

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)

    def _configure(self) -> None:
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

    def _forked(self) -> None:
        """In a forked child: a connection of its own. SQLite forbids using a connection across fork:
        the parent's file locks come along in SQLite's per-process bookkeeping but not in the kernel,
        so a new connection beside the inherited one would believe it holds locks it does not (the
        parent, closing last, could then delete the WAL this child still writes to), and waits
        forever for a write lock the parent's transaction held at the fork. So the inherited
        connection is closed first (that rolls back, in the child only, what the parent had open;
        the kernel's locks are per process, so the parent's stay), then a new one opened. A lock
        another parent thread held at the fork would stay held here forever: it is made anew in place
        (objects beside the database share it), as the logging module does with its handlers' locks.
        data_version numbers of the new connection are set apart from the parent's, so a memo keyed
        by one of the parent's values never matches."""
        self.lock._at_fork_reinit()
        self._local = threading.local()
        if self._closed:
            return
        try:
            self.conn.close()
        except sqlite3.Error:
            pass
        self._forks += 1
        self._log_changes = 0
        if self.read_only:
            self._open_read_only()
            return
        self.conn = self._connect()
        self._configure()

    def _open_read_only(self) -> None:
        """Open for reading only. SQLite needs to create the -shm file even to read a WAL database, which
        a read-only folder forbids; then the file is opened as immutable (no other writer can exist)."""
        from kenning.errors import KenningError, StorageError

        uri = self.path.resolve().as_uri() + "?mode=ro"
        for suffix in ("", "&immutable=1"):
            conn = None
            try:
                conn = sqlite3.connect(uri + suffix, uri=True, timeout=30.0, isolation_level=None,
                                       check_same_thread=False)
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                break
            except sqlite3.OperationalError:
                if conn is not None:
                    conn.close()
        else:
            raise StorageError(f"{self.path} cannot be opened: not even for reading (check its permissions)")
        _refuse_foreign(conn, self.path)  # another program's file is named so, not "an old schema"
        if version != SCHEMA_VERSION:
            conn.close()
            raise KenningError(f"{self.path} is read-only and has schema {version}, this kenning needs "
                               f"{SCHEMA_VERSION}; open it once with write access to upgrade it")
        self.conn, self.read_only = conn, True

    def _migrate(self) -> None:
        if self.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return  # current: no write lock taken, so an open never waits for another process's writer
        with self.transaction() as c:
            version = c.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                from kenning.errors import KenningError

                raise KenningError(
                    f"{self.path} was written by a newer kenning (schema {version} > {SCHEMA_VERSION}); upgrade kenning"
                )
            for step in range(version, SCHEMA_VERSION):
                for statement in _statements(MIGRATIONS[step]):
                    c.execute(statement)
            if version != SCHEMA_VERSION:
                c.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT: one write lock, taken up front so concurrent writers queue."""
        if self.read_only:
            from kenning.errors import ReadOnlyStore

            raise ReadOnlyStore(f"the store {self.path.parent} is read-only for this user (its file or folder is "
                                "not writable): reads work, but nothing can be written there")
        with self.lock, storage_errors(self.path):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:  # SQLite may have rolled back already (a full disk)
                    self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")

    def read(self, fn: Callable[[sqlite3.Connection], object]) -> object:
        with self.lock, storage_errors(self.path):
            return fn(self.conn)

    # ------------------------------------------------------------------ capabilities (store/backend.py)
    # A doc table kept as one blob in ``meta`` spares a cold process reading it row by row (lexicon).
    keeps_doc_snapshot = True
    # triggers clear a flag when the live memories or index rows change (migration 7), so the
    # lexicon's check at open runs only after a change
    flags_lexicon_changes = True

    @contextmanager
    def bulk_writes(self) -> Iterator[None]:
        """Around a bulk import: a page cache that holds the pages its batches rewrite (each batch
        appends to thousands of postings rows of the newest segment, and SQLite's default 2 MB
        cache re-reads them from the file system batch after batch). Memory is taken only as
        pages are read, and given back at the end; other threads' transactions may run between
        the batches, as before. The WAL is checkpointed every ``BULK_CHECKPOINT_PAGES`` pages and
        once at the end instead of every 1,000: each batch is still its own committed transaction
        (synchronous=NORMAL, as always), only the copy into the database file is done less often."""
        with self.lock:
            before = self.conn.execute("PRAGMA cache_size").fetchone()[0]
            pages = self.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
            self.conn.execute(f"PRAGMA cache_size={-BULK_CACHE_KIB}")
            self.conn.execute(f"PRAGMA wal_autocheckpoint={BULK_CHECKPOINT_PAGES}")
        try:
            yield
        finally:
            with self.lock:
                self.conn.execute(f"PRAGMA cache_size={int(before)}")
                self.conn.execute(f"PRAGMA wal_autocheckpoint={int(pages)}")
                if not self.conn.in_transaction:  # what the batches left in the WAL, copied once
                    try:
                        self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    except sqlite3.Error:  # a full disk, say: the commits are safe in the WAL, and the
                        pass  # import's own error (if any) is the one to report, not this copy's

    @contextmanager
    def waiting_at_most(self, ms: int) -> Iterator[None]:
        """Transactions begun in the block wait at most ``ms`` for another connection's write lock."""
        with self.lock:
            self.conn.execute(f"PRAGMA busy_timeout={int(ms)}")
            try:
                yield
            finally:
                self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

    def vector_leg(self, directory: Path):
        """Nearest neighbours for this store: an in-process index over the rows, saved as a file there."""
        from .vector_file import IndexFile

        return IndexFile(self, directory)

    def row_vectors(self, table: str):
        """Nearest neighbours over another vector table (transcript messages'): an in-process index
        kept in step with the rows."""
        from .vector_rows import RowVectors

        return RowVectors(self, table)

    def rows_without_vectors(self, rows: str, vectors: str, model: str) -> int:
        """How many rows of table ``rows`` have no vector of ``model`` in table ``vectors`` (one a
        row at most, deleted with it): a count difference, not a join. Table names are the
        caller's constants."""
        return self.read(lambda c: c.execute(
            f"SELECT (SELECT COUNT(*) FROM {rows}) - (SELECT COUNT(*) FROM {vectors} WHERE model_id = ?)",
            (model,)).fetchone()[0])

    def one_generation(self) -> AbstractContextManager[bool]:
        """A block of reads (a search) that shares one look at the store's state: this thread reads
        PRAGMA data_version once, at the first ask, instead of at each of the settings', lexicon's,
        trust memo's and row memos' checks (six statements a search). A commit another connection
        makes meanwhile is seen at the next block, as if it had landed just after this one began;
        this connection's own commits never move data_version, and ``stamp`` counts them as they
        happen. Yields whether this block is the outer one (store/looks.py)."""
        return looks.one_generation(self._local)

    def fresh_look(self) -> AbstractContextManager[None]:
        """Inside a ``one_generation`` block, reads that see every commit made so far (store/looks.py)."""
        return looks.fresh_look(self._local)

    def data_version(self) -> int:
        """Changes when another connection commits; our own commits leave it unchanged. Read once
        per ``one_generation`` block."""
        local = self._local
        seen = getattr(local, "seen", None)
        if seen is not None:
            return seen
        with self.lock:
            version = self.conn.execute("PRAGMA data_version").fetchone()[0] + (self._forks << 48)
        if getattr(local, "looking", False):
            local.seen = version
        return version

    def stamp(self) -> tuple[int, int]:
        """Changes whenever anything was committed by anyone else or this connection changed a row
        outside the event log (``log_only``): what in-process memos of stored rows compare
        (store/memo.py). One statement, no table read (none inside a ``one_generation`` block that read it)."""
        version = self.data_version()
        with self.lock:
            return version, self.conn.total_changes - self._log_changes

    @contextmanager
    def log_only(self) -> Iterator[None]:
        """Around work that only appends to the event log (a batch of read events): the rows it
        changes leave ``stamp`` alone, so memos of memories survive a search's own event row."""
        with self.lock:
            before = self.conn.total_changes
            try:
                yield
            finally:
                self._log_changes += self.conn.total_changes - before

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self.lock, storage_errors(self.path):  # the first read of every open: damage says so here
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    @staticmethod
    def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def changes(self) -> int:
        """Grows with every row this connection changed: a refusal that wrote nothing leaves it alone."""
        with self.lock:
            return self.conn.total_changes

    def size_bytes(self, directory: Path) -> int:
        """The store's bytes: the files of its folder (the database, its WAL, the vector index)."""
        return sum(p.stat().st_size for p in Path(directory).iterdir() if p.is_file())

    def tables(self) -> list[str]:
        """The store's tables, by name."""
        return [r[0] for r in self.read(lambda c: c.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall())]

    @staticmethod
    def keys_loaded(conn: sqlite3.Connection) -> None:
        """After rows were inserted with their keys (``kenning migrate``): nothing to do, SQLite's
        AUTOINCREMENT counters follow explicit keys by themselves."""

    @property
    def closed(self) -> bool:
        """Whether close() was called (a failing call can then be told from a failing store)."""
        return self._closed

    def close(self) -> None:
        with self.lock:
            self._closed = True
            _OPEN.discard(self)
            self.conn.close()


# Every open Database of this process, for the fork hook
_OPEN: weakref.WeakSet[Database] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for db in list(_OPEN):
        try:
            db._forked()
        except sqlite3.Error:  # the file is gone or unreadable now: the next call says so
            pass


os.register_at_fork(after_in_child=_after_fork_in_child)


def _refuse_foreign(conn: sqlite3.Connection, path: Path) -> None:
    """A SQLite file of another program is refused before anything is written to it: switching it to
    WAL and migrating would put kenning's tables into it. kenning's own has a schema version and its
    ``meta`` and ``memories`` tables (the first migration makes both, and sets the version in the
    same transaction); a new or empty file (no tables, version 0) is where a store is created. Only
    reads are made here."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    if (version and {"meta", "memories"} <= set(tables)) or (not version and not tables):
        return
    from kenning.errors import InvalidInput

    conn.close()
    if {"meta", "memories"} <= set(tables):  # kenning's tables, its version lost: a copy made with `.dump`
        raise InvalidInput(f"{path} has kenning's tables but no schema version (a copy made with `sqlite3 .dump` "
                           "loses it), so kenning leaves it as it is; if it is a store of this kenning, give the "
                           f"version back with: sqlite3 {path} 'PRAGMA user_version = {SCHEMA_VERSION}'")
    held = f"tables: {', '.join(tables[:3])}{', ...' if len(tables) > 3 else ''}" if tables else "no tables"
    raise InvalidInput(f"{path} is a SQLite database of another program ({held}, schema version {version}), "
                       "not a kenning store; kenning leaves it as it is: give a store folder of its own")


def _statements(script: str) -> Iterator[str]:
    """A migration's statements one by one (a trigger's body holds semicolons of its own)."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending
            pending = ""


def _may_write(path: Path) -> bool:
    """Whether this process may write the file. SQLite opens a file it may not write read-only without
    a word, and in WAL mode even BEGIN IMMEDIATE succeeds (its lock lives in the -shm file), so only the
    first real write would fail. Asked of the system by access(2) with the effective ids, not by
    opening the file: closing any descriptor of a file drops every SQLite lock this process holds on it."""
    effective = os.access in os.supports_effective_ids
    return os.access(path, os.W_OK, effective_ids=effective)


def _refuse_unreadable_log(path: Path) -> None:
    """A -wal or -shm companion this user cannot read: SQLite says "unable to open", and a read-only
    or immutable open would then read the file without the commits the log still holds."""
    from kenning.errors import KenningError

    for suffix, what in (("-wal", "write-ahead log"), ("-shm", "shared-memory index")):
        companion = path.with_name(path.name + suffix)
        try:
            with open(companion, "rb"):
                pass
        except FileNotFoundError:
            continue
        except PermissionError:
            raise KenningError(f"{companion} (the store's {what}) cannot be read by this user; give it the "
                               f"same owner and permissions as {path.name}") from None


def _permission_problem(exc: sqlite3.OperationalError) -> bool:
    """SQLite's ways of saying it may not write the file or create its -wal/-shm companions (before
    3.22 a folder it could not write was "unable to open database file")."""
    text = str(exc).lower()
    return "readonly" in text or "unable to open" in text


@contextmanager
def storage_errors(path: Path) -> Iterator[None]:
    """SQLite's and the driver's failures as the project's errors: text it cannot store (a lone
    surrogate), an integer too large for it, a full disk or an unwritable file. Nothing is written
    by a failed transaction, so the caller may fix the cause and retry."""
    from kenning.errors import InvalidInput, StorageError

    try:
        yield
    except UnicodeEncodeError as exc:
        raise InvalidInput("the text is not valid Unicode (it holds a lone surrogate such as \\ud800); "
                           "send UTF-8 text") from exc
    except OverflowError as exc:
        raise InvalidInput(f"a number is too large ({exc})") from exc
    except (sqlite3.ProgrammingError, sqlite3.InterfaceError) as exc:
        if "closed" in str(exc).lower():
            raise
        raise InvalidInput(f"a value of a type the store cannot hold ({exc})") from exc
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        if "full" in text:
            # "nothing was written" would be false of a bulk import or an index: their committed batches stay
            raise StorageError(f"the disk holding {path} is full; the change under way was not written (what was "
                               "committed before it stays), free space and retry") from exc
        if "readonly" in text or "read-only" in text:
            raise StorageError(f"{path} is read-only for this process; nothing was written") from exc
        if "disk i/o" in text or "unable to open" in text:
            raise StorageError(f"{path} could not be read or written ({exc}); check the disk and permissions") from exc
        if "locked" in text or "busy" in text:
            raise StorageError(f"{path} stayed locked by another process for too long; retry") from exc
        raise
    except sqlite3.DatabaseError as exc:  # after OperationalError, its subclass
        if says_damaged(exc):
            raise StorageError(damage_message(path, exc)) from exc
        raise


def reports_damage(exc: BaseException) -> bool:
    """Whether ``exc`` is the project's error for a damaged store file (``storage_errors``): retrying
    what failed cannot help, only a restore or a salvage can."""
    from kenning.errors import StorageError

    cause = exc.__cause__
    return isinstance(exc, StorageError) and isinstance(cause, sqlite3.DatabaseError) and says_damaged(cause)


def salvage_advice(path: Path | str) -> str:
    """What to do about a damaged store file, naming it: the memories can only be restored or salvaged
    (derived data is then rebuilt from them). ``.recover`` keeps the schema version; a ``.dump`` copy
    loses it, and opening one says how to give it back (``_refuse_foreign``)."""
    return (f"restore it from a backup, or salvage what is still readable into a new store: "
            f"`sqlite3 {path} .recover | sqlite3 NEW/{DB_FILENAME}`, then `kenning --store NEW rebuild`")


def damage_message(path: Path | str, exc: Exception) -> str:
    """The one line a damaged store file gets everywhere: which file, SQLite's words, what to do."""
    return f"the store file {path} is damaged ({exc}): {salvage_advice(path)}"
