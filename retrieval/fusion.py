"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009): a pure function, no I/O.

``score(d) = sum over legs of weight_leg / (k + rank_leg(d))`` with 1-based ranks. Ties are broken
by the best single-leg rank, then by document key, so the order is deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection
from dataclasses import dataclass, field

RRF_K = 60.0
# how much of the lexical evidence BM25 decides among texts of equal coverage (evidence fusion);
# chosen leave-one-collection-out on the development sets (eval/baselines/README.md)
BM25_SHARE = 0.5
# the lexical evidence of a text that holds just one of a query's several distinct terms is worth this
# share: one shared word ("presents" for "how should edits be presented to me") is weak evidence of
# an answer, and in a store of short memories it is what buried paraphrased questions' answers,
# which share no word with the question (eval/baselines/README.md, "Eighth pass")
LONE_TERM_WEIGHT = 0.4
# a text holding less than PARTIAL_COVERAGE of the query's IDF weight at a cosine below FAR_COSINE is
# about something else that shares a few of its words: its lexical evidence is scaled by
# (cosine / FAR_COSINE) ** power, as its coverage would be. In a store of short memories such a text
# buried paraphrased answers: "How late can a wheelchair user request help boarding?" found "The user
# takes a week off in late July every year to help Rob's band ..." (two shared words, cosine .29)
# above "Disabled passengers can book assistance in TideDesk up to 24 hours before sailing." (no
# shared word, cosine .48). A text holding most of the query keeps its evidence whatever its cosine,
# as a chat turn naming the people and the thing asked about must (eval/baselines/README.md,
# "Sixteenth pass")
PARTIAL_COVERAGE = 0.7
FAR_COSINE = 0.4


@dataclass
class Fused:
    key: int
    score: float
    legs: dict[str, tuple[int, float]] = field(default_factory=dict)  # leg -> (rank, native score)


def _legs(rankings: dict[str, list[tuple[int, float]]]) -> tuple[dict[int, dict], dict[int, int]]:
    """Every candidate's legs' (rank, native score), and its best single-leg rank (the first
    tie-break of both fusions: a leg lists a key once), in the legs' order."""
    legs_of: dict[int, dict[str, tuple[int, float]]] = {}
    best_rank: dict[int, int] = {}
    for leg, ranking in rankings.items():
        for rank, (key, native) in enumerate(ranking, start=1):
            held = legs_of.get(key)
            if held is None:
                legs_of[key] = {leg: (rank, native)}
                best_rank[key] = rank
            else:
                held[leg] = (rank, native)
                if rank < best_rank[key]:
                    best_rank[key] = rank
    return legs_of, best_rank


def _best(scores: dict[int, float], best_rank: dict[int, int], legs_of: dict[int, dict]) -> list[Fused]:
    """The fused list best first: score desc, then best single-leg rank, then key."""
    keys = sorted(scores, key=lambda key: (-scores[key], best_rank[key], key))
    return [Fused(key, scores[key], legs_of[key]) for key in keys]


def rrf(
    rankings: dict[str, list[tuple[int, float]]],
    k: float = RRF_K,
    weights: dict[str, float] | None = None,
) -> list[Fused]:
    """Fuse best-first (key, native score) lists from several legs into one best-first list."""
    legs_of, best_rank = _legs(rankings)
    scores = dict.fromkeys(legs_of, 0.0)
    for leg, ranking in rankings.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        for rank, (key, _) in enumerate(ranking, start=1):
            scores[key] += weight / (k + rank)
    return _best(scores, best_rank, legs_of)


def evidence(
    rankings: dict[str, list[tuple[int, float]]],
    coverage: dict[int, float],
    alpha: float = 0.78,
    cos_floor: float = 0.1,
    power: float = 3.0,
    bm25_share: float = BM25_SHARE,
    limit: int | None = None,
    lone: Collection[int] = (),
    lone_weight: float = LONE_TERM_WEIGHT,
    partial_coverage: float = PARTIAL_COVERAGE,
    far_cosine: float = FAR_COSINE,
) -> list[Fused]:
    """Fuse on absolute evidence instead of ranks: ``alpha * lexical + (1 - alpha) * cos'``.

    ``coverage`` is each candidate's IDF-weighted share of the query terms it contains (0-1, the
    same for every query, unlike a raw BM25 score); ``lexical = coverage**power * ((1 - bm25_share)
    + bm25_share * bm25 / best bm25 of this query)``: coverage says how much of the query a text
    holds, the BM25 ratio (term frequency, length) which of the texts holding it says it most
    (a text outside BM25's list counts 0 there), times ``lone_weight`` for a key in ``lone`` (a text
    holding one of the query's two or more distinct terms), times ``(cosine / far_cosine) ** power`` for a
    text holding less than ``partial_coverage`` of the query at a cosine below ``far_cosine`` (a few
    shared words in a text about something else; a text the vector leg did not return has no cosine
    to judge by and keeps its evidence). ``cos'`` rescales the vector leg's cosine above
    ``cos_floor`` to 0-1. Both are absolute, so a leg that found nothing convincing for *this* query
    contributes little, where RRF would hand its rank 1 the same credit as a perfect match. That is
    what makes the hybrid at least as good as its better leg on every development set (see the
    eval baselines). Candidates are the union of the legs' lists; ties break as in ``rrf``.
    ``limit`` keeps only the best ``limit`` (the same head the full sort gives, without sorting the rest).
    """
    # each leg's native scores and ranks as dicts (built in C); a candidate's legs are assembled only
    # for what is returned, the rest is scored from these look-ups
    natives = {leg: dict(ranking) for leg, ranking in rankings.items()}
    span = max(1e-9, 1.0 - cos_floor)
    bm25_of, vector_of = natives.get("bm25", {}), natives.get("vector", {})
    best_bm25 = max(bm25_of.values(), default=0.0)
    scores: dict[int, float] = {}
    for native in natives.values():
        for key in native:
            if key in scores:
                continue
            covered = coverage.get(key, 0.0)
            lexical = covered ** power
            if best_bm25 > 0:
                bm25 = bm25_of.get(key)
                lexical *= (1.0 - bm25_share) + bm25_share * (bm25 / best_bm25 if bm25 is not None else 0.0)
            if key in lone:
                lexical *= lone_weight
            vector = vector_of.get(key)
            if vector is not None and covered < partial_coverage and vector < far_cosine:
                lexical *= (max(0.0, vector) / far_cosine) ** power
            semantic = max(0.0, vector - cos_floor) / span if vector is not None else 0.0
            scores[key] = alpha * lexical + (1.0 - alpha) * semantic
    keys = list(scores)
    if limit is not None and 0 < limit < len(keys):  # only what reaches the limit-th best score is ordered
        cut = heapq.nlargest(limit, scores.values())[-1]
        keys = [key for key, score in scores.items() if score >= cut]
    ranks = {leg: {key: rank for rank, (key, _) in enumerate(ranking, start=1)} for leg, ranking in rankings.items()}
    best_rank = {key: min(held[key] for held in ranks.values() if key in held) for key in keys}
    keys.sort(key=lambda key: (-scores[key], best_rank[key], key))
    return [Fused(key, scores[key], {leg: (ranks[leg][key], natives[leg][key]) for leg in rankings if key in ranks[leg]})
            for key in keys[:limit]]
