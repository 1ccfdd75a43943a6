"""The store's semantic leg: embeddings are rows in SQLite, the vector index is a derived file.

A write never waits for the model: it queues its memory in ``embed_queue`` in the same
transaction, and whichever process has the model loaded anyway (a server, an import, ``kenning
index``, the next semantic or hybrid search) embeds the queue first. Vectors are keyed by the
``embeddings`` row id, so a re-embedded text gets a new key and an index can be brought up to date
by a key diff. ``embeddings_generation`` in ``meta`` changes with every change to the table: an
index that lags it (another process wrote) is caught up incrementally; one that is missing,
damaged or built with another model is rebuilt from the rows.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kenning.errors import EmbeddingsUnavailable
from kenning.retrieval import embeddings
from kenning.retrieval.vector import VectorIndex

from . import integrity
from .db import Database
from .models import StoreConfig
from .records import count_live

if TYPE_CHECKING:
    from kenning.retrieval.embedding_cache import EmbeddingCache

INDEX_FILENAME = "vectors.idx"
EMBED_BATCH = 256
SAVE_INTERVAL_S = 30.0
# Floor for a model nobody has measured (see embeddings.NO_MATCH_FLOORS for measured ones).
FALLBACK_FLOOR = 0.3


def bump_generation(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('embeddings_generation', '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )


def forget(conn: sqlite3.Connection, mem: int) -> None:
    """Drop a memory's vectors and queue entry (on remove, or before its text changes)."""
    if conn.execute("DELETE FROM embeddings WHERE mem = ?", (mem,)).rowcount:
        bump_generation(conn)
    conn.execute("DELETE FROM embed_queue WHERE mem = ?", (mem,))


def enqueue(conn: sqlite3.Connection, mems: list[int]) -> None:
    conn.executemany("INSERT OR IGNORE INTO embed_queue(mem) VALUES (?)", [(m,) for m in mems])


class Semantic:
    """Lazily loads the model, embeds the queue, keeps a vector index in step with the rows."""

    def __init__(self, db: Database, directory: Path, config: Callable[[], StoreConfig]):
        """``config`` is read on every use: the store's settings can change while it is open."""
        self.db = db
        self.index_path = directory / INDEX_FILENAME
        self._config = config
        self.cache: EmbeddingCache | None = None  # the eval harness shares vectors across runs
        self._encoder: embeddings.Encoder | None = None
        self._encoder_for: str | None = None  # the configured model name it was loaded for
        self._index: VectorIndex | None = None
        self._emb_mem: dict[int, int] = {}
        self._generation: int | None = None
        self._saved_generation: int | None = None
        self._last_save = 0.0

    # ------------------------------------------------------------------ availability
    def availability(self) -> embeddings.Availability:
        """Absent / working / broken for the store's model; loads the model on first call."""
        return embeddings.probe(self._config().model)

    @property
    def loaded(self) -> bool:
        """True once this process has the model in memory (then embedding a write is cheap)."""
        return self._encoder is not None

    def encoder(self) -> embeddings.Encoder:
        """The store's encoder; raises EmbeddingsUnavailable (naming the install command) if it cannot run."""
        if self._encoder is not None and self._encoder_for != self._config().model:
            self._encoder, self._index = None, None  # the store was configured with another model
        if self._encoder is None:
            self._encoder_for = self._config().model
            availability = self.availability()
            if not availability.working:
                raise EmbeddingsUnavailable(availability.cause or "unknown cause")
            self._encoder = embeddings.get_encoder(availability.model)
            self._adopt_model(self._encoder)
        return self._encoder

    def model_info(self) -> dict:
        """Which model the store's vectors come from (without loading any model)."""
        return {
            "model_id": self.db.get_meta("embedding_model"),
            "dim": int(self.db.get_meta("embedding_dim") or 0) or None,
            "pending": self.pending_count(),
        }

    def floor(self) -> float:
        """The no-match floor: configured, else the model's measured one, else a fallback."""
        configured = self._config().vector_floor
        if configured is not None:
            return configured
        measured = embeddings.no_match_floor(self._encoder.spec) if self._encoder else None
        return FALLBACK_FLOOR if measured is None else measured

    def _adopt_model(self, encoder: embeddings.Encoder) -> None:
        """A store indexed with another model is re-embedded, never mixed (a read-only store cannot be:
        its vector leg then sees only the vectors this model made, which may be none)."""
        if self.db.get_meta("embedding_model") == encoder.model_id or self.db.read_only:
            return
        with self.db.transaction() as c:
            if c.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone() != (encoder.model_id,):
                c.execute("DELETE FROM embeddings WHERE model_id != ?", (encoder.model_id,))
                c.execute("INSERT OR IGNORE INTO embed_queue(mem) SELECT rowid FROM memories WHERE removed_at IS NULL")
                Database.set_meta(c, "embedding_model", encoder.model_id)
                Database.set_meta(c, "embedding_dim", str(encoder.dim))
                bump_generation(c)
        self._index = None
        try:
            self.index_path.unlink(missing_ok=True)
        except OSError:
            pass  # not a file: never loaded (`kenning check` reports it)

    # ------------------------------------------------------------------ embedding
    def pending_count(self) -> int:
        """Memories without a vector for the store's model (all of them after a model switch)."""
        queued = self.db.read(lambda c: c.execute("SELECT COUNT(*) FROM embed_queue").fetchone()[0])
        recorded = self.db.get_meta("embedding_model")
        if self._encoder is not None or recorded is None:
            return queued
        try:
            spec = embeddings.resolve_model(self._config().model)
        except Exception:
            return queued
        return count_live(self.db) if spec.model_id != recorded else queued

    def embed_pending(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every queued memory (batched); returns how many were embedded (none in a read-only store)."""
        if self.db.read_only:
            return 0
        encoder = self.encoder()
        done = 0
        while True:
            rows = self.db.read(lambda c: c.execute(
                "SELECT q.mem, m.content, m.content_hash FROM embed_queue q "
                "JOIN memories m ON m.rowid = q.mem AND m.removed_at IS NULL LIMIT ?", (EMBED_BATCH,)).fetchall())
            if not rows:
                with self.db.transaction() as c:  # queue entries of removed memories
                    c.execute("DELETE FROM embed_queue WHERE mem NOT IN (SELECT rowid FROM memories WHERE removed_at IS NULL)")
                return done
            vectors = self._vectors_for(encoder, [r[1] for r in rows], [r[2] for r in rows], progress)
            with self.db.transaction() as c:
                before = self._current_generation(c)
                added = []
                for (mem, _, digest), vector in zip(rows, vectors):
                    still = c.execute("SELECT content_hash FROM memories WHERE rowid = ? AND removed_at IS NULL", (mem,)).fetchone()
                    if still is None or still[0] != digest:
                        continue  # changed meanwhile: it stays queued for the next pass
                    c.execute("DELETE FROM embeddings WHERE mem = ? AND model_id = ?", (mem, encoder.model_id))
                    key = c.execute(
                        "INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (?, ?, ?, ?)",
                        (mem, encoder.model_id, digest, vector.astype(np.float32).tobytes())).lastrowid
                    c.execute("DELETE FROM embed_queue WHERE mem = ?", (mem,))
                    added.append((key, mem, vector))
                if added:
                    bump_generation(c)
                    after = self._current_generation(c)
            if added and self._index is not None and self._generation == before:
                self._index.add([k for k, _, _ in added], np.stack([v for _, _, v in added]))
                self._emb_mem.update((k, m) for k, m, _ in added)
                self._generation = after
            done += len(added)

    def _vectors_for(self, encoder, texts: list[str], digests: list[str], progress) -> np.ndarray:
        """Vectors for texts: reuse rows with the same text hash, encode only the rest."""
        known: dict[str, bytes] = {}
        marks = ",".join("?" * len(digests))
        known.update(self.db.read(lambda c: c.execute(
            f"SELECT content_hash, vector FROM embeddings WHERE model_id = ? AND content_hash IN ({marks})",
            (encoder.model_id, *digests)).fetchall()))
        out = np.empty((len(texts), encoder.dim), np.float32)
        todo = [i for i, d in enumerate(digests) if d not in known]
        for i, d in enumerate(digests):
            if d in known:
                out[i] = np.frombuffer(known[d], np.float32)
        if todo:
            batch = [texts[i] for i in todo]
            if self.cache is not None:
                from kenning.retrieval.embedding_cache import embed_with_cache

                encoded = embed_with_cache(encoder, batch, self.cache, progress=progress)
            else:
                encoded = encoder.encode(batch, progress=progress)
            out[todo] = encoded
        if progress is not None and len(todo) < len(texts):
            progress(len(texts) - len(todo))
        return out

    # ------------------------------------------------------------------ search
    def search(self, query: str, k: int, allowed_mems: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(memory key, cosine) best first, only above the floor; embeds the queue first."""
        encoder = self.encoder()
        self.embed_pending()
        self._sync(encoder)
        allowed = None
        if allowed_mems is not None:
            wanted = set(allowed_mems.tolist())
            allowed = {key for key, mem in self._emb_mem.items() if mem in wanted}
        hits = self._index.search(encoder.encode_query(query), k, allowed=allowed, floor=self.floor())
        self.save(force=False)
        return [(self._emb_mem[key], score) for key, score in hits]

    def _current_generation(self, c: sqlite3.Connection) -> int:
        row = c.execute("SELECT value FROM meta WHERE key = 'embeddings_generation'").fetchone()
        return int(row[0]) if row else 0

    def _sync(self, encoder: embeddings.Encoder) -> None:
        generation = self.db.read(self._current_generation)
        if self._index is not None and generation == self._generation:
            return
        rows = self.db.read(lambda c: c.execute(
            "SELECT rowid, mem FROM embeddings WHERE model_id = ?", (encoder.model_id,)).fetchall())
        wanted = dict(rows)
        if self._index is None:
            self._index = VectorIndex.load(self.index_path, encoder.dim,
                                           {"model_id": encoder.model_id})
            if self._index is not None and integrity.index_trusted(self.db, self._index.meta) is not None:
                self._index = None  # another store's, or a later state's than this database: rebuilt from the rows
            self._saved_generation = None
            if self._index is None:
                self._index = VectorIndex(encoder.dim)
        have = set(self._index.keys().tolist())
        stale = have - wanted.keys()
        missing = [key for key in wanted if key not in have]
        if stale:
            self._index.remove(stale)
        for i in range(0, len(missing), 5000):
            chunk = missing[i : i + 5000]
            marks = ",".join("?" * len(chunk))
            found = self.db.read(lambda c: c.execute(
                f"SELECT rowid, vector FROM embeddings WHERE rowid IN ({marks})", chunk).fetchall())
            if found:
                self._index.add([r for r, _ in found], np.stack([np.frombuffer(v, np.float32) for _, v in found]))
        self._emb_mem = wanted
        self._generation = generation

    def save(self, force: bool = True) -> None:
        """Persist the index when it moved on since the last save (at most every SAVE_INTERVAL_S unless forced)."""
        if self._index is None or self._generation == self._saved_generation or self._encoder is None:
            return
        if self.db.read_only:
            return
        if not force and time.monotonic() - self._last_save < SAVE_INTERVAL_S:
            return
        try:
            if len(self._index) == 0:
                self.index_path.unlink(missing_ok=True)
            else:
                self._index.save(self.index_path, {"model_id": self._encoder.model_id,
                                                   **integrity.index_provenance(self.db, self._index.keys(), self._generation)})
        except OSError:
            pass  # the file is only a cache of the rows (a folder in its way: `kenning check` reports it)
        self._saved_generation = self._generation
        self._last_save = time.monotonic()

    # ------------------------------------------------------------------ rebuild (kenning rebuild vectors)
    def forget_index(self) -> None:
        """Drop this process's vector index; the next search (or rebuild_index) builds it from the rows."""
        self._index, self._generation, self._saved_generation = None, None, None

    def rebuild_index(self) -> None:
        """Build the vector index from the embedding rows now and save it."""
        self._sync(self.encoder())
        self.save()
