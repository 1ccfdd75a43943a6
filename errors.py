"""The exceptions kenning raises for caller mistakes, so every front end can print one clear line."""

from __future__ import annotations

INSTALL_EMBEDDINGS = 'pip install "kenning[embeddings]"'


class KenningError(Exception):
    """Base class: a problem the caller can fix; front ends print it without a traceback."""


class InvalidInput(KenningError, ValueError):
    """The request itself is malformed (empty text, too many scopes, limit out of range …)."""


class NotFound(KenningError, LookupError):
    """No live memory (or tombstone) has the given id."""


class Stale(KenningError):
    """Optimistic concurrency: the caller's version token is older than the stored memory."""

    def __init__(self, memory_id: str, given: str, current: str):
        super().__init__(f"memory {memory_id} changed since you read it (version {given}, now {current}); "
                         "nothing was written: re-read it and retry")
        self.memory_id, self.given, self.current = memory_id, given, current


class SearchDisabled(KenningError):
    """A person turned search off for this store (the live setting ``search_enabled``)."""

    def __init__(self) -> None:
        super().__init__("search is disabled on this store (search_enabled=false); "
                         "turn it on with: kenning config set search_enabled true")


class ReadOnlyStore(KenningError):
    """The store can be read but not written by this process (file or folder permissions, a read-only mount)."""


class StorageError(KenningError, OSError):
    """The store's file could not be written or read: a full disk, a read-only file, an I/O error."""


class EmbeddingsUnavailable(KenningError, RuntimeError):
    """The vector leg was asked for explicitly but the embeddings extra is absent or broken."""

    def __init__(self, cause: str, fix: str | None = None):
        repair = f"repair it with: {fix}" if fix else f"install it with: {INSTALL_EMBEDDINGS}"
        super().__init__(f"the semantic leg is unavailable ({cause}); {repair}")
        self.cause = cause
        self.fix = fix


def says_damaged(exc: BaseException) -> bool:
    """SQLite's ways of saying a file's pages are not a database it can read (the store's file or the
    embedding cache's): here, beside the errors, because both the store and retrieval ask it."""
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text
