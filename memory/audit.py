"""Silent-miss audit: did this turn need a memory that the model never looked up?

A client's end-of-turn hook calls ``audit_turn`` with the user's message (and, optionally, the
reply). It runs the probe search ``memory_search`` would have run - same defaults, auto-scoped
to the caller's repository, session-disabled scopes honoured - without logging it as a
retrieval, so the audit never counts as the lookup it is checking for. Then it asks the event
log whether this session searched, showed or listed anything within the lookback window:

- ``no_signal``: no probe hit has high relevance; nothing suggests a memory was needed;
- ``ok``: a high-relevance memory exists and the session did look something up;
- ``miss``: a high-relevance memory exists and the session looked nothing up.

Every audit is logged as ``turn_audited``; a miss also as ``search_miss`` against the top
high-relevance memory, which the scope overview counts as silent misses.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kenning.errors import InvalidInput

if TYPE_CHECKING:
    from .facade import Store

DEFAULT_LOOKBACK_SECONDS = 60
MAX_LOOKBACK_SECONDS = 24 * 3600
RETRIEVAL_KINDS = ("search", "show", "list")
PROBE_DEPTH = 5  # memory_search's default max_results
REPORTED_HITS = 3
QUERY_CHARS_LOGGED = 200
_RELEVANCE_ORDER = {"high": 0, "medium": 1, "low": 2}
_HIT_FIELDS = ("id", "score", "relevance", "matched_leg", "match_terms", "feedback_terms", "snippet", "scopes",
               "staleness_verdict")


def audit_turn(
    store: "Store",
    user_message: str,
    assistant_response: str | None = None,
    lookback_seconds: int = DEFAULT_LOOKBACK_SECONDS,
    mode: str | None = None,
) -> dict[str, Any]:
    """Probe, compare with this session's recent retrievals, log, and return the report.

    The reply, when given, is probed too: a memory the reply's own wording points at is as much a
    candidate as one the user's message points at. Each reported hit names the ``probe`` that
    found it.
    """
    if not isinstance(user_message, str) or not user_message.strip():
        raise InvalidInput("user_message is empty; pass the text of the user's turn")
    if assistant_response is not None and not isinstance(assistant_response, str):
        raise InvalidInput("assistant_response must be text")
    if (not isinstance(lookback_seconds, int) or isinstance(lookback_seconds, bool)
            or not 1 <= lookback_seconds <= MAX_LOOKBACK_SECONDS):
        raise InvalidInput(f"lookback_seconds must be between 1 and {MAX_LOOKBACK_SECONDS}, got {lookback_seconds!r}")

    since = store.clock() - timedelta(seconds=lookback_seconds)
    retrievals = store.events(session=store.session_id, since=since, kinds=list(RETRIEVAL_KINDS))
    probes = [("user_message", user_message)]
    if assistant_response and assistant_response.strip():
        probes.append(("assistant_response", assistant_response))
    hits = _merged([_probe(store, text, name, mode) for name, text in probes])
    high = [h for h in hits if h["relevance"] == "high"]

    if not high:
        verdict, reason = "no_signal", "no stored memory matches this turn with high relevance"
    elif retrievals:
        verdict, reason = "ok", f"{len(retrievals)} search/show/list event(s) in this session within {lookback_seconds}s"
    else:
        verdict, reason = "miss", (f"memory {high[0]['id']} matches this turn with high relevance, but this session "
                                   f"did not search, show or list within {lookback_seconds}s")
    top = high[0]["id"] if high else None
    payload = {"verdict": verdict, "query": user_message[:QUERY_CHARS_LOGGED], "lookback_seconds": lookback_seconds,
               "hit_ids": [h["id"] for h in hits[:REPORTED_HITS]]}
    store.log_event("turn_audited", memory_id=top, payload=payload)
    if verdict == "miss":
        store.log_event("search_miss", memory_id=top, payload=payload)
    settled = store.settle_uses()  # the turn is over: this session's search hits settle as applied
    return {"auto_applied": settled, "verdict": verdict, "reason": reason, "session_id": store.session_id,
            "lookback_seconds": lookback_seconds, "retrieval_events": len(retrievals),
            "hits": hits[:REPORTED_HITS]}


def _probe(store: "Store", text: str, name: str, mode: str | None) -> list[dict[str, Any]]:
    result = store.search(text, mode=mode, limit=PROBE_DEPTH, auto_scope=True, record=False).to_dict()
    return [{**{k: h[k] for k in _HIT_FIELDS if k in h}, "probe": name} for h in result["hits"]]


def _merged(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One entry per memory (the stronger sighting), strongest first: relevance, then fused score."""
    best: dict[str, dict[str, Any]] = {}
    for hits in runs:
        for hit in hits:
            seen = best.get(hit["id"])
            if seen is None or _strength(hit) < _strength(seen):
                best[hit["id"]] = hit
    return sorted(best.values(), key=_strength)


def _strength(hit: dict[str, Any]) -> tuple:
    return (_RELEVANCE_ORDER[hit["relevance"]], -hit["score"], hit["id"])
