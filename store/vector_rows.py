"""Vectors stored as rows, loaded into an in-memory ``VectorIndex``: shared by the memories' table
(``embeddings``) and the transcript messages' (``transcript_embeddings``), which differ only in
their table and in which column keys the index. ``RowVectors`` is a SQLite store's vector leg over
transcript messages (``Database.row_vectors``); a PostgreSQL store searches those rows with
pgvector in the server instead (store/postgres/vectors.py)."""

from __future__ import annotations

import numpy as np

from kenning.retrieval.vector import VectorIndex

from .db import Database

CHUNK = 5000  # row ids per query: below SQLite's variable limit, large enough to load 100k rows quickly


def load_rows(index: VectorIndex, db: Database, table: str, ids: list[int], key: str = "id") -> None:
    """Add the vectors of these row ids of ``table`` to ``index``, keyed by column ``key``.

    ``table`` and ``key`` are the caller's constants, never user input."""
    for i in range(0, len(ids), CHUNK):
        chunk = ids[i : i + CHUNK]
        marks = ",".join("?" * len(chunk))
        found = db.read(lambda c: c.execute(f"SELECT {key}, vector FROM {table} WHERE id IN ({marks})", chunk).fetchall())
        if found:
            index.add([k for k, _ in found], np.stack([np.frombuffer(v, np.float32) for _, v in found]))


class RowVectors:
    """Nearest neighbours over a vector table (``mem``, ``model_id``, ``vector`` rows with an
    AUTOINCREMENT ``id``), from an in-memory index this process keeps in step with the rows by a
    diff of row ids at every search, so a vector another process (or a background thread) added is
    used at once. Keyed by ``mem``."""

    def __init__(self, db: Database, table: str):
        self.db = db
        self.table = table  # the caller's constant, never user input
        self._index: VectorIndex | None = None
        self._model: str | None = None
        self._row_mem: dict[int, int] = {}  # row id -> mem, as the index holds them
        self._state: tuple[int, int] | None = None
        self.rows_seen: int | None = None  # the model's rows at the last search (a free count for callers)

    def search(self, encoder, query_vector: np.ndarray, k: int, allowed: np.ndarray | None,
               floor: float) -> list[tuple[int, float]]:
        """(mem, cosine) best first, at most ``k``, at or above ``floor``, among ``allowed`` (None: all)."""
        self._sync(encoder)
        if allowed is not None and not len(allowed):
            return []
        return self._index.search(query_vector, k, allowed=allowed, floor=floor)

    def _sync(self, encoder) -> None:
        # Whole-table counts are O(1) for SQLite where a count by model scans an index: any insert raises
        # MAX(id) (AUTOINCREMENT) and any delete lowers COUNT(*), so the pair shows whether the rows changed.
        state = tuple(self.db.read(lambda c: c.execute(
            f"SELECT COUNT(*), COALESCE(MAX(id), 0) FROM {self.table}").fetchone()))
        if self._index is not None and self._model == encoder.model_id and state == self._state:
            return
        if self._index is None or self._model != encoder.model_id:
            self._index, self._row_mem, self._model = VectorIndex(encoder.dim), {}, encoder.model_id
        wanted = dict(self.db.read(lambda c: c.execute(
            f"SELECT id, mem FROM {self.table} WHERE model_id = ?", (encoder.model_id,)).fetchall()))
        stale = [mem for row, mem in self._row_mem.items() if row not in wanted]
        if stale:  # before the adds: a re-embedded mem is removed under its old row, then added again
            self._index.remove(stale)
        load_rows(self._index, self.db, self.table, [row for row in wanted if row not in self._row_mem], key="mem")
        self._row_mem = wanted
        self._state = state
        self.rows_seen = len(wanted)
