"""The library's contract at its edge: bad input raises a project error, never a TypeError from deep inside."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kenning.errors import InvalidInput, KenningError

# Every public Store method a caller (library, CLI, MCP, HTTP) reaches with outside input.
ENTRY_POINTS = (
    "write", "confirm_write", "cancel_write", "pending_writes", "import_records", "import_checked", "import_bulk",
    "update", "remove", "restore", "verify", "record_use", "get", "show", "list", "tombstones", "search", "rank",
    "disable_scope", "enable_scope", "rename_scope", "scope_overview", "health", "events", "log_event", "configure",
    "check", "rebuild",
)


def guarded(fn: Callable) -> Callable:
    """The backstop: an argument of the wrong shape that slipped past validation (a bool where a
    list belongs, a float limit) surfaces as InvalidInput. The transaction it may have been in has
    rolled back, so nothing was written."""

    @functools.wraps(fn)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "_closed", False):  # else sqlite3's "Cannot operate on a closed database" from deep inside
            raise InvalidInput(f"{fn.__name__}: this store was closed; open it again with kenning.open_store()")
        try:
            return fn(self, *args, **kwargs)
        except KenningError:
            raise
        except (TypeError, ValueError, AttributeError, KeyError, OverflowError, UnicodeError, RecursionError) as exc:
            raise InvalidInput(f"bad argument to {fn.__name__}: {type(exc).__name__}: {str(exc)[:200]}") from exc

    return call


def guard(cls: type) -> type:
    """Class decorator: wrap every entry point of the Store class."""
    for name in ENTRY_POINTS:
        if callable(getattr(cls, name, None)):
            setattr(cls, name, guarded(getattr(cls, name)))
    return cls
