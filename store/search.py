"""Search: filters (scopes, category, what the caller may see) -> legs -> fusion -> explained hits."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from kenning.errors import InvalidInput
from kenning.retrieval import bm25, engine, keyword
from kenning.retrieval.text import query_terms

from .gates.limits import check_scopes
from .models import MODES, Degraded, Hit, LegScore, Memory, SearchResult
from .scopes import View

if TYPE_CHECKING:
    from .store import Store


def run(
    store: "Store",
    query: str,
    mode: str,
    depth: int,
    scopes: Iterable[str] | None,
    category: str | None,
    view: View | None = None,
) -> tuple[SearchResult, dict[str, Memory]]:
    """Rank and explain; returns the result and the hits' memories (for trust annotation)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the query is empty; give words a matching memory would contain")
    if mode not in MODES:
        raise InvalidInput(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if scopes is not None and not isinstance(scopes, str) and not list(scopes):
        scopes = None
    scopes = check_scopes(scopes) if scopes else None
    if category is not None and category not in ("fact", "user-inference", "ambient"):
        raise InvalidInput(f"unknown category {category!r}; choose fact, user-inference or ambient")

    config = store.config
    vector = store_vector_leg(store) if mode in ("semantic", "hybrid") else None
    leg_names, degraded = engine.legs_for_mode(mode, vector is not None)
    terms = query_terms(query)
    lexicon = store.lexicon.refresh()
    allowed = _allowed_mask(store, lexicon, scopes, category, view)
    now = store.clock().timestamp()

    runs: dict[str, engine.LegRun] = {}
    if "keyword" in leg_names:
        runs["keyword"] = lambda n: keyword.search(
            lexicon, terms, n, allowed, phrase=query, text_of=lambda keys: _texts(store, keys), now=now)
    if "bm25" in leg_names:
        runs["bm25"] = lambda n: bm25.search(lexicon, terms, n, allowed, k1=config.bm25_k1, b=config.bm25_b)
    if "vector" in leg_names:
        runs["vector"] = lambda n: vector(query, n, None if allowed is None else np.unique(lexicon.doc_key[allowed]))

    depth_per_leg = max(depth, config.leg_depth)
    evidence = None
    if config.fusion == "evidence":
        evidence = {"alpha": config.evidence_alpha, "cos_floor": config.evidence_cos_floor,
                    "power": config.evidence_power}
    candidates = engine.rank(
        runs, depth_per_leg, depth, rrf_k=config.rrf_k, weights=config.weights, evidence=evidence,
        coverage_of=lambda keys: bm25.idf_coverage(lexicon, terms, keys))
    memories = _memories(store, [c.key for c in candidates])
    hits, by_id = [], {}
    for cand in candidates:
        memory = memories[cand.key]
        by_id[memory.id] = memory
        engine.explain(cand, terms, memory.content)
        hits.append(Hit(
            id=memory.id, score=round(cand.score, 6), matched_leg=cand.matched_leg, relevance=cand.relevance,
            match_terms=cand.match_terms, snippet=cand.snippet,
            legs={leg: LegScore(rank=r, score=round(s, 6)) for leg, (r, s) in cand.legs.items()},
            scopes=memory.scopes, category=memory.category, confidence=memory.confidence,
            created=memory.created, updated=memory.updated,
        ))
    return SearchResult(
        query=query, mode=mode, legs_run=list(runs),
        degraded=_degraded_note(store) if degraded else None, hits=hits,
    ), by_id


def store_vector_leg(store: "Store"):
    """The vector leg for this store, or None while the embeddings extra cannot run."""
    if not store.semantic.availability().working:
        return None
    return lambda query, n, allowed_keys: store.semantic.search(query, n, allowed_keys)


def _degraded_note(store: "Store") -> Degraded:
    from kenning.retrieval.embeddings import degraded_note

    return Degraded.model_validate(degraded_note(store.semantic.availability()))


def _allowed_mask(
    store: "Store", lexicon, scopes: list[str] | None, category: str | None, view: View | None
) -> np.ndarray | None:
    """Which index entries a search may return (a mask over lexids), or None when nothing restricts it.

    Filters that keep few memories (scopes, category, updated after a time) are read as the keys
    they keep; what the view hides (other repositories, disabled scopes) is read as the keys it
    hides, so the common case costs an index probe, not a scan of the store.
    """
    allowed = None
    updated_after = view.updated_after if view is not None else None
    if scopes or category or updated_after is not None:
        where, params = store._filter_sql(scopes, category)
        if updated_after is not None:
            where, params = where + " AND m.updated > ?", params + [updated_after]
        rows = store.db.read(lambda c: c.execute(
            f"SELECT m.rowid FROM memories m WHERE removed_at IS NULL {where}", params).fetchall())
        allowed = np.isin(lexicon.doc_key, np.array([r[0] for r in rows], dtype=np.int64)) & lexicon.live
    hidden = view.hidden_keys(store.db) if view is not None else []
    if hidden:
        visible = ~np.isin(lexicon.doc_key, np.array(hidden, dtype=np.int64))
        allowed = (lexicon.live if allowed is None else allowed) & visible
    return allowed


def _texts(store: "Store", keys: list[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        out.update(store.db.read(lambda c: c.execute(
            f"SELECT rowid, content FROM memories WHERE rowid IN ({marks})", chunk).fetchall()))
    return out


def _memories(store: "Store", keys: list[int]) -> dict[int, Memory]:
    out: dict[int, Memory] = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        rows = store.db.read(lambda c: c.execute(
            f"SELECT rowid, record FROM memories WHERE rowid IN ({marks})", chunk).fetchall())
        out.update((r, Memory.model_validate_json(rec)) for r, rec in rows)
    return out
