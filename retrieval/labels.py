"""What a hit's ``relevance`` promises, and the rule that decides it.

- ``high``: the answer is very likely here. With the vector leg: a score within ``NEAR_TOP`` of the
  best hit of this result, and one of
  - cosine >= ``HIGH_COSINE_ALONE``: a paraphrase, close in meaning whatever the words;
  - cosine >= ``HIGH_COSINE`` with at least ``HIGH_COVERAGE`` of the query's IDF-weighted terms,
    or of the terms the store knows when the hit holds at least ``KNOWN_TERMS`` of them: a query
    word no stored text holds ("interval" in "scraping interval of Prometheus") can be matched by
    no hit, so it counts neither way - as in the lexical `high`, two matched words at least;
  - cosine >= ``SEVERAL_COSINE`` with at least ``SEVERAL_TERMS`` distinct query terms and at
    least ``SEVERAL_COVERAGE`` of the IDF weight: a long question (5-10 terms in med, npl,
    SciFact) whose answer holds many of its words but rarely 80 % of their weight;
  - cosine >= ``MANY_COSINE`` with at least ``MANY_TERMS`` distinct query terms, at least
    ``MEDIUM_TERM_SHARE`` of them (so the hit is also ``medium`` on its words, though its cosine
    may sit below ``MEDIUM_COSINE``) and at least ``MANY_COVERAGE`` of the IDF weight: a
    conversational question ("When did Caroline go to the LGBTQ support group?") whose answer
    repeats most of its words, at the modest cosine a chat turn gets. A short question - most of an agent's, and every one of builtin's unanswerable
    ones - never matches four terms, so this branch cannot make its near miss look like an answer.
  Without the vector leg (keyword, bm25, a hybrid without the extra): every distinct query term (at
  least two), that near the top. Coverage and the count of matched terms matter because a question
  about something the store lacks is close in meaning to what is there: "the budget for the Heron
  redesign" finds "The Heron redesign kicks off on 2024-07-01." at cosine .77, with two of three
  terms and 64 % coverage - its missing word is the question.
- ``medium``: related - cosine >= ``MEDIUM_COSINE``, or at least ``MEDIUM_TERM_SHARE`` of the
  distinct query terms. Worth reading, not proof.
- ``low``: weak evidence, most likely not an answer. A result whose hits are all ``low`` is the
  no-match answer: the ranking still shows what came closest, and says it does not answer.

What is promised, measured in hybrid on the development collections with their judgments
(bench/relevance/labelrule2.py to labelrule5.py chose the thresholds leave-one-collection-out;
``kenning eval run`` prints the reliability table; eval/baselines/README.md has the figures): where
the judgments are dense enough to show it (top hit judged relevant >= 70 % of the time: builtin,
med) a ``high`` hit is judged relevant >= 90 % of the time (builtin 100 %, med 97 %); elsewhere its
judged precision is above the collection's share of judged-relevant top hits (npl .65 against .63,
SciFact .62 against .60, LoCoMo .44 against .43), which is all incomplete judgments can show. No
unanswerable question's top hit is ``high`` (builtin's 15; of off-topic queries of one collection
posed to another at most 0.3 %). An answerable question's top hit is ``high`` 52 % (builtin) to
88 % (cranfield) of the time, LoCoMo 59 %. Leg agreement, score margins and the cosine of the
query's unmatched words were measured as signals too and rejected: builtin's near misses have them
as often as its answers. The known-terms coverage is the weakest promise: builtin's Wi-Fi near miss
("what is the Wi-Fi password for the office", the office's guest network at cosine .51) covers
76 % of its known terms, just under the .8 that its answers reach, and a question whose missing
word the store has never seen is judged by the two or more words it has.
What it does not promise: that a long technical question's ``high`` top hit answers that very
question - with med's judged answers taken out of the store, 7 of its 30 questions still get a
``high`` top hit (hits as shipped, bench/relevance/labelfeat4.py; the same before this rule's fourth
branch) that is on the topic but answers a neighbouring question.
The thresholds are per model; only MiniLM's are measured.
"""

from __future__ import annotations

NEAR_TOP = 0.95
KNOWN_TERMS = 2
HIGH_COSINE_ALONE = 0.8
HIGH_COSINE = 0.4
HIGH_COVERAGE = 0.8
SEVERAL_COSINE = 0.55
SEVERAL_TERMS = 3
SEVERAL_COVERAGE = 0.3
MANY_COSINE = 0.35
MANY_TERMS = 4
MANY_COVERAGE = 0.6
MEDIUM_COSINE = 0.4
MEDIUM_TERM_SHARE = 0.5


def label(
    cosine: float | None, term_share: float, distinct_terms: int, score: float, top_score: float, coverage: float = 0.0,
    known_coverage: float | None = None,
) -> str:
    """``high`` / ``medium`` / ``low`` for one hit (``cosine`` None when the vector leg did not run).

    ``term_share`` is the share of the ``distinct_terms`` query terms the hit contains, ``coverage``
    their IDF-weighted share, ``known_coverage`` that share of the terms some stored text holds
    (None: every term is known)."""
    near_top = top_score <= 0 or score >= NEAR_TOP * top_score
    if cosine is not None:
        if near_top and vector_high(cosine, coverage, round(term_share * distinct_terms), term_share, known_coverage):
            return "high"
    elif vectorless_high(term_share, distinct_terms) and near_top:
        return "high"
    if (cosine is not None and cosine >= MEDIUM_COSINE) or term_share >= MEDIUM_TERM_SHARE:
        return "medium"
    return "low"


def vector_high(cosine: float, coverage: float, matched_terms: int, term_share: float = 0.0,
                known_coverage: float | None = None) -> bool:
    known = coverage if known_coverage is None or matched_terms < KNOWN_TERMS else known_coverage
    return (cosine >= HIGH_COSINE_ALONE
            or (cosine >= HIGH_COSINE and max(coverage, known) >= HIGH_COVERAGE)
            or (cosine >= SEVERAL_COSINE and matched_terms >= SEVERAL_TERMS and coverage >= SEVERAL_COVERAGE)
            or (cosine >= MANY_COSINE and matched_terms >= MANY_TERMS and term_share >= MEDIUM_TERM_SHARE
                and coverage >= MANY_COVERAGE))


def vectorless_high(term_share: float, distinct_terms: int) -> bool:
    return term_share >= 1.0 and distinct_terms >= 2


def describe() -> str:
    """The rule in one line, for the eval report's "what ran" (every threshold that shaped a label)."""
    return (f"high: score >= {NEAR_TOP} x best and (cosine >= {HIGH_COSINE_ALONE}, or >= {HIGH_COSINE} with "
            f"coverage >= {HIGH_COVERAGE} (of the known terms when >= {KNOWN_TERMS} match), or >= {SEVERAL_COSINE} with >= {SEVERAL_TERMS} terms and coverage >= "
            f"{SEVERAL_COVERAGE}, or >= {MANY_COSINE} with >= {MANY_TERMS} terms, >= {MEDIUM_TERM_SHARE} of them, and coverage >= {MANY_COVERAGE}); without vectors every term (>= 2); medium: cosine >= {MEDIUM_COSINE} or "
            f">= {MEDIUM_TERM_SHARE} of the terms")
