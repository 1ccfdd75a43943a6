"""The store's semantic leg: embeddings are rows in the database; nearest neighbours come from the
backend's vector leg (``db.vector_leg``: for SQLite a derived index file, store/vector_file.py; for
PostgreSQL the pgvector column and its HNSW index, store/postgres/vectors.py).

No search waits for embedding. A write queues its text in ``embed_queue`` in its own transaction;
in a library process it then embeds it at once when the encoder can run (a few ms with the ONNX
encoder), while a server, whose background embedder runs, answers the write after its commit and
hands the text to that thread (``embed_soon``): the encode no longer adds to the write's reply, and a
search of the same server first waits for those few vectors (``settle_fresh``), so it reads its own
writes. Bulk imports queue everything, and no search waits for such a backlog. A search uses the vectors that exist and reports how many memories are
still queued; ``kenning index``, ``kenning import --embed`` and a server's background embedder
(``start_background``; it also runs what ``also_in_background`` registers, the transcript
messages' vectors) drain the queue. One recall encodes its query once for all its searches
(``one_encoding_per_query``). Vectors are keyed by the ``embeddings`` row id, so a
re-embedded text gets a new key and an index can be brought up to date by a key diff.
``embeddings_generation`` in ``meta`` changes with every change to the table.

Threads: a server runs tool calls on several threads and embeds on another. The encoder, the
index and its key map change only under the database's lock, together with the rows they mirror,
so a search never sees a key the map lacks or a memory under two keys; one lock for both means no
lock order to get wrong. Encoding runs outside it (onnxruntime sessions are safe to share), so a
long embedding batch does not stall searches. Lock order: ``_drain_lock`` before the database's.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kenning.errors import EmbeddingsUnavailable
from kenning.retrieval import embeddings, feedback, stamps

from .db import Database
from .memo import memo
from .models import StoreConfig
from .records import count_live
from .vector_file import INDEX_FILENAME, current_generation  # noqa: F401 (INDEX_FILENAME: where a SQLite store keeps it)

if TYPE_CHECKING:
    from kenning.retrieval.embedding_cache import EmbeddingCache

log = logging.getLogger(__name__)

EMBED_BATCH = 256
# The background embedder commits smaller batches, so a close or a write never waits long for it.
BACKGROUND_BATCH = 32
BACKGROUND_POLL_S = 5.0
# The background embedder saves the vector index file after a drain of at least this many.
SAVE_AFTER = 256
# How long a server's search waits for the encoder its background thread is loading (a fraction of a
# second normally) before answering lexically; one that is being converted to ONNX is not waited for.
LOADING_WAIT_S = 5.0
# A server's search waits for the vectors of the writes it answered just before (``settle_fresh``),
# up to this long and only while no more than FRESH_WAIT_MAX are on their way (one small batch,
# tens of milliseconds), and one search at a time: a larger burst, or a search arriving while
# another waits (a busy server: 16 HTTP clients ran 47 requests/s with every search waiting, 75
# without), is not waited for; the search says how many are pending.
FRESH_WAIT_S = 0.25
FRESH_WAIT_MAX = 16
# Floor for a model nobody has measured (see embeddings.NO_MATCH_FLOORS for measured ones).
FALLBACK_FLOOR = 0.3
# The meta key recording under which stamp rule the store's stamped memories got their two vectors
# (``stamps``: ranked by the text without its leading timestamp, labelled by the whole text's; a
# change to ``stamps.STAMP`` gets a new version), and how many memories the one-time check after an
# upgrade reads at a time (``Semantic._adopt_stamps``).
STAMPS_META = "embedding_text"
STAMPS_VERSION = "ranked-without-leading-stamp-2"
STAMP_SCAN = 5000


def bump_generation(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('embeddings_generation', '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(meta.value AS INTEGER) + 1"
    )


def forget(conn: sqlite3.Connection, mem: int) -> None:
    """Drop a memory's vectors and queue entry (on remove, or before its text changes)."""
    if conn.execute("DELETE FROM embeddings WHERE mem = ?", (mem,)).rowcount:
        bump_generation(conn)
    conn.execute("DELETE FROM embed_queue WHERE mem = ?", (mem,))


def enqueue(conn: sqlite3.Connection, mems: list[int]) -> None:
    conn.executemany("INSERT OR IGNORE INTO embed_queue(mem) VALUES (?)", [(m,) for m in mems])


def enqueue_range(conn: sqlite3.Connection, first: int, last: int) -> None:
    """Queue the memories of rowids ``first``..``last`` (an import batch): one statement, not a row each."""
    conn.execute("INSERT OR IGNORE INTO embed_queue(mem) SELECT rowid FROM memories WHERE rowid BETWEEN ? AND ?",
                 (first, last))


def _per_text(progress: Callable[[int], None] | None, encodes: int, texts: int) -> Callable[[int], None] | None:
    """``progress`` counting ``texts`` memories over ``encodes`` encodings (a stamped memory is encoded
    twice, ``Semantic._vectors_for``), so a bar over the memories ends at its total."""
    if progress is None or encodes == texts:
        return progress
    state = {"encoded": 0, "told": 0}

    def step(n: int) -> None:
        state["encoded"] += n
        now = state["encoded"] * texts // encodes
        if now > state["told"]:
            progress(now - state["told"])
            state["told"] = now
    return step


def available_cores() -> int:
    """CPUs this process may run on (its affinity mask, which a container or taskset narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# How long a hybrid search's lexical legs will take, in units of one live document: they walk the
# query terms' postings (each ~3x a document's share of the arrays over the whole store that the
# filters, scores and feedback pass touch; CPU of 150 searches at 1k-100k fitted to
# 4.1 ms + 0.032 us a document + 0.11 us a posting, bench/README.md "Encode ahead by the legs' work").
POSTING_WORK = 3
# From this much work the legs outlast a query's encode (~3 ms on two threads) by enough that
# encoding beside them pays even with no free core: at 100k memories every query is past it
# (overlap x0.86 wall against inline), at 10k only queries of the commonest words.
OVERLAP_MIN_WORK = 60_000


def lexical_work(live_docs: int, postings: int) -> int:
    """The lexical legs' expected work for a store of ``live_docs`` and a query whose terms hold
    ``postings`` postings (what ``overlap_pays`` weighs)."""
    return live_docs + POSTING_WORK * postings


def overlap_pays(encoder_threads: int, work: int) -> bool:
    """Whether to encode a hybrid query on a worker while the lexical legs run: always when a core
    is free beside the encoder's intra-op threads; else only when the legs' ``work``
    (``lexical_work``) is long enough to hide the encode, since on a full machine the two slow each
    other down and a short leg gains nothing from the overlap (bench/README.md)."""
    return available_cores() > encoder_threads or work >= OVERLAP_MIN_WORK


def _holds(lock: Any) -> bool:
    """Whether this thread holds ``lock`` (an RLock; False when that cannot be told)."""
    owned = getattr(lock, "_is_owned", None)
    return bool(owned and owned())


class Ahead:
    """A vector search started ahead (``Semantic.search_ahead``): call it for the hits; ``settle``
    waits for its worker, if any, without raising (a ranking that failed still lets it finish
    before it gives up the database's lock)."""

    def __init__(self, answer: Callable[[], list[tuple[int, float]]], future: Future | None = None):
        self._answer, self._future = answer, future

    def __call__(self) -> list[tuple[int, float]]:
        return self._answer()

    def settle(self) -> None:
        if self._future is not None:
            self._future.exception()


_ahead_pool: ThreadPoolExecutor | None = None
_ahead_pool_lock = threading.Lock()


def _encode_ahead_pool() -> ThreadPoolExecutor:
    """The workers that encode a hybrid query while its lexical legs run (two: a server may run two
    searches at once; more would only queue on two cores)."""
    global _ahead_pool
    with _ahead_pool_lock:
        if _ahead_pool is None:
            _ahead_pool = ThreadPoolExecutor(2, thread_name_prefix="kenning-encode-ahead")
        return _ahead_pool


# Every search asks this. The queue drives it: written as a join, SQLite walks every live memory
# (~50 ms at 100k) to find the rows of a queue that is usually empty.
PENDING_COUNT_SQL = ("SELECT COUNT(*) FROM embed_queue q WHERE EXISTS "
                     "(SELECT 1 FROM memories m WHERE m.rowid = q.mem AND m.removed_at IS NULL)")


class Semantic:
    """Lazily loads the encoder, embeds the queue, keeps a vector index in step with the rows."""

    def __init__(self, db: Database, directory: Path, config: Callable[[], StoreConfig]):
        """``config`` is read on every use: the store's settings can change while it is open."""
        self.db = db
        self.vectors = db.vector_leg(directory)  # the backend's nearest-neighbour search over the rows
        self._config = config
        self.cache: EmbeddingCache | None = None  # the eval harness shares vectors across runs
        # Encoder, index, key map and generation change together, under the database's own lock:
        # one lock, so no order between two (the facade holds it around a whole ranking).
        self._lock = db.lock
        self._drain_lock = threading.Lock()  # one queue drain at a time per store object
        self._encoder: embeddings.Encoder | None = None
        self._encoder_for: str | None = None  # the configured model name it was loaded for
        self._background: _BackgroundEmbedder | None = None
        self._shared_queries = threading.local()  # see one_encoding_per_query
        self._more_work: list[Callable[[threading.Event], object]] = []
        # written memories handed to the background embedder (embed_soon), each with its ticket
        self._fresh: list[tuple[int, str]] = []
        self._tickets = 0
        self._fresh_done = threading.Condition()
        self._settling = False  # a search is waiting for handed-over vectors
        self._settled_here = threading.local()  # see settled()
        self._asked = threading.local()  # the last query this thread ranked by, with its vector (label_cosines)

    # ------------------------------------------------------------------ availability
    def availability(self) -> embeddings.Availability:
        """Absent / working / broken for the store's model; loads the encoder on first call. In a server
        (``start_background``) the background thread loads it, and until it has, any other thread is
        told ``loading`` (after up to LOADING_WAIT_S, at once while the model is being converted): a
        first search answers lexically instead of waiting half a minute for a conversion. A thread
        holding the database's lock is answered at once: the load ends by taking that lock (``warm``)."""
        background = self._background
        if background is not None and self._encoder is None:
            loading = background.loading(0.0 if _holds(self._lock) else LOADING_WAIT_S)
            if loading is not None:
                return loading
        return embeddings.probe(self._config().model)

    @property
    def loaded(self) -> bool:
        """True once this process has the encoder in memory (then embedding a write is cheap)."""
        return self._encoder is not None

    def encoder(self) -> embeddings.Encoder:
        """The store's encoder; raises EmbeddingsUnavailable (naming the fix) if it cannot run."""
        model = self._config().model
        with self._lock:
            # an encoder that produced a NaN vector is broken: the probe says so and why (availability)
            if self._encoder is not None and self._encoder_for == model and not getattr(self._encoder, "failure", None):
                return self._encoder
        availability = self.availability()  # loads (or converts) the model: not under the store's lock
        if not availability.working:
            raise EmbeddingsUnavailable(availability.cause or "unknown cause", fix=availability.fix)
        encoder = embeddings.get_encoder(availability.model)
        with self._lock:
            if self._encoder is not None and self._encoder_for == model:
                return self._encoder
            if self._encoder is not None:  # the store was configured with another model
                self.vectors.reset()
            self._adopt_model(encoder)
            self._adopt_stamps(encoder)
            self._encoder, self._encoder_for = encoder, model
            return encoder

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
        """A store indexed with another model (or backend) is re-embedded, never mixed (a read-only store
        cannot be: its vector leg then sees only the vectors this model made, which may be none)."""
        if self.db.get_meta("embedding_model") == encoder.model_id or self.db.read_only:
            return
        with self.db.transaction() as c:
            if c.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone() != (encoder.model_id,):
                c.execute("DELETE FROM embeddings WHERE model_id != ?", (encoder.model_id,))
                c.execute("INSERT OR IGNORE INTO embed_queue(mem) SELECT rowid FROM memories WHERE removed_at IS NULL")
                Database.set_meta(c, "embedding_model", encoder.model_id)
                Database.set_meta(c, "embedding_dim", str(encoder.dim))
                bump_generation(c)
        with self._lock:
            self.vectors.model_changed()

    def _adopt_stamps(self, encoder: embeddings.Encoder) -> None:
        """A store embedded before the vector leg read memories without their leading timestamp, or
        by another ``stamps.STAMP`` (``STAMPS_VERSION`` names it), queues once each memory whose
        vectors do not fit what the stamp rule says of its text now: until a drain reaches them they
        keep their old vector (no search loses them meanwhile), which ``_vectors_for`` never reuses
        for such a text. The texts are read outside the write transaction, in slices by rowid (a
        large store's are not held at once, and other processes' writers do not wait for the scan;
        this process's threads do, as for the encoder's load it is part of); the meta key records
        it, so this runs once a store and rule (a fresh store finds nothing)."""
        if self.db.read_only or self.db.get_meta(STAMPS_META) == STAMPS_VERSION:
            return
        misfit, last = [], 0
        while True:
            rows = self.db.read(lambda c, last=last: c.execute(
                # CROSS JOIN: SQLite walks the memories by rowid and probes each one's row instead of
                # scanning every embedding per slice (100k memories: 0.7 s, not 6.9; bench/stamp_upgrade_scan.py)
                "SELECT m.rowid, m.content, e.whole IS NOT NULL FROM memories m CROSS JOIN embeddings e "
                "WHERE e.mem = m.rowid AND e.model_id = ? AND m.rowid > ? AND m.removed_at IS NULL "
                "ORDER BY m.rowid LIMIT ?", (encoder.model_id, last, STAMP_SCAN)).fetchall())
            if not rows:
                break
            misfit += [mem for mem, content, two in rows if stamps.has_stamp(content) != bool(two)]
            last = rows[-1][0]
        with self.db.transaction() as c:  # a memory written meanwhile was embedded under this rule
            enqueue(c, misfit)
            Database.set_meta(c, STAMPS_META, STAMPS_VERSION)

    # ------------------------------------------------------------------ embedding
    def pending_count(self) -> int:
        """Live memories without a vector for the store's model (all of them after a model switch);
        remembered until the store changes (store/memo.py): every hybrid search reports it."""
        held = memo(self.db, "pending_count")
        key = (self._encoder is not None, self._config().model)
        if key not in held:
            held[key] = self._pending_count()
        return held[key]

    def _pending_count(self) -> int:
        queued = self.db.read(lambda c: c.execute(PENDING_COUNT_SQL).fetchone()[0])
        recorded = self.db.get_meta("embedding_model")
        if self._encoder is not None or recorded is None:
            return queued
        try:
            expected = embeddings.encoder_id(embeddings.resolve_model(self._config().model))
        except Exception:
            return queued
        return count_live(self.db) if expected != recorded else queued

    def embed_pending(
        self,
        progress: Callable[[int], None] | None = None,
        stop: threading.Event | None = None,
        batch: int = EMBED_BATCH,
    ) -> int:
        """Embed every queued memory in batches (each one transaction); returns how many were embedded.

        ``stop`` ends the drain between batches (a closing server). One drain runs at a time.
        A read-only store embeds nothing.
        """
        if self.db.read_only:
            return 0
        encoder = self.encoder()
        done = 0
        with self._drain_lock:
            while stop is None or not stop.is_set():
                if self._fresh and self._background is not None:
                    self.embed_fresh()  # a write answered meanwhile goes before the rest of a backlog
                if self.db.read(lambda c: c.execute("SELECT 1 FROM embed_queue LIMIT 1").fetchone()) is None:
                    break  # the usual answer, asked first: the join below walks every live memory to say it
                rows = self.db.read(lambda c: c.execute(
                    "SELECT q.mem, m.content, m.content_hash FROM embed_queue q "
                    "JOIN memories m ON m.rowid = q.mem AND m.removed_at IS NULL LIMIT ?", (batch,)).fetchall())
                if not rows:
                    with self.db.transaction() as c:  # queue entries of removed memories
                        c.execute("DELETE FROM embed_queue WHERE mem NOT IN "
                                  "(SELECT rowid FROM memories WHERE removed_at IS NULL)")
                    break
                added = self._embed_rows(encoder, rows, progress)
                if not added and all(self._still_queued(mem) for mem, _, _ in rows):
                    break  # nothing could be committed (texts changing under us): leave them queued
                done += added
        return done

    def background_batch(self) -> int:
        """Memories a server's background drain embeds and commits at a time: ``BACKGROUND_BATCH``, or
        enough for the bulk runtime when one is set up (KENNING_BULK_RUNTIME=openvino), so a server
        draining an import gets its speed (a batch of 64 there takes less time than 32 on onnxruntime)."""
        return max(BACKGROUND_BATCH, self.encoder().bulk_min() or 0)

    def embed_memories(self, ids: list[str]) -> int:
        """Embed just these memories if they are queued (a write's own text); never raises.

        It does not wait for a running drain: should both embed one memory, the second commit
        finds it no longer queued and drops its vector.
        """
        if self.db.read_only:
            return 0
        try:
            encoder = self.encoder()
            marks = ",".join("?" * len(ids))
            rows = self.db.read(lambda c: c.execute(
                "SELECT q.mem, m.content, m.content_hash FROM embed_queue q JOIN memories m ON m.rowid = q.mem "
                f"AND m.removed_at IS NULL WHERE m.id IN ({marks})", ids).fetchall())
            if not rows:
                return 0
            return self._embed_rows(encoder, rows, None)
        except Exception as exc:  # the memory is committed either way; it stays queued
            log.warning("embedding %d new memor%s failed, left queued: %s", len(ids),
                        "y" if len(ids) == 1 else "ies", exc)
            return 0

    def embed_soon(self, ids: list[str]) -> bool:
        """On a server: have the background embedder embed these written memories next, so the write
        answers after its commit instead of after its encode. False when no background embedder runs
        (a library process): the caller embeds them itself."""
        background = self._background
        if background is None:
            return False
        with self._fresh_done:
            for id in ids:
                self._tickets += 1
                self._fresh.append((self._tickets, id))
        background.wake()
        return True

    def embed_fresh(self) -> None:
        """The background embedder's first task: the memories ``embed_soon`` handed over. Whatever
        the outcome they leave the hand-over list (one that failed stays queued, for the drain),
        and the searches waiting for them go on."""
        with self._fresh_done:
            taken = list(self._fresh)
        if not taken:
            return
        try:
            self.embed_memories([id for _, id in taken])
        finally:
            self._let_go(taken)

    def _let_go(self, taken: list[tuple[int, str]] | None = None) -> None:
        """Take ``taken`` (None: all) off the hand-over list and wake the searches waiting for it."""
        with self._fresh_done:
            gone = set(self._fresh if taken is None else taken)  # two drains may have taken the same
            self._fresh = [entry for entry in self._fresh if entry not in gone]
            self._fresh_done.notify_all()

    def settle_fresh(self, wait: float | None = None) -> None:
        """Before a search ranks with vectors: wait (up to ``wait``, FRESH_WAIT_S seconds) for the vectors of the
        writes handed to the background embedder, if there are only a few (``FRESH_WAIT_MAX``), so
        a search reads its own writes as it did when a write encoded its text itself. A larger
        burst, an encoder not loaded yet, or a search arriving while another waits (a busy server)
        is not waited for: the search reports them pending."""
        if self._background is None or self._encoder is None or getattr(self._settled_here, "done", False):
            return
        with self._fresh_done:
            if self._settling or not 0 < len(self._fresh) <= FRESH_WAIT_MAX:
                return
            last = self._fresh[-1][0]  # writes answered after this search began are not waited for
            self._settling = True
            try:
                self._fresh_done.wait_for(lambda: not self._fresh or self._fresh[0][0] > last,
                                          FRESH_WAIT_S if wait is None else wait)
            finally:
                self._settling = False

    @contextmanager
    def settled(self) -> Iterator[None]:
        """``settle_fresh`` now, and not again by this thread inside the block: a server that runs
        every Store call under a lock of its own (the HTTP server) waits before taking it, so a
        search waiting for vectors never holds up the other requests."""
        self.settle_fresh()
        self._settled_here.done = True
        try:
            yield
        finally:
            self._settled_here.done = False

    def _still_queued(self, mem: int) -> bool:
        return self.db.read(lambda c: c.execute("SELECT 1 FROM embed_queue WHERE mem = ?", (mem,)).fetchone()) is not None

    def _embed_rows(self, encoder, rows: list[tuple[int, str, str]], progress) -> int:
        """Encode rows (outside the lock), then commit them and update the index in one step."""
        vectors, wholes = self._vectors_for(encoder, [r[1] for r in rows], [r[2] for r in rows], progress)
        with self._lock:
            if self._encoder is not encoder:
                return 0  # the store switched model meanwhile; these vectors belong to no one
            with self.db.transaction() as c:
                before = self._current_generation(c)
                added, dropped = [], []
                for i, ((mem, _, digest), vector) in enumerate(zip(rows, vectors)):
                    queued = c.execute(
                        "SELECT m.content_hash FROM embed_queue q JOIN memories m ON m.rowid = q.mem "
                        "AND m.removed_at IS NULL WHERE q.mem = ?", (mem,)).fetchone()
                    if queued is None or queued[0] != digest:
                        continue  # embedded by someone else, removed, or changed: not ours to commit
                    dropped += [r[0] for r in c.execute(
                        "SELECT id FROM embeddings WHERE mem = ? AND model_id = ?", (mem, encoder.model_id))]
                    c.execute("DELETE FROM embeddings WHERE mem = ? AND model_id = ?", (mem, encoder.model_id))
                    whole = wholes.get(i)
                    key = c.execute(
                        "INSERT INTO embeddings(mem, model_id, content_hash, vector, whole) VALUES (?, ?, ?, ?, ?)",
                        (mem, encoder.model_id, digest, vector.astype(np.float32).tobytes(),
                         None if whole is None else whole.astype(np.float32).tobytes())).lastrowid
                    c.execute("DELETE FROM embed_queue WHERE mem = ?", (mem,))
                    added.append((key, mem, vector))
                if added:
                    bump_generation(c)
                    after = self._current_generation(c)
            if added:
                self.vectors.committed(before, after, added, dropped)
        return len(added)

    def _vectors_for(self, encoder, texts: list[str], digests: list[str],
                     progress) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """The vectors the index ranks ``texts`` by, and by position the whole text's vector of each
        text that opens with a timestamp (``stamps``: ranked without it, labelled with it). Rows with
        the same text hash are reused, except a stamped text's row without its whole vector (embedded
        before the stamp was left out, ``_adopt_stamps``); only the rest is encoded."""
        bodies = [stamps.strip(t) for t in texts]  # what the index ranks each by; not the text: a stamped one
        known: dict[str, tuple[bytes, bytes | None]] = {}
        marks = ",".join("?" * len(digests))
        for digest, vector, whole in self.db.read(lambda c: c.execute(
                f"SELECT content_hash, vector, whole FROM embeddings WHERE model_id = ? AND content_hash IN ({marks})",
                (encoder.model_id, *digests)).fetchall()):
            known[digest] = (vector, whole)
        out = np.empty((len(texts), encoder.dim), np.float32)
        wholes: dict[int, np.ndarray] = {}
        todo = []
        for i, d in enumerate(digests):
            row = known.get(d)
            if row is None or (row[1] is not None) != (bodies[i] != texts[i]):
                todo.append(i)
                continue
            out[i] = np.frombuffer(row[0], np.float32)
            if row[1] is not None:
                wholes[i] = np.frombuffer(row[1], np.float32)
        if todo:
            whole_todo = [i for i in todo if bodies[i] != texts[i]]
            batch = [bodies[i] for i in todo] + [texts[i] for i in whole_todo]
            counted = _per_text(progress, len(batch), len(todo))
            if self.cache is not None:
                from kenning.retrieval.embedding_cache import embed_with_cache

                encoded = embed_with_cache(encoder, batch, self.cache, progress=counted)
            else:
                encoded = encoder.encode(batch, progress=counted)
            out[todo] = encoded[:len(todo)]
            wholes.update(zip(whole_todo, encoded[len(todo):]))
        if progress is not None and len(todo) < len(texts):
            progress(len(texts) - len(todo))
        return out, wholes

    # ------------------------------------------------------------------ the background embedder
    def start_background(self, poll_s: float = BACKGROUND_POLL_S) -> None:
        """Drain the queue on a daemon thread for as long as the store is open (servers call this):
        at start, after ``wake_background()`` and every ``poll_s`` for other processes' imports."""
        with self._lock:
            if self._background is None:
                self._background = _BackgroundEmbedder(self, poll_s)
                self._background.start()

    def warm(self) -> None:
        """Load the encoder and bring the vector index in step with the rows now: the background
        embedder does this first, so a server's first semantic search finds both ready."""
        encoder = self.encoder()
        with self._lock:
            self.vectors.warm(encoder)

    def also_in_background(self, drain: Callable[[threading.Event], object]) -> None:
        """More vectors for the background embedder to make, after the memories' queue (transcript
        messages): ``drain(stop)`` embeds what waits and returns between batches once ``stop`` is set."""
        with self._lock:
            if drain not in self._more_work:
                self._more_work.append(drain)
        self.wake_background()

    def wake_background(self) -> None:
        """Ask the background embedder (if one runs) to look at the queue now."""
        if self._background is not None:
            self._background.wake()

    def close(self) -> None:
        """Stop the background embedder and persist the index."""
        if self._background is not None:
            self._background.stop()
            self._background = None
            self._let_go()  # what it did not get to stays queued for the next drain
        self.save()

    # ------------------------------------------------------------------ search
    def search(self, query: str, k: int, allowed_mems: np.ndarray | None = None,
               vector: Callable[[], np.ndarray] | None = None, moved: bool = False) -> list[tuple[int, float]]:
        """(memory key, cosine) best first, only above the floor, over the vectors that exist now.

        ``vector`` gives the query's vector when its encoding was started earlier (``query_vector_ahead``).
        ``moved``: rank by the query's vector moved toward its nearest texts (``feedback.moved_query``;
        hybrid's long questions), the cosines then being with that vector.
        It never embeds the queue (``pending_count`` says how many memories it could not see).
        """
        encoder = self.encoder()
        query_vector = self.query_vector(query) if vector is None else vector()
        ranked_by, nearest = query_vector, None
        if moved:
            ranked_by, nearest = self._moved(encoder, query_vector, allowed_mems)
        self._asked.last = (encoder.model_id, query, query_vector, nearest)
        with self._lock:
            found = self.vectors.search(encoder, ranked_by, k, allowed_mems, self.floor())
        self.save(force=False)
        return found

    def _moved(self, encoder: Any, query_vector: np.ndarray,
               allowed_mems: np.ndarray | None) -> tuple[np.ndarray, list[tuple[int, float]]]:
        """``feedback.moved_query`` toward the ``feedback.VECTOR_FEEDBACK_DOCS`` texts nearest to the
        query (by the vectors the index ranks them by), and those texts with their cosines."""
        with self._lock:
            nearest = self.vectors.search(encoder, query_vector, feedback.VECTOR_FEEDBACK_DOCS, allowed_mems,
                                          self.floor())
        if not nearest:
            return query_vector, nearest
        mems = [mem for mem, _ in nearest]
        rows = dict(self.db.read(lambda c: c.execute(
            f"SELECT mem, vector FROM embeddings WHERE model_id = ? AND mem IN ({','.join('?' * len(mems))})",
            (encoder.model_id, *mems)).fetchall()))
        moved = feedback.moved_query(query_vector, [np.frombuffer(rows[m], np.float32) for m in mems if m in rows],
                                     feedback.VECTOR_FEEDBACK_WEIGHT)
        return moved, nearest

    def label_cosines(self, query: str, mems: list[int]) -> dict[int, float]:
        """The cosine the labels read for each of ``mems`` whose leg score is another one: the
        question's, as asked, with the whole text, leading timestamp included, of a memory the leg
        ranks without its stamp (``stamps``); and, when this thread's last search of ``query`` ranked
        by the question moved toward its nearest texts (``search(moved=True)``), the question's own
        cosine with every one of them. The label's thresholds were measured on that cosine: a
        chat turn stripped of its date reads closer to a question that repeats its words than it
        answers it (eval/baselines/README.md, "Twenty-second pass"), and the moved question is closer
        to the texts it was moved toward than the question is ("Twenty-third pass")."""
        if not mems:
            return {}
        encoder = self.encoder()
        last = self._last_asked(encoder, query)
        vector = last[2] if last is not None else self.query_vector(query)
        marks = ",".join("?" * len(mems))
        if last is not None and last[3] is not None:
            rows = self.db.read(lambda c: c.execute(
                f"SELECT mem, COALESCE(whole, vector) FROM embeddings WHERE model_id = ? AND mem IN ({marks})",
                (encoder.model_id, *mems)).fetchall())
        else:
            rows = self.db.read(lambda c: c.execute(
                f"SELECT mem, whole FROM embeddings WHERE model_id = ? AND whole IS NOT NULL AND mem IN ({marks})",
                (encoder.model_id, *mems)).fetchall())
        return {mem: float(np.dot(np.frombuffer(blob, np.float32), vector)) for mem, blob in rows}

    def nearest_asked(self, query: str) -> list[tuple[int, float]] | None:
        """The texts nearest to the question as asked, with their cosines, when this thread's last
        search of ``query`` ranked by the question moved toward them; else None (the leg's own
        list is then the question's)."""
        last = self._last_asked(self.encoder(), query)
        return None if last is None else last[3]

    def _last_asked(self, encoder: Any, query: str) -> tuple | None:
        """(model, query, the question's vector, its nearest texts when moved) of this thread's last
        search, when it searched ``query`` with this model."""
        last = getattr(self._asked, "last", None)
        return last if last is not None and last[:2] == (encoder.model_id, query) else None

    def knows_word(self, word: str) -> bool:
        """Whether the model reads ``word`` whole (``spelling.for_the_model``)."""
        return self.encoder().knows_word(word)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's vector; inside ``one_encoding_per_query`` a query this thread encoded is reused."""
        encoder = self.encoder()
        shared = getattr(self._shared_queries, "vectors", None)
        if shared is None:
            return encoder.encode_query(query)
        key = (encoder.model_id, query)
        if key not in shared:
            shared[key] = encoder.encode_query(query)
        return shared[key]

    def query_vector_ahead(self, query: str, work: int = 0) -> Callable[[], np.ndarray]:
        """Start encoding the query on a worker thread now and return what gives its vector: a hybrid
        search runs its lexical legs meanwhile (onnxruntime releases the GIL), so it costs about the
        longer of the two, not their sum. The vector is the one ``query_vector`` gives; a query this
        thread already encoded (``one_encoding_per_query``), an encoder not loaded yet, an encoder
        switched meanwhile or a failed encoding fall back to ``query_vector`` on the call.

        Only when ``overlap_pays`` for the lexical legs' ``work`` (``lexical_work``): with no core
        left beside the encoder's intra-op threads the search thread and an encode on two threads
        take turns on a core, each of the encoder's parallel steps waits for its descheduled half,
        and both get slower than one after the other (bench/README.md, "Hybrid query encode: inline
        on two cores"), which only legs much longer than the encode make up for. Otherwise the
        encoding is done on the call, on this thread.
        """
        encoder = self._encoder
        shared = getattr(self._shared_queries, "vectors", None)
        if (encoder is None or (shared is not None and (encoder.model_id, query) in shared)
                or not overlap_pays(getattr(encoder, "threads", 1), work)):
            return lambda: self.query_vector(query)
        try:
            future = _encode_ahead_pool().submit(encoder.encode_query, query)
        except RuntimeError:  # the interpreter is shutting down
            return lambda: self.query_vector(query)

        def vector() -> np.ndarray:
            try:
                found = future.result()
            except Exception:
                return self.query_vector(query)  # again on this thread: its error is the one to report
            if self._encoder is not encoder:
                return self.query_vector(query)
            if shared is not None:
                shared.setdefault((encoder.model_id, query), found)
            return found

        return vector

    def search_ahead(self, query: str, k: int, allowed_mems: np.ndarray | None = None, work: int = 0,
                     moved: bool = False) -> Ahead:
        """``search(query, k, allowed_mems, moved=moved)`` started now, its answer taken by calling
        what this returns: where ``query_vector_ahead`` would encode the query on a worker, that
        worker also walks the index with it (hnswlib releases the GIL too) while this thread runs the
        lexical legs, and this thread ranks what it found when it takes the answer. A ``moved`` query
        reads its nearest texts' vectors between two walks, so only its encoding goes ahead.

        The worker reads no row and takes no lock: the caller holds the database's lock from this
        call until the worker is done (``Ahead.settle``, which a ranking calls whatever happens), so
        no writer touches the index meanwhile. For a caller that does not hold it, or a backend whose
        index lives in the database (PostgreSQL), only the encoding goes ahead; a search that would
        not overlap (``overlap_pays``) runs on the call, as ``search`` does, and so does one whose
        worker failed (its error is raised there)."""
        encoder = self._encoder
        prepare = getattr(self.vectors, "prepare", None)
        if moved or prepare is None or not _holds(self._lock):
            vector = self.query_vector_ahead(query, work)
            return Ahead(lambda: self.search(query, k, allowed_mems, vector, moved))
        shared = getattr(self._shared_queries, "vectors", None)
        if (encoder is None or (shared is not None and (encoder.model_id, query) in shared)
                or not overlap_pays(getattr(encoder, "threads", 1), work)):
            return Ahead(lambda: self.search(query, k, allowed_mems))
        walk, floor = prepare(encoder, allowed_mems), self.floor()

        def encode_and_walk() -> tuple[np.ndarray, Callable[[], list[tuple[int, float]]]]:
            vector = encoder.encode_query(query)  # both release the GIL; the walk also scores what it
            return vector, walk(vector, k, floor)  # found, the ranking's Python is the search thread's

        try:
            future = _encode_ahead_pool().submit(encode_and_walk)
        except RuntimeError:  # the interpreter is shutting down
            return Ahead(lambda: self.search(query, k, allowed_mems))

        def found() -> list[tuple[int, float]]:
            try:
                vector, ranked = future.result()
                hits = ranked()
            except Exception:
                return self.search(query, k, allowed_mems)  # again on this thread: its error is the one to report
            if self._encoder is not encoder:
                return self.search(query, k, allowed_mems)
            if shared is not None:
                shared.setdefault((encoder.model_id, query), vector)
            self._asked.last = (encoder.model_id, query, vector, None)
            self.save(force=False)
            return hits

        return Ahead(found, future)

    @contextmanager
    def one_encoding_per_query(self) -> Iterator[None]:
        """Searches in the block (on this thread) encode each query text once: one recall ranks several
        tiers (profile, memories, transcripts) for the same query, and encoding is most of a search's time."""
        outer = getattr(self._shared_queries, "vectors", None)
        if outer is None:
            self._shared_queries.vectors = {}
        try:
            yield
        finally:
            if outer is None:
                self._shared_queries.vectors = None

    def _current_generation(self, c: sqlite3.Connection) -> int:
        return current_generation(c)

    def index_state(self) -> dict:
        """The vector leg against the rows (for checks and tests): keys on each side."""
        with self._lock:
            return self.vectors.state()

    def save(self, force: bool = True) -> None:
        """Persist what the vector leg keeps outside the database (the index file), if anything."""
        with self._lock:
            if self._encoder is not None:
                self.vectors.save(force)

    # ------------------------------------------------------------------ rebuild (kenning rebuild vectors)
    def forget_index(self) -> None:
        """Drop this process's vector index; the next search (or rebuild_index) builds it from the rows."""
        with self._lock:
            self.vectors.reset()

    def check_index(self) -> list:
        """What is wrong with the vector leg's own derived state (the index file), as integrity Problems."""
        with self._lock:
            return self.vectors.check()

    def discard_index(self) -> str | None:
        """Before a rebuild: drop the vector leg's derived state; says what was removed, if anything."""
        with self._lock:
            return self.vectors.discard()

    def rebuild_index(self) -> None:
        """Build the vector index from the embedding rows now and save it."""
        encoder = self.encoder()
        with self._lock:
            self.vectors.rebuild(encoder)


class _BackgroundEmbedder:
    """A daemon thread that drains the embed queue in small batches until stopped."""

    def __init__(self, semantic: Semantic, poll_s: float):
        self.semantic = semantic
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kenning-embedder", daemon=True)
        self._settled = threading.Event()  # its first look at the encoder is over: loaded, absent or failed
        self._began = time.monotonic()
        self._warned = False
        self.passes = 0  # looks at the queue it has finished (a test waits on it to know a pass ended)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not threading.current_thread():
            if embeddings.converting():  # a first-use conversion is not waited for: it starts again next time
                from kenning.retrieval.conversion_process import abandon

                abandon(self._thread)
            self._thread.join(timeout)

    def loading(self, wait: float) -> embeddings.Availability | None:
        """``loading`` while this thread is still on its first look at the encoder and another thread
        asks: at once when the model is being converted, else after waiting up to ``wait`` seconds
        for the load to end; None once it has (the probe then answers, from its cache)."""
        if threading.current_thread() is self._thread or not self._thread.is_alive():
            return None
        deadline = time.monotonic() + wait
        while not self._settled.is_set():
            converting = embeddings.converting()
            if converting:
                name, seconds = next(iter(converting.items()))
                return embeddings.Availability(
                    "loading", f"the semantic leg is not ready: {name} is being converted to ONNX, once per "
                    f"install (about half a minute; {seconds:.0f} s so far); this answer used the lexical legs", None)
            if time.monotonic() >= deadline:
                return embeddings.Availability(
                    "loading", f"the semantic leg is not ready: the encoder is still loading "
                    f"({time.monotonic() - self._began:.0f} s so far); this answer used the lexical legs", None)
            self._settled.wait(0.05)
        return None

    def _run(self) -> None:
        warmed = False
        while not self._stop.is_set():
            try:
                working = self.semantic.availability().working
                if working and not warmed:
                    self.semantic.warm()
                    warmed = True
                self._settled.set()
                if working:
                    self.semantic.embed_fresh()  # writes just answered; not saved to the index file per write
                    if self.semantic.pending_count():
                        # a backlog (an import) is saved to the index file for the next cold start;
                        # a few writes are not (the whole file, 324 MB at 100k): close saves them
                        batch = self.semantic.background_batch()
                        if self.semantic.embed_pending(stop=self._stop, batch=batch) >= SAVE_AFTER:
                            self.semantic.save()
                    for drain in list(self.semantic._more_work):
                        if not self._stop.is_set():
                            drain(self._stop)
                else:
                    self.semantic._let_go()  # no encoder: the writes stay queued, no search waits for them
            except Exception as exc:  # keep serving; say so once, try again at the next poll
                self._settled.set()
                if not self._warned:
                    log.warning("background embedding failed (will retry): %s", exc)
                    self._warned = True
            self.passes += 1
            self._wake.wait(self.poll_s)
            self._wake.clear()
