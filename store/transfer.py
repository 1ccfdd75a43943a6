"""Copy a whole store from one backend to another (``kenning migrate SRC DST``), row for row.

Every table is copied as it is stored: memories and tombstones (one table), scopes, links, the
event log, episodes, pending writes, verification (inside each record), embeddings and the
embedding queue, transcript recall's tables, the lexical indexes and ``meta`` (settings, store id,
model, generation counters). Nothing is re-derived, so the copy answers searches exactly as the
original did, and copying it back gives the same rows. The destination must hold no store yet.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from kenning.errors import InvalidInput

# parents before children (memory_scopes and memory_links reference memories, ledgers their sources)
TABLES: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "memories": ("rowid", "id", "content", "category", "created", "updated", "content_hash", "record",
                 "removed_at", "removed_reason", "origin_repo", "origin_worktree", "terms"),
    "memory_scopes": ("scope", "mem"),
    "memory_links": ("source", "kind", "target", "note"),
    "lex_docs": ("lexid", "mem", "length", "live", "ts"),
    "lex_segments": ("term", "seg", "postings"),
    "lex_delta": ("term", "lexid", "tf"),
    "lex_counts": ("term", "n"),
    "embeddings": ("id", "mem", "model_id", "content_hash", "vector", "whole"),
    "embed_queue": ("mem",),
    "events": ("rowid", "at", "session", "kind", "memory_id", "payload"),
    "pending_writes": ("id", "session", "created", "expires", "request"),
    "episodes": ("rowid", "id", "session", "parent_session", "swarm_id", "worktree", "scopes", "takeaway",
                 "body", "created", "expires"),
    "transcript_sources": ("id", "path", "project", "added"),
    "transcript_ledgers": ("id", "source", "path", "format", "size", "mtime_ns", "offset", "head", "tail",
                           "session", "parent_session", "project", "malformed", "state"),
    "transcript_messages": ("rowid", "ledger", "line", "session", "parent_session", "sidechain", "ts", "at",
                            "speaker", "text"),
    "tlex_docs": ("lexid", "mem", "length", "live", "ts"),
    "tlex_segments": ("term", "seg", "postings"),
    "tlex_delta": ("term", "lexid", "tf"),
    "tlex_counts": ("term", "n"),
    "transcript_embeddings": ("id", "mem", "model_id", "vector"),
}
BATCH = 2000
# keys that exist as soon as a store is opened, or read (info, check, an empty search), with nothing
# in it: the destination left by a migrate that was killed holds these; the source's values replace them
_OPENING_META = ("store_id", "tokenizer", "transcript_tokenizer", "tlex_tokenizer",
                 "lex_delta_rows", "lex_docs_edits", "tlex_delta_rows", "tlex_docs_edits",
                 "embedding_dim", "embedding_model", "embedding_text", "embeddings_generation",
                 "scopes_composed")  # memory/scopes.COMPOSED_META


def rows(db: Any, table: str) -> list[tuple]:
    """Every row of ``table`` in key order, values as Python sees them (bytes for blobs)."""
    return db.read(lambda c: _rows(c, table))


def _rows(c: Any, table: str) -> list[tuple]:
    found = c.execute(f"SELECT {', '.join(TABLES[table])} FROM {table}").fetchall()
    # sorted here, not in SQL: the two backends collate text differently
    return sorted((tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in found),
                  key=lambda r: tuple((v is None, v) for v in r))


def _is_empty(db: Any) -> bool:
    meta = db.read(lambda c: c.execute("SELECT key FROM meta").fetchall())
    if any(k not in _OPENING_META for (k,) in meta):
        return False
    return all(db.read(lambda c, t=t: c.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()) is None
               for t in TABLES if t != "meta")


def copy(source: Any, target: Any, progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
    """Copy every table of ``source`` into the empty ``target`` in one transaction; the row counts.
    ``progress(table, copied, total)`` hears each batch: the rows copied so far out of every table's."""
    if not _is_empty(target):
        raise InvalidInput(f"{target.path} already holds a store; migrate copies into a new, empty one only")
    return source.read(lambda s: _in_one_snapshot(s, source.path, target, progress))


def _in_one_snapshot(s: Any, where: Any, target: Any, progress: Callable[[str, int, int], None] | None) -> dict[str, int]:
    """Read every table of the source in one transaction: read one by one while a server or an agent
    wrote, a memory's scopes, index rows or vector could be copied without the memory (or the reverse)."""
    s.execute("BEGIN")
    try:
        counts = _copy(s, where, target, progress)
    except BaseException:
        with suppress(Exception):  # a failed read may have ended the transaction already
            s.execute("ROLLBACK")
        raise
    s.execute("COMMIT")
    return counts


def _copy(s: Any, where: Any, target: Any, progress: Callable[[str, int, int], None] | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    total = sum(s.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES)
    copied, table = 0, "meta"
    try:
        with target.transaction() as c:
            c.execute("DELETE FROM meta")
            for table, columns in TABLES.items():
                if progress is not None:
                    progress(table, copied, total)
                found = _rows(s, table)
                insert = f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
                for start in range(0, len(found), BATCH):
                    c.executemany(insert, found[start:start + BATCH])
                    copied += len(found[start:start + BATCH])
                    if progress is not None:
                        progress(table, copied, total)
                counts[table] = len(found)
            target.keys_loaded(c)
    except InvalidInput as exc:  # a value the target refuses (a NUL an older kenning kept, for PostgreSQL)
        raise InvalidInput(f"a row of the {table} table of {where} cannot be copied: {exc}; "
                           "nothing was copied") from exc
    return counts


def migrate(source: str | os.PathLike, destination: str | os.PathLike,
            progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Open both stores through the backend seam (the destination is created) and copy. A source
    that holds no store is refused, and nothing is created there (SRC is left as it was)."""
    from .backend import exists, is_url, open_backend
    from .location import transfer_location

    source = transfer_location(source, "source")
    destination = transfer_location(destination, "destination")
    if not exists(source):
        if is_url(source):
            from .postgres.database import display_url

            raise InvalidInput(f"no kenning store at {display_url(str(source))}")
        raise InvalidInput(f"no kenning store at {source}")
    src = open_backend(source)
    try:
        dst = open_backend(destination)
        try:
            counts = copy(src.db, dst.db, progress)
        finally:
            dst.db.close()
    finally:
        src.db.close()
    return {"source": str(src.path), "destination": str(dst.path), "rows": counts}
