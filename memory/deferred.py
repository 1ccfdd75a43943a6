"""Read events, deferred: a search, show or list queues its event row and answers at once.

Logging every read in its own transaction made every reader take SQLite's write lock, so
concurrent readers queued behind each other and behind writers. Instead a session queues its
read events in memory and commits them in one transaction (with the outcome settlement they
trigger, memory/outcomes.py) when any of these comes first:

- ``FLUSH_AFTER`` seconds after the first queued row (a background thread), or ``MAX_QUEUED`` rows;
- the session's next write of its own (``Session.transaction``), so its log keeps its order;
- anyone in this process reading the event log of that store (``flush_store``): the silent-miss
  audit, since_prior_session, the curation counts and ``Store.events`` see every read logged;
- ``Store.close`` and the interpreter's exit.

A store file found damaged when a batch commits drops that batch (a damaged table would refuse it
again) with one warning line naming the file and its repair: the reads it records have answered
already, so neither a later read nor the session's close fails for them; a write still does. A
store that takes no write for now (a full disk, another process's lock held past the wait) fails
no read either: the batch stays queued for the next flush, and a close drops it with one line.

What this costs: a process killed without an exit (SIGKILL, power loss) loses at most its
unflushed tail, the read events of the last ``FLUSH_AFTER`` seconds (their hits then never
settle); another process sees a read event up to ``FLUSH_AFTER`` seconds late. Writes are never
deferred.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from kenning.errors import StorageError
from kenning.store.backend import is_url
from kenning.store.db import reports_damage
from kenning.store.plain import iso

from . import events, outcomes

FLUSH_AFTER = 0.5  # seconds a queued read event may wait
# what a close waits for another process's write lock before it drops the queued read events with one
# line: a CLI read closes its store as it exits, and the full busy timeout made `kenning search` take 30 s
# behind a long write of another process ("reads never wait for the write lock"); a writer's usual
# transaction holds the lock for milliseconds
CLOSE_WAIT_MS = 2000
MAX_QUEUED = 256  # rows: a session reading faster than that flushes at once
# a search settles the hits of two searches ago (memory/outcomes.py): the two newest stay open
OPEN_SEARCHES = 2


def _warn(message: str, exc: Exception) -> None:
    """A warning through the logging module, imported only when there is one to give (a short CLI
    search never needs it)."""
    import logging

    logging.getLogger(__name__).warning(message, exc)


def _lost(exc: Exception) -> None:
    """The one line for read events a damaged store file would not take (its message names the repair)."""
    _warn("the read events of this session were not logged: %s", exc)


class DeferredEvents:
    """One session's queued read events."""

    def __init__(self, session: Any):
        self._session = session  # strong: queued rows keep their session alive until they commit
        self.path = _store_key(session.path)
        self._rows: list[tuple[datetime, str, str | None, dict[str, Any]]] = []
        self._lock = threading.Lock()  # guards _rows only; never held while waiting for anything else
        self._flushing = threading.Lock()  # taken after the database's lock, never before
        _QUEUES.add(self)

    def add(self, at: datetime, kind: str, memory_id: str | None, payload: dict[str, Any]) -> None:
        events.check_kind(kind)
        with self._lock:
            self._rows.append((at, kind, memory_id, payload))
            full = len(self._rows) >= MAX_QUEUED
        if full:
            self._commit_reads()
        else:
            _schedule(self)

    def __len__(self) -> int:
        return len(self._rows)

    def flush(self, wait: bool = True, wait_ms: int | None = None) -> None:
        """Commit the queued rows, then settle the session's use_tokens but the newest two, in one
        transaction. A failed commit puts the rows back, in order. ``wait=False`` (the background
        thread) gives up at once when another connection holds the write lock, rather than keep
        this session's reads waiting behind it; the thread tries again later. ``wait_ms`` waits
        that long at most (a close)."""
        session = self._session
        if not self._rows:
            return
        with session.db.lock, self._flushing:
            with self._lock:
                rows, self._rows = self._rows, []
            if not rows:
                return
            try:
                # event rows only: memos of memories (store/memo.py) stay valid across the batch
                with _busy_timeout(session, wait_ms if wait else 0), session.db.log_only(), \
                        session.db.transaction() as c:
                    c.executemany(
                        "INSERT INTO events(at, session, kind, memory_id, payload) VALUES (?, ?, ?, ?, ?)",
                        [(iso(at), session.session_id, kind, mid, events.payload_json(payload))
                         for at, kind, mid, payload in rows])
                    _, through = outcomes.settle(c, session.session_id, session.clock(),
                                                 keep_latest=OPEN_SEARCHES, after_rowid=session.settled_through)
            except BaseException as exc:
                if not reports_damage(exc):  # a lock or a full disk may pass; damage does not
                    with self._lock:
                        self._rows[:0] = rows
                raise
            session.settled_through = through  # only once the settlement committed

    def _commit_reads(self, closing: bool = False) -> None:
        """``flush`` for a read or a close: a damaged store file costs the queued rows one warning
        line, not the read's answer nor the close. A store that takes no write now (a full disk, a
        lock held too long) fails neither: a read keeps its rows queued for a later flush, a close
        drops them with the same one line. Any other failure is raised as before."""
        try:
            self.flush(wait_ms=CLOSE_WAIT_MS if closing else None)
        except Exception as exc:
            if reports_damage(exc):
                _lost(exc)
            elif not isinstance(exc, StorageError):
                raise
            elif closing:
                with self._lock:
                    self._rows = []
                _lost(exc)
            else:
                _schedule(self)  # put back in order by flush: the background thread tries again

    def close(self) -> None:
        """Flush and stop taking part (the session is closing)."""
        try:
            self._commit_reads(closing=True)
        finally:
            _QUEUES.discard(self)
            with _cond:
                _due.pop(self, None)


@contextmanager
def _busy_timeout(session: Any, ms: int | None) -> Iterator[None]:
    """Wait at most ``ms`` for another connection's write lock (None: the connection's own setting)."""
    if ms is None:
        yield
        return
    with session.db.waiting_at_most(ms):
        yield


def _store_key(path: os.PathLike | str) -> str:
    """What names one store among a process's queues: a file's real path, a server's URL as it is (a
    URL is no path: resolving one against the current folder failed when that folder was deleted)."""
    return path if is_url(path) else os.path.realpath(path)


def flush_store(path: os.PathLike | str) -> None:
    """Commit every queued read event of this process for one store file (before reading its log)."""
    real = _store_key(path)
    for queue in list(_QUEUES):
        if queue.path == real and len(queue):
            queue.flush()


# ---------------------------------------------------------------- the process's one flushing thread
_QUEUES: "weakref.WeakSet[DeferredEvents]" = weakref.WeakSet()
_cond = threading.Condition()
_due: dict[DeferredEvents, float] = {}
_thread: threading.Thread | None = None


def _schedule(queue: DeferredEvents) -> None:
    global _thread
    with _cond:
        if queue in _due:
            return
        _due[queue] = time.monotonic() + FLUSH_AFTER
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="kenning-event-flush", daemon=True)
            _thread.start()
        _cond.notify()


def _run() -> None:
    while True:
        with _cond:
            while not _due:
                _cond.wait()
            now = time.monotonic()
            ready = [q for q, at in _due.items() if at <= now]
            if not ready:
                _cond.wait(min(_due.values()) - now)
                continue
            for queue in ready:
                del _due[queue]
        for queue in ready:
            try:
                queue.flush(wait=False)
            except Exception as exc:  # locked or failing: the rows stay queued; try again later
                # the database was closed behind the session's back; not a message that says "closed"
                # ("server closed the connection unexpectedly": a restart the next try may outlive)
                if queue._session.db.closed:
                    _warn("read events of a closed store were dropped: %s", exc)
                    queue._rows = []
                elif reports_damage(exc):  # the batch was dropped: said once, not retried
                    _lost(exc)
                elif len(queue):
                    _schedule(queue)


@atexit.register
def _flush_all() -> None:
    for queue in list(_QUEUES):
        try:
            queue.flush(wait_ms=CLOSE_WAIT_MS)
        except Exception as exc:
            _warn("read events of a session were lost at exit: %s", exc)


def _forked() -> None:
    """A forked child must not commit its parent's queue (the parent does), nor wait on its thread."""
    global _thread, _cond
    _thread, _cond = None, threading.Condition()
    _due.clear()
    for queue in list(_QUEUES):
        queue._rows = []
        queue._lock = threading.Lock()
        queue._flushing = threading.Lock()


os.register_at_fork(after_in_child=_forked)
