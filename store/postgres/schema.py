"""The PostgreSQL schema, versioned as the SQLite one is: entry i takes a database from version i to i + 1.

Version 1 creates, in one step, the tables SQLite reaches at its schema 6 (store/db.py), with
PostgreSQL's types: BIGINT for INTEGER, DOUBLE PRECISION for REAL, BYTEA for BLOB; JSON stays TEXT
so a record reads back byte for byte. Keys SQLite assigns itself (an INTEGER PRIMARY KEY left out
of an INSERT takes max + 1) are assigned the same way by a trigger, so explicit keys (batch
inserts, ``kenning migrate``) and assigned ones mix as they do in SQLite; the "never reused" keys
(AUTOINCREMENT in SQLite) come from a sequence. ``kenning_generation`` is bumped by every
transaction: its row lock serialises writers (SQLite's BEGIN IMMEDIATE) and its value tells another
process that something was committed (SQLite's PRAGMA data_version).

To change the schema, append a step here and one to store/db.py; tests/test_postgres_schema.py
checks that both reach the same tables and columns.
"""

from __future__ import annotations

SQLITE_VERSION_OF = {1: 6, 2: 6, 3: 6, 4: 8, 5: 8, 6: 8}  # what each PostgreSQL version holds, in SQLite schema versions
SEQUENCE_KEYED = ("embeddings", "transcript_embeddings")  # AUTOINCREMENT in SQLite: a key is never reused
# Columns only PostgreSQL has, derived from others (never copied by `kenning migrate`): column -> its source.
DERIVED_COLUMNS = {"embeddings": ("vec",), "transcript_embeddings": ("vec",)}
VECTOR_SOURCE = "vector"  # the bytes ``vec`` is derived from

# float32 little-endian bytes (what kenning stores, store/semantic.py) -> a pgvector value, bit for bit:
# each word's sign, exponent and mantissa are put back together in float8, where every float32
# (subnormals and -0 included) is exact, then cast to real. A blob that is no vector (empty, or
# holding an infinity or NaN, which pgvector refuses) gives NULL: such a row is never a neighbour.
_F32_VECTOR = """
CREATE FUNCTION kenning_f32_vector(b bytea) RETURNS vector
IMMUTABLE STRICT PARALLEL SAFE LANGUAGE sql AS $$
SELECT CASE WHEN count(*) = 0 OR bool_or(e = 255) THEN NULL ELSE
       array_agg(CASE WHEN e = 0 THEN m * 2.0::float8 ^ -149 ELSE (8388608 + m) * 2.0::float8 ^ (e - 150) END
                 * (1 - 2 * s) ORDER BY i)::real[]::vector END
FROM (SELECT i, (w >> 31) & 1 AS s, (w >> 23) & 255 AS e, w & 8388607 AS m
      FROM (SELECT i, (get_byte(b, 4 * i + 3)::bigint << 24) | (get_byte(b, 4 * i + 2) << 16)
                      | (get_byte(b, 4 * i + 1) << 8) | get_byte(b, 4 * i) AS w
            FROM generate_series(0, length(b) / 4 - 1) AS i) AS words) AS parts
$$
"""

# Since version 5 ``vec`` is a plain column this trigger fills from the bytes when the writer left it
# out: a bulk writer (Connection._copy_in) sends it ready made, the same float32 values parsed by
# pgvector in microseconds, instead of the ~0.8 ms a vector kenning_f32_vector takes in SQL. An
# update of the bytes that leaves ``vec`` alone derives it again, so the two never disagree.
_DERIVE_VEC = """
CREATE FUNCTION kenning_derive_vec() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.vec IS NULL THEN
            NEW.vec := kenning_f32_vector(NEW.vector);
        END IF;
    ELSIF NEW.vector IS DISTINCT FROM OLD.vector AND NEW.vec IS NOT DISTINCT FROM OLD.vec THEN
        NEW.vec := kenning_f32_vector(NEW.vector);
    END IF;
    RETURN NEW;
END $$
"""

# Since version 6 the rows of the transcript tables are counted as they change (statement triggers
# over the changed rows), so the transcript search's ``pending_embeddings`` and the background
# embedder's poll read two numbers where each scanned both tables (100k messages: about 13 ms of
# server CPU a count). The counts are backend state, like kenning_generation: never copied by
# `kenning migrate`, which fills a new store's through the same triggers.
COUNTED = ("transcript_messages", "transcript_embeddings")  # rows counted in kenning_row_counts (by model_id)
_COUNT_ROWS = """
CREATE FUNCTION kenning_count_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- vectors are counted by model; PL/pgSQL plans each statement when it first runs, for one table
    IF TG_TABLE_NAME = 'transcript_embeddings' THEN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            UPDATE kenning_row_counts k SET n = k.n - gone.n
            FROM (SELECT model_id, count(*) AS n FROM old_rows GROUP BY model_id) AS gone
            WHERE k.tbl = TG_TABLE_NAME AND k.model_id = gone.model_id;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO kenning_row_counts(tbl, model_id, n)
            SELECT TG_TABLE_NAME, model_id, count(*) FROM new_rows GROUP BY model_id
            ON CONFLICT (tbl, model_id) DO UPDATE SET n = kenning_row_counts.n + EXCLUDED.n;
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE kenning_row_counts SET n = n - (SELECT count(*) FROM old_rows) WHERE tbl = TG_TABLE_NAME;
    ELSIF TG_OP = 'INSERT' THEN
        UPDATE kenning_row_counts SET n = n + (SELECT count(*) FROM new_rows) WHERE tbl = TG_TABLE_NAME;
    END IF;
    RETURN NULL;
END $$
"""


_TRANSITION = {"INSERT": "NEW TABLE AS new_rows", "DELETE": "OLD TABLE AS old_rows",
               "UPDATE": "OLD TABLE AS old_rows NEW TABLE AS new_rows"}


def _counted(table: str, events: tuple[str, ...]) -> list[str]:
    """The triggers that keep ``table``'s row count (one an event: transition tables allow no more)."""
    return [f"CREATE TRIGGER {table}_counted_{event.lower()} AFTER {event} ON {table} REFERENCING "
            f"{_TRANSITION[event]} FOR EACH STATEMENT EXECUTE FUNCTION kenning_count_rows()" for event in events]


_NEXT_KEY = """
CREATE FUNCTION kenning_next_key() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    key_column text := TG_ARGV[0];
    next_key bigint;
BEGIN
    IF (to_jsonb(NEW) ->> key_column) IS NULL THEN
        EXECUTE format('SELECT COALESCE(MAX(%I), 0) + 1 FROM %I.%I', key_column, TG_TABLE_SCHEMA, TG_TABLE_NAME)
            INTO next_key;
        NEW := jsonb_populate_record(NEW, jsonb_build_object(key_column, next_key));
    END IF;
    RETURN NEW;
END $$
"""


def _keyed(table: str, column: str) -> str:
    return (f"CREATE TRIGGER {table}_key BEFORE INSERT ON {table} FOR EACH ROW "
            f"EXECUTE FUNCTION kenning_next_key('{column}')")


def _term_keyed(table: str) -> list[str]:
    """A postings table's key: a term may be longer than a B-tree entry allows (one 1 MiB "word"), so
    the unique key holds its digest and lookups by term go through a hash index."""
    return [f"CREATE UNIQUE INDEX {table}_key ON {table} (md5(term), seg)",
            f"CREATE INDEX {table}_term ON {table} USING hash (term)"]


MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE kenning_generation (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), n BIGINT NOT NULL)",
        "INSERT INTO kenning_generation(one, n) VALUES (TRUE, 0)",
        _NEXT_KEY,
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE memories (
            rowid BIGINT PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            content TEXT NOT NULL,
            category TEXT NOT NULL,
            created TEXT NOT NULL,
            updated TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            record TEXT NOT NULL,
            removed_at TEXT,
            removed_reason TEXT,
            origin_repo TEXT,
            origin_worktree TEXT
        )""",
        _keyed("memories", "rowid"),
        "CREATE INDEX memories_live_updated ON memories(removed_at, updated)",
        "CREATE INDEX memories_origin ON memories(origin_worktree, origin_repo)",
        "CREATE INDEX memories_content_hash ON memories(content_hash)",
        """CREATE TABLE memory_scopes (
            scope TEXT NOT NULL,
            mem BIGINT NOT NULL REFERENCES memories(rowid),
            PRIMARY KEY (scope, mem)
        )""",
        "CREATE INDEX memory_scopes_mem ON memory_scopes(mem)",
        """CREATE TABLE memory_links (
            source BIGINT NOT NULL REFERENCES memories(rowid),
            kind TEXT NOT NULL,
            target TEXT NOT NULL,
            note TEXT,
            PRIMARY KEY (source, kind, target)
        )""",
        "CREATE INDEX memory_links_target ON memory_links(target, kind)",
        """CREATE TABLE lex_docs (
            lexid BIGINT PRIMARY KEY, mem BIGINT NOT NULL, length BIGINT NOT NULL,
            live BIGINT NOT NULL, ts DOUBLE PRECISION NOT NULL
        )""",
        _keyed("lex_docs", "lexid"),
        "CREATE INDEX lex_docs_mem ON lex_docs(mem, live)",
        "CREATE TABLE lex_segments (term TEXT NOT NULL, seg BIGINT NOT NULL, postings BYTEA NOT NULL)",
        *_term_keyed("lex_segments"),
        "CREATE TABLE lex_delta (term TEXT NOT NULL, lexid BIGINT NOT NULL, tf BIGINT NOT NULL)",
        "CREATE INDEX lex_delta_term ON lex_delta USING hash (term)",
        """CREATE TABLE embeddings (
            id BIGSERIAL PRIMARY KEY,
            mem BIGINT NOT NULL,
            model_id TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            vector BYTEA NOT NULL,
            UNIQUE (mem, model_id)
        )""",
        "CREATE INDEX embeddings_model ON embeddings(model_id, content_hash)",
        "CREATE TABLE embed_queue (mem BIGINT PRIMARY KEY)",
        """CREATE TABLE events (
            rowid BIGINT PRIMARY KEY,
            at TEXT NOT NULL,
            session TEXT NOT NULL,
            kind TEXT NOT NULL,
            memory_id TEXT,
            payload TEXT NOT NULL DEFAULT '{}'
        )""",
        _keyed("events", "rowid"),
        "CREATE INDEX events_session ON events(session, at)",
        "CREATE INDEX events_memory ON events(memory_id, kind, at)",
        "CREATE INDEX events_kind ON events(kind, at)",
        """CREATE TABLE pending_writes (
            id TEXT PRIMARY KEY, session TEXT NOT NULL, created TEXT NOT NULL,
            expires TEXT NOT NULL, request TEXT NOT NULL
        )""",
        """CREATE TABLE episodes (
            rowid BIGINT PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            session TEXT NOT NULL,
            parent_session TEXT,
            swarm_id TEXT,
            worktree TEXT,
            scopes TEXT NOT NULL,
            takeaway TEXT,
            body TEXT NOT NULL,
            created TEXT NOT NULL,
            expires TEXT NOT NULL
        )""",
        _keyed("episodes", "rowid"),
        "CREATE INDEX episodes_worktree ON episodes(worktree, created)",
        "CREATE INDEX episodes_session ON episodes(session, created)",
        """CREATE TABLE transcript_sources (
            id BIGINT PRIMARY KEY, path TEXT NOT NULL UNIQUE, project TEXT, added TEXT NOT NULL
        )""",
        _keyed("transcript_sources", "id"),
        """CREATE TABLE transcript_ledgers (
            id BIGINT PRIMARY KEY,
            source BIGINT NOT NULL REFERENCES transcript_sources(id),
            path TEXT NOT NULL UNIQUE,
            format TEXT,
            size BIGINT NOT NULL,
            mtime_ns BIGINT NOT NULL,
            "offset" BIGINT NOT NULL,
            head TEXT NOT NULL,
            tail TEXT NOT NULL,
            session TEXT,
            parent_session TEXT,
            project TEXT,
            malformed BIGINT NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT '{}'
        )""",
        _keyed("transcript_ledgers", "id"),
        "CREATE INDEX transcript_ledgers_source ON transcript_ledgers(source)",
        """CREATE TABLE transcript_messages (
            rowid BIGINT PRIMARY KEY,
            ledger BIGINT NOT NULL REFERENCES transcript_ledgers(id),
            line BIGINT NOT NULL,
            session TEXT,
            parent_session TEXT,
            sidechain BIGINT NOT NULL DEFAULT 0,
            ts TEXT,
            at DOUBLE PRECISION NOT NULL,
            speaker TEXT NOT NULL,
            text TEXT NOT NULL
        )""",
        _keyed("transcript_messages", "rowid"),
        "CREATE INDEX transcript_messages_ledger ON transcript_messages(ledger)",
        """CREATE TABLE tlex_docs (
            lexid BIGINT PRIMARY KEY, mem BIGINT NOT NULL, length BIGINT NOT NULL,
            live BIGINT NOT NULL, ts DOUBLE PRECISION NOT NULL
        )""",
        _keyed("tlex_docs", "lexid"),
        "CREATE INDEX tlex_docs_mem ON tlex_docs(mem, live)",
        "CREATE TABLE tlex_segments (term TEXT NOT NULL, seg BIGINT NOT NULL, postings BYTEA NOT NULL)",
        *_term_keyed("tlex_segments"),
        "CREATE TABLE tlex_delta (term TEXT NOT NULL, lexid BIGINT NOT NULL, tf BIGINT NOT NULL)",
        "CREATE INDEX tlex_delta_term ON tlex_delta USING hash (term)",
        """CREATE TABLE transcript_embeddings (
            id BIGSERIAL PRIMARY KEY,
            mem BIGINT NOT NULL,
            model_id TEXT NOT NULL,
            vector BYTEA NOT NULL,
            UNIQUE (mem, model_id)
        )""",
    ],
    [
        # the vector leg on pgvector (store/postgres/vectors.py): the rows' vectors in a pgvector column,
        # derived from the stored bytes, so what `kenning migrate` copies stays the bytes
        "CREATE EXTENSION IF NOT EXISTS vector",
        _F32_VECTOR,
        "ALTER TABLE embeddings ADD COLUMN vec vector GENERATED ALWAYS AS (kenning_f32_vector(vector)) STORED",
    ],
    [
        # transcript messages' vectors on pgvector too (searched in the server, shared by every host)
        "ALTER TABLE transcript_embeddings ADD COLUMN vec vector "
        "GENERATED ALWAYS AS (kenning_f32_vector(vector)) STORED",
    ],
    [
        # SQLite's 8: each memory's content terms and each term's posting count, for the duplicates gate
        "ALTER TABLE memories ADD COLUMN terms TEXT",
        "CREATE TABLE lex_counts (term TEXT NOT NULL, n BIGINT NOT NULL)",
        "CREATE UNIQUE INDEX lex_counts_key ON lex_counts (md5(term))",
        "CREATE INDEX lex_counts_term ON lex_counts USING hash (term)",
        "INSERT INTO lex_counts(term, n) SELECT term, SUM(length(postings)) / 8 FROM lex_segments GROUP BY term",
        "CREATE TABLE tlex_counts (term TEXT NOT NULL, n BIGINT NOT NULL)",
        "CREATE UNIQUE INDEX tlex_counts_key ON tlex_counts (md5(term))",
        "CREATE INDEX tlex_counts_term ON tlex_counts USING hash (term)",
        "INSERT INTO tlex_counts(term, n) SELECT term, SUM(length(postings)) / 8 FROM tlex_segments GROUP BY term",
    ],
    [
        # vec filled by a trigger instead of generated, so a bulk writer may hand it over ready made
        # (the values already derived are kept)
        "ALTER TABLE embeddings ALTER COLUMN vec DROP EXPRESSION",
        "ALTER TABLE transcript_embeddings ALTER COLUMN vec DROP EXPRESSION",
        _DERIVE_VEC,
        "CREATE TRIGGER embeddings_vec BEFORE INSERT OR UPDATE OF vector ON embeddings "
        "FOR EACH ROW EXECUTE FUNCTION kenning_derive_vec()",
        "CREATE TRIGGER transcript_embeddings_vec BEFORE INSERT OR UPDATE OF vector ON transcript_embeddings "
        "FOR EACH ROW EXECUTE FUNCTION kenning_derive_vec()",
    ],
    [
        # the transcript tables' rows counted as they change (COUNTED, above)
        "CREATE TABLE kenning_row_counts (tbl TEXT NOT NULL, model_id TEXT NOT NULL, n BIGINT NOT NULL, "
        "PRIMARY KEY (tbl, model_id))",
        "INSERT INTO kenning_row_counts(tbl, model_id, n) SELECT 'transcript_messages', '', count(*) FROM transcript_messages",
        "INSERT INTO kenning_row_counts(tbl, model_id, n) SELECT 'transcript_embeddings', model_id, count(*) "
        "FROM transcript_embeddings GROUP BY model_id",
        _COUNT_ROWS,
        *_counted("transcript_messages", ("INSERT", "DELETE")),
        # vectors by model: an UPDATE that changed a row's model would move it between counts
        *_counted("transcript_embeddings", ("INSERT", "DELETE", "UPDATE")),
    ],
    [
        # SQLite's 9: the whole text's vector of a memory the vector leg ranks without its leading timestamp
        "ALTER TABLE embeddings ADD COLUMN whole BYTEA",
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)
