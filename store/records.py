"""The memories table and its side tables (scopes, links): rows in and out, inside the caller's transaction.

Every function takes an open connection (or the Database for a read) and validated records;
the lexical index and the embedding queue are kept in step by the caller (memory/writes.py),
so one write stays one transaction.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import TYPE_CHECKING, Any

from kenning.errors import InvalidInput, NotFound
from kenning.retrieval.text import content_terms, query_terms

from .db import Database
from .ids import looked_up, shown
from .plain import iso

if TYPE_CHECKING:
    from .models import Link, Memory

ID_CHUNK = 500  # ids per IN (...) list, well under SQLite's variable limit

_INSERT = ("INSERT INTO memories(rowid, id, content, category, created, updated, content_hash, record, "
           "origin_repo, origin_worktree, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def filter_sql(scopes: list[str] | None, category: str | None) -> tuple[str, list]:
    """SQL on ``memories m`` keeping memories with any of ``scopes`` (validated) and of ``category``."""
    where, params = "", []
    if scopes:
        marks = ",".join("?" * len(scopes))
        where += f" AND m.rowid IN (SELECT mem FROM memory_scopes WHERE scope IN ({marks}))"
        params += list(scopes)
    if category:
        where += " AND m.category = ?"
        params.append(category)
    return where, params


def terms_text(terms: list[str]) -> str:
    """A text's content terms as the ``terms`` column holds them: ``query_terms`` (distinct, in
    first-seen order), space-separated (a token never holds whitespace)."""
    return " ".join(terms)


TERM_SETS_KEPT = 2048  # stored term strings whose sets are remembered (a write compares up to 1,020)
_term_sets: dict[str, frozenset[str]] = {}


def stored_terms(stored: str | None, content: str) -> frozenset[str]:
    """The content terms of a memory from its ``terms`` column, or from its text when the column is
    empty (a row written before schema 8, or after a tokenizer change cleared it).

    A column's set is remembered by its text: every write compares its body with the 1,000 most
    recent tombstones, and splitting their strings into sets again cost more than reading them."""
    if stored is None:
        return content_terms(content)
    known = _term_sets.get(stored)
    if known is None:
        if len(_term_sets) >= TERM_SETS_KEPT:
            _term_sets.clear()
        known = _term_sets[stored] = frozenset(stored.split())
    return known


def forget_terms(c: sqlite3.Connection) -> None:
    """The token stream changed: every stored term set is stale until recomputed from the text."""
    c.execute("UPDATE memories SET terms = NULL WHERE terms IS NOT NULL")


def _row(rowid: int | None, m: Memory, terms: list[str] | str | None = None) -> tuple:
    """``terms``: the text's content terms, as a list or as the column's text already."""
    column = terms if isinstance(terms, str) else terms_text(query_terms(m.content) if terms is None else terms)
    created = iso(m.created)
    updated = created if m.updated is m.created else iso(m.updated)  # a new memory's two stamps are one time
    origin = m.origin
    return (rowid, m.id, m.content, m.category, created, updated, content_hash(m.content), m.model_dump_json(),
            origin.repo if origin else None, origin.worktree if origin else None, column)


def insert(c: sqlite3.Connection, memory: Memory, terms: list[str] | None = None) -> int:
    """Insert one memory with its scopes and links; returns its rowid (the index key). ``terms``:
    its ``query_terms`` when the caller has them (the write gates did)."""
    rowid = c.execute(_INSERT, _row(None, memory, terms)).lastrowid
    c.executemany("INSERT INTO memory_scopes(scope, mem) VALUES (?, ?)", [(s, rowid) for s in memory.scopes])
    store_links(c, rowid, memory.links)
    return rowid


def insert_many(c: sqlite3.Connection, memories: list[Memory],
                terms: list[list[str]] | list[str] | None = None) -> list[int]:
    """Insert a batch under consecutive rowids; returns them in order. ``terms``: each memory's
    content terms when the caller has them already (the import tokenizes each text once), as a
    list or as the ``terms`` column's text."""
    start = c.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM memories").fetchone()[0]
    known = terms or [None] * len(memories)
    c.executemany(_INSERT, [_row(start + i, m, t) for i, (m, t) in enumerate(zip(memories, known))])
    _insert_scopes(c, start, memories)
    links = [(start + i, link.kind, link.target, link.note) for i, m in enumerate(memories) for link in m.links]
    if links:  # one statement for the batch, as store_links would insert them one memory at a time
        c.executemany("INSERT INTO memory_links(source, kind, target, note) VALUES (?, ?, ?, ?)", links)
    return [start + i for i in range(len(memories))]


SCOPE_RUN = 16  # consecutive memories with the same scopes written by one INSERT ... SELECT from this many


def _insert_scopes(c: sqlite3.Connection, start: int, memories: list[Memory]) -> None:
    """The scope rows of a batch inserted under rowids ``start``...: a run of memories with the same
    scopes (an import usually is one run) as one INSERT ... SELECT a scope, not a row a memory."""
    rows, run_start = [], 0
    for i in range(1, len(memories) + 1):
        if i < len(memories) and memories[i].scopes == memories[run_start].scopes:
            continue
        if i - run_start >= SCOPE_RUN:
            for scope in memories[run_start].scopes:
                c.execute("INSERT INTO memory_scopes(scope, mem) SELECT ?, rowid FROM memories "
                          "WHERE rowid BETWEEN ? AND ?", (scope, start + run_start, start + i - 1))
        else:
            rows.extend((scope, start + k) for k in range(run_start, i) for scope in memories[k].scopes)
        run_start = i
    c.executemany("INSERT INTO memory_scopes(scope, mem) VALUES (?, ?)", rows)


def replace(c: sqlite3.Connection, rowid: int, memory: Memory, scopes: bool, links: bool) -> None:
    """Rewrite a memory's row; its scope and link lists too when they changed."""
    c.execute(
        "UPDATE memories SET content = ?, category = ?, updated = ?, content_hash = ?, record = ?, terms = ? "
        "WHERE rowid = ?",
        (memory.content, memory.category, iso(memory.updated), content_hash(memory.content),
         memory.model_dump_json(), terms_text(query_terms(memory.content)), rowid),
    )
    if scopes:
        c.execute("DELETE FROM memory_scopes WHERE mem = ?", (rowid,))
        c.executemany("INSERT INTO memory_scopes(scope, mem) VALUES (?, ?)", [(s, rowid) for s in memory.scopes])
    if links:
        store_links(c, rowid, memory.links, replace=True)


def store_links(c: sqlite3.Connection, rowid: int, links: list[Link], replace: bool = False) -> None:
    """Mirror a memory's links into memory_links, where reverse lookups (superseded_by) find them."""
    if replace:
        c.execute("DELETE FROM memory_links WHERE source = ?", (rowid,))
    c.executemany("INSERT INTO memory_links(source, kind, target, note) VALUES (?, ?, ?, ?)",
                  [(rowid, link.kind, link.target, link.note) for link in links])


def live_row(c: sqlite3.Connection, id: str) -> tuple[int, Memory]:
    """(rowid, memory) of a live memory; NotFound (saying what to do) for an unknown or removed id."""
    id = looked_up(id)
    row = c.execute("SELECT rowid, record, removed_at FROM memories WHERE id = ?", (id,)).fetchone()
    if row is None:
        raise NotFound(f"no memory has id {shown(id)}; `kenning list` shows the ids")
    if row[2] is not None:
        raise NotFound(f"memory {id} is removed; `kenning restore {id}` first")
    from .models import Memory  # here: a plain search imports this module without pydantic

    return row[0], Memory.from_record(row[1], id)


def check_link_targets(c: sqlite3.Connection, links: list[Link], self_id: str | None = None) -> None:
    """Every link must point at another memory of this store (live or removed)."""
    for link in links:
        if link.target == self_id:
            raise InvalidInput(f"a memory cannot link to itself ({link.kind} {link.target})")
        if c.execute("SELECT 1 FROM memories WHERE id = ?", (link.target,)).fetchone() is None:
            raise NotFound(f"link target {link.target!r} ({link.kind}) is not a memory in this store")


def existing_ids(db: Database, ids: list[str]) -> set[str]:
    """Which of ``ids`` are memories (live or removed)."""
    found: set[str] = set()
    for i in range(0, len(ids), ID_CHUNK):
        chunk = ids[i : i + ID_CHUNK]
        marks = ",".join("?" * len(chunk))
        found.update(r[0] for r in db.read(
            lambda c: c.execute(f"SELECT id FROM memories WHERE id IN ({marks})", chunk).fetchall()))
    return found


def summaries(db: Database, ids: list[str]) -> dict[str, dict[str, Any]]:
    """{id: {summary, scopes, status: live | removed}} for the ids that exist."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = db.read(lambda c: c.execute(
        f"SELECT id, record, removed_at FROM memories WHERE id IN ({marks})", ids).fetchall())
    from .models import Memory

    out = {}
    for mid, record, removed in rows:
        memory = Memory.from_record(record, mid)
        out[mid] = {"summary": memory.summary, "scopes": memory.scopes, "status": "removed" if removed else "live"}
    return out


def reverse_links(db: Database, id: str) -> list[dict[str, Any]]:
    """Live memories that link to id: {kind, source, note, summary}."""
    rows = db.read(lambda c: c.execute(
        "SELECT l.kind, m.id, l.note, m.record FROM memory_links l JOIN memories m ON m.rowid = l.source "
        "WHERE l.target = ? AND m.removed_at IS NULL ORDER BY l.kind, m.id", (id,)).fetchall())
    from .models import Memory

    return [{"kind": kind, "source": source, "note": note, "summary": Memory.from_record(record, source).summary}
            for kind, source, note, record in rows]


def count_live(db: Database) -> int:
    return db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories WHERE removed_at IS NULL").fetchone()[0])

