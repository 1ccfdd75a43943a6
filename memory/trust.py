"""Trust annotations: what a caller should know about a memory before relying on it.

Every search hit and every ``show`` carries the staleness verdict (memory/staleness.py). On top:

- ``superseded_by``: live memories that declare they replace this one (a ``supersedes`` link), or
  replace a removed memory that did (a chain stays replaced when its middle is removed). The
  spec's link means "prefer this over the target", so a superseded hit is never ``high`` (what
  replaced it is the answer), never the one expanded, and comes right after the hits of the same
  result that replace it, which move up to where it ranked (``superseders_first``), whatever their
  scores;
- ``depends_on_resolved``: the memories this one only makes sense with, inlined as one-line
  summaries so the caller needs no extra round trip (at most 3 per hit and 10 per call, so a
  dense link graph cannot flood a result), each with its ``superseded_by`` when one replaced it;
  ``depends_on_more`` counts a hit's depends_on links the caps left out (``show`` lists them all);
- ``recent_negative_outcomes``: the latest ``ignored`` and ``contradicted`` outcome of the last
  30 days (at most one of each) that came after the memory was last verified or its text edited —
  a new text or a verification answers the complaint; a scope, link or confidence edit does not.

Only the returned hits are annotated, with one git cache per call, so a search stays fast. A hit
whose memory cites nothing checkable is annotated from its verification calendar alone
(memory/citations.py): no git, and no pydantic model, so a plain search (store/plain.py) can use
this module with plain memories and hits; the full assessment loads memory/staleness.py.
"""

from __future__ import annotations

import functools
import json
import weakref
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from kenning.store.db import Database
from kenning.store.memo import memo
from kenning.store.plain import iso
from kenning.store.search import version_of

from . import events
from .citations import extract_paths, uncited_hit_fields

if TYPE_CHECKING:
    from kenning.store.models import Hit, Memory

    from .staleness import DriftCache, Staleness

RECENT_OUTCOMES = timedelta(days=30)
NEGATIVE_OUTCOMES = ("ignored", "contradicted")
DEPENDS_PER_HIT = 3
DEPENDS_PER_CALL = 10
# expand_top: the top hit is "clearly the answer" when its relevance is high or its score leads
# the runner-up by this share of its own score (works for fused and for single-leg native scores)
DECISIVE_LEAD = 0.3


def staleness(memory: Memory, now: datetime, stale_days: int, cache: DriftCache) -> Staleness:
    from .staleness import VERIFIED_HEAD, assess_staleness

    return assess_staleness(
        body=memory.content, now=now, origin=memory.origin, claims=[c.spec for c in memory.claims],
        last_verified_at=memory.last_verified_at, verified_paths=memory.verified_paths,
        verified_absent_paths=memory.verified_absent_paths, written_at=memory.created,
        verification_stale_days=stale_days, cache=cache, verified_head=(memory.metadata or {}).get(VERIFIED_HEAD),
    )


def full_detail(assessed: Staleness) -> dict[str, Any]:
    """The complete staleness report (show, an expanded hit): every checked path and each claim."""
    detail = assessed.to_hit_fields()
    detail["staleness_reasons"] = assessed.reasons
    detail["verification"] = assessed.verification.model_dump(mode="json")
    detail["path_drift"] = assessed.path_drift.model_dump(mode="json")
    drift = assessed.commit_drift.model_dump(mode="json")
    drift["commits_since_verify"] = drift["count"]  # the spec's name; count kept for older readers
    detail["commit_drift"] = drift
    return detail


def superseded_by(db: Database, ids: list[str]) -> dict[str, list[str]]:
    """For each id, the live memories that supersede it: directly, or through removed memories
    that superseded it and were superseded in turn (A <- B <- C with B removed "merged into C":
    A is still replaced, by C). A removed superseder with no live successor supersedes nothing."""
    if not ids:
        return {}
    held = memo(db, "superseded_by")  # read again only after the store changed
    missing = list(dict.fromkeys(i for i in ids if i not in held))
    if missing:
        found: dict[str, set[str]] = {i: set() for i in missing}
        frontier: dict[str, set[str]] = {i: {i} for i in missing}  # a target -> the asked ids it stands for
        seen: set[tuple[str, str]] = set()
        while frontier:
            marks = ",".join("?" * len(frontier))
            rows = db.read(lambda c: c.execute(
                f"SELECT l.target, m.id, m.removed_at IS NULL FROM memory_links l JOIN memories m "
                f"ON m.rowid = l.source WHERE l.kind = 'supersedes' AND l.target IN ({marks})",
                list(frontier)).fetchall())
            after: dict[str, set[str]] = {}
            for target, source, live in rows:
                for asked in frontier[target]:
                    if live:
                        found[asked].add(source)
                    elif (source, asked) not in seen:  # a cycle of removed memories ends here
                        seen.add((source, asked))
                        after.setdefault(source, set()).add(asked)
            frontier = after
        held.update((i, sorted(found[i] - {i})) for i in missing)
    return {i: list(held[i]) for i in ids if held.get(i)}


def negative_outcomes(db: Database, memories: list[Memory], now: datetime) -> dict[str, list[dict[str, Any]]]:
    """For each memory, its unanswered recent ignored/contradicted outcomes (newest first, one per kind)."""
    if not memories:
        return {}
    by_id = {m.id: m for m in memories}
    since = iso(now - RECENT_OUTCOMES)
    known = _remembered(db)
    if len(known) > NEGATIVES_REMEMBERED:  # before deciding what to read: a cleared memo holds none of these
        known.clear()
    missing = [mid for mid in by_id if mid not in known or known[mid][0] > since]
    if missing:
        fetched: dict[str, list[dict[str, Any]]] = {mid: [] for mid in missing}
        for event in _negative_events(db, missing, now - RECENT_OUTCOMES):
            fetched[event["memory_id"]].append(event)
        known.update((mid, (since, events_)) for mid, events_ in fetched.items())
    logged = [e for mid in by_id for e in known[mid][1] if e["at"] >= since]
    rewritten = _text_changed_at(db, sorted({e["memory_id"] for e in logged}))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for event in reversed(logged):  # newest first (per memory, which is all that is compared)
        payload = event["payload"]
        outcome = payload.get("outcome")
        memory = by_id[event["memory_id"]]
        answered = max(t for t in (rewritten.get(memory.id), iso(memory.last_verified_at), "") if t is not None)
        if outcome not in NEGATIVE_OUTCOMES or event["at"] <= answered:
            continue
        entry = {"outcome": outcome, "at": event["at"], "session": event["session"]}
        entry.update({k: payload[k] for k in ("note", "excerpt") if payload.get(k)})
        out.setdefault(memory.id, {}).setdefault(outcome, entry)
    return {mid: list(kinds.values()) for mid, kinds in out.items()}


# Per database: what the log held (data_version, and this process's own outcome writes) when the
# negative outcomes of each memory were read. A memory hit by every search gathers an automatic
# ``applied`` outcome per search, and reading past them on each hit grew with its use; the answer
# only changes when someone logs an outcome, so it is read again only then.
_NEGATIVES: "weakref.WeakKeyDictionary[Any, tuple[tuple[int, int], dict[str, tuple[str, list]]]]" = \
    weakref.WeakKeyDictionary()
_OWN_OUTCOMES: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()
NEGATIVES_REMEMBERED = 8192


def outcomes_logged(db: Database) -> None:
    """This process logged outcomes (``record_use``): forget the remembered negative outcomes."""
    _OWN_OUTCOMES[db] = _OWN_OUTCOMES.get(db, 0) + 1


def _remembered(db: Database) -> dict[str, tuple[str, list]]:
    stamp = (db.data_version(), _OWN_OUTCOMES.get(db, 0))
    held = _NEGATIVES.get(db)
    if held is None or held[0] != stamp:
        held = _NEGATIVES[db] = (stamp, {})
    return held[1]


def _negative_events(db: Database, ids: list[str], since: datetime) -> list[dict[str, Any]]:
    """The memories' outcome events since a time whose outcome is negative, oldest first.

    Filtered in SQL: a memory searched often gathers one auto ``applied`` outcome per search, and
    reading (and JSON-decoding) all of them made each hit's annotation grow with its use.
    """
    marks = ",".join("?" * len(ids))
    kinds = ",".join("?" * len(NEGATIVE_OUTCOMES))
    rows = db.read(lambda c: c.execute(
        f"SELECT at, session, memory_id, payload FROM events WHERE memory_id IN ({marks}) AND kind = ? "
        f"AND at >= ? AND json_extract(payload, '$.outcome') IN ({kinds}) ORDER BY rowid",
        [*ids, events.OUTCOME, iso(since), *NEGATIVE_OUTCOMES]).fetchall())
    return [{"at": at, "session": s, "memory_id": m, "payload": json.loads(p)} for at, s, m, p in rows]


def _text_changed_at(db: Database, ids: list[str]) -> dict[str, str]:
    """When each memory's text was last replaced (its update events that changed it; one logged
    before the event said so counts as one). ``updated`` answered a complaint, and it moves with a
    scope, link or confidence edit too: re-scoping a contradicted memory hid that it was contradicted."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = db.read(lambda c: c.execute(
        f"SELECT memory_id, at, payload FROM events WHERE kind = ? AND memory_id IN ({marks})",
        [events.UPDATE, *ids]).fetchall())
    out: dict[str, str] = {}
    for mid, at, payload in rows:
        if json.loads(payload).get("text_changed", True):
            out[mid] = max(out.get(mid, ""), at)
    return out


def resolve_depends_on(db: Database, memories: list[Memory]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, int]]:
    """Inline the depends_on targets of memories (in result order) within the per-hit and per-call caps;
    and, per memory, how many of its depends_on links the caps left out (a hit without
    ``depends_on_resolved`` would otherwise read as one without such links)."""
    wanted: list[tuple[str, Any]] = []
    more: dict[str, int] = {}
    for memory in memories:
        links = [link for link in memory.links if link.kind == "depends_on"]
        shown = links[:DEPENDS_PER_HIT][: DEPENDS_PER_CALL - len(wanted)]
        wanted.extend((memory.id, link) for link in shown)
        if len(links) > len(shown):
            more[memory.id] = len(links) - len(shown)
    if not wanted:
        return {}, more
    targets = sorted({link.target for _, link in wanted})
    marks = ",".join("?" * len(targets))
    rows = db.read(lambda c: c.execute(
        f"SELECT id, record, removed_at FROM memories WHERE id IN ({marks})", targets).fetchall())
    from kenning.store.models import Memory

    found = {mid: (Memory.from_record(record, mid), removed) for mid, record, removed in rows}
    replaced = superseded_by(db, [mid for mid, (_, removed) in found.items() if removed is None])
    out: dict[str, list[dict[str, Any]]] = {}
    for source, link in wanted:
        target, removed = found.get(link.target, (None, None))
        entry: dict[str, Any] = {"id": link.target, "link_note": link.note}
        if target is None:
            entry["status"] = "missing"
        else:
            entry.update(scopes=target.scopes, summary=target.summary, status="removed" if removed else "live")
            if link.target in replaced:  # live, but not the current word: what replaced it is
                entry["superseded_by"] = replaced[link.target]
        out.setdefault(source, []).append(entry)
    return out, more


def superseders_first(hits: list[Hit], replaced: dict[str, list[str]]) -> list[Hit]:
    """The hits in rank order, except that a hit's superseders the result holds move up to just above
    it, in their rank order: "The production database moved to pg-prod-2" above "... is hosted on
    pg-prod-1", which shares more of the question's words, and both where the old hit ranked, so an
    unrelated hit ranked between them stays below. A cycle of supersessions keeps its order."""
    rank = {h.id: i for i, h in enumerate(hits)}
    by_id = {h.id: h for h in hits}
    waits = {h.id: sorted((b for b in replaced.get(h.id, ()) if b in rank and b != h.id), key=rank.__getitem__)
             for h in hits}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for b in waits[todo.pop()]:
                if b == goal:
                    return True
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return False

    # a superseder that (through others) the hit supersedes in turn is a cycle: no order to prefer
    waits = {a: [b for b in bs if not reaches(b, a)] for a, bs in waits.items()}
    out: list[Hit] = []
    emitted: set[str] = set()
    for hit in hits:
        stack = [(hit.id, iter(waits[hit.id]))]
        while stack:  # emit a hit after its superseders, depth first (no cycles are left)
            id, pending = stack[-1]
            b = next((b for b in pending if b not in emitted), None)
            if b is not None:
                stack.append((b, iter(waits[b])))
                continue
            stack.pop()
            if id not in emitted:
                emitted.add(id)
                out.append(by_id[id])
    return out


def decisive_top(hits: list[Hit], beyond: Hit | None = None) -> bool:
    """Is the top hit clearly the answer: high relevance, or a decisive lead over the runner-up
    (the second hit, else ``beyond``, the best hit the page left out; a hit alone leads)?"""
    if not hits:
        return False
    top = hits[0]
    second = hits[1] if len(hits) > 1 else beyond
    if top.relevance == "high" or second is None:
        return True
    return top.score > 0 and (top.score - second.score) / top.score >= DECISIVE_LEAD


def annotate(
    db: Database,
    hits: list[Hit],
    memories: dict[str, Memory],
    now: datetime,
    stale_days: int,
    expand_top: bool = False,
    runner_up: Hit | None = None,
) -> None:
    """Fill in each hit's trust fields in place (and the top hit's body when asked and deserved;
    ``runner_up``: the best hit ranked past the page, for a page of one)."""
    cache = None  # one git cache for the call, made when a hit needs the full assessment
    replaced = superseded_by(db, [h.id for h in hits])
    if replaced:
        hits[:] = superseders_first(hits, replaced)
        for hit in hits:
            if hit.id in replaced and hit.relevance == "high":
                hit.relevance = "medium"
    ordered = [memories[h.id] for h in hits]
    negatives = negative_outcomes(db, ordered, now)
    depends, depends_more = resolve_depends_on(db, ordered)
    expand = expand_top and decisive_top(hits, runner_up) and hits[0].id not in replaced
    for position, hit in enumerate(hits):
        memory = memories[hit.id]
        hit.version = version_of(memory)
        expanded = expand and position == 0
        plain = None if expanded else _plain_fields(memory, now, stale_days)
        if plain is not None:
            hit.staleness_verdict, trust = plain
        else:
            from .staleness import DriftCache

            cache = cache or DriftCache()
            assessed = staleness(memory, now, stale_days, cache)
            hit.staleness_verdict = assessed.verdict
            trust = full_detail(assessed) if expanded else assessed.to_hit_fields()
        for key, value in (("superseded_by", replaced.get(hit.id)), ("depends_on_resolved", depends.get(hit.id)),
                           ("depends_on_more", depends_more.get(hit.id)),
                           ("recent_negative_outcomes", negatives.get(hit.id))):
            if value:
                trust[key] = value
        hit.trust = trust
        if expanded:
            hit.content = memories[hit.id].content


def _plain_fields(memory: Memory, now: datetime, stale_days: int) -> tuple[str, dict[str, Any]] | None:
    """The verdict and hit fields of a memory that cites nothing checkable (no origin, claims or
    paths), or None for any other: such a memory's trust depends only on its verification state."""
    if memory.origin is not None or memory.claims or memory.verified_paths or _cites_paths(memory.content):
        return None
    return uncited_hit_fields(memory.last_verified_at, now, stale_days, memory.created)


@functools.lru_cache(maxsize=8192)
def _cites_paths(content: str) -> bool:
    return bool(extract_paths(content))
