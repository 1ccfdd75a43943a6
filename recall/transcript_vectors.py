"""The vector leg over transcript messages: the store's own model, vectors as rows, searched by the backend.

No search waits for embedding (as for memories): a search ranks with the vectors that exist and
reports how many messages still wait (``pending_embeddings``); the lexical legs find those
meanwhile. The vectors are made by the background embedder a server runs (``start_background``,
see store/semantic.py), woken when a sync reads new messages, or by ``kenning transcripts index``
with a progress bar. Vectors live in ``transcript_embeddings`` (one row per message and model) and
are searched through the backend's seam (``db.row_vectors``), as memories' are: a SQLite store keeps
an in-memory index keyed by message in step with the rows by a diff of row ids on every search
(store/vector_rows.py); a PostgreSQL store searches them with pgvector in the server, so every host
sharing it searches the same vectors. Either way a vector another process (or the background
thread) added is used at the next search.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

import numpy as np

from kenning.store.db import Database
from kenning.store.semantic import Semantic

EMBED_BATCH = 128


class TranscriptVectors:
    def __init__(self, db: Database, semantic: Semantic):
        self.db = db
        self.semantic = semantic
        self._leg = db.row_vectors("transcript_embeddings")  # keyed by message (transcript_messages rowid)
        self.pending_seen: int | None = None  # messages without a vector, as the last search's sync counted them
        self._drain_lock = threading.Lock()

    def available(self) -> bool:
        return self.semantic.availability().working

    def model_id(self) -> str | None:
        """The model vectors are made with: the loaded encoder's, else the one the store recorded."""
        return self.semantic.encoder().model_id if self.semantic.loaded else self.db.get_meta("embedding_model")

    def pending(self, model: str | None = None) -> int:
        """Messages without a vector for the store's model (without loading the model when it is not loaded).

        A count difference, not a join: vectors of dropped messages are deleted with them (``forget``)."""
        return self.db.rows_without_vectors("transcript_messages", "transcript_embeddings", model or self.model_id())

    def embed_pending(self, progress: Callable[[int, int], None] | None = None,
                      stop: threading.Event | None = None, batch: int = EMBED_BATCH) -> int:
        """Embed every message that has no vector yet, newest first; returns how many were embedded.

        ``stop`` ends it between batches (a closing server). One drain at a time per store; a
        read-only store embeds nothing."""
        if self.db.read_only:
            return 0
        encoder = self.semantic.encoder()
        done = 0
        with self._drain_lock:
            total = self.pending(encoder.model_id) if progress is not None else 0
            if progress is not None:
                progress(0, total)
            with self.db.transaction() as c:
                c.execute("DELETE FROM transcript_embeddings WHERE model_id != ?", (encoder.model_id,))
            while stop is None or not stop.is_set():
                rows = self.db.read(lambda c: c.execute(
                    "SELECT m.rowid, m.text FROM transcript_messages m WHERE NOT EXISTS (SELECT 1 FROM "
                    "transcript_embeddings e WHERE e.mem = m.rowid AND e.model_id = ?) ORDER BY m.rowid DESC LIMIT ?",
                    (encoder.model_id, batch)).fetchall())
                if not rows:
                    break
                vectors = encoder.encode([text for _, text in rows])
                with self.db.transaction() as c:
                    kept = 0
                    for (mem, text), vector in zip(rows, vectors):
                        if _still(c, mem, text):  # a rewrite may have replaced the message meanwhile
                            c.execute("INSERT OR REPLACE INTO transcript_embeddings(mem, model_id, vector) VALUES (?, ?, ?)",
                                      (mem, encoder.model_id, np.asarray(vector, np.float32).tobytes()))
                            kept += 1
                if not kept:
                    break  # every message changed under us: the next pass sees the new ones
                done += kept
                if progress is not None:
                    progress(done, max(total, done))
        return done

    def embed_in_background(self, stop: threading.Event) -> int:
        """The background embedder's share (small batches, so a closing server never waits long;
        the bulk runtime's size when one is set up)."""
        if self.db.read_only or not self.pending():
            return 0
        return self.embed_pending(stop=stop, batch=self.semantic.background_batch())

    def search(self, query: str, k: int, allowed_keys: np.ndarray | None) -> list[tuple[int, float]]:
        """(message key, cosine) best first, above the model's no-match floor, over the vectors that exist."""
        encoder = self.semantic.encoder()
        query_vector = self.semantic.query_vector(query)
        hits = self._leg.search(encoder, query_vector, k, allowed_keys, self.semantic.floor())
        rows = self._leg.rows_seen  # counted by an in-process index; else pending() counts in the database
        self.pending_seen = None if rows is None else self.db.read(lambda c: c.execute(
            "SELECT COUNT(*) FROM transcript_messages").fetchone()[0]) - rows
        return hits


def _still(c: sqlite3.Connection, mem: int, text: str) -> bool:
    row = c.execute("SELECT text FROM transcript_messages WHERE rowid = ?", (mem,)).fetchone()
    return row is not None and row[0] == text


def forget(c: sqlite3.Connection, mems: list[int]) -> None:
    """Drop the vectors of messages that are gone (called where the messages are deleted)."""
    for i in range(0, len(mems), 500):
        chunk = mems[i : i + 500]
        c.execute(f"DELETE FROM transcript_embeddings WHERE mem IN ({','.join('?' * len(chunk))})", chunk)
