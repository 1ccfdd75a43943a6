"""One recall over everything kenning knows: curated memories, the profile tier and past transcripts.

Each tier is ranked by the same engine (legs, fusion, explanation); the merge needs a measure that
means the same in every index, so it uses the hit's *evidence*: the share of the distinct query
terms it literally contains (or, for a hit the vector leg found, its rescaled cosine if higher).
Raw transcript text is discounted by ``TRANSCRIPT_WEIGHT``, and on equal evidence a profile note
comes before a memory before a transcript message: curated ranks above raw. Within a tier the
engine's own order is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kenning.retrieval.text import search_tokens

from . import profile
from .transcripts import index_for

if TYPE_CHECKING:
    from kenning.memory.facade import Store

TRANSCRIPT_WEIGHT = 0.9
TIER_ORDER = {"profile": 0, "memory": 1, "transcript": 2}
ROLES = tuple(TIER_ORDER)


def recall(
    store: "Store",
    query: str,
    limit: int = 8,
    all_projects: bool = False,
    exclude_session: str | None = None,
    roles: tuple[str, ...] = ROLES,
    mode: str | None = None,
) -> dict[str, Any]:
    """Memories, profile notes and transcript messages for ``query``, merged and labelled by ``role``."""
    from kenning.errors import InvalidInput

    unknown = [r for r in roles if r not in TIER_ORDER]
    if unknown or not roles:
        raise InvalidInput(f"unknown role {unknown[0] if unknown else '(none)'}; choose from {', '.join(ROLES)}")
    with store.semantic.one_encoding_per_query():  # up to four searches, one query vector
        return _recall(store, query, limit, all_projects, exclude_session, roles, mode)


def _recall(store: "Store", query: str, limit: int, all_projects: bool, exclude_session: str | None,
            roles: tuple[str, ...], mode: str | None) -> dict[str, Any]:
    terms = list(dict.fromkeys(search_tokens(query)))
    floor = store.config.evidence_cos_floor
    tiers: list[tuple[str, int, dict[str, Any], float]] = []
    legs_run: dict[str, list[str]] = {}
    pending: dict[str, int] = {}
    degraded = None
    profile_hits = profile.search(store, query, limit, mode) if "profile" in roles else []
    profile_ids = {h.id for h in profile_hits}
    for position, hit in enumerate(profile_hits):
        tiers.append(("profile", position, hit.to_dict(), _evidence(hit.match_terms, hit.legs, terms, floor)))
    if "memory" in roles:
        result = store.search(query, mode=mode, limit=limit, auto_scope=not all_projects)
        legs_run["memory"] = result.legs_run
        if result.pending_embeddings is not None:
            pending["memory"] = result.pending_embeddings
        degraded = result.degraded.model_dump(mode="json") if result.degraded else None
        kept = [h for h in result.hits if h.id not in profile_ids and h.category != profile.PROFILE_CATEGORY]
        for position, hit in enumerate(kept):
            tiers.append(("memory", position, hit.to_dict(), _evidence(hit.match_terms, hit.legs, terms, floor)))
    scope = None
    excluded = None
    note = None
    if "transcript" in roles:
        found = index_for(store).search(query, limit=limit, all_projects=all_projects,
                                        exclude_session=exclude_session, mode=mode)
        note = found.note  # messages it could not take in (a read-only store, a full disk)
        legs_run["transcript"] = found.legs_run
        if found.pending_embeddings is not None:
            pending["transcript"] = found.pending_embeddings
        scope, excluded = found.scope, found.excluded_session
        for position, hit in enumerate(found.hits):
            evidence = _evidence(hit.match_terms, hit.legs, terms, floor) * TRANSCRIPT_WEIGHT
            tiers.append(("transcript", position, hit.to_dict(), evidence))
    tiers.sort(key=lambda t: (-round(t[3], 9), TIER_ORDER[t[0]], t[1]))
    hits = []
    for role, _, payload, evidence in tiers[:limit]:
        payload = {"role": role, **{k: v for k, v in payload.items() if k != "role"}, "recall_score": round(evidence, 6)}
        hits.append(payload)
    return {"query": query, "all": all_projects, "scope": scope or ("all" if all_projects else None),
            "excluded_session": excluded, "legs_run": legs_run, "degraded": degraded,
            "pending_embeddings": pending or None, "hits": hits, **({"note": note} if note else {})}


def _evidence(match_terms: list[str], legs: Any, terms: list[str], cos_floor: float) -> float:
    """The share of distinct query terms the text contains, or the vector leg's rescaled cosine if higher."""
    share = len(set(match_terms)) / len(terms) if terms else 0.0
    vector = legs.get("vector") if isinstance(legs, dict) else None
    if vector is not None:
        cosine = vector.score if hasattr(vector, "score") else vector["score"]
        share = max(share, max(0.0, cosine - cos_floor) / max(1e-9, 1.0 - cos_floor))
    return min(1.0, share)
