"""The library's contract at its edge: bad input raises a project error, never a TypeError from deep inside."""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

from kenning.errors import InvalidInput, KenningError, StorageError
from kenning.store.ids import canonical

# Every public Store method a caller (library, CLI, MCP, HTTP) reaches with outside input.
ENTRY_POINTS = (
    "write", "confirm_write", "cancel_write", "pending_writes", "import_records", "import_checked", "import_bulk",
    "update", "remove", "restore", "verify", "record_use", "get", "show", "list", "tombstones", "search", "rank",
    "disable_scope", "enable_scope", "rename_scope", "scope_overview", "health", "events", "log_event", "configure",
    "check", "rebuild", "resolve_conflict", "count", "stats", "settle_uses", "here", "conflicts", "rehome",
)
# Public properties that read the store: after close() they too say so, not sqlite3.ProgrammingError.
STORE_PROPERTIES = ("config", "disabled_scopes")
# The parameters that name a memory (or a staged write) by id: a ULID arrives in any case and is
# looked up in the one case the store keeps (store/ids.canonical), whichever surface passed it.
ID_PARAMETERS = frozenset({"id", "other_id", "keep_id", "ids", "pending_id"})
# Parameters holding a token the caller read back (show's or search's ``version``): one of another
# type can never match, and answered "stale" as if another agent had changed the memory.
TOKEN_PARAMETERS = frozenset({"version"})


def guarded(fn: Callable) -> Callable:
    """The backstop: an argument of the wrong shape that slipped past validation (a bool where a
    list belongs, a float limit) surfaces as InvalidInput. The transaction it may have been in has
    rolled back, so nothing was written."""

    spelled = _id_spelling(fn)
    switches = _switches(fn)
    tokens = _positions(fn, TOKEN_PARAMETERS)

    @functools.wraps(fn)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if spelled is not None:
            args, kwargs = spelled(args, kwargs)
        if switches:
            _check_switches(fn.__name__, switches, args, kwargs)
        if tokens:
            _check_tokens(fn.__name__, tokens, args, kwargs)
        _refuse_closed(self, fn.__name__)
        try:
            return fn(self, *args, **kwargs)
        except StorageError as exc:  # PostgreSQL's closed pool reads as "cannot reach": say it was closed
            _refuse_closed(self, fn.__name__, exc)
            raise
        except KenningError:
            raise
        except Exception as exc:
            _refuse_closed(self, fn.__name__, exc)  # closed by another thread (or a callback) while it ran
            if isinstance(exc, (TypeError, ValueError, AttributeError, KeyError, OverflowError, UnicodeError,
                                RecursionError)):
                raise InvalidInput(f"bad argument to {fn.__name__}: {type(exc).__name__}: {str(exc)[:200]}") from exc
            raise

    return call


def _parameters(fn: Callable) -> list[tuple[int, str]]:
    """(position after self, name) of every parameter of ``fn`` but self."""
    code = fn.__code__
    return list(enumerate(code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]))


def _switches(fn: Callable) -> list[tuple[int, str]]:
    """(position after self, name) of every parameter whose default is True or False."""
    code = fn.__code__
    defaults = dict(zip(code.co_varnames[code.co_argcount - len(fn.__defaults__ or ()) : code.co_argcount],
                        fn.__defaults__ or ()))
    defaults.update(fn.__kwdefaults__ or {})
    return [(i, name) for i, name in _parameters(fn) if isinstance(defaults.get(name), bool)]


def _check_switches(method: str, switches: list[tuple[int, str]], args: tuple, kwargs: dict) -> None:
    """A flag must be True or False: force="no", persist="no" or auto_scope="false" are truthy strings
    that silently did the opposite of what they say (wrote a duplicate, stored a setting for every process)."""
    for i, name in switches:
        given = _argument(args, kwargs, i, name, False)
        if not isinstance(given, bool):
            raise InvalidInput(f"{method}: {name} must be True or False, got {given!r:.60}")


def _positions(fn: Callable, wanted: frozenset[str]) -> list[tuple[int, str]]:
    """(position after self, name) of the parameters named in ``wanted``."""
    return [(i, name) for i, name in _parameters(fn) if name in wanted]


def _check_tokens(method: str, tokens: list[tuple[int, str]], args: tuple, kwargs: dict) -> None:
    for i, name in tokens:
        given = _argument(args, kwargs, i, name, None)
        if given is not None and not isinstance(given, str):
            raise InvalidInput(f"{method}: {name} must be the version text that show or search gave, "
                               f"got {type(given).__name__}")


def _argument(args: tuple, kwargs: dict, i: int, name: str, default: Any) -> Any:
    """What a call passed for the parameter at position ``i`` (after self) named ``name``."""
    return args[i] if i < len(args) else kwargs.get(name, default)


def _refuse_closed(store: Any, name: str, cause: BaseException | None = None) -> None:
    if getattr(store, "_closed", False):  # else sqlite3's "Cannot operate on a closed database" from deep inside
        raise InvalidInput(f"{name}: this store was closed; open it again with kenning.open_store()") from cause


def _open_only(prop: property, name: str) -> property:
    def read(self: Any) -> Any:
        _refuse_closed(self, name)
        return prop.fget(self)

    read.__doc__ = prop.__doc__
    return property(read, prop.fset, prop.fdel, prop.__doc__)


def _id_spelling(fn: Callable) -> Callable[[tuple, dict], tuple[tuple, dict]] | None:
    """For a method with id parameters, a function giving its arguments with those ids canonical;
    None for the rest (a search pays nothing)."""
    where = _positions(fn, ID_PARAMETERS)
    if not where:
        return None

    def spelled(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        args = list(args)
        for i, name in where:
            if i < len(args):
                args[i] = _canonical(args[i])
            elif name in kwargs:
                kwargs[name] = _canonical(kwargs[name])
        return tuple(args), kwargs

    return spelled


def _canonical(given: Any) -> Any:
    """An id, or a list of ids, canonical; anything else is left for the method to refuse. A NUL, which
    no id holds and PostgreSQL's text cannot, becomes U+FFFD: such an id is not found on every backend
    (PostgreSQL answered 'a value the store cannot hold', HTTP 400 where SQLite's was a 404)."""
    if isinstance(given, (list, tuple, set, frozenset, Iterator)):
        return [canonical(_without_nul(i)) for i in given]
    return canonical(_without_nul(given))


def _without_nul(given: Any) -> Any:
    return given.replace("\x00", "\ufffd") if isinstance(given, str) and "\x00" in given else given


# What help(Store.<method>) says it raises, beyond InvalidInput (every entry point) - all KenningError.
_BY_ID = "NotFound (no memory has that id)"
_WRITES = "ReadOnlyStore / StorageError (the store cannot be written: permissions, a full disk)"
RAISES = {
    "write": (_WRITES,), "confirm_write": (_WRITES,), "import_records": (_WRITES,), "import_checked": (_WRITES,),
    "import_bulk": (_WRITES,), "rename_scope": (_WRITES,), "configure": (_WRITES,), "rebuild": (_WRITES,),
    "rehome": ("NotFound (no memory was written in that folder)", _WRITES),
    "update": (_BY_ID, "Stale (``version`` is older than the memory)",
               "GateRefused (kenning.memory.gates; an InvalidInput: a gate refused the new text)", _WRITES),
    "remove": (_BY_ID, _WRITES), "restore": (_BY_ID, _WRITES), "verify": (_BY_ID, _WRITES),
    "record_use": (_BY_ID, _WRITES), "resolve_conflict": (_BY_ID, _WRITES), "get": (_BY_ID,), "show": (_BY_ID,),
    "search": ("SearchDisabled (search_enabled is off)",
               "EmbeddingsUnavailable (mode semantic or hybrid named, the embeddings extra absent or broken)"),
    "rank": ("EmbeddingsUnavailable (mode semantic or hybrid named, the embeddings extra absent or broken)",),
}


def _documented(fn: Callable, name: str) -> None:
    """Append the errors the method raises to its docstring, so help() names them."""
    raises = ("InvalidInput (a malformed argument, or the store was closed)", *RAISES.get(name, ()))
    doc = (fn.__doc__ or "").rstrip()
    indent = min((len(line) - len(line.lstrip()) for line in doc.splitlines()[1:] if line.strip()), default=8)
    lines = textwrap.wrap("Raises (kenning.errors, every one a KenningError): " + "; ".join(raises) + ".", 96)
    fn.__doc__ = doc + "\n\n" + "\n".join(" " * indent + line for line in lines) + "\n"


def guard(cls: type) -> type:
    """Class decorator: wrap every entry point of the Store class."""
    for name in ENTRY_POINTS:
        if callable(getattr(cls, name, None)):
            setattr(cls, name, guarded(getattr(cls, name)))
            _documented(getattr(cls, name), name)
    for name in STORE_PROPERTIES:
        prop = getattr(cls, name, None)
        if isinstance(prop, property) and prop.fget is not None:
            setattr(cls, name, _open_only(prop, name))
    return cls
