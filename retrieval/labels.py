"""What a hit's ``relevance`` promises, and the rule that decides it.

- ``high``: the answer is very likely here. With the vector leg: cosine >= ``HIGH_COSINE`` and a
  score within ``NEAR_TOP`` of the best hit of this result. Without it (keyword, bm25, a hybrid
  without the extra): the hit holds every distinct query term (at least two) and is that near the top.
- ``medium``: related - cosine >= ``MEDIUM_COSINE``, or at least ``MEDIUM_TERM_SHARE`` of the
  distinct query terms. Worth reading, not proof.
- ``low``: weak evidence, most likely not an answer. A result whose hits are all ``low`` is the
  no-match answer: the ranking still shows what came closest, and says it does not answer.

Measured on the development collections with their judgments (``kenning eval run`` prints the
label reliability table; the README's relevance section has the figures): an off-topic question's
top hit never reached cosine 0.45 with MiniLM (queries of one collection posed to another), while
relevant top hits cluster above 0.55. The thresholds are per model; only MiniLM's are measured.
"""

from __future__ import annotations

HIGH_COSINE = 0.55
MEDIUM_COSINE = 0.4
NEAR_TOP = 0.95
MEDIUM_TERM_SHARE = 0.5


def label(cosine: float | None, term_share: float, distinct_terms: int, score: float, top_score: float) -> str:
    """``high`` / ``medium`` / ``low`` for one hit (``cosine`` None when the vector leg did not rank it)."""
    near_top = top_score <= 0 or score >= NEAR_TOP * top_score
    if cosine is not None:
        if cosine >= HIGH_COSINE and near_top:
            return "high"
    elif vectorless_high(term_share, distinct_terms) and near_top:
        return "high"
    if (cosine is not None and cosine >= MEDIUM_COSINE) or term_share >= MEDIUM_TERM_SHARE:
        return "medium"
    return "low"


def vectorless_high(term_share: float, distinct_terms: int) -> bool:
    return term_share >= 1.0 and distinct_terms >= 2
