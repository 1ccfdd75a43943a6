-- user_version 9
-- index embeddings_model
CREATE INDEX embeddings_model ON embeddings(model_id, content_hash);
-- index episodes_session
CREATE INDEX episodes_session ON episodes(session, created);
-- index episodes_worktree
CREATE INDEX episodes_worktree ON episodes(worktree, created);
-- index events_kind
CREATE INDEX events_kind ON events(kind, at);
-- index events_memory
CREATE INDEX events_memory ON events(memory_id, kind, at);
-- index events_session
CREATE INDEX events_session ON events(session, at);
-- index lex_delta_term
CREATE INDEX lex_delta_term ON lex_delta(term);
-- index lex_docs_mem
CREATE INDEX lex_docs_mem ON lex_docs(mem, live);
-- index memories_live_updated
CREATE INDEX memories_live_updated ON memories(removed_at, updated);
-- index memories_origin
CREATE INDEX memories_origin ON memories(origin_worktree, origin_repo);
-- index memory_links_target
CREATE INDEX memory_links_target ON memory_links(target, kind);
-- index memory_scopes_mem
CREATE INDEX memory_scopes_mem ON memory_scopes(mem);
-- index tlex_delta_term
CREATE INDEX tlex_delta_term ON tlex_delta(term);
-- index tlex_docs_mem
CREATE INDEX tlex_docs_mem ON tlex_docs(mem, live);
-- index transcript_ledgers_source
CREATE INDEX transcript_ledgers_source ON transcript_ledgers(source);
-- index transcript_messages_ledger
CREATE INDEX transcript_messages_ledger ON transcript_messages(ledger);
-- table embed_queue
CREATE TABLE embed_queue (mem INTEGER PRIMARY KEY);
-- table embeddings
CREATE TABLE embeddings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,  -- the vector index key: never reused, so a new vector gets a new key
        mem INTEGER NOT NULL,
        model_id TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        vector BLOB NOT NULL, whole BLOB,             -- float32, L2-normalised
        UNIQUE (mem, model_id)
    );
-- table episodes
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
-- table events
CREATE TABLE events (
        rowid INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        session TEXT NOT NULL,
        kind TEXT NOT NULL,
        memory_id TEXT,
        payload TEXT NOT NULL DEFAULT '{}'
    );
-- table lex_counts
CREATE TABLE lex_counts (term TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
-- table lex_delta
CREATE TABLE lex_delta (term TEXT NOT NULL, lexid INTEGER NOT NULL, tf INTEGER NOT NULL);
-- table lex_docs
CREATE TABLE lex_docs (
        lexid INTEGER PRIMARY KEY,
        mem INTEGER NOT NULL,
        length INTEGER NOT NULL,
        live INTEGER NOT NULL,
        ts REAL NOT NULL
    );
-- table lex_docs_checked
CREATE TABLE lex_docs_checked (id INTEGER PRIMARY KEY CHECK (id = 1), ok INTEGER NOT NULL);
-- table lex_segments
CREATE TABLE lex_segments (
        term TEXT NOT NULL,
        seg INTEGER NOT NULL,             -- lexid // SEGMENT_DOCS of every posting in the blob
        postings BLOB NOT NULL,           -- int32 lexids (ascending) then int32 term frequencies
        PRIMARY KEY (term, seg)
    ) WITHOUT ROWID;
-- table memories
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
    , origin_repo TEXT, origin_worktree TEXT, terms TEXT);
-- table memory_links
CREATE TABLE memory_links (
        source INTEGER NOT NULL REFERENCES memories(rowid),
        kind TEXT NOT NULL,
        target TEXT NOT NULL,             -- a memory id (links name ids, not rowids)
        note TEXT,
        PRIMARY KEY (source, kind, target)
    ) WITHOUT ROWID;
-- table memory_scopes
CREATE TABLE memory_scopes (
        scope TEXT NOT NULL,
        mem INTEGER NOT NULL REFERENCES memories(rowid),
        PRIMARY KEY (scope, mem)
    ) WITHOUT ROWID;
-- table meta
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- table pending_writes
CREATE TABLE pending_writes (
        id TEXT PRIMARY KEY,
        session TEXT NOT NULL,
        created TEXT NOT NULL,
        expires TEXT NOT NULL,
        request TEXT NOT NULL             -- the write's arguments as JSON
    );
-- table tlex_counts
CREATE TABLE tlex_counts (term TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
-- table tlex_delta
CREATE TABLE tlex_delta (term TEXT NOT NULL, lexid INTEGER NOT NULL, tf INTEGER NOT NULL);
-- table tlex_docs
CREATE TABLE tlex_docs (
        lexid INTEGER PRIMARY KEY,
        mem INTEGER NOT NULL,             -- a transcript_messages rowid
        length INTEGER NOT NULL,
        live INTEGER NOT NULL,
        ts REAL NOT NULL
    );
-- table tlex_segments
CREATE TABLE tlex_segments (
        term TEXT NOT NULL,
        seg INTEGER NOT NULL,
        postings BLOB NOT NULL,
        PRIMARY KEY (term, seg)
    ) WITHOUT ROWID;
-- table transcript_embeddings
CREATE TABLE transcript_embeddings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        mem INTEGER NOT NULL,             -- a transcript_messages rowid
        model_id TEXT NOT NULL,
        vector BLOB NOT NULL,             -- float32, L2-normalised
        UNIQUE (mem, model_id)
    );
-- table transcript_ledgers
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
-- table transcript_messages
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
-- table transcript_sources
CREATE TABLE transcript_sources (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,        -- a ledger file or a folder searched for *.jsonl
        project TEXT,                     -- the project of ledgers that name no working directory
        added TEXT NOT NULL
    );
-- trigger lex_docs_checked_docs_delete
CREATE TRIGGER lex_docs_checked_docs_delete AFTER DELETE ON lex_docs
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
-- trigger lex_docs_checked_docs_insert
CREATE TRIGGER lex_docs_checked_docs_insert AFTER INSERT ON lex_docs
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
-- trigger lex_docs_checked_docs_update
CREATE TRIGGER lex_docs_checked_docs_update AFTER UPDATE OF mem, live ON lex_docs
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
-- trigger lex_docs_checked_memories_delete
CREATE TRIGGER lex_docs_checked_memories_delete AFTER DELETE ON memories
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
-- trigger lex_docs_checked_memories_insert
CREATE TRIGGER lex_docs_checked_memories_insert AFTER INSERT ON memories
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
-- trigger lex_docs_checked_memories_update
CREATE TRIGGER lex_docs_checked_memories_update AFTER UPDATE OF rowid, removed_at ON memories
        WHEN (SELECT ok FROM lex_docs_checked) BEGIN UPDATE lex_docs_checked SET ok = 0; END;
