"""Modes, fallback and explanation: turns legs' rankings into fused, explained candidates.

The engine knows nothing about storage: the caller hands it leg callables ``run(depth) -> [(key,
score)]`` and a text lookup, and gets back fused candidates with ``matched_leg``, ``relevance``,
``match_terms`` and ``snippet`` filled in.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from . import answer_types, fusion, labels
from .text import match_terms, snippet

LEXICAL_LEGS = ("keyword", "bm25")
VECTOR_LEG = "vector"

LegRun = Callable[[int], list[tuple[int, float]]]


def legs_for_mode(mode: str, vector_available: bool) -> tuple[list[str], bool]:
    """Which legs a mode runs, and whether it is degraded (wanted the vector leg, cannot have it).

    Degraded, semantic and hybrid run the BM25 leg alone: fusing the keyword leg into it by rank
    never helped and cost up to .030 nDCG@10 (SciFact .677 vs .706, npl .428 vs .454; the nine gate
    collections, eval/baselines/README.md "Without the vector leg, hybrid is BM25")."""
    if mode == "keyword":
        return ["keyword"], False
    if mode == "bm25":
        return ["bm25"], False
    if mode in ("semantic", "hybrid"):
        wanted = [VECTOR_LEG] if mode == "semantic" else list(LEXICAL_LEGS) + [VECTOR_LEG]
        return (wanted, False) if vector_available else (["bm25"], True)
    raise ValueError(f"unknown mode {mode!r}")


@dataclass
class Candidate:
    key: int
    score: float
    legs: dict[str, tuple[int, float]]
    matched_leg: str = "lexical"
    relevance: str = "low"
    match_terms: list[str] = field(default_factory=list)
    snippet: str = ""


def rank(
    legs: dict[str, LegRun],
    depth: int,
    limit: int,
    rrf_k: float = fusion.RRF_K,
    weights: dict[str, float] | None = None,
    coverage_of: Callable[[list[int]], tuple[dict[int, float], Collection[int]]] | None = None,
    evidence: dict[str, float] | None = None,
) -> list[Candidate]:
    """Run each leg to ``depth``, fuse, keep ``limit``; a single leg passes through natively.

    With the vector leg in and ``evidence`` settings (alpha, cos_floor, power) plus a
    ``coverage_of`` lookup (each key's coverage, and the keys holding one of several query terms:
    ``bm25.fusion_coverage``), legs are fused on absolute evidence (``fusion.evidence``); otherwise
    by weighted RRF.
    """
    return _ranked(legs, depth, limit, rrf_k, weights, coverage_of, evidence)[0]


def _ranked(
    legs: dict[str, LegRun], depth: int, limit: int, rrf_k: float = fusion.RRF_K,
    weights: dict[str, float] | None = None,
    coverage_of: Callable[[list[int]], tuple[dict[int, float], Collection[int]]] | None = None,
    evidence: dict[str, float] | None = None,
) -> tuple[list[Candidate], list[tuple[int, float]]]:
    """``rank``, and the vector leg's own best-first (key, cosine) list ([] when it did not run)."""
    if len(legs) == 1:  # nothing to fuse: the leg's own top ``limit`` is the answer, so rank no deeper
        (name, run), = legs.items()
        ranking = run(limit)[:limit]
        return ([Candidate(key, score, {name: (r, score)}) for r, (key, score) in enumerate(ranking, 1)],
                ranking if name == VECTOR_LEG else [])
    rankings = {name: run(depth) for name, run in legs.items()}
    if _by_evidence(legs, evidence, coverage_of):
        keys = list(dict.fromkeys(key for ranking in rankings.values() for key, _ in ranking))
        coverage, lone = coverage_of(keys)
        fused = fusion.evidence(rankings, coverage, **evidence, limit=limit, lone=lone)
    else:
        fused = fusion.rrf(rankings, k=rrf_k, weights=weights)
    return [Candidate(f.key, f.score, f.legs) for f in fused[:limit]], rankings.get(VECTOR_LEG, [])


def rank_with_lead(legs: dict[str, LegRun], depth: int, limit: int,
                   **fusing) -> tuple[list[Candidate], float, float]:
    """``rank`` cut to ``limit``, how far its best hit stands ahead of the second whatever the
    limit (``lead``), and how much closer in meaning it is than any other text the vector leg
    found (``cosine_lead``): the labels ask both, so a search for one hit ranks one more, and
    ``limit=1`` labels as ``limit=10`` does."""
    candidates, by_meaning = _ranked(legs, depth, max(limit, 2), **fusing)
    by_rank = len(legs) > 1 and not _by_evidence(legs, fusing.get("evidence"), fusing.get("coverage_of"))
    return candidates[:limit], lead(candidates[:2], by_rank), cosine_lead(candidates[:1], by_meaning)


def _by_evidence(legs: Collection[str], evidence: dict | None, coverage_of: Callable | None) -> bool:
    """Whether ``rank`` fuses several legs on evidence (the vector leg in, with its settings and a
    coverage lookup) rather than by RRF."""
    return evidence is not None and coverage_of is not None and VECTOR_LEG in legs


def lead(top_two: list[Candidate], by_rank: bool = False) -> float:
    """How far the best hit stands ahead of the second, as a share of its score (``labels.lead_of``;
    1.0 without a second). On the fused score, unless the legs were fused by rank (``by_rank``: RRF,
    whose scores put a first and a second hit a rank's share apart whatever their texts hold): then
    on one leg's own scores - the vector leg's cosines when it ran (as semantic mode reads them),
    else BM25's (else the first leg's)."""
    if len(top_two) < 2:
        return 1.0
    best, second = top_two
    if not by_rank:
        return labels.lead_of(best.score, second.score)
    leg = next((name for name in (VECTOR_LEG, "bm25") if name in best.legs), next(iter(best.legs)))
    return labels.lead_of(best.legs[leg][1], second.legs.get(leg, (0, 0.0))[1])


def cosine_lead(best: list[Candidate], by_meaning: list[tuple[int, float]]) -> float:
    """How much closer in meaning the best hit is than any other text: its cosine minus the best
    cosine of another key in the vector leg's best-first list (``by_meaning``); negative when another
    text is closer, 1.0 when the leg found no other, 0.0 without the vector leg or a best hit."""
    if not best or not by_meaning:
        return 0.0
    top = best[0]
    cosine = top.legs.get(VECTOR_LEG, (0, 0.0))[1]
    rival = next((score for key, score in by_meaning if key != top.key), None)
    return 1.0 if rival is None else cosine - rival


def explain(
    candidate: Candidate,
    terms: list[str],
    text: str | None,
    shown: dict[str, str] | None = None,
    top_score: float | None = None,
    vector_ran: bool = False,
    coverage: float = 0.0,
    matched: list[str] | None = None,
    known_coverage: float | None = None,
    lead: float = 1.0,
    text_of: Callable[[int], str] | None = None,
    ceiling: str = "high",
    names_something: bool = False,
    cosine_lead: float = 0.0,
    label_cosine: float | None = None,
    amounts: list[str] | None = None,
) -> Candidate:
    """Fill in which legs matched, which query terms the text contains, its relevance and snippet.

    ``terms`` are query tokens (stems); ``shown`` maps them to the words the query wrote, which is
    what ``match_terms`` reports. ``top_score`` is the best score of this result and
    ``vector_ran`` whether the vector leg took part and ``coverage`` the hit's IDF-weighted share of
    the query terms (see ``labels`` for what a label promises), ``known_coverage`` its share of the
    terms some stored text holds (None: all of them), ``lead`` how far this result's best hit stands
    ahead of its second (``lead``; the label asks it). ``matched``: the terms the text
    contains when the index already told (``lexical.contains``), so the text is not tokenized for
    them; ``text=None`` labels without a snippet (the rank-only path), reading the text with
    ``text_of(key)`` only if the label needs it (a would-be ``high`` that may be a question, ``labels.asks_about``,
    or that lacks words whose values it may hold, ``answer_types``).
    ``ceiling``: the best label this query's hits may get (``labels.ceiling``); ``names_something``:
    the query writes a word as a name (``labels.names_something``); ``cosine_lead``: how much closer
    in meaning the result's best hit is than any other text (``cosine_lead``); ``label_cosine``: the
    question's own cosine with the hit when the leg's score is another (its whole text's when the
    leg ranked it without its leading timestamp, ``stamps``; the question as asked when the leg
    ranked by it moved, ``feedback.moved_query``), which the label reads instead of the leg's score.
    ``amounts``: the query terms asking for an amount (``answer_types.amounts_asked``); a would-be
    ``high`` lacking one of those words must hold a value of its kind.
    """
    lexical = any(leg in candidate.legs for leg in LEXICAL_LEGS)
    vector = VECTOR_LEG in candidate.legs
    candidate.matched_leg = "both" if lexical and vector else "semantic" if vector else "lexical"
    if matched is None:
        matched = match_terms(terms, text or "")
    candidate.match_terms = [shown.get(t, t) for t in matched] if shown else matched
    vector_hit = candidate.legs.get(VECTOR_LEG)
    cosine = vector_hit[1] if vector_hit else (0.0 if vector_ran else None)
    if vector_hit and label_cosine is not None:
        cosine = label_cosine
    share = len(matched) / len(terms) if terms else 0.0
    top = candidate.score if top_score is None else top_score
    # the question check and the value check read the text only for a would-be high, once between them
    read = (lambda: text) if text is not None else functools.cache(lambda: text_of(candidate.key)) if text_of else None
    asks = (lambda: labels.asks_about(matched, read())) if read else None
    answers = (lambda: answer_types.answers_missing([t for t in terms if t not in matched], read())) if read else None
    short = [t for t in amounts or () if t not in matched]
    lacks = (lambda: answer_types.lacks_amount(short, read())) if read and short else None
    candidate.relevance = labels.label(cosine, share, len(terms), candidate.score, top, coverage, known_coverage,
                                       lead, asks, ceiling, names_something, answers, cosine_lead, lacks)
    candidate.snippet = snippet(text, matched) if text is not None else ""
    return candidate
