"""The vector leg of a SQLite store: an in-process ``VectorIndex`` over the embedding rows, saved
beside the database as a derived file (``vectors.idx``).

The rows are the truth; the index mirrors them by key (an embedding row's id) and is caught up by a
key diff whenever ``embeddings_generation`` moved (another process wrote), rebuilt when its file is
missing, damaged or not trusted (store/integrity.py), and saved at most every ``SAVE_INTERVAL_S``.
Every method runs under the database's lock (``Semantic`` holds it), with the rows it mirrors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kenning.retrieval.int_map import IntMap
from kenning.retrieval.vector import VectorIndex

from . import integrity
from .memo import memo
from .vector_rows import load_rows

INDEX_FILENAME = "vectors.idx"
SAVE_INTERVAL_S = 30.0
# every row's key and memory for one model: '+model_id' keeps SQLite on the (mem, model_id) index, which
# holds both and reads a few MB; through embeddings_model it fetched each row from the table, whose pages
# carry the vectors (~0.6 s of CPU, and seconds of disk when cold, at 100k before a first hybrid search)
KEYS_SQL = "SELECT id, mem FROM embeddings WHERE +model_id = ?"


def current_generation(c: Any) -> int:
    row = c.execute("SELECT value FROM meta WHERE key = 'embeddings_generation'").fetchone()
    return int(row[0]) if row else 0


class IndexFile:
    """Nearest neighbours from an in-memory index kept in step with the rows, persisted as a file."""

    def __init__(self, db: Any, directory: Path):
        self.db = db
        self.index_path = directory / INDEX_FILENAME
        self._index: VectorIndex | None = None
        self._emb_mem = IntMap()  # embedding row id (the index's key) -> memory rowid
        self._generation: int | None = None
        self._saved_generation: int | None = None
        self._model: str | None = None
        self._last_save = 0.0

    def reset(self) -> None:
        """Forget the in-memory index; the next search builds it from the rows (or the file)."""
        self._index, self._emb_mem, self._generation, self._saved_generation = None, IntMap(), None, None

    def model_changed(self) -> None:
        """The store re-embeds with another model: the file holds the old model's vectors."""
        self.reset()
        try:
            self.index_path.unlink(missing_ok=True)
        except OSError:
            pass  # not a file: never loaded (`kenning check` reports it)

    def committed(self, before: int, after: int, added: list[tuple[int, int, np.ndarray]], dropped: list[int]) -> None:
        """Rows ``added`` (key, memory, vector) and ``dropped`` (keys) were committed, moving the
        generation from ``before`` to ``after``: applied in place when nothing else moved it."""
        if self._index is None or self._generation != before:
            return  # someone else committed in between: the next search catches up by a key diff
        if dropped:
            self._index.remove(dropped)
            for key in dropped:
                self._emb_mem.pop(key, None)
        self._index.add([k for k, _, _ in added], np.stack([v for _, _, v in added]))
        self._emb_mem.update((k, m) for k, m, _ in added)
        self._generation = after

    def search(self, encoder: Any, query_vector: np.ndarray, k: int, allowed_mems: np.ndarray | None,
               floor: float) -> list[tuple[int, float]]:
        return self.prepare(encoder, allowed_mems)(query_vector, k, floor)()

    def prepare(self, encoder: Any, allowed_mems: np.ndarray | None) -> Callable[..., Callable[[], list]]:
        """``search`` in steps: the index brought in step with the rows and the filter read now; then
        ``(vector, k, floor)`` walks the index (``VectorIndex.search_in_steps``: reads no row, so it
        may run on another thread while this one holds the database's lock and keeps writers out);
        what that returns gives the hits, ranked in Python on the thread that calls it."""
        self._sync(encoder)
        allowed = None
        if allowed_mems is not None:
            wanted = set(allowed_mems.tolist())
            allowed = {key for key, mem in self._emb_mem.items() if mem in wanted}
        index, emb_mem = self._index, self._emb_mem

        def walk(query_vector: np.ndarray, k: int, floor: float) -> Callable[[], list[tuple[int, float]]]:
            ranked = index.search_in_steps(query_vector, k, allowed=allowed, floor=floor)

            def hits() -> list[tuple[int, float]]:
                found = ranked()
                keys = np.fromiter((key for key, _ in found), np.int64, len(found))
                return list(zip(emb_mem.lookup(keys).tolist(), (score for _, score in found)))

            return hits

        return walk

    def warm(self, encoder: Any) -> None:
        """Load the index (from its file, else the rows) now rather than at the first search."""
        self._sync(encoder)

    def _sync(self, encoder: Any) -> None:
        """Bring the index in step with the rows (the rows' generation is read again only after
        the store changed: store/memo.py)."""
        held = memo(self.db, "embeddings_generation")
        if "now" not in held:
            held["now"] = self.db.read(current_generation)
        generation = held["now"]
        if self._index is not None and generation == self._generation:
            return
        rows = self.db.read(lambda c: c.execute(KEYS_SQL, (encoder.model_id,)).fetchall())
        wanted = dict(rows)
        saved_as = None  # the generation the loaded file was saved at
        if self._index is None:
            self._index = VectorIndex.load(self.index_path, encoder.dim, {"model_id": encoder.model_id})
            if self._index is not None and integrity.index_trusted(self.db, self._index.meta) is not None:
                self._index = None  # another store's, or a later state's than this database: rebuilt from the rows
            self._saved_generation = None
            if self._index is None:
                self._index = VectorIndex(encoder.dim)
            else:
                saved_as = self._index.meta.get("generation")
        self._model = encoder.model_id
        have = set(self._index.keys().tolist())
        stale = have - wanted.keys()
        missing = [key for key in wanted if key not in have]
        if stale:
            self._index.remove(stale)
        load_rows(self._index, self.db, "embeddings", missing)
        self._emb_mem = IntMap(wanted.items())
        self._generation = generation
        if saved_as == generation and not stale and not missing:
            self._saved_generation = generation  # the file holds this state already: closing need not rewrite it

    def rebuild(self, encoder: Any) -> None:
        self._sync(encoder)
        self.save()

    def state(self) -> dict:
        """The in-memory index against the rows (for checks and tests): keys on each side."""
        rows = self.db.read(lambda c: c.execute("SELECT id, mem FROM embeddings").fetchall())
        keys = [] if self._index is None else sorted(self._index.keys().tolist())
        return {"generation": self._generation, "index_keys": keys, "key_map": dict(self._emb_mem),
                "db": dict(rows), "db_generation": self.db.read(current_generation)}

    def save(self, force: bool = True) -> None:
        """Persist the index when it moved on since the last save (at most every SAVE_INTERVAL_S unless forced)."""
        if self._index is None or self._generation == self._saved_generation or self._model is None:
            return
        if self.db.read_only:
            return
        if not force and time.monotonic() - self._last_save < SAVE_INTERVAL_S:
            return
        try:
            if len(self._index) == 0:
                self.index_path.unlink(missing_ok=True)
            else:
                self._index.save(self.index_path, {"model_id": self._model, **integrity.index_provenance(
                    self.db, self._index.keys(), self._generation)})
        except OSError:
            pass  # the file is only a cache of the rows (a folder in its way: `kenning check` reports it)
        self._saved_generation = self._generation
        self._last_save = time.monotonic()

    def check(self) -> list[integrity.Problem]:
        return integrity.check_vector_index(self.db, self.index_path)

    def discard(self) -> str | None:
        """Before a rebuild: the file removed (a folder in its place moved aside); what was done."""
        moved = integrity.remove_index_file(self.index_path)
        self.reset()
        return moved
