"""One open store as one caller uses it: the database and its indexes, the settings, the clock, and who asks.

A Store object is one session (a CLI run, a server connection): the unit of the event log, of
session-disabled scopes and of pending writes. The lifecycle modules (writes, curation, reads,
scoping, overview) receive this state, never the Store facade itself.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kenning.errors import InvalidInput
from kenning.retrieval.text import fingerprint
from kenning.store import integrity, records
from kenning.store.backend import open_backend
from kenning.store.db import Database
from kenning.store.ids import new_ulid
from kenning.store.lexicon import Lexicon
from kenning.store.location import resolve_store_dir
from kenning.store.plain import utcnow

from . import events, notices, scopes
from .deferred import DeferredEvents
from .gates.limits import has_control_chars
from .origin import Origin, detect_origin
from .scopes import View
from .settings import Settings

if TYPE_CHECKING:
    from kenning.store.models import StoreConfig
    from kenning.store.semantic import Semantic


class Session:
    """The state every lifecycle operation reads: db, lexicon, semantic, settings, clock, caller."""

    def __init__(
        self,
        directory: str | os.PathLike | None,
        clock: Callable[[], datetime],
        session_id: str | None,
        cwd: str | os.PathLike | None,
    ):
        _check_arguments(clock, session_id, cwd)
        self.location = resolve_store_dir(directory)  # a directory, or a postgresql:// URL
        # one session per Store object: the event log's unit
        self.session_id = session_id or new_ulid()
        # where the caller works (origin of writes, auto_scope of reads); None: the process's directory
        self.cwd = Path(cwd) if cwd is not None else None
        self._here: tuple[Origin | None] | None = None
        # scopes hidden from search and list for this session only
        self.disabled_scopes: list[str] = []
        # this session's search events up to this rowid have settled (memory/outcomes.py)
        self.settled_through = 0
        # when this session last measured the curation pressure (a scan of the store) and found it low
        self.curation_checked_at: datetime | None = None
        self.clock = clock if clock is utcnow else _in_utc(clock)
        opened = open_backend(self.location)
        self.db, self.directory, self.path = opened.db, opened.directory, opened.path
        self.store_id = integrity.store_id(self.db, self.directory)
        self.lexicon = Lexicon(self.db)
        if not self.db.read_only and not integrity.lexicon_docs_still_consistent(self.db):
            integrity.repair_lexicon(self.db, self.lexicon)  # index rows lost or retired behind its back
        if self.db.get_meta("tokenizer") != fingerprint() and not self.db.read_only:
            with self.db.transaction() as c:
                if self.lexicon.ensure_current(c, notices.say):
                    records.forget_terms(c)  # the duplicates gate's stored term sets, made by the old stream
        if self.db.get_meta(scopes.COMPOSED_META) is None and not self.db.read_only:
            with self.db.transaction() as c:  # once a store: scopes stored before check_scopes composed them
                scopes.compose_stored(c)
                Database.set_meta(c, scopes.COMPOSED_META, "1")
        self.settings = Settings(self.db)
        self._semantic: Semantic | None = None
        self._semantic_lock = threading.Lock()
        self.deferred = DeferredEvents(self)  # this session's read events, committed in batches

    @property
    def config(self) -> StoreConfig:
        return self.settings.current()

    @property
    def semantic(self) -> Semantic:
        """The semantic leg, made on first use: a lexical search, list or show never imports the
        vector code (store/semantic.py and what it loads: ~10 ms of a cold CLI search)."""
        if self._semantic is None:
            with self._semantic_lock:
                if self._semantic is None:
                    from kenning.store.semantic import Semantic

                    self._semantic = Semantic(self.db, self.directory, self.settings.current)
        return self._semantic

    def here(self) -> Origin | None:
        """The caller's repository, worktree and HEAD (detected once per session; None outside git)."""
        if self._here is None:
            self._here = (detect_origin(self.cwd),)
        return self._here[0]

    def locate(self) -> Origin | None:
        """Detect the caller's checkout anew (a write records the HEAD it was made at)."""
        origin = detect_origin(self.cwd)
        self._here = (origin,)
        return origin

    def view(self, auto_scope: bool = True, updated_after: str | None = None) -> View:
        return View(here=self.here() if auto_scope else None, auto_scope=auto_scope,
                    disabled=frozenset(self.disabled_scopes), updated_after=updated_after)

    def log(self, kind: str, memory_id: str | None = None, payload: dict[str, Any] | None = None) -> None:
        """Append one event for this session in its own transaction (a read-only store serves reads without a log)."""
        if self.db.read_only:
            return
        with self.transaction() as c:
            events.log(c, self.clock(), self.session_id, kind, memory_id, payload)

    def log_read(self, kind: str, memory_id: str | None = None, payload: dict[str, Any] | None = None) -> None:
        """Queue the event of a read (search, show, list): it commits with the session's next batch
        (memory/deferred.py), so a read never waits for the write lock."""
        if not self.db.read_only:
            self.deferred.add(self.clock(), kind, memory_id, payload or {})

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A write transaction of this session: its queued read events commit first, so the log
        keeps the session's order (since_prior_session reads the latest row of another session)."""
        self.deferred.flush()
        with self.db.transaction() as c:
            yield c

    def embed_if_loaded(self, ids: list[str] | None = None) -> None:
        """Embed a written text: in a server, its background embedder does it next (the write
        answers after its commit; the server's next search waits for those few vectors); in a
        library process, now (milliseconds once the encoder is loaded, no torch). Without a working
        extra it stays queued. Bulk writes (no ids) stay queued for `kenning index` or a server's
        background embedder, which is woken: no write or search waits for a backlog."""
        if ids is None:
            self.semantic.wake_background()
        elif not self.semantic.embed_soon(ids) and self.semantic.availability().working:
            self.semantic.embed_memories(ids)

    def close(self) -> None:
        try:
            if not self.db.read_only:
                self.deferred.close()  # the queued read events commit
        finally:
            if self._semantic is not None:
                self._semantic.close()  # stops the background embedder, saves the vector index
            self.db.close()


def _check_arguments(clock: object, session_id: object, cwd: object) -> None:
    """open_store's other arguments, refused at the open: cwd=5 raised a bare TypeError from pathlib,
    clock=5 failed at the first write ('int' object is not callable), session_id=["a"] at the first event."""
    if not callable(clock):
        raise InvalidInput(f"clock must be a function returning the time (a datetime), got {type(clock).__name__}")
    if session_id is not None and not isinstance(session_id, str):
        raise InvalidInput(f"session_id must be a string, got {type(session_id).__name__}")
    if session_id is not None and has_control_chars(session_id):  # a NUL: kept by SQLite, refused by PostgreSQL
        raise InvalidInput(f"session_id {session_id!r:.80} contains a control character")
    if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
        raise InvalidInput(f"cwd must be a folder path, got {type(cwd).__name__}")


def _in_utc(clock: Callable[[], datetime]) -> Callable[[], datetime]:
    """A caller's clock whose naive readings mean UTC, as a naive time does everywhere else in kenning.
    Timestamps were written as local time while the trust arithmetic took them as UTC: with
    clock=datetime.now a search called a memory stale hours before health did (or after), and health
    failed on subtracting a naive time from an aware one."""
    def now() -> datetime:
        ts = clock()
        return ts.replace(tzinfo=timezone.utc) if isinstance(ts, datetime) and ts.tzinfo is None else ts
    return now


class SessionState:
    """Read-only access to the state of the Session an object holds as ``_s`` (the Store's public attributes)."""

    _s: Session

    @property
    def directory(self) -> Path:
        return self._s.directory

    @property
    def path(self) -> Path:
        return self._s.path

    @property
    def db(self) -> Database:
        return self._s.db

    @property
    def lexicon(self) -> Lexicon:
        return self._s.lexicon

    @property
    def semantic(self) -> Semantic:
        return self._s.semantic

    @property
    def clock(self) -> Callable[[], datetime]:
        return self._s.clock

    @property
    def session_id(self) -> str:
        return self._s.session_id

    @property
    def cwd(self) -> Path | None:
        return self._s.cwd

    @property
    def disabled_scopes(self) -> list[str]:
        """Scopes hidden for this session (disable_scope / enable_scope change them)."""
        return self._s.disabled_scopes

    @property
    def store_id(self) -> str:
        return self._s.store_id
