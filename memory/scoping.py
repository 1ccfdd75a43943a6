"""Scopes as a session handles them: hide one for this session only, show it again, relabel one
everywhere, and give a moved checkout's memories its new folder (auto_scope keys on that folder)."""

from __future__ import annotations

import os
from typing import Any

from kenning.errors import InvalidInput, NotFound

from . import events, scopes
from .origin import holds_any_commit
from .gates import write_enabled
from .gates.limits import check_scopes
from .session import Session


def disable(s: Session, scope: str) -> list[str]:
    """Hide a scope from this session's searches, lists and counts; returns the disabled scopes."""
    scope = check_scopes([scope])[0]
    known = s.db.read(lambda c: c.execute(
        "SELECT 1 FROM memory_scopes WHERE scope = ? UNION ALL "
        "SELECT 1 FROM episodes, json_each(episodes.scopes) WHERE value = ? LIMIT 1", (scope, scope)).fetchone())
    if known is None and scope not in s.disabled_scopes:
        raise NotFound(f"no memory, tombstone or episode has scope {scope!r}; memory_scope_overview lists the scopes")
    if scope not in s.disabled_scopes:
        s.disabled_scopes.append(scope)
    return sorted(s.disabled_scopes)


def enable(s: Session, scope: str) -> list[str]:
    """Show a disabled scope again; returns the scopes still disabled."""
    scope = check_scopes([scope])[0]
    if scope in s.disabled_scopes:
        s.disabled_scopes.remove(scope)
    return sorted(s.disabled_scopes)


def rename(s: Session, old: str, new: str) -> int:
    """Relabel a scope on every memory and tombstone carrying it (one transaction); returns how many changed."""
    from .requests import no_secret

    no_secret(new, "the new scope name")
    write_enabled.require(s.config)  # it rewrites memories, as an update does
    with s.transaction() as c:
        changed = scopes.rename(c, old, new)
        events.log(c, s.clock(), s.session_id, events.RENAME_SCOPE, None,
                   {"old": old, "new": new, "count": len(changed)})
    if old in s.disabled_scopes:
        s.disabled_scopes[s.disabled_scopes.index(old)] = new
        s.disabled_scopes[:] = list(dict.fromkeys(s.disabled_scopes))
    return len(changed)


SAME_REPOSITORY_COMMITS = 20  # recorded commits looked up in the new checkout, at most


def rehome(s: Session, old: str | os.PathLike[str], new: str | os.PathLike[str] | None,
           force: bool = False) -> dict[str, Any]:
    """Move the memories (and journal entries) recorded at the checkout folder ``old`` to ``new``
    (default: the caller's worktree); returns both folders as resolved and how many memories moved.

    auto_scope shows a caller the memories written in its own worktree, named by its folder, so a
    checkout moved or renamed on disk hides everything it wrote. Refused unless ``force``: an
    ``old`` that still exists (its memories would vanish from there) and a ``new`` that holds none
    of the commits the memories were written at (most likely another repository, or a typo)."""
    written = _folder(old, "the old folder")
    # a checkout is recorded by its real path (memory/origin.py): a symlink to the old folder, or a ".."
    # after one, leads where the kernel goes, not where the text reads (which _folder's normpath keeps).
    # The path as written is tried too: a store copied from another machine holds that machine's paths,
    # and a symlink left at the old place may lead to the new folder itself.
    real = _real(old)
    if new is None:
        here = s.here()
        if here is None:
            raise InvalidInput("this directory is in no git checkout, so there is nowhere to move the memories "
                               "to: run it inside the checkout's new folder, or name that folder")
        new = here.worktree
    _folder(new, "the new folder")
    new = _real(new)
    if not os.path.isdir(new):
        raise InvalidInput(f"the new folder {new} is not a directory: name where the checkout is now")
    olds = [path for path in dict.fromkeys((real, written)) if path not in (new, "/")]
    if not olds:
        raise InvalidInput(f"cannot move memories from {written} to {new}")
    if os.path.exists(real) and real != new and not force:  # a symlink left at the old place: nothing hides
        raise InvalidInput(f"{written} still exists: its memories would be hidden there once moved to {new}; "
                           "pass force (--force) to move them all the same")
    write_enabled.require(s.config)
    with s.transaction() as c:
        for old in olds:
            if changed := scopes.rehome(c, old, new):
                break
        else:
            where = written if real == written else f"{written} (or {real}, where it leads)"
            raise NotFound(f"no memory was written in {where} or a folder inside it; memories of other checkouts "
                           "show with auto_scope off (--no-auto-scope), each with its origin")
        if not force:
            _same_repository(old, changed)
        events.log(c, s.clock(), s.session_id, events.REHOME, None, {"old": old, "new": new, "count": len(changed)})
    s.locate()  # auto_scope reads the caller's checkout again
    return {"old": old, "new": new, "moved": len(changed)}


def _same_repository(old: str, changed: list[tuple[str, str, str | None]]) -> None:
    """Refuse unless each new worktree holds one of the commits its memories were written at (up to
    ``SAME_REPOSITORY_COMMITS`` of them; memories of a repository without commits pass)."""
    commits: dict[str, list[str]] = {}
    for _, worktree, commit in changed:
        known = commits.setdefault(worktree, [])
        if commit and commit not in known and len(known) < SAME_REPOSITORY_COMMITS:
            known.append(commit)
    for worktree, wanted in commits.items():
        if wanted and not holds_any_commit(worktree, wanted):
            raise InvalidInput(f"{worktree} holds none of the commits the memories of {old} were written at, so it "
                               "is no checkout of that repository (or lost that history); pass force (--force) to "
                               "move them all the same")


def _real(path: str | os.PathLike[str]) -> str:
    """The folder a checked path (``_folder``) names on this machine, symlinks and ".." resolved as the kernel does."""
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


def _folder(path: str | os.PathLike[str], what: str) -> str:
    """An absolute folder path without a trailing slash; ``~`` expands. An empty one names nothing."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise InvalidInput(f"{what} must be a path (a string or a pathlib.Path), got {type(path).__name__}")
    if not path.strip():
        raise InvalidInput(f"{what} is empty: name a folder")
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))
