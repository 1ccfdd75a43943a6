"""The FastAPI application: one Store shared by every request, the guard in front, no CORS.

FastAPI's own docs pages load their scripts from a CDN, so they are switched off: ``/docs`` is a
page rendered here from the OpenAPI schema (served at ``/openapi.json``), with no outside assets.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from kenning import __version__
from kenning.memory.facade import Store
from kenning.recall.transcripts import index_for

from . import api, errors, page
from .security import DEFAULT_MAX_BODY, Guard

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def create_app(
    store: Store | str | os.PathLike | None = None,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> Guard:
    """The ASGI app serving ``store`` (a Store, or a directory opened here and closed at shutdown).

    ``token``: when set, every request needs ``Authorization: Bearer <token>``. The returned
    object is the guard; ``.api`` is the FastAPI application behind it.
    """
    owned = not isinstance(store, Store)
    opened = Store(store) if owned else store

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if owned:  # embed what bulk imports queued, on its own thread; searches never wait for it
            opened.semantic.start_background()
            index_for(opened)  # transcript messages without a vector are embedded on the same thread
        yield
        if owned:
            opened.close()

    app = FastAPI(
        title="kenning", version=__version__, lifespan=lifespan,
        description="Long-term memory for AI agents: search, write and curate a kenning store. "
                    "Errors are {\"error\": message}: 400 a caller's mistake, 404 a missing id, "
                    "409/422 a refused write (with gate and hint), 409 with code stale when a given "
                    "version is out of date (another agent changed the memory since).",
        docs_url=None, redoc_url=None, openapi_url="/openapi.json",
    )
    app.state.store = Serialised(opened)
    errors.install(app)
    app.include_router(api.router)
    page.mount(app)
    guard = Guard(app, token=token, max_body=max_body)
    guard.api = app
    return guard


class Serialised:
    """The Store with every call behind one lock: routes run on a thread pool, and a Store's
    in-memory state (index caches, the lazily loaded model, session lists) is only guarded call by
    call inside the library. bench/bench_http.py found one such race (ranking vs. a write's
    lexicon update, KeyError), now fixed in the Store; this keeps the server safe from the next."""

    def __init__(self, store: Store):
        self._store = store
        self._lock = threading.RLock()

    def run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(store, ...)`` under the same lock: for library functions that take the Store (recall,
        which searches: the vectors of writes just answered are waited for before the lock)."""
        with self._store.semantic.settled(), self._lock:
            return fn(self._store, *args, **kwargs)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        """``Store.search`` under the lock, after waiting outside it for the vectors of the writes
        just answered (``Semantic.settled``): a waiting search must not hold up every other request."""
        with self._store.semantic.settled(), self._lock:
            return self._store.search(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        with self._lock:
            value = getattr(self._store, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return value(*args, **kwargs)

        return call

