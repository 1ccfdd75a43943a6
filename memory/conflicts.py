"""Contradictions between memories: list the pairs; settle one with a supersedes or extends link (nothing removed)."""

from __future__ import annotations

from typing import Any

from kenning.errors import InvalidInput
from kenning.store import records
from kenning.store.models import Link

from . import events, health, reads, requests, writes
from .gates import write_enabled
from .gates.limits import check_count
from .session import Session


def conflicts(s: Session, auto_scope: bool, limit: int) -> list[dict[str, Any]]:
    """Contradiction pairs among visible live memories (one row per pair), with both summaries."""
    limit = check_count(limit)  # 0 or -1 listed nothing while a conflict stood, as health refuses
    pairs = health.conflict_pairs(s.db, s.view(auto_scope))[:limit]
    summaries = records.summaries(s.db, [a for a, _, _ in pairs] + [b for _, b, _ in pairs])
    return [{"id": a, "other_id": b, "note": note, "summary": summaries.get(a, {}).get("summary"),
             "other_summary": summaries.get(b, {}).get("summary")} for a, b, note in pairs]


def resolve(s: Session, id: str, other_id: str, resolution: str, keep_id: str | None,
            note: str | None) -> dict[str, Any]:
    """Settle a contradiction: ``supersede`` (``keep_id`` wins and supersedes the other) or ``keep_both``
    (both hold in their contexts; the pair becomes an ``extends`` link carrying ``note``). The
    contradicts links between them go either way; nothing is removed."""
    note = requests.note(note)
    if resolution not in ("supersede", "keep_both"):
        raise InvalidInput(f"unknown resolution {resolution!r}; choose supersede or keep_both")
    pair = {id, other_id}
    if len(pair) != 2:
        raise InvalidInput("a conflict is between two different memories")
    first, second = reads.get(s, id), reads.get(s, other_id)
    linked = any(link.kind == "contradicts" and link.target in pair for m in (first, second) for link in m.links)
    if not linked:
        raise InvalidInput(f"memories {id} and {other_id} are not in conflict (no contradicts link between them); "
                           "memory_conflicts lists the pairs")
    if resolution == "supersede":
        if keep_id not in pair:
            raise InvalidInput("supersede needs keep_id: the id of the memory that stays true (one of the pair)")
        winner, loser = (first, second) if keep_id == first.id else (second, first)
        kind = "supersedes"
    else:
        if not note:
            raise InvalidInput("keep_both needs a note saying how both can hold (e.g. which context each is for)")
        winner, loser, kind = first, second, "extends"
    write_enabled.require(s.config)
    # one transaction, the pair read again inside it: two resolutions of one pair at once (keep A, keep
    # B) would each be told "resolved" while the later one's links silently replaced the earlier's
    with s.transaction() as c:
        now = {m.id: records.live_row(c, m.id)[1] for m in (winner, loser)}
        if not any(link.kind == "contradicts" and link.target in pair for m in now.values() for link in m.links):
            raise InvalidInput(f"memories {id} and {other_id} are not in conflict any more: another session "
                               "resolved them meanwhile (`kenning show` says how)")
        for memory in (now[winner.id], now[loser.id]):
            links = [link for link in memory.links if not (link.kind == "contradicts" and link.target in pair)]
            if memory.id == winner.id:
                links.append(Link(kind=kind, target=loser.id, note=note))
            writes.apply_update(s, c, memory.id, {"links": [requests.link_dict(link) for link in links]})
        events.log(c, s.clock(), s.session_id, "conflict_resolved", winner.id,
                   {"other": loser.id, "resolution": resolution, "note": note})
    return {"status": "resolved", "resolution": resolution, "id": winner.id, "other_id": loser.id,
            "link": {"type": kind, "source": winner.id, "target_id": loser.id, "note": note}}
