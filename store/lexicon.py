"""The persistent, incremental lexical index in the store's SQLite file, and this process's view of it.

Layout (see db.py): ``lex_docs`` has one row per indexed text version (``lexid``); ``lex_terms``
holds compacted postings per term as one blob; ``lex_delta`` holds the postings of single writes
until compaction folds them into the blobs. A search reads only its own terms' postings, so a cold
process never re-tokenizes the store, and a single write touches a few small rows.

The view caches the doc table and the postings it has read. Its own writes patch the cache; a
commit by another connection (seen through ``PRAGMA data_version``) makes it reload.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable

import numpy as np

from kenning.retrieval.text import fingerprint, tokenize

from .db import Database

COMPACT_AFTER_DELTA_ROWS = 20_000
_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int32))
_CHUNK = 500


def _decode(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    arr = np.frombuffer(blob, dtype=np.int32)
    half = arr.size // 2
    return arr[:half].astype(np.int64), arr[half:]


def _encode(lexids: np.ndarray, tfs: np.ndarray) -> bytes:
    return lexids.astype(np.int32).tobytes() + tfs.astype(np.int32).tobytes()


def _chunks(items: list, size: int = _CHUNK) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class Lexicon:
    """Write side (called inside the store's transactions) and read side (a LexicalIndex)."""

    def __init__(self, db: Database):
        self.db = db
        self._version: int | None = None
        self._dirty = True
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._size = 0  # highest lexid + 1 held in the arrays below
        self.doc_key = np.empty(0, np.int64)
        self.doc_len = np.empty(0, np.float64)
        self.doc_ts = np.empty(0, np.float64)
        self.live = np.empty(0, bool)
        self.n_docs = 0
        self._total_len = 0.0

    # ------------------------------------------------------------------ write side
    def ensure_current(self, conn: sqlite3.Connection) -> bool:
        """Rebuild the index when the token stream changed since it was built; True if rebuilt."""
        current = fingerprint()
        row = conn.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
        if row and row[0] == current:
            return False
        conn.execute("DELETE FROM lex_docs")
        conn.execute("DELETE FROM lex_terms")
        conn.execute("DELETE FROM lex_delta")
        rows = conn.execute(
            "SELECT rowid, content, updated FROM memories WHERE removed_at IS NULL"
        ).fetchall()
        self.add_many(conn, [(r, c, _epoch(u)) for r, c, u in rows])
        Database.set_meta(conn, "tokenizer", current)
        Database.set_meta(conn, "lex_delta_rows", "0")
        self._dirty = True
        return True

    def add(self, conn: sqlite3.Connection, key: int, text: str, ts: float) -> None:
        """Index one text through the delta table (cheap), compacting when the delta grows large."""
        counts = Counter(tokenize(text))
        length = sum(counts.values())
        lexid = conn.execute(
            "INSERT INTO lex_docs(mem, length, live, ts) VALUES (?, ?, 1, ?)", (key, length, ts)
        ).lastrowid
        conn.executemany(
            "INSERT INTO lex_delta(term, lexid, tf) VALUES (?, ?, ?)",
            [(t, lexid, c) for t, c in counts.items()],
        )
        pending = int(_meta(conn, "lex_delta_rows", "0")) + len(counts)
        if pending >= COMPACT_AFTER_DELTA_ROWS:
            self.compact(conn)
        else:
            Database.set_meta(conn, "lex_delta_rows", str(pending))
        self._patch_add(lexid, key, length, ts, counts)

    def add_many(self, conn: sqlite3.Connection, items: list[tuple[int, str, float]]) -> None:
        """Index a batch straight into the compacted blobs (the import path)."""
        if not items:
            return
        start = conn.execute("SELECT COALESCE(MAX(lexid), 0) + 1 FROM lex_docs").fetchone()[0]
        docs, additions = [], {}
        for offset, (key, text, ts) in enumerate(items):
            lexid = start + offset
            counts = Counter(tokenize(text))
            docs.append((lexid, key, sum(counts.values()), ts))
            for term, tf in counts.items():
                additions.setdefault(term, ([], []))
                additions[term][0].append(lexid)
                additions[term][1].append(tf)
        conn.executemany("INSERT INTO lex_docs(lexid, mem, length, live, ts) VALUES (?, ?, ?, 1, ?)", docs)
        self._merge(conn, {t: (np.array(i, np.int64), np.array(f, np.int32)) for t, (i, f) in additions.items()})
        self._dirty = True

    def remove(self, conn: sqlite3.Connection, key: int) -> None:
        """Retire the live text version of a document (its postings are skipped from now on)."""
        rows = conn.execute(
            "UPDATE lex_docs SET live = 0 WHERE mem = ? AND live = 1 RETURNING lexid, length", (key,)
        ).fetchall()
        for lexid, length in rows:
            if lexid < self._size and self.live[lexid]:
                self.live[lexid] = False
                self.n_docs -= 1
                self._total_len -= length

    def touch(self, conn: sqlite3.Connection, key: int, ts: float) -> None:
        """Record a new update time (the keyword leg's recency nudge) without re-indexing."""
        rows = conn.execute(
            "UPDATE lex_docs SET ts = ? WHERE mem = ? AND live = 1 RETURNING lexid", (ts, key)
        ).fetchall()
        for (lexid,) in rows:
            if lexid < self._size:
                self.doc_ts[lexid] = ts

    def compact(self, conn: sqlite3.Connection) -> None:
        """Fold the delta rows into the per-term blobs."""
        additions: dict[str, tuple[list, list]] = {}
        for term, lexid, tf in conn.execute("SELECT term, lexid, tf FROM lex_delta ORDER BY lexid"):
            additions.setdefault(term, ([], []))
            additions[term][0].append(lexid)
            additions[term][1].append(tf)
        self._merge(conn, {t: (np.array(i, np.int64), np.array(f, np.int32)) for t, (i, f) in additions.items()})
        conn.execute("DELETE FROM lex_delta")
        Database.set_meta(conn, "lex_delta_rows", "0")

    def _merge(self, conn: sqlite3.Connection, additions: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        terms = list(additions)
        existing: dict[str, bytes] = {}
        for chunk in _chunks(terms):
            marks = ",".join("?" * len(chunk))
            existing.update(conn.execute(f"SELECT term, postings FROM lex_terms WHERE term IN ({marks})", chunk))
        rows = []
        for term in terms:
            ids, tfs = additions[term]
            if term in existing:
                old_ids, old_tfs = _decode(existing[term])
                ids, tfs = np.concatenate([old_ids, ids]), np.concatenate([old_tfs, tfs])
            rows.append((term, _encode(ids, tfs)))
            self._cache.pop(term, None)
        conn.executemany("INSERT OR REPLACE INTO lex_terms(term, postings) VALUES (?, ?)", rows)

    # ------------------------------------------------------------------ read side
    def refresh(self) -> "Lexicon":
        """Make the view current: reload after another connection's commit, else keep the cache."""
        version = self.db.data_version()
        if self._dirty or version != self._version:
            self._load()
            self._version = version
            self._dirty = False
        return self

    def _load(self) -> None:
        rows = self.db.read(
            lambda c: c.execute("SELECT lexid, mem, length, ts FROM lex_docs WHERE live = 1").fetchall()
        )
        arr = np.array(rows, dtype=np.float64).reshape(-1, 4)
        lexids = arr[:, 0].astype(np.int64)
        size = int(lexids.max()) + 1 if lexids.size else 0
        self._allocate(size)
        self.doc_key[lexids] = arr[:, 1].astype(np.int64)
        self.doc_len[lexids] = arr[:, 2]
        self.doc_ts[lexids] = arr[:, 3]
        self.live[lexids] = True
        self.n_docs = int(lexids.size)
        self._total_len = float(arr[:, 2].sum())
        self._cache.clear()

    def _allocate(self, size: int) -> None:
        capacity = max(size, 1024)
        self.doc_key = np.full(capacity, -1, np.int64)
        self.doc_len = np.zeros(capacity, np.float64)
        self.doc_ts = np.zeros(capacity, np.float64)
        self.live = np.zeros(capacity, bool)
        self._size = size

    def _patch_add(self, lexid: int, key: int, length: int, ts: float, counts: Counter) -> None:
        if self._dirty:
            return  # the next refresh reloads everything anyway
        if lexid >= self.live.size:
            grow = max(lexid + 1, 2 * self.live.size)
            self.doc_key = np.concatenate([self.doc_key, np.full(grow - self.doc_key.size, -1, np.int64)])
            self.doc_len = np.concatenate([self.doc_len, np.zeros(grow - self.doc_len.size)])
            self.doc_ts = np.concatenate([self.doc_ts, np.zeros(grow - self.doc_ts.size)])
            self.live = np.concatenate([self.live, np.zeros(grow - self.live.size, bool)])
        self._size = max(self._size, lexid + 1)
        self.doc_key[lexid], self.doc_len[lexid], self.doc_ts[lexid] = key, length, ts
        self.live[lexid] = True
        self.n_docs += 1
        self._total_len += length
        for term in counts:
            self._cache.pop(term, None)

    @property
    def avg_len(self) -> float:
        return self._total_len / self.n_docs if self.n_docs else 0.0

    def postings(self, terms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        missing = [t for t in dict.fromkeys(terms) if t not in self._cache]
        if missing:
            self._fetch(missing)
        out = {}
        for term in terms:
            ids, tfs = self._cache[term]
            if ids.size:
                keep = self.live[ids]
                ids, tfs = ids[keep], tfs[keep]
            out[term] = (ids, tfs)
        return out

    def _fetch(self, terms: list[str]) -> None:
        found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for chunk in _chunks(terms):
            blobs, delta = self.db.read(lambda c: _read_terms(c, chunk))
            extra: dict[str, tuple[list, list]] = {}
            for term, lexid, tf in delta:
                extra.setdefault(term, ([], []))
                extra[term][0].append(lexid)
                extra[term][1].append(tf)
            for term in chunk:
                ids, tfs = _decode(blobs[term]) if term in blobs else _EMPTY
                if term in extra:
                    ids = np.concatenate([ids, np.array(extra[term][0], np.int64)])
                    tfs = np.concatenate([tfs, np.array(extra[term][1], np.int32)])
                # a posting newer than our doc table belongs to another connection's write
                if ids.size and ids.max() >= self.live.size:
                    ids, tfs = ids[ids < self.live.size], tfs[ids < self.live.size]
                found[term] = (ids, tfs)
        self._cache.update(found)


def _read_terms(c: sqlite3.Connection, terms: list[str]):
    marks = ",".join("?" * len(terms))
    blobs = dict(c.execute(f"SELECT term, postings FROM lex_terms WHERE term IN ({marks})", terms))
    delta = c.execute(f"SELECT term, lexid, tf FROM lex_delta WHERE term IN ({marks})", terms).fetchall()
    return blobs, delta


def _meta(conn: sqlite3.Connection, key: str, default: str) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
