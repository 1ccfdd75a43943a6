"""The persistent, incremental lexical index in the store's SQLite file, and this process's view of it.

Layout (see db.py): ``lex_docs`` has one row per indexed text version (``lexid``); ``lex_segments``
holds compacted postings per term in segments of ``SEGMENT_DOCS`` lexids, so adding postings
rewrites only the newest segment, never the whole list; ``lex_delta`` holds the postings of single
writes until compaction folds them into the segments. A search reads only its own terms' postings, so a cold
process never re-tokenizes the store, and a single write touches a few small rows.

The view caches the doc table and the postings it has read. Its own writes patch the cache. A
commit by another connection (seen through ``PRAGMA data_version``) is looked at more closely,
because most commits (an event row, a setting) leave the index alone: only an edit of existing
index rows (a retirement, a new update time, a rebuild; counted in meta) reloads the doc table,
and new documents appended by another process are read alone, which empties the postings cache.
"""

from __future__ import annotations

import sqlite3
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kenning.retrieval import lexical
from kenning.retrieval.text import fingerprint, tokenize

from .db import Database

if TYPE_CHECKING:  # a search never imports the import's tokenizer
    from kenning.retrieval.batch_tokens import CodedBatch

COMPACT_AFTER_DELTA_ROWS = 20_000
SNAPSHOT_MIN_DOCS = 5_000  # a smaller doc table loads row by row in a few milliseconds anyway
SEGMENT_DOCS = 8192
DF_MEMO_TERMS = 1 << 16  # stored posting counts remembered for the duplicate probe
# terms whose postings a view keeps between searches: each distinct word ever searched was kept (a
# word no text holds too, with its filter mark), so a server's memory grew with every new query word
POSTINGS_MEMO_TERMS = 1 << 16
_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int32))
_CHUNK = 500


def _decode(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    arr = np.frombuffer(blob, dtype=np.int32)
    half = arr.size // 2
    return arr[:half].astype(np.int64), arr[half:]


def _group(terms: list[str], lexids: list[int], tfs: list[int]) -> dict[tuple[str, int], tuple[bytes, bytes]]:
    """Postings grouped by (term, segment) as (int32 lexids, int32 tfs) bytes, in one numpy sort,
    in (term, segment) order (``_merge`` reads and writes the rows in key order).

    ``lexids`` must ascend within each term. A Python loop with numpy calls per term costs more
    than the whole sort once a batch holds thousands of distinct terms; bytes slices do not.
    """
    if not terms:
        return {}
    codes = _sorted_codes(terms)
    term_code = np.fromiter(map(codes.__getitem__, terms), np.int64, len(terms))
    order = np.argsort(term_code, kind="stable")  # lexids keep their ascending order within a term
    return _by_segment(list(codes), term_code[order], np.asarray(lexids, np.int64)[order], np.asarray(tfs)[order])


def _group_tokens(tokens: list[str], owners: np.ndarray) -> dict[tuple[str, int], tuple[bytes, bytes]]:
    """``_group`` of a batch's whole token stream (``owners``: each token's lexid, ascending): the
    term frequencies are counted by one numpy sort instead of a Counter per document."""
    if not tokens:
        return {}
    codes = _sorted_codes(tokens)
    term_code = np.fromiter(map(codes.__getitem__, tokens), np.int64, len(tokens))
    low = int(owners[0])
    span = int(owners[-1]) - low + 1
    pairs, tfs = np.unique(term_code * span + (owners - low), return_counts=True)  # by term, then lexid
    return _by_segment(list(codes), pairs // span, pairs % span + low, tfs)


def _group_codes(codes: np.ndarray, names: list[str], owners: np.ndarray) -> dict[tuple[str, int], tuple[bytes, bytes]]:
    """``_group_tokens`` of a token stream given as codes into ``names`` (retrieval/batch_tokens.py):
    the same groups, with the codes renumbered in sorted term order (``_sorted_codes``' reason)."""
    if not codes.size:
        return {}
    present = np.flatnonzero(np.bincount(codes, minlength=len(names)))  # ascending, as np.unique, without its sort
    spelled = list(map(names.__getitem__, present.tolist()))
    order = sorted(range(len(spelled)), key=spelled.__getitem__)
    rank = np.empty(len(names), np.int64)
    rank[present[order]] = np.arange(len(order))
    low = int(owners[0])
    span = int(owners[-1]) - low + 1
    pairs, tfs = np.unique(rank[codes] * span + (owners - low), return_counts=True)  # by term, then lexid
    return _by_segment([spelled[i] for i in order], pairs // span, pairs % span + low, tfs)


def _sorted_codes(terms: list[str]) -> dict[str, int]:
    """Each distinct term's code, in sorted term order: str order is SQLite's BINARY order (UTF-8
    bytes sort as code points do), so the grouped rows reach the segments' B-tree in key order;
    unsorted, a batch's thousands of rows each land on another page (measured: the segment
    writes of a 2,000-record import batch cost twice as much CPU)."""
    return {term: code for code, term in enumerate(sorted(set(terms)))}


def _by_segment(names: list[str], term_code: np.ndarray, ids: np.ndarray,
                tfs: np.ndarray) -> dict[tuple[str, int], tuple[bytes, bytes]]:
    """Postings ordered by term code, lexids ascending within a term, cut into (term, segment) runs."""
    seg = ids // SEGMENT_DOCS
    first_seg, n_segs = int(seg.min()), int(seg.max() - seg.min()) + 1
    key = term_code * n_segs + (seg - first_seg)
    id_bytes = ids.astype(np.int32).tobytes()
    tf_bytes = tfs.astype(np.int32).tobytes()
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    ends = np.append(starts[1:], key.size)
    return {
        (names[k // n_segs], first_seg + k % n_segs): (id_bytes[4 * a : 4 * b], tf_bytes[4 * a : 4 * b])
        for a, b, k in zip(starts.tolist(), ends.tolist(), key[starts].tolist())
    }


def _write_rows(conn: sqlite3.Connection, table: str, updates: list[tuple[bytes, str, int]],
               inserts: list[tuple[str, int, bytes]]) -> None:
    """A merge's segment rows into ``table``: ``updates`` (postings, term, seg) of rows it holds,
    ``inserts`` (term, seg, postings) of new ones. An UPDATE rewrites a row where it is; a replace
    deleted it from its B-tree page and inserted it again (bench/README.md, "Bulk import, session 9")."""
    conn.executemany(f"UPDATE {table} SET postings = ? WHERE term = ? AND seg = ?", updates)
    conn.executemany(f"INSERT OR REPLACE INTO {table}(term, seg, postings) VALUES (?, ?, ?)", inserts)


def valid_segment(blob: object, seg: int) -> bool:
    """A postings blob as written: int32 lexids of this segment, strictly ascending, then positive tfs."""
    if not isinstance(blob, bytes) or not blob or len(blob) % 8:
        return False
    ids, tfs = _decode(blob)
    return (bool(ids.size) and int(ids[0]) >= seg * SEGMENT_DOCS and int(ids[-1]) < (seg + 1) * SEGMENT_DOCS
            and bool(np.all(ids[1:] > ids[:-1])) and bool(np.all(tfs > 0)))


def _bounded(blob: object, seg: int) -> bool:
    """A postings blob's shape and its first and last lexid inside its segment (the cheap part of
    ``valid_segment``; ascending order and positive tfs are checked on the joined list)."""
    if not isinstance(blob, bytes) or not blob or len(blob) % 8:
        return False
    half = len(blob) // 2
    first = int.from_bytes(blob[:4], sys.byteorder, signed=True)
    last = int.from_bytes(blob[half - 4 : half], sys.byteorder, signed=True)
    return seg * SEGMENT_DOCS <= first <= last < (seg + 1) * SEGMENT_DOCS


def _chunks(items: list, size: int = _CHUNK) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


@dataclass(frozen=True)
class LexTables:
    """Where one lexical index lives: its four tables, its meta keys and the rows it is built from.

    The memories' index and the transcripts' index (recall/) share every line of the code and
    differ only here. ``documents`` selects ``(key, text, ts)`` of every live document, ``ts`` as
    epoch seconds or an ISO stamp; it is what a tokenizer change rebuilds from.
    """

    docs: str = "lex_docs"
    segments: str = "lex_segments"
    delta: str = "lex_delta"
    counts: str = "lex_counts"  # term -> postings held in its segments (what doc_freqs reads)
    tokenizer_key: str = "tokenizer"
    delta_rows_key: str = "lex_delta_rows"
    documents: str = "SELECT rowid, content, updated FROM memories WHERE removed_at IS NULL"


MEMORY_TABLES = LexTables()


class ImportTail:
    """The postings rows an import's batches wrote to the newest segment, so the next batch
    appends to them without reading them back (each batch of 2,000 re-read its terms' rows of a
    segment of 8,192 documents that the batches before it had just written).

    Trusted only while it is what the store holds: the import calls ``sealed`` last in each batch's
    transaction and ``check`` first in the next one, and the tail empties when anyone else committed
    or this connection changed a row in between (``Database.stamp``; PostgreSQL has none, so
    there it never holds anything). A segment whose first lexid is the import's or later is
    "owned": every row of it was written by this tail, so a term it lacks has no row to read.
    """

    def __init__(self) -> None:
        self.blobs: dict[tuple[str, int], bytes] = {}
        self.first: int | None = None  # the first lexid indexed since the tail was last emptied
        self._top: int | None = None  # the segment ``blobs`` hold rows of (all of them, after ``wrote``)
        self._stamp: object = None

    def owns(self, seg: int) -> bool:
        return self.first is not None and seg * SEGMENT_DOCS >= self.first

    def wrote(self, rows: list[tuple[str, int, bytes]], top: int) -> None:
        """Keep the rows of the newest segment (the next batch's lexids are beyond the others')."""
        if top != self._top:  # a new newest segment: the rows kept so far are of older ones
            self.blobs = {key: blob for key, blob in self.blobs.items() if key[1] >= top}
            self._top = top
        self.blobs.update(((term, seg), blob) for term, seg, blob in rows if seg >= top)

    def sealed(self, db: Database) -> None:
        """Last in the batch's transaction (its own commit leaves the stamp as it is): the store
        holds what the tail holds."""
        self._stamp = db.stamp()

    def check(self, db: Database) -> None:
        """First in a transaction: forget everything when the store may have changed since ``sealed``."""
        stamp = db.stamp()
        if stamp is None or stamp != self._stamp:
            self.blobs, self.first = {}, None


class Lexicon:
    """Write side (called inside the store's transactions) and read side (a LexicalIndex)."""

    def __init__(self, db: Database, tables: LexTables = MEMORY_TABLES):
        self.db = db
        self.t = tables
        self._version: int | None = None
        self._dirty = True
        # the edit count (meta) and highest lexid this view holds: what another commit is compared with
        self._edits_key = f"{tables.docs}_edits"
        self._snapshot_key = f"{tables.docs}_snapshot"
        self._edits = ""
        self._top = 0
        self._appended = False
        self._lexid_of: np.ndarray | None = None  # document key -> live lexid (-1: none), built when asked
        # term -> (live lexids ascending, tfs), filtered against ``live`` as of ``_epoch``; the same
        # array objects come back until something changes, so rankers may key derived data on them
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._filtered: dict[str, int] = {}  # term -> the retirement epoch its cached arrays were filtered at
        # term -> (lexid buffer, tf buffer, the cached lexids viewing its start): room for this
        # view's own writes to append to a cached posting list without copying it each time
        self._room: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
        # term -> stored posting count (segments + delta, retired texts included), as doc_freqs read it;
        # this view's own single writes add to it, anything else that changes postings empties it
        self._stored_df: dict[str, int] = {}
        self._epoch = 0  # counts retirements: cached postings are filtered again after one
        self._size = 0  # highest lexid + 1 held in the arrays below
        self.doc_key = np.empty(0, np.int64)
        self.doc_len = np.empty(0, np.float64)
        self.doc_ts = np.empty(0, np.float64)
        self.live = np.empty(0, bool)
        self.n_docs = 0
        self._total_len = 0.0
        # terms whose stored postings failed validation in a read: skipped, and rebuilt by the store
        self.damaged: set[str] = set()

    # ------------------------------------------------------------------ write side
    def ensure_current(self, conn: sqlite3.Connection, announce: Callable[[str], None] | None = None) -> bool:
        """Rebuild the index when the token stream changed since it was built; True if rebuilt.
        ``announce`` is told first, with how many texts wait, since the rebuild takes seconds on a large store."""
        current = fingerprint()
        if _meta(conn, self.t.tokenizer_key, "") == current:
            return False
        if announce is not None:  # a new store (nothing waiting) has nothing to say
            (count,) = conn.execute(f"SELECT count(*) FROM ({self.t.documents}) AS waiting").fetchone()
            if count:
                announce(f"rebuilding the lexical index of {count} memories for this version's token stream (once)")
        self.rebuild(conn)
        Database.set_meta(conn, self.t.tokenizer_key, current)
        return True

    def rebuild(self, conn: sqlite3.Connection) -> None:
        """Index every live document afresh (a tokenizer change, or retired postings piling up)."""
        self._stored_df.clear()
        conn.execute(f"DELETE FROM {self.t.docs}")
        conn.execute(f"DELETE FROM {self.t.segments}")
        conn.execute(f"DELETE FROM {self.t.delta}")
        conn.execute(f"DELETE FROM {self.t.counts}")
        rows = conn.execute(self.t.documents).fetchall()
        self.add_many(conn, [(r, c, _epoch(u) if isinstance(u, str) else float(u)) for r, c, u in rows])
        Database.set_meta(conn, self.t.delta_rows_key, "0")
        self._edited(conn)
        self._dirty = True

    def add(self, conn: sqlite3.Connection, key: int, text: str, ts: float, stream: list[str] | None = None) -> None:
        """Index one text through the delta table (cheap), compacting when the delta grows large.
        ``stream``: the text's ``tokenize`` when the caller has it already."""
        counts = Counter(tokenize(text) if stream is None else stream)
        length = sum(counts.values())
        lexid = conn.execute(
            f"INSERT INTO {self.t.docs}(mem, length, live, ts) VALUES (?, ?, 1, ?)", (key, length, ts)
        ).lastrowid
        if len(counts) >= COMPACT_AFTER_DELTA_ROWS:
            # a text that alone fills the delta (a 1 MiB body: up to ~300k distinct CJK terms) would be
            # written to it, read back and deleted by the compaction below; fold the delta first, then
            # merge the text's postings straight into the segments: the same rows, lexids still ascending
            self.compact(conn)
            terms = list(counts)
            self._merge(conn, _group(terms, [lexid] * len(terms), [counts[t] for t in terms]))
        else:
            conn.executemany(
                f"INSERT INTO {self.t.delta}(term, lexid, tf) VALUES (?, ?, ?)",
                [(t, lexid, c) for t, c in counts.items()],
            )
        stored_df = self._stored_df
        for term in counts.keys() & stored_df.keys():
            stored_df[term] += 1
        if len(counts) < COMPACT_AFTER_DELTA_ROWS:
            pending = int(_meta(conn, self.t.delta_rows_key, "0")) + len(counts)
            if pending >= COMPACT_AFTER_DELTA_ROWS:
                self.compact(conn)
            else:
                Database.set_meta(conn, self.t.delta_rows_key, str(pending))
        self._patch_add(lexid, key, length, ts, counts)

    def add_many(self, conn: sqlite3.Connection, items: list[tuple[int, str, float]],
                 streams: list[list[str]] | None = None, tail: ImportTail | None = None) -> None:
        """Index a batch straight into the compacted blobs (the import path). ``streams``: each
        text's ``tokenize`` when the caller has it already; ``tail``: what the import's earlier
        batches wrote, when it is still what the store holds (``ImportTail``)."""
        if not items:
            return
        streams = [tokenize(text) for _, text, _ in items] if streams is None else streams
        tokens = [token for stream in streams for token in stream]
        self._append(conn, [(key, ts) for key, _, ts in items], [len(stream) for stream in streams],
                     lambda owners: _group_tokens(tokens, owners), tail)

    def add_coded(self, conn: sqlite3.Connection, items: list[tuple[int, float]], batch: CodedBatch,
                  tail: ImportTail | None = None) -> None:
        """``add_many`` of a batch tokenized as codes (``BatchTokenizer``): ``items`` are each
        text's (key, ts), in the batch's order."""
        if not items:
            return
        self._append(conn, items, batch.lengths.tolist(),
                     lambda owners: _group_codes(batch.codes, batch.names, owners), tail)

    def _append(self, conn: sqlite3.Connection, items: list[tuple[int, float]], lengths: list[int],
                group: Callable[[np.ndarray], dict], tail: ImportTail | None) -> None:
        """What ``add_many`` and ``add_coded`` share: the batch's docs rows from the next lexid on,
        then its postings (``group`` of each token's lexid) merged into the segments."""
        start = conn.execute(f"SELECT COALESCE(MAX(lexid), 0) + 1 FROM {self.t.docs}").fetchone()[0]
        if tail is not None and tail.first is None:
            tail.first = start
        lexids = np.arange(start, start + len(items), dtype=np.int64)
        conn.executemany(f"INSERT INTO {self.t.docs}(lexid, mem, length, live, ts) VALUES (?, ?, ?, 1, ?)",
                         [(lexid, key, length, ts) for lexid, (key, ts), length in zip(lexids.tolist(), items, lengths)])
        self._stored_df.clear()
        self._merge(conn, group(np.repeat(lexids, lengths)), tail)
        self._appended = True  # the next refresh reads the new rows (our own commit leaves data_version alone)

    def remove(self, conn: sqlite3.Connection, key: int) -> None:
        """Retire the live text version of a document (its postings are skipped from now on)."""
        self._retire(conn.execute(
            f"UPDATE {self.t.docs} SET live = 0 WHERE mem = ? AND live = 1 RETURNING lexid, length", (key,)
        ).fetchall())
        self._edited(conn)

    def remove_many(self, conn: sqlite3.Connection, keys: list[int]) -> None:
        """Retire the live text versions of many documents (a transcript that was rewritten or deleted)."""
        for chunk in _chunks(keys):
            marks = ",".join("?" * len(chunk))
            self._retire(conn.execute(
                f"UPDATE {self.t.docs} SET live = 0 WHERE live = 1 AND mem IN ({marks}) RETURNING lexid, length",
                chunk).fetchall())
        self._edited(conn)

    def _edited(self, conn: sqlite3.Connection) -> None:
        """Count an edit of existing index rows, so other processes' views know to reload them.
        This view is patched in place; it takes the new count as seen (a rollback only costs it
        one needless reload)."""
        self._edits = str(int(_meta(conn, self._edits_key, "0")) + 1)
        Database.set_meta(conn, self._edits_key, self._edits)

    def _retire(self, rows: list[tuple[int, int]]) -> None:
        for lexid, length in rows:
            if lexid < self._size and self.live[lexid]:
                self.live[lexid] = False
                self.n_docs -= 1
                self._total_len -= length
                self._epoch += 1
                key = int(self.doc_key[lexid])
                if self._lexid_of is not None and key < self._lexid_of.size and self._lexid_of[key] == lexid:
                    self._lexid_of[key] = -1

    def touch(self, conn: sqlite3.Connection, key: int, ts: float) -> None:
        """Record a new update time (the keyword leg's recency nudge) without re-indexing."""
        rows = conn.execute(
            f"UPDATE {self.t.docs} SET ts = ? WHERE mem = ? AND live = 1 RETURNING lexid", (ts, key)
        ).fetchall()
        for (lexid,) in rows:
            if lexid < self._size:
                self.doc_ts[lexid] = ts
        self._edited(conn)

    def compact(self, conn: sqlite3.Connection) -> None:
        """Fold the delta rows into the per-term segments."""
        rows = conn.execute(f"SELECT term, lexid, tf FROM {self.t.delta} ORDER BY lexid").fetchall()
        if rows:
            terms, lexids, tfs = zip(*rows)
            self._merge(conn, _group(list(terms), list(lexids), list(tfs)))
        conn.execute(f"DELETE FROM {self.t.delta}")
        Database.set_meta(conn, self.t.delta_rows_key, "0")

    def _merge(self, conn: sqlite3.Connection, groups: dict[tuple[str, int], tuple[bytes, bytes]],
               tail: ImportTail | None = None) -> None:
        """Append grouped postings to their segments; lexids only grow, so appending keeps them sorted.
        A row ``tail`` holds is not read back; neither is a missing one of a segment it owns."""
        by_seg: dict[int, list[str]] = {}
        for term, seg in groups:
            by_seg.setdefault(seg, []).append(term)
        existing: dict[tuple[str, int], bytes] = {}
        stored: set[tuple[str, int]] = set()  # the rows the table holds (damaged ones included)
        damaged: set[str] = set()
        for seg, terms in by_seg.items():
            if tail is not None:
                held = tail.blobs
                existing.update(((t, seg), held[(t, seg)]) for t in terms if (t, seg) in held)
                terms = [] if tail.owns(seg) else [t for t in terms if (t, seg) not in held]
            for chunk in _chunks(terms):
                marks = ",".join("?" * len(chunk))
                for term, blob in conn.execute(
                    f"SELECT term, postings FROM {self.t.segments} WHERE seg = ? AND term IN ({marks})", [seg, *chunk]
                ):
                    stored.add((term, seg))
                    if _bounded(blob, seg):  # order and tfs are checked whenever the term is read
                        existing[(term, seg)] = blob
                    else:  # overwritten below with the new postings only; the store rebuilds the rest
                        damaged.add(term)
        stored |= existing.keys()
        rows, updates, inserts = [], [], []
        added: dict[str, int] = {}
        for key, (ids, tfs) in groups.items():
            term, seg = key
            added[term] = added.get(term, 0) + len(ids) // 4
            old = existing.get(key)
            if old is None:
                blob = ids + tfs
            else:  # one copy: the old blob's halves are joined as views, not sliced into new bytes
                half = len(old) // 2
                view = memoryview(old)
                blob = b"".join((view[:half], ids, view[half:], tfs))
            rows.append((term, seg, blob))
            if key in stored:
                updates.append((blob, term, seg))
            else:
                inserts.append((term, seg, blob))
        cache, room = self._cache, self._room
        if cache or room:
            for term in added:
                cache.pop(term, None)
                room.pop(term, None)
        _write_rows(conn, self.t.segments, updates, inserts)
        if tail is not None:
            tail.wrote(rows, max(by_seg))
        self._count(conn, added, damaged)
        self.damaged |= damaged

    def _count(self, conn: sqlite3.Connection, added: dict[str, int], damaged: set[str]) -> None:
        """Keep each merged term's posting count: one upsert adds what was appended to the stored
        count (no read first); a damaged segment was overwritten, so those terms are counted afresh."""
        conn.executemany(
            f"INSERT INTO {self.t.counts}(term, n) VALUES (?, ?) "
            f"ON CONFLICT(term) DO UPDATE SET n = {self.t.counts}.n + excluded.n",
            [(t, n) for t, n in added.items() if t not in damaged],
        )
        rows = []
        for term in damaged:
            total = conn.execute(f"SELECT COALESCE(SUM(length(postings)), 0) / 8 FROM {self.t.segments} WHERE term = ?",
                                 (term,)).fetchone()[0]
            rows.append((term, int(total)))
        conn.executemany(f"INSERT OR REPLACE INTO {self.t.counts}(term, n) VALUES (?, ?)", rows)

    # ------------------------------------------------------------------ read side
    def refresh(self) -> "Lexicon":
        """Make the view current after another connection's commit: reload the doc table when that
        commit edited index rows, read only the new rows when it appended documents, else keep all."""
        version = self.db.data_version()
        if not self._dirty and not self._appended and version == self._version:
            return self
        edits, top = self.db.read(lambda c: (
            _meta(c, self._edits_key, "0"),
            c.execute(f"SELECT COALESCE(MAX(lexid), 0) FROM {self.t.docs}").fetchone()[0]))
        if self._dirty or edits != self._edits or top < self._top:
            self._load(edits, top)
        elif top > self._top:
            self._append_rows(top)
        self._version = version
        self._dirty = self._appended = False
        return self

    def _append_rows(self, top: int) -> None:
        """Documents another process appended since this view was read (lexids only grow)."""
        rows = self.db.read(lambda c: c.execute(
            f"SELECT lexid, mem, length, ts FROM {self.t.docs} WHERE lexid > ? AND live = 1",
            (self._top,)).fetchall())
        for lexid, key, length, ts in rows:
            self._place(lexid, key, length, ts)
        self._top = top
        self._forget_postings()  # cached postings lack the new documents' terms
        self._stored_df.clear()

    def _load(self, edits: str, top: int) -> None:
        """Read the live doc table: from the snapshot when no edit came after it (then only the rows
        appended since are read), else row by row, leaving a snapshot for the next process."""
        snapshot = self.db.read(lambda c: c.execute(
            "SELECT value FROM meta WHERE key = ?", (self._snapshot_key,)).fetchone())
        arr, since = _snapshot_rows(snapshot[0] if snapshot else None, edits, top)
        if arr is None:
            rows = self.db.read(
                lambda c: c.execute(f"SELECT lexid, mem, length, ts FROM {self.t.docs} WHERE live = 1").fetchall()
            )
            arr, since = np.array(rows, dtype=np.float64).reshape(-1, 4), top
            self._save_snapshot(arr, edits, top)
        lexids = arr[:, 0].astype(np.int64)
        size = int(lexids.max()) + 1 if lexids.size else 0
        self._allocate(size)
        self.doc_key[lexids] = arr[:, 1].astype(np.int64)
        self.doc_len[lexids] = arr[:, 2]
        self.doc_ts[lexids] = arr[:, 3]
        self.live[lexids] = True
        self.n_docs = int(lexids.size)
        self._total_len = float(arr[:, 2].sum())
        self._forget_postings()
        self._stored_df.clear()
        self._lexid_of = None
        self._edits, self._top = edits, since
        if top > since:
            self._append_rows(top)

    def _save_snapshot(self, arr: np.ndarray, edits: str, top: int) -> None:
        """Keep the doc table as one blob, so a cold process reads it in one go instead of row by
        row (the bulk of a cold search on a large store). Written only when the write lock is free
        at once: a reader never queues for it; the next one tries again."""
        if self.db.read_only or arr.shape[0] < SNAPSHOT_MIN_DOCS or not self.db.keeps_doc_snapshot:
            return
        blob = f"{edits}:{top}:".encode() + arr.astype(np.float64).tobytes()
        try:
            with self.db.waiting_at_most(0), self.db.transaction() as c:
                if _meta(c, self._edits_key, "0") == edits:  # nothing edited since we read
                    self.db.set_meta(c, self._snapshot_key, blob)
        except Exception:  # locked, full or read-only: a snapshot is only a shortcut
            pass

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
        if lexid > self._top + 1:
            # another connection committed the lexids in between since this view was read: placing
            # ours would move ``_top`` past theirs, and the next refresh would never read them
            self._appended = True
            return
        self._place(lexid, key, length, ts)
        cache, room = self._cache, self._room
        for term, tf in counts.items():  # extend cached postings, so the next search need not re-read them
            cached = cache.get(term)
            if cached is None:
                continue
            ids, tfs = cached
            n = ids.size
            if n and ids[-1] >= lexid:  # kept ascending
                del cache[term]
                room.pop(term, None)
                continue
            spare = room.get(term)
            if spare is None or spare[2] is not ids or n == spare[0].size:
                # a buffer with room to grow (copied once per doubling, not at every write)
                spare = (np.empty(max(2 * n, 16), np.int64), np.empty(max(2 * n, 16), np.int32), None)
                spare[0][:n], spare[1][:n] = ids, tfs
            spare[0][n], spare[1][n] = lexid, tf
            # views of the first n + 1 slots: arrays handed out earlier end before slot n and never change
            ids, tfs = spare[0][: n + 1], spare[1][: n + 1]
            cache[term] = (ids, tfs)
            room[term] = (spare[0], spare[1], ids)

    def _place(self, lexid: int, key: int, length: int, ts: float) -> None:
        """One live document into the arrays, growing them when its lexid is beyond their end."""
        if lexid >= self.live.size:
            grow = max(lexid + 1, 2 * self.live.size)
            self.doc_key = np.concatenate([self.doc_key, np.full(grow - self.doc_key.size, -1, np.int64)])
            self.doc_len = np.concatenate([self.doc_len, np.zeros(grow - self.doc_len.size)])
            self.doc_ts = np.concatenate([self.doc_ts, np.zeros(grow - self.doc_ts.size)])
            self.live = np.concatenate([self.live, np.zeros(grow - self.live.size, bool)])
        self._size = max(self._size, lexid + 1)
        self.doc_key[lexid], self.doc_len[lexid], self.doc_ts[lexid] = key, length, ts
        self._top = max(self._top, lexid)
        if self._lexid_of is not None:
            if key >= self._lexid_of.size:
                self._lexid_of = np.concatenate(
                    [self._lexid_of, np.full(max(key + 1, 2 * self._lexid_of.size) - self._lexid_of.size, -1, np.int64)])
            self._lexid_of[key] = lexid
        if not self.live[lexid]:
            self.live[lexid] = True
            self.n_docs += 1
            self._total_len += length

    @property
    def avg_len(self) -> float:
        return self._total_len / self.n_docs if self.n_docs else 0.0

    def lexids_of(self, keys: list[int]) -> np.ndarray:
        """The live lexid of each document key (-1 for a key without one)."""
        if self._lexid_of is None:
            held = np.flatnonzero(self.live[: self._size])
            top = int(self.doc_key[held].max()) + 1 if held.size else 0
            self._lexid_of = np.full(max(top, 1024), -1, np.int64)
            self._lexid_of[self.doc_key[held]] = held
        wanted = np.asarray(keys, np.int64)
        inside = (wanted >= 0) & (wanted < self._lexid_of.size)
        return np.where(inside, self._lexid_of[np.where(inside, wanted, 0)], -1)

    def doc_freqs(self, terms: list[str]) -> dict[str, int]:
        """How many documents hold each term, without reading its postings: the cached count, else
        the stored counts (segments' in the counts table, one row a term, plus the delta rows; they
        still count retired texts until a rebuild). What a write's duplicate probe ranks its terms
        by, at a cost that does not grow with the store."""
        out = {t: self._cache[t][0].size for t in terms if t in self._cache}
        stored_df = self._stored_df
        out.update({t: stored_df[t] for t in terms if t not in out and t in stored_df})
        for chunk in _chunks([t for t in dict.fromkeys(terms) if t not in out]):
            marks = ",".join("?" * len(chunk))
            counts = dict.fromkeys(chunk, 0)
            stored, recent = self.db.read(lambda c: (
                c.execute(f"SELECT term, n FROM {self.t.counts} WHERE term IN ({marks})", chunk).fetchall(),
                c.execute(f"SELECT term, COUNT(*) FROM {self.t.delta} WHERE term IN ({marks}) GROUP BY term",
                          chunk).fetchall()))
            for term, n in stored:
                counts[term] += int(n)
            for term, n in recent:
                counts[term] += int(n)
            out.update(counts)
            if len(stored_df) > DF_MEMO_TERMS:
                stored_df.clear()
            stored_df.update(counts)
        return out

    def postings(self, terms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        missing = [t for t in dict.fromkeys(terms) if t not in self._cache]
        if missing and len(self._cache) + len(missing) > POSTINGS_MEMO_TERMS:
            self._forget_postings()
            missing = list(dict.fromkeys(terms))
        if missing:
            self._fetch(missing)
        out = {}
        for term in terms:
            ids, tfs = self._cache[term]
            if self._filtered.get(term) != self._epoch:
                if ids.size:
                    keep = self.live[ids]
                    if not keep.all():
                        ids, tfs = ids[keep], tfs[keep]
                        self._cache[term] = (ids, tfs)
                self._filtered[term] = self._epoch
            out[term] = (ids, tfs)
        return out

    def _forget_postings(self) -> None:
        """Drop the cached postings with their filter marks and spare room (read again when asked)."""
        self._cache.clear()
        self._filtered.clear()
        self._room.clear()

    def _fetch(self, terms: list[str]) -> None:
        found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for chunk in _chunks(terms):
            arrays, delta, damaged = self.db.read(lambda c: _read_terms(c, self.t, chunk))
            self.damaged |= damaged
            extra: dict[str, tuple[list, list]] = {}
            for term, lexid, tf in delta:
                extra.setdefault(term, ([], []))
                extra[term][0].append(lexid)
                extra[term][1].append(tf)
            size = self.live.size
            for term in chunk:
                ids, tfs = arrays.get(term, _EMPTY)
                if term in extra:
                    ids = np.concatenate([ids, np.array(extra[term][0], np.int64)])
                    tfs = np.concatenate([tfs, np.array(extra[term][1], np.int32)])
                    # a posting newer than our doc table belongs to another connection's write
                    if ids.size and (ids.max() >= size or ids.min() < 0):
                        keep = (ids >= 0) & (ids < size)
                        ids, tfs = ids[keep], tfs[keep]
                    if ids.size > 1 and bool(np.any(ids[1:] < ids[:-1])):  # delta rows older than an import's
                        order = np.argsort(ids, kind="stable")
                        ids, tfs = ids[order], tfs[order]
                elif ids.size and (ids[-1] >= size or ids[0] < 0):  # ascending (checked): its ends bound it
                    keep = (ids >= 0) & (ids < size)
                    ids, tfs = ids[keep], tfs[keep]
                found[term] = (ids, tfs)
        self._cache.update(found)
        for term in found:
            self._filtered.pop(term, None)
            self._room.pop(term, None)


def _read_terms(c: sqlite3.Connection, t: LexTables, terms: list[str]):
    """The terms' segment postings as checked (lexids, tfs) arrays, their delta rows, and the terms
    with a damaged row. A segment row of the wrong shape, or whose first or last lexid lies outside
    its segment, is skipped (the term's other segments still count); a term whose joined lexids do
    not strictly ascend, or with a term frequency below 1, is skipped whole. The checks run over
    all the terms' postings at once, not segment by segment: a probe reads ~100 small rows."""
    marks = ",".join("?" * len(terms))
    damaged: set[str] = set()
    rows = c.execute(
        f"SELECT term, seg, postings FROM {t.segments} WHERE term IN ({marks}) ORDER BY term, seg", terms).fetchall()
    arrays = _joined(rows, damaged) if lexical.kernel is not None else _checked_postings(rows, damaged)
    delta = []
    for term, lexid, tf in c.execute(f"SELECT term, lexid, tf FROM {t.delta} WHERE term IN ({marks})", terms):
        if isinstance(lexid, int) and isinstance(tf, int) and tf > 0:
            delta.append((term, lexid, tf))
        else:
            damaged.add(term)
    return arrays, delta, damaged


def _joined(rows: list[tuple], damaged: set[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """What ``_checked_postings`` makes of the fetched rows, in one compiled call
    (retrieval/_postings.c ``join_rows``): a probe's ~100 rows cost ~0.2 ms of Python and numpy
    passes at 100k memories, most of what reading its postings cost besides SQLite."""
    ids, tfs, spans, bad = lexical.kernel.join_rows(rows, SEGMENT_DOCS)
    damaged.update(bad)
    ids, tfs = np.frombuffer(ids, np.int64), np.frombuffer(tfs, np.int32)
    return {term: (ids[a:b], tfs[a:b]) for term, a, b in spans}


def _checked_postings(rows: list[tuple], damaged: set[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Segment rows (term, seg, blob), ordered by term then segment, joined per term with numpy, as
    ``_read_terms`` checks them (the reference ``_joined`` is compared with); the terms found
    damaged are added to ``damaged``."""
    names, segs, blobs = [], [], []
    for term, seg, blob in rows:
        if isinstance(seg, int) and isinstance(blob, bytes) and blob and not len(blob) % 8:
            names.append(term)
            segs.append(seg)
            blobs.append(blob)
        else:
            damaged.add(term)
    if not blobs:
        return {}
    halves = [len(b) // 2 for b in blobs]
    ids = np.frombuffer(b"".join([b[:h] for b, h in zip(blobs, halves)]), np.int32).astype(np.int64)
    tfs = np.frombuffer(b"".join([b[h:] for b, h in zip(blobs, halves)]), np.int32)
    counts = np.array(halves, np.int64) // 4
    ends = np.cumsum(counts)
    firsts, lasts = ids[ends - counts], ids[ends - 1]
    seg = np.array(segs, np.int64)
    sane = np.abs(seg) <= 2**31 // SEGMENT_DOCS + 1  # lexids are int32: a larger one holds none (and overflows)
    low = np.where(sane, seg, 0) * SEGMENT_DOCS
    inside = sane & (low <= firsts) & (firsts <= lasts) & (lasts < low + SEGMENT_DOCS)
    if not inside.all():  # rows outside their segment are skipped; their terms are damaged
        damaged.update(n for n, ok in zip(names, inside.tolist()) if not ok)
        keep = np.repeat(inside, counts)
        ids, tfs = ids[keep], tfs[keep]
        names = [n for n, ok in zip(names, inside.tolist()) if ok]
        counts = counts[inside]
        if not names:
            return {}
    # each term's run of rows: where the name changes
    starts = [0] + [i for i in range(1, len(names)) if names[i] != names[i - 1]]
    bounds = np.concatenate(([0], np.cumsum(counts)))
    term_of = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(names))))  # each row's term
    owner = np.repeat(term_of, counts)  # each posting's term
    bad = set(owner[1:][(ids[1:] <= ids[:-1]) & (owner[1:] == owner[:-1])].tolist())
    bad.update(owner[tfs <= 0].tolist())
    out = {}
    ends_at = starts[1:] + [len(names)]
    for number, (first, last) in enumerate(zip(starts, ends_at)):
        term = names[first]
        if number in bad:
            damaged.add(term)
        else:
            a, b = int(bounds[first]), int(bounds[last])
            out[term] = (ids[a:b], tfs[a:b])
    return out


def _snapshot_rows(blob: object, edits: str, top: int) -> tuple[np.ndarray | None, int]:
    """The doc rows a snapshot holds and the highest lexid it covers, or (None, 0) when there is
    none or an edit came after it. Rows appended after it are read separately."""
    if not isinstance(blob, bytes):
        return None, 0
    try:
        snap_edits, snap_top, body = blob.split(b":", 2)
        covered = int(snap_top)
    except ValueError:
        return None, 0
    if snap_edits.decode() != edits or covered > top or len(body) % 32:
        return None, 0
    return np.frombuffer(body, dtype=np.float64).reshape(-1, 4), covered


def _meta(conn: sqlite3.Connection, key: str, default: str) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
