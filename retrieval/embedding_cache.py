"""A content-addressed cache of embeddings, so re-running a collection never re-encodes a text.

Keyed by (model id, sha256 of the text), so a changed model or text is simply a miss. It lives
outside any store (the eval harness and benchmarks use it; a store keeps its own per-memory
embeddings table) in ``$KENNING_CACHE_DIR`` or the platform's user cache directory.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from kenning.errors import says_damaged

from .env_folder import env_folder

_CACHE_FILE = "embeddings.sqlite"
# SQLite's default limit on host parameters is 999 on old builds; stay under it.
_CHUNK = 500
_COMMIT_EVERY = 2048


def default_cache_path() -> Path:
    """``$KENNING_CACHE_DIR/embeddings.sqlite``, else the platform user cache dir for kenning."""
    override = env_folder("KENNING_CACHE_DIR")
    if override is not None:
        return override / _CACHE_FILE
    import platformdirs

    return Path(platformdirs.user_cache_dir("kenning")) / _CACHE_FILE


def text_key(text: str) -> bytes:
    """The cache key of a text: its sha256 digest."""
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    """(model_id, sha256(text)) -> float32 vector, in a small SQLite file safe to share between processes."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._said_damaged = False
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            if not says_damaged(exc):
                raise
            # Only a cache: the damaged file is moved aside (kept for a look) and a new one started.
            aside = self.path.with_name(f"{self.path.name}.damaged-{os.getpid()}")
            os.replace(self.path, aside)
            for suffix in ("-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            _warn(f"the embedding cache {self.path} was damaged ({exc}); moved it to {aside.name} "
                  "and started an empty one (texts are encoded again)")
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " model_id TEXT NOT NULL, text_sha BLOB NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (model_id, text_sha)) WITHOUT ROWID"
            )
            db.commit()
            db.execute("SELECT model_id, text_sha, vector FROM embeddings LIMIT 1").fetchall()
        except BaseException:
            db.close()
            raise
        return db

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def get_many(self, model_id: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        """The cached vector of each text, or None where it has not been encoded with this model."""
        digests = [text_key(text) for text in texts]
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(digests))
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            try:
                rows = self._db.execute(
                    f"SELECT text_sha, vector FROM embeddings WHERE model_id = ? AND text_sha IN ({marks})",
                    [model_id, *chunk],
                ).fetchall()
            except sqlite3.DatabaseError as exc:
                if not says_damaged(exc):
                    raise
                self._damaged_pages(exc)
                break  # what the damaged pages held is a miss: encoded again
            for digest, blob in rows:
                found[digest] = np.frombuffer(blob, dtype=np.float32)
        return [found.get(digest) for digest in digests]

    def _damaged_pages(self, exc: sqlite3.DatabaseError) -> None:
        if not self._said_damaged:
            self._said_damaged = True
            _warn(f"the embedding cache {self.path} is damaged ({exc}): texts it cannot read are encoded "
                  "again; delete the file to start a new one")

    def put_many(self, model_id: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store one vector per text (replacing any earlier one), in one transaction."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if len(vectors) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO embeddings (model_id, text_sha, vector) VALUES (?, ?, ?)",
                    [(model_id, text_key(text), vector.tobytes()) for text, vector in zip(texts, vectors)],
                )
        except sqlite3.DatabaseError as exc:
            if not says_damaged(exc):
                raise
            self._damaged_pages(exc)  # not kept: the caller has its vectors all the same


def _warn(message: str) -> None:
    import logging

    logging.getLogger(__name__).warning(message)


def embed_with_cache(
    encoder,
    texts: Sequence[str],
    cache: EmbeddingCache,
    progress: Callable[[int], None] | None = None,
    batch_size: int = 16,
) -> np.ndarray:
    """Vectors for texts, encoding only the ones the cache lacks (each distinct text once).

    ``encoder`` is an ``embeddings.Encoder`` (anything with ``model_id``, ``dim`` and
    ``encode``); ``progress(n)`` advances by the number of texts encoded.
    """
    out = np.empty((len(texts), encoder.dim), dtype=np.float32)
    missing: dict[str, list[int]] = {}
    for i, (text, vector) in enumerate(zip(texts, cache.get_many(encoder.model_id, texts))):
        if vector is not None and vector.shape == (encoder.dim,):
            out[i] = vector
        else:
            missing.setdefault(text, []).append(i)
    todo = list(missing)
    # Commit in slices, so an interrupted run of a large collection keeps what it encoded.
    for start in range(0, len(todo), _COMMIT_EVERY):
        chunk = todo[start : start + _COMMIT_EVERY]
        vectors = encoder.encode(chunk, batch_size=batch_size, progress=progress)
        cache.put_many(encoder.model_id, chunk, vectors)
        for text, vector in zip(chunk, vectors):
            out[missing[text]] = vector
    return out
