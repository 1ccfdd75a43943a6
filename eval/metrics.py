"""Relevance metrics from ir-measures (trec_eval semantics through pytrec_eval), not hand-written.

Two choices are made here on purpose:

- nDCG uses exponential gains (``2**grade - 1``), as the reference figures in the shared
  eval-data README do; on binary collections that equals trec_eval's linear gains.
- A query is scored over the answerable set the caller passes in, and one that got no hits
  scores 0 - an empty answer is a miss, never a query silently left out of the mean.

Each measure is evaluated in its own ir-measures call: mixing an ``nDCG(gains=…)`` measure
with a plain ``nDCG`` in one call mislabels their values in ir-measures 0.4.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import ir_measures
from ir_measures import R, RR, Qrel, ScoredDoc, nDCG

METRICS = ("nDCG@10", "R@10", "R@100", "MRR@10")


def within(depth: int) -> tuple[str, ...]:
    """The metrics a ranking ``depth`` hits deep can measure: its R@100 at depth 10 would be R@10."""
    return tuple(name for name in METRICS if int(name.rsplit("@", 1)[1]) <= depth)


def _measures(qrels: Mapping[str, Mapping[str, int]]) -> dict[str, object]:
    grades = {g for judged in qrels.values() for g in judged.values() if g > 0}
    gains = {0: 0, **{g: 2**g - 1 for g in sorted(grades)}}
    return {"nDCG@10": nDCG(gains=gains) @ 10, "R@10": R @ 10, "R@100": R @ 100, "MRR@10": RR @ 10}


def per_query(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[str]],
    query_ids: Iterable[str],
) -> dict[str, dict[str, float]]:
    """``{metric: {query_id: value}}`` for each query in ``query_ids``.

    ``run[query_id]`` is the ranked list of document ids, best first; rank order is kept exactly
    (scores are derived from ranks, so trec_eval's own tie-breaking never reorders a list).
    """
    ids = list(dict.fromkeys(query_ids))
    judged = [Qrel(q, d, max(grade, 0)) for q in ids for d, grade in qrels.get(q, {}).items()]
    scored = []
    for q in ids:
        ranked = list(run.get(q, ()))
        scored.extend(ScoredDoc(q, d, float(len(ranked) - rank)) for rank, d in enumerate(ranked))
    out: dict[str, dict[str, float]] = {}
    for name, measure in _measures(qrels).items():
        values = {m.query_id: m.value for m in ir_measures.iter_calc([measure], judged, scored)}
        out[name] = {q: float(values.get(q, 0.0)) for q in ids}
    return out


def mean(values: Mapping[str, float], query_ids: Iterable[str] | None = None) -> float | None:
    """Mean over ``query_ids`` (all when None); None for an empty set rather than a fake 0."""
    chosen = [values[q] for q in (values if query_ids is None else query_ids)]
    return sum(chosen) / len(chosen) if chosen else None


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[str]],
    query_ids: Iterable[str],
) -> dict[str, float | None]:
    """Mean of every metric in ``METRICS`` over ``query_ids``."""
    table = per_query(qrels, run, query_ids)
    return {name: mean(values) for name, values in table.items()}
