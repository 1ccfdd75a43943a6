"""Scopes as a session handles them: hide one for this session only, show it again, relabel one everywhere."""

from __future__ import annotations

from kenning.errors import NotFound

from . import events, scopes
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
