"""Curation: which memories need a person's (or an agent's) attention, counted and listed.

The visible live memories fall into buckets:

- ``never_verified``: nobody has checked it since it was written;
- ``stale``: the calendar says a check is due (verified longer ago than the window, or never
  verified and older than it);
- ``drifted``: paths it cites are gone from its worktree, or a declared claim no longer holds
  (path drift only: commit drift moves with every commit and is reported per hit instead);
- ``conflicts``: pairs of visible memories where one says it ``contradicts`` the other (a pair
  counts once, whichever side declared it);
- ``contradicted``: memories with an unanswered ``contradicted`` outcome;
- ``silent_misses`` / ``unique_silent_miss_memories``: turns where a matching memory existed but
  was never looked up (logged by the audit), counting only misses whose memory is still visible;
- ``cold``: not retrieved (a search hit or a show) for ``COLD_DAYS`` and older than that;
- ``dead``: never retrieved at all and older than ``DEAD_DAYS`` (dead weight; not also cold);
- ``cold_endorsement_memories``: retrieved at least ``COLD_ENDORSEMENT_RETRIEVALS`` times yet never
  explicitly applied (automatic applies from the outcome loop do not count): over-surfaced or stale.

Ambient memories colour replies without being cited, so they are never dead weight: they are
left out of ``never_verified``, ``stale``, ``cold``, ``dead`` and ``cold_endorsement_memories``. The calendar buckets are decided in SQL, and only
memories that cite a path or declare a claim are read whole for the drift check, so a session
start stays cheap on a large store.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from kenning.store.db import Database
from kenning.store.models import Memory, iso

from . import events, trust
from .scopes import View
from .staleness import assess_path_drift

LISTED = 10  # how many memories health lists per bucket
BUCKETS = ("never_verified", "stale", "drifted", "conflicts", "contradicted", "silent_misses", "cold", "dead",
           "cold_endorsement_memories")
COLD_DAYS = 30
DEAD_DAYS = 90
COLD_ENDORSEMENT_RETRIEVALS = 5
CURATION_HINT_THRESHOLD = 10  # dead + drifted + cold_endorsement_memories at which a write carries a hint


def _usage(db: Database) -> tuple[dict[str, tuple[str, int]], dict[str, int]]:
    """Per memory: (last retrieval, retrieval count) from search hits and shows; explicit applies."""
    events.flush_store(db.path)
    rows = db.read(lambda c: c.execute(
        "SELECT value, MAX(at), COUNT(*) FROM events, json_each(events.payload, '$.hit_ids') "
        "WHERE kind = ? GROUP BY value UNION ALL "
        "SELECT memory_id, MAX(at), COUNT(*) FROM events WHERE kind = ? AND memory_id IS NOT NULL GROUP BY memory_id",
        (events.SEARCH, events.SHOW)).fetchall())
    retrieved: dict[str, tuple[str, int]] = {}
    for mid, last, count in rows:
        before = retrieved.get(mid, ("", 0))
        retrieved[mid] = (max(before[0], last), before[1] + count)
    applies = dict(db.read(lambda c: c.execute(
        "SELECT memory_id, COUNT(*) FROM events WHERE kind = ? AND json_extract(payload, '$.outcome') = 'applied' "
        "AND json_extract(payload, '$.auto') IS NULL GROUP BY memory_id", (events.OUTCOME,)).fetchall()))
    return retrieved, applies


def _scan(db: Database, stale_days: int, view: View, now: datetime) -> tuple[dict[str, list], dict[str, str]]:
    """Every bucket's members, and when each visible memory was created (for the since-filter)."""
    where, params = view.where()
    due = iso(now - timedelta(days=stale_days))

    def read(sql: str) -> list[tuple]:
        return db.read(lambda c: c.execute(sql, params).fetchall())

    rows = read("SELECT m.id, m.category, m.created, json_extract(m.record, '$.last_verified_at') "
                f"FROM memories m WHERE m.removed_at IS NULL {where}")
    created_at = {mid: created for mid, _, created, _ in rows}
    buckets: dict[str, list] = {name: [] for name in BUCKETS}
    retrieved, applies = _usage(db)
    cold_before, dead_before = iso(now - timedelta(days=COLD_DAYS)), iso(now - timedelta(days=DEAD_DAYS))
    for mid, category, created, verified in sorted(rows, key=lambda r: (r[2], r[0])):
        if category == "ambient":
            continue
        if verified is None:
            buckets["never_verified"].append((mid, created, None))
        if (verified or created) < due:
            buckets["stale"].append((mid, created, verified))
        last, count = retrieved.get(mid, (None, 0))
        if last is None and created < dead_before:
            buckets["dead"].append((mid, created, None))
        elif (last or created) < cold_before and created < cold_before:
            buckets["cold"].append((mid, created, last))
        if count >= COLD_ENDORSEMENT_RETRIEVALS and not applies.get(mid):
            buckets["cold_endorsement_memories"].append((mid, created, count))

    buckets["drifted"] = _drifted(db, view)

    buckets["conflicts"] = conflict_pairs(db, view)

    outcomes = events.query(db, since=now - trust.RECENT_OUTCOMES, kinds=[events.OUTCOME])
    flagged = sorted({e["memory_id"] for e in outcomes if e["memory_id"] in created_at})
    negatives = trust.negative_outcomes(db, _memories(db, flagged), now)
    buckets["contradicted"] = [(mid, entry) for mid in flagged for entry in negatives.get(mid, [])
                               if entry["outcome"] == "contradicted"]

    buckets["silent_misses"] = [e for e in events.query(db, kinds=[events.SEARCH_MISS])
                                if e["memory_id"] in created_at]
    return buckets, created_at


def conflict_pairs(db: Database, view: View) -> list[tuple[str, str, str | None]]:
    """(id, contradicts, note) once a pair of visible live memories linked with contradicts, by id:
    read from the links and their targets alone (``memory_conflicts`` ran the whole health scan of
    every memory for them, ~0.6 s of CPU at 100k). A pair where one also supersedes the other is no
    conflict to resolve: supersedes already says which to prefer."""
    where, params = view.where()

    def read(c: Any) -> list[tuple[str, str, str | None]]:
        links = c.execute(
            "SELECT m.id, l.target, l.note FROM memory_links l JOIN memories m ON m.rowid = l.source "
            f"WHERE l.kind = 'contradicts' AND m.removed_at IS NULL {where} ORDER BY m.id, l.target", params).fetchall()
        targets = sorted({target for _, target, _ in links})
        visible: set[str] = set()
        for chunk in _chunks(targets):
            visible.update(row[0] for row in c.execute(
                f"SELECT m.id FROM memories m WHERE m.id IN ({','.join('?' * len(chunk))}) AND m.removed_at IS NULL "
                f"{where}", [*chunk, *params]))
        settled: set[frozenset[str]] = set()  # pairs where one (live) also supersedes the other
        for chunk in _chunks(sorted({x for source, target, _ in links for x in (source, target)})):
            settled.update(frozenset(pair) for pair in c.execute(
                "SELECT m.id, l.target FROM memories m JOIN memory_links l ON l.source = m.rowid "
                f"WHERE m.id IN ({','.join('?' * len(chunk))}) AND l.kind = 'supersedes' AND m.removed_at IS NULL",
                chunk))
        pairs: dict[frozenset[str], tuple[str, str, str | None]] = {}
        for source, target, note in links:
            if target in visible and frozenset((source, target)) not in settled:
                pairs.setdefault(frozenset((source, target)), (source, target, note))
        return list(pairs.values())

    return db.read(read)


def _chunks(ids: list[str], size: int = 500) -> list[list[str]]:
    """``ids`` in runs short enough for one IN (...) list."""
    return [ids[start:start + size] for start in range(0, len(ids), size)]


def _drifted(db: Database, view: View) -> list[tuple]:
    """Visible memories whose cited paths or claims no longer hold in their worktree: only those
    that cite a path or declare a claim are read whole."""
    where, params = view.where()
    out = []
    # "origin_worktree >= ''" is "IS NOT NULL" for a text column, put so that the planner walks the
    # origin index (only memories written inside a repository) instead of every live memory
    for (record,) in db.read(lambda c: c.execute(
            "SELECT m.record FROM memories m WHERE +m.removed_at IS NULL AND m.origin_worktree >= '' "
            "AND (instr(m.content, '/') > 0 OR json_array_length(m.record, '$.claims') > 0 "
            f"OR json_array_length(m.record, '$.verified_paths') > 0) {where} ORDER BY m.created, m.id",
            params).fetchall()):
        memory = Memory.from_record(record)
        drift = assess_path_drift(memory.content, [c.spec for c in memory.claims], memory.origin.worktree,
                                  memory.verified_paths, memory.verified_absent_paths)
        if drift.missing or drift.claim_anchored_missing:
            out.append((memory.id, memory, drift))
    return out


def pressure_counts(db: Database, view: View, now: datetime) -> dict[str, int]:
    """The three buckets the write hint weighs (dead, drifted, cold_endorsement_memories), as
    ``curation_counts`` counts them, without reading every visible memory: dead weight is looked
    for only among memories older than ``DEAD_DAYS``, and the often-retrieved memories come from
    the event log; the rest of the store is not read."""
    where, params = view.where()
    retrieved, applies = _usage(db)
    old = db.read(lambda c: c.execute(
        "SELECT m.id FROM memories m WHERE m.removed_at IS NULL AND m.category != 'ambient' AND m.created < ? "
        f"{where}", [iso(now - timedelta(days=DEAD_DAYS)), *params]).fetchall())
    endorsed = [mid for mid, (_, count) in retrieved.items()
                if count >= COLD_ENDORSEMENT_RETRIEVALS and not applies.get(mid)]
    visible = 0
    for i in range(0, len(endorsed), 500):
        chunk = endorsed[i : i + 500]
        visible += db.read(lambda c: c.execute(
            f"SELECT COUNT(*) FROM memories m WHERE m.id IN ({','.join('?' * len(chunk))}) AND m.removed_at IS NULL "
            f"AND m.category != 'ambient' {where}", [*chunk, *params]).fetchone()[0])
    return {"dead": sum(1 for (mid,) in old if mid not in retrieved), "drifted": len(_drifted(db, view)),
            "cold_endorsement_memories": visible}


def _since(buckets: dict[str, list], created_at: dict[str, str], since: str) -> dict[str, list]:
    """The buckets limited to memories created, and events logged, after ``since``."""
    return {
        "never_verified": [b for b in buckets["never_verified"] if b[1] > since],
        "stale": [b for b in buckets["stale"] if b[1] > since],
        "drifted": [b for b in buckets["drifted"] if created_at[b[0]] > since],
        "conflicts": [b for b in buckets["conflicts"] if max(created_at[b[0]], created_at[b[1]]) > since],
        "contradicted": [b for b in buckets["contradicted"] if b[1]["at"] > since],
        "silent_misses": [e for e in buckets["silent_misses"] if e["at"] > since],
        **{name: [b for b in buckets[name] if b[1] > since] for name in ("cold", "dead", "cold_endorsement_memories")},
    }


def _memories(db: Database, ids: list[str]) -> list[Memory]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = db.read(lambda c: c.execute(f"SELECT record FROM memories WHERE id IN ({marks})", ids).fetchall())
    return [Memory.from_record(r[0]) for r in rows]


def _counts(buckets: dict[str, list]) -> dict[str, int]:
    counts = {name: len(buckets[name]) for name in BUCKETS if name in buckets}
    counts["unique_silent_miss_memories"] = len({e["memory_id"] for e in buckets["silent_misses"]})
    return counts


def curation_counts(
    db: Database, stale_days: int, view: View, now: datetime, since: str | None = None
) -> tuple[dict[str, int], dict[str, int] | None]:
    """How many visible memories sit in each bucket, and (with ``since``) how many of them are new
    since then: created after it, or flagged by an event logged after it."""
    buckets, created_at = _scan(db, stale_days, view, now)
    return _counts(buckets), None if since is None else _counts(_since(buckets, created_at, since))


def report(db: Database, stale_days: int, view: View, now: datetime, limit: int = LISTED) -> dict[str, Any]:
    """The counts plus the first ``limit`` members of each bucket, the longest unverified first."""
    buckets, _ = _scan(db, stale_days, view, now)
    unverified = {mid: (created, verified) for mid, created, verified in buckets["never_verified"] + buckets["stale"]}
    oldest = sorted(unverified.items(), key=lambda item: (item[1][1] or item[1][0], item[0]))[:limit]
    contradicted = buckets["contradicted"][:limit]
    by_id = {m.id: m for m in _memories(db, [mid for mid, _ in oldest] + [mid for mid, _ in contradicted])}

    def row(memory: Memory, **extra: Any) -> dict[str, Any]:
        return {"id": memory.id, "scopes": memory.scopes, "summary": memory.summary, **extra}

    def age(since: str) -> float:  # never negative: a time ahead of this clock is no age yet (staleness.py)
        return round(max(0.0, (now - datetime.fromisoformat(since.replace("Z", "+00:00"))) / timedelta(days=1)), 1)

    return {
        "generated_at": iso(now),
        "curation_pending": _counts(buckets),
        "oldest_unverified": [
            row(by_id[mid], created=created, last_verified_at=verified, age_days=age(verified or created),
                verification="stale" if verified else "never")
            for mid, (created, verified) in oldest
        ],
        "drifted": [row(m, missing=d.missing, claim_anchored_missing=d.claim_anchored_missing)
                    for _, m, d in buckets["drifted"][:limit]],
        "conflicts": [{"id": a, "contradicts": b, "note": note} for a, b, note in buckets["conflicts"][:limit]],
        "contradicted": [row(by_id[mid], **entry) for mid, entry in contradicted],
        "silent_miss_memories": sorted({e["memory_id"] for e in buckets["silent_misses"]})[:limit],
        "cold": [{"id": mid, "last_retrieved": last} for mid, _, last in buckets["cold"][:limit]],
        "dead": [mid for mid, _, _ in buckets["dead"][:limit]],
        "cold_endorsement_memories": [{"id": mid, "retrievals": n}
                                      for mid, _, n in buckets["cold_endorsement_memories"][:limit]],
    }


def curation_hint(counts: dict[str, int], threshold: int = CURATION_HINT_THRESHOLD) -> dict[str, Any] | None:
    """The passive nudge a committed write carries when curation pressure crossed the threshold."""
    parts = {"dead_weight": counts.get("dead", 0), "drifted": counts.get("drifted", 0),
             "cold_endorsement_memories": counts.get("cold_endorsement_memories", 0)}
    pressure = sum(parts.values())
    if pressure < threshold:
        return None
    return {"pressure": pressure, "threshold": threshold, "counts": parts,
            "message": (f"{pressure} memories need curation (dead weight, drifted, or surfaced often but never "
                        "applied); when there is time, memory_health lists them - memory_remove the dead, "
                        "memory_verify or memory_update the rest")}
