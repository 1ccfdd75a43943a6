"""Vectors stored as rows, loaded into an in-memory ``VectorIndex``: shared by the memories' table
(``embeddings``) and the transcript messages' (``transcript_embeddings``), which differ only in
their table and in which column keys the index."""

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
