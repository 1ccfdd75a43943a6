"""Curation: which memories need a person's (or an agent's) attention, counted and listed.

One pass over the visible live memories sorts them into buckets:

- ``never_verified``: nobody has checked it since it was written;
- ``stale``: the calendar says a check is due (verified longer ago than the window, or never
  verified and older than it);
- ``drifted``: paths it cites are gone from its worktree, or a declared claim no longer holds
  (path drift only: commit drift moves with every commit and is reported per hit instead);
- ``conflicts``: pairs of visible memories where one says it ``contradicts`` the other (a pair
  counts once, whichever side declared it);
- ``contradicted``: memories with an unanswered ``contradicted`` outcome;
- ``silent_misses`` / ``unique_silent_miss_memories``: turns where a matching memory existed but
  was never looked up (logged by the audit), counting only misses whose memory is still live.

Ambient memories colour replies without being cited, so they are never dead weight: they are
left out of ``never_verified`` and ``stale``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import events, trust
from .models import Memory, iso
from .scopes import View
from .staleness import assess_path_drift, assess_verification

if TYPE_CHECKING:
    from .store import Store

LISTED = 10  # how many memories health lists per bucket


def _visible(store: "Store", view: View) -> list[Memory]:
    where, params = view.where()
    rows = store.db.read(lambda c: c.execute(
        f"SELECT m.record FROM memories m WHERE m.removed_at IS NULL {where} ORDER BY m.created, m.id", params).fetchall())
    return [Memory.model_validate_json(r[0]) for r in rows]


def _scan(store: "Store", view: View, now: datetime, since: str | None = None) -> dict[str, Any]:
    """Every bucket's members; ``since`` (ISO) keeps memories created and events logged after it."""
    if since is not None:
        view = View(here=view.here, auto_scope=view.auto_scope, disabled=view.disabled, created_after=since)
    memories = _visible(store, view)
    window = store.config.verification_stale_days
    buckets: dict[str, list] = {"never_verified": [], "stale": [], "drifted": []}
    for memory in memories:
        if memory.category != "ambient":
            verification = assess_verification(memory.last_verified_at, now, window, memory.created)
            if verification.status == "never":
                buckets["never_verified"].append((memory, verification))
            if verification.overdue:
                buckets["stale"].append((memory, verification))
        if memory.origin is not None:
            drift = assess_path_drift(memory.content, [c.spec for c in memory.claims], memory.origin.worktree,
                                      memory.verified_paths, memory.verified_absent_paths)
            if drift.missing or drift.claim_anchored_missing:
                buckets["drifted"].append((memory, drift))
    ids = {m.id for m in memories}
    pairs: dict[frozenset[str], tuple[Memory, Any]] = {}
    for m in memories:
        for link in m.links:
            if link.kind == "contradicts" and link.target in ids:
                pairs.setdefault(frozenset((m.id, link.target)), (m, link))
    buckets["conflicts"] = list(pairs.values())
    negatives = trust.negative_outcomes(store.db, memories, now)
    buckets["contradicted"] = [
        (m, entry) for m in memories for entry in negatives.get(m.id, []) if entry["outcome"] == "contradicted"
    ]
    misses = [e for e in events.query(store.db, since=since, kinds=[events.SEARCH_MISS]) if e["memory_id"] in ids]
    buckets["silent_misses"] = misses
    buckets["unique_silent_miss_memories"] = sorted({e["memory_id"] for e in misses})
    return buckets


def _counts(buckets: dict[str, Any]) -> dict[str, int]:
    return {name: len(members) for name, members in buckets.items()}


def curation_counts(store: "Store", view: View, now: datetime, since: str | None = None) -> dict[str, int]:
    """How many visible memories sit in each curation bucket (see the module docstring)."""
    return _counts(_scan(store, view, now, since))


def report(store: "Store", view: View, now: datetime, limit: int = LISTED) -> dict[str, Any]:
    """The counts plus the first ``limit`` members of each bucket, oldest unverified first."""
    buckets = _scan(store, view, now)

    def row(memory: Memory, **extra: Any) -> dict[str, Any]:
        return {"id": memory.id, "scopes": memory.scopes, "summary": memory.summary, **extra}

    oldest = sorted(buckets["never_verified"] + [b for b in buckets["stale"] if b[1].status == "stale"],
                    key=lambda b: (-(b[1].age_days or 0), b[0].id))
    return {
        "generated_at": iso(now),
        "curation_pending": _counts(buckets),
        "oldest_unverified": [
            row(m, created=iso(m.created), last_verified_at=iso(m.last_verified_at), age_days=v.age_days,
                verification=v.status)
            for m, v in oldest[:limit]
        ],
        "drifted": [row(m, missing=d.missing, claim_anchored_missing=d.claim_anchored_missing)
                    for m, d in buckets["drifted"][:limit]],
        "conflicts": [{"id": m.id, "contradicts": link.target, "note": link.note} for m, link in buckets["conflicts"][:limit]],
        "contradicted": [row(m, **entry) for m, entry in buckets["contradicted"][:limit]],
        "silent_miss_memories": buckets["unique_silent_miss_memories"][:limit],
    }
