"""The vector leg over transcript messages: the store's own model, vectors as rows, an in-memory index.

Vectors live in ``transcript_embeddings`` (one row per message and model); this process keeps a
``VectorIndex`` in step with the rows by a key diff on every search, so a vector another process
added is used at its next search. Embedding is the slow part (a few hundred messages a second on a
laptop CPU), so a search embeds at most ``EMBED_PER_SEARCH`` new messages (a live session's
appends) and ``kenning transcripts index`` embeds a backlog with a progress bar. Until a message
has its vector the lexical legs still find it; the result says how many wait.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import numpy as np

from kenning.retrieval.vector import VectorIndex
from kenning.store.db import Database
from kenning.store.semantic import Semantic

EMBED_BATCH = 128
EMBED_PER_SEARCH = 64


class TranscriptVectors:
    def __init__(self, db: Database, semantic: Semantic):
        self.db = db
        self.semantic = semantic
        self._index: VectorIndex | None = None
        self._model: str | None = None
        self._key_mem: dict[int, int] = {}
        self._state: tuple[int, int] | None = None

    def available(self) -> bool:
        return self.semantic.availability().working

    def pending(self) -> int:
        """Messages without a vector for the store's model (without loading the model when it is not loaded).

        A count difference, not a join: vectors of dropped messages are deleted with them (``forget``)."""
        model = self.semantic.encoder().model_id if self.semantic.loaded else self.db.get_meta("embedding_model")
        return self.db.read(lambda c: c.execute(
            "SELECT (SELECT COUNT(*) FROM transcript_messages) - "
            "(SELECT COUNT(*) FROM transcript_embeddings WHERE model_id = ?)", (model,)).fetchone()[0])

    def embed_pending(self, limit: int | None = None, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed messages that have no vector yet (at most ``limit``); returns how many were embedded."""
        encoder = self.semantic.encoder()
        total = self.pending() if progress is not None else 0
        done = 0
        with self.db.transaction() as c:
            c.execute("DELETE FROM transcript_embeddings WHERE model_id != ?", (encoder.model_id,))
        while limit is None or done < limit:
            size = EMBED_BATCH if limit is None else min(EMBED_BATCH, limit - done)
            rows = self.db.read(lambda c: c.execute(
                "SELECT m.rowid, m.text FROM transcript_messages m WHERE NOT EXISTS (SELECT 1 FROM "
                "transcript_embeddings e WHERE e.mem = m.rowid AND e.model_id = ?) ORDER BY m.rowid DESC LIMIT ?",
                (encoder.model_id, size)).fetchall())
            if not rows:
                break
            vectors = encoder.encode([text for _, text in rows])
            with self.db.transaction() as c:
                for (mem, text), vector in zip(rows, vectors):
                    if _still(c, mem, text):  # a rewrite may have replaced the message meanwhile
                        c.execute("INSERT OR REPLACE INTO transcript_embeddings(mem, model_id, vector) VALUES (?, ?, ?)",
                                  (mem, encoder.model_id, np.asarray(vector, np.float32).tobytes()))
            done += len(rows)
            if progress is not None:
                progress(done, max(total, done))
        return done

    def search(self, query: str, k: int, allowed_keys: np.ndarray | None) -> list[tuple[int, float]]:
        """(message key, cosine) best first, above the model's no-match floor."""
        encoder = self.semantic.encoder()
        if not self.db.read_only and self.pending():
            self.embed_pending(limit=EMBED_PER_SEARCH)
        self._sync(encoder)
        allowed = None
        if allowed_keys is not None:
            wanted = set(allowed_keys.tolist())
            allowed = {key for key, mem in self._key_mem.items() if mem in wanted}
        hits = self._index.search(encoder.encode_query(query), k, allowed=allowed, floor=self.semantic.floor())
        return [(self._key_mem[key], score) for key, score in hits]

    def _sync(self, encoder) -> None:
        """Bring the in-memory index in step with the rows (another process may have embedded or dropped some)."""
        state = self.db.read(lambda c: c.execute(
            "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM transcript_embeddings WHERE model_id = ?",
            (encoder.model_id,)).fetchone())
        if self._index is not None and self._model == encoder.model_id and state == self._state:
            return
        if self._index is None or self._model != encoder.model_id:
            self._index, self._key_mem, self._model = VectorIndex(encoder.dim), {}, encoder.model_id
        wanted = dict(self.db.read(lambda c: c.execute(
            "SELECT id, mem FROM transcript_embeddings WHERE model_id = ?", (encoder.model_id,)).fetchall()))
        stale = set(self._key_mem) - set(wanted)
        if stale:
            self._index.remove(stale)
        missing = [key for key in wanted if key not in self._key_mem]
        for i in range(0, len(missing), 5000):
            chunk = missing[i : i + 5000]
            marks = ",".join("?" * len(chunk))
            found = self.db.read(lambda c: c.execute(
                f"SELECT id, vector FROM transcript_embeddings WHERE id IN ({marks})", chunk).fetchall())
            if found:
                self._index.add([r for r, _ in found], np.stack([np.frombuffer(v, np.float32) for _, v in found]))
        self._key_mem = wanted
        self._state = tuple(state)


def _still(c: sqlite3.Connection, mem: int, text: str) -> bool:
    row = c.execute("SELECT text FROM transcript_messages WHERE rowid = ?", (mem,)).fetchone()
    return row is not None and row[0] == text


def forget(c: sqlite3.Connection, mems: list[int]) -> None:
    """Drop the vectors of messages that are gone (called where the messages are deleted)."""
    for i in range(0, len(mems), 500):
        chunk = mems[i : i + 500]
        c.execute(f"DELETE FROM transcript_embeddings WHERE mem IN ({','.join('?' * len(chunk))})", chunk)
