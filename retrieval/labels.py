"""What a hit's ``relevance`` promises, and the rule that decides it.

- ``high``: the answer is very likely here. With the vector leg: a score within ``NEAR_TOP`` of the
  best hit of this result, and either cosine >= ``HIGH_COSINE`` with at least ``HIGH_COVERAGE`` of
  the query's IDF-weighted terms, or cosine >= ``HIGH_COSINE_ALONE`` (a paraphrase). Without it
  (keyword, bm25, a hybrid without the extra): every distinct query term (at least two), that near
  the top. Coverage matters because a question about something the store lacks ("which MongoDB
  version does Kestrel use" when only Kestrel's Postgres is stored) is close in meaning to what is
  there; its rarest word is what is missing.
- ``medium``: related - cosine >= ``MEDIUM_COSINE``, or at least ``MEDIUM_TERM_SHARE`` of the
  distinct query terms. Worth reading, not proof.
- ``low``: weak evidence, most likely not an answer. A result whose hits are all ``low`` is the
  no-match answer: the ranking still shows what came closest, and says it does not answer.

What is promised, measured on the development collections with their judgments
(bench/relevance/labelrule.py chose the thresholds; ``kenning eval run`` prints the reliability
table; eval/baselines/README.md has the figures): on collections whose judgments can show it (top
hit judged relevant >= 70 % of the time: builtin, med) a ``high`` hit is judged relevant >= 90 % of
the time; no unanswerable question's top hit is ``high`` (builtin's 15, and 1,868 queries of one
collection posed to another). What it does not promise: that ``high`` covers half the answerable
questions - a near miss ("the budget for the Heron redesign" against "the Heron redesign kicks off
on 2024-07-01") looks like an answer to every feature the ranking has, so ``high`` stays strict.
The thresholds are per model; only MiniLM's are measured.
"""

from __future__ import annotations

HIGH_COSINE = 0.45
HIGH_COVERAGE = 0.8
HIGH_COSINE_ALONE = 0.8
MEDIUM_COSINE = 0.4
NEAR_TOP = 0.9
MEDIUM_TERM_SHARE = 0.5


def label(
    cosine: float | None, term_share: float, distinct_terms: int, score: float, top_score: float, coverage: float = 0.0
) -> str:
    """``high`` / ``medium`` / ``low`` for one hit (``cosine`` None when the vector leg did not run)."""
    near_top = top_score <= 0 or score >= NEAR_TOP * top_score
    if cosine is not None:
        strong = cosine >= HIGH_COSINE_ALONE or (cosine >= HIGH_COSINE and coverage >= HIGH_COVERAGE)
        if strong and near_top:
            return "high"
    elif vectorless_high(term_share, distinct_terms) and near_top:
        return "high"
    if (cosine is not None and cosine >= MEDIUM_COSINE) or term_share >= MEDIUM_TERM_SHARE:
        return "medium"
    return "low"


def vectorless_high(term_share: float, distinct_terms: int) -> bool:
    return term_share >= 1.0 and distinct_terms >= 2
