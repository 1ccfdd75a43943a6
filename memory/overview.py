"""Pictures of a store for a person or an agent: the session-start overview, the curation report, the store stats."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from kenning.errors import InvalidInput
from kenning.store.location import current_folder
from kenning.store.models import iso

from . import events, health, scopes
from .scopes import View
from .gates.limits import check_count
from .session import Session
from .writes import pending_writes

RECENTLY_REMOVED = timedelta(days=7)


def scope_overview(s: Session, auto_scope: bool) -> dict[str, Any]:
    """Counts per scope, the curation backlog (and what is new in it since the prior session),
    recent removals and pending writes, without any memory content."""
    view = s.view(auto_scope)
    per_scope, total = scopes.scope_counts(s.db, view)
    now = s.clock()
    boundary = events.prior_session_boundary(s.db, s.session_id)
    counts, counts_since = health.curation_counts(s.db, s.config.verification_stale_days, view, now, since=boundary)
    here = s.here()
    return {
        "current_repo": here.repo if here else None,
        "current_worktree": here.worktree if here else None,
        "current_cwd": str(s.cwd or current_folder()),
        "auto_scope": auto_scope,
        "scopes": per_scope,
        "total": total,
        "disabled_scopes": sorted(s.disabled_scopes),
        "curation_pending": counts,
        "curation_pending_new_since_last_session": counts_since,
        "recently_removed_in_worktree": _recently_removed(s, view, now),
        # write-reflex proposals: kenning has no proposal capture (no Stop-hook auto_propose), so none wait
        "proposals_pending": 0,
        "pending_writes": pending_writes(s),
        "moved_checkouts": scopes.moved_checkouts(s.db, view),
    }


def health_report(s: Session, auto_scope: bool, limit: int | None) -> dict[str, Any]:
    """The curation report (memory/health.py, ``limit`` of each bucket, health.LISTED by default) plus
    store totals."""
    limit = health.LISTED if limit is None else check_count(limit)
    view = s.view(auto_scope)
    now = s.clock()
    _, total = scopes.scope_counts(s.db, view)
    where, params = view.where()
    by_category = dict(s.db.read(lambda c: c.execute(
        f"SELECT category, COUNT(*) FROM memories m WHERE removed_at IS NULL {where} GROUP BY category",
        params).fetchall()))
    tombstoned = s.db.read(lambda c: c.execute(
        "SELECT COUNT(*) FROM memories WHERE removed_at IS NOT NULL").fetchone()[0])
    here = s.here() if auto_scope else None
    return {
        "auto_scope": auto_scope, "current_worktree": here.worktree if here else None,
        "total": total, "by_category": by_category, "tombstones": tombstoned,
        "pending_writes": len(pending_writes(s, all_sessions=True)),
        **health.report(s.db, s.config.verification_stale_days, view, now, limit),
    }


def _recently_removed(s: Session, view: View, now: datetime) -> int:
    """Tombstones of the trailing week; under auto_scope only this worktree's (the spec: tombstones
    with no recorded worktree are excluded), so a session outside any checkout, whose worktree is
    none, counts none of them. A tombstone carrying a scope disabled for this session is left out,
    as the overview's other counts leave out its memories."""
    disabled, params = replace(view, auto_scope=False, updated_after=None).where()
    sql = f"SELECT COUNT(*) FROM memories m WHERE m.removed_at IS NOT NULL AND m.removed_at >= ? {disabled}"
    params = [iso(now - RECENTLY_REMOVED), *params]
    if view.auto_scope:
        if view.scoped_to is None:
            return 0
        sql += " AND m.origin_worktree = ?"
        params.append(view.scoped_to.worktree)
    return s.db.read(lambda c: c.execute(sql, params).fetchone()[0])


def stats(s: Session) -> dict[str, Any]:
    """What `kenning info` reports: schema version, counts and size, without memory text or an event."""
    queries = {
        "schema_version": "PRAGMA user_version",
        "memories": "SELECT COUNT(*) FROM memories WHERE removed_at IS NULL",
        "tombstones": "SELECT COUNT(*) FROM memories WHERE removed_at IS NOT NULL",
        "episodes": "SELECT COUNT(*) FROM episodes",
        "embedded": "SELECT COUNT(DISTINCT mem) FROM embeddings",
        "embed_pending": "SELECT COUNT(*) FROM embed_queue",
    }
    report = s.db.read(lambda c: {k: c.execute(sql).fetchone()[0] for k, sql in queries.items()})
    report["pending_writes"] = len(pending_writes(s, all_sessions=True))
    report["size_bytes"] = s.db.size_bytes(s.directory)
    report["read_only"] = s.db.read_only
    report["default_mode"] = s.config.default_mode
    return report
