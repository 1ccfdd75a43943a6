"""What a hit's ``relevance`` promises, and the rule that decides it.

- ``high``: the answer is very likely here. Only the best hit of a result can be ``high``: a hit
  the best one leads is not what stands out, and a question with two answers close together gets
  two candidates (``medium``), not an answer. With the vector leg, one of
  - cosine >= ``HIGH_COSINE_ALONE``: a paraphrase, close in meaning whatever the words;
  - cosine >= ``HIGH_COSINE`` with at least ``HIGH_COVERAGE`` of the query's IDF-weighted terms,
    or of the terms the store knows when the hit holds at least ``KNOWN_TERMS`` of them: a query
    word no stored text holds ("interval" in "scraping interval of Prometheus") can be matched by
    no hit, so it counts neither way - as in the lexical `high`, two matched words at least - unless
    it asks for a quantity (``answer_types.asks_quantity``: "Waypoint OSRM width" is not answered
    by the OSRM memory that gives none);
  - cosine >= ``SEVERAL_COSINE`` with at least ``SEVERAL_TERMS`` distinct query terms and at
    least ``SEVERAL_COVERAGE`` of the IDF weight: a long question (5-10 terms in med, npl,
    SciFact) whose answer holds many of its words but rarely 80 % of their weight;
  - cosine >= ``MANY_COSINE`` with at least ``MANY_TERMS`` distinct query terms, at least
    ``MEDIUM_TERM_SHARE`` of them (so the hit is also ``medium`` on its words, though its cosine
    may sit below ``MEDIUM_COSINE``) and at least ``MANY_COVERAGE`` of the IDF weight: a
    conversational question ("When did Caroline go to the LGBTQ support group?") whose answer
    repeats most of its words, at the modest cosine a chat turn gets. A short question - most of an agent's, and every one of builtin's unanswerable
    ones - never matches four terms, so this branch cannot make its near miss look like an answer.
  and, on top of one of those, the hit must stand out (``stands_out``): cosine >= ``LEAD_COSINE``
  and not tied with the second (a lead of ``TIE``), or this result's best hit leads its second by
  at least ``LEAD`` of its fused score (``lead_of``);
  for a query of ``LONG_QUERY_TERMS`` distinct terms or more, a lead of at least ``LONG_LEAD``
  whatever the cosine. A long, verbose question (cranfield's, npl's, SciFact's) holds words of
  many texts, so several hits look like its answer and the best is judged relevant a third to
  two thirds of the time; the labels cannot tell which, so they promise none unless one is far
  ahead. Two memories answering a short question equally well are two candidates, not an answer.
  Two more kinds of hit are ``high`` without that test (the best hit all the same):
  - one holding every distinct query term (two or more) at cosine >= ``EVERY_TERM_COSINE`` that
    leads the second by ``EVERY_TERM_LEAD`` (``every_term_high``), whatever the query's length;
  - one sharing no word with a short query (fewer than ``LONG_QUERY_TERMS`` terms) at cosine >=
    ``PARAPHRASE_COSINE`` (``paraphrase_high``), unless the query writes a word as a name
    (``names_something``); or, whatever the query's length, at cosine >= ``CLEAR_PARAPHRASE_COSINE``
    when it is at least ``CLEAR_COSINE_LEAD`` closer in meaning than every other text
    (``engine.cosine_lead``).
  - one holding some of a short query's words and, for each word it lacks, a value of the kind that
    word asks for (``typed_high``, ``answer_types``: "Kestrel Airflow version" -> "Kestrel runs on
    Apache Airflow 2.8.1."), at cosine >= ``TYPED_COSINE`` and not tied with the second (``TIE``).
  Whatever made it ``high``, a hit lacking a query word that asks for an amount (a sum of money or
  a quantity: "budget", "capacity", "population") must hold a value of that kind
  (``answer_types.amounts_asked``): "The Heron redesign started on 3 February" is close enough in
  meaning to "the budget for the Heron redesign" (cosine .86) to pass ``HIGH_COSINE_ALONE``, and it
  states no sum. Not for a question opening with "when", "where", "who" or "why", which asks another
  kind ("when did clients pay two times by mistake"). Measured: no top hit of a development set
  changed its label (hybrid, builtin 64.6 %, memval 51.7 %, memval2 38.8 %, memval3 53.6 % `high`).
  And the hit must not ask about the query (``asks_about``): a sentence of it holding a query word
  that is a question. In a conversation the turn that repeats a question ("What made you choose
  that shade?") shares its words and leads the turn that answers it; a question is not an answer.
  Without the vector leg (keyword, bm25, a hybrid without the extra): every distinct query term (at
  least two), or some of them and the values the rest ask for (``typed_high``), in a hit that does
  not ask about them and leads the second by ``LEXICAL_LEAD`` of its BM25 score (``engine.lead``):
  in a chat several turns hold every word of "When did Caroline go to the LGBTQ support group?",
  and the first of them was judged relevant half the time (LoCoMo, bm25
  .55, keyword .50); standing out, 87 % and 84 % (eval/baselines/README.md, "Fifteenth pass"). Coverage and the count of
  matched terms matter because a question about something the store lacks is close in meaning to
  what is there: "the budget for the Heron
  redesign" finds "The Heron redesign kicks off on 2024-07-01." at cosine .77, with two of three
  terms and 64 % coverage - its missing word is the question, and the date it holds is no sum of
  money (``typed_high``).
- ``medium``: related - cosine >= ``MEDIUM_COSINE``, or at least ``MEDIUM_TERM_SHARE`` of the
  distinct query terms. Worth reading, not proof.
- ``low``: weak evidence, most likely not an answer. A result whose hits are all ``low`` is the
  no-match answer: the ranking still shows what came closest, and says it does not answer.
- Whatever the evidence, a query caps its hits (``ceiling``): at ``medium`` when a word of it no
  stored text holds is written as a name or an identifier ("Yuki Tanaka" against a store that knows
  only Yuki Brandt: the question is about someone the store has never heard of; "speech-to-text",
  joined through a stopword, is English; a word naming the attribute asked, "URL", is no name), and
  at ``low`` when it is stopwords alone. A query
  written all in lower case gives that cap nothing to read ("yuki tanaka parental leave dates"
  passes it): measured, not solved (eval/baselines/README.md, "Fifteenth pass").

What is promised, measured in hybrid on the development collections with their judgments
(bench/relevance/labelrule2.py to labelrule9.py chose the thresholds, leave-one-collection-out;
``kenning eval run`` prints the reliability table; eval/baselines/README.md, "Seventh pass",
"Fourteenth pass", "Sixteenth pass", "Twenty-first pass" and "Twenty-second pass", has the figures): a ``high`` hit is judged relevant >= 90 %
of the time on every one - builtin, memval, med, npl, SciFact and cranfield (two hits in 225
questions) 100 %, memval2 and memval3 97 %, LoCoMo 91 %. No unanswerable question's top hit is
``high`` (builtin's 15, memval's 60, memval2's 45, memval3's 20; none of 3,415 off-topic queries of
one collection posed to another), and with a question's judged answers taken out of the store its
top hit is ``high`` at most 7 % of the time (memval, whose planted near misses sometimes still
answer; memval3 4.3 %, LoCoMo 1.4 %, memval2 1.2 %, builtin 0 %). An answerable question's top hit
is ``high`` 65 % of the time on builtin, 52 % on memval and 54 % on memval3 (short agent memories,
the shape this label is for; memval3 is written in the held-out set's shape), 39 % on memval2
(written blind after the rule, it asks more paraphrases), and rarely on the document collections:
LoCoMo 8 %, med 7 %, SciFact 3.5 %, npl 1 %, cranfield 1 % (eval/baselines/README.md, "Twenty-first
pass"). Where the top hit
is right less than half the time (cranfield 32 %, LoCoMo 43 %) no rule can make half of them
``high`` and keep 90 % of its ``high`` hits right.
Their questions are long or their right answers do not stand out, and ``medium`` - worth reading,
not proof - is what the evidence supports there.
What it does not promise: a question with two good answers in the store gets ``medium`` on both
(med's ten best hits are usually all right and close together: its top hits are right 93 % of the
time and ``high`` 7 %). The rule was chosen in hybrid, the default; in semantic mode a hit's score is
its cosine, so leads are small and a short question's ``high`` mostly needs cosine ``LEAD_COSINE``
without a tie, a paraphrase, every word or the value asked for (builtin's top hits 42 % ``high``,
memval's 32 %, judged relevant 100 %; memval3's 30 %, 95 %; memval2's 28 %, 92 %: an old version's
memory at cosine .87, "Fetchline ran Airflow 2.5.3 until the January 2025 upgrade", for which version runs now; none on
LoCoMo, whose chat turns tie).
The thresholds are per model; only MiniLM's are measured.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from . import answer_types
from .text import match_terms, only_stopwords, search_tokens, written_as_names

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
LEAD_COSINE = 0.75
TIE = 0.02
LEAD = 0.65
LONG_QUERY_TERMS = 6
LONG_LEAD = 0.85
MEDIUM_TERM_SHARE = 0.5
EVERY_TERM_COSINE = 0.7
EVERY_TERM_LEAD = 0.5
PARAPHRASE_COSINE = 0.45
CLEAR_PARAPHRASE_COSINE = 0.4
CLEAR_COSINE_LEAD = 0.06
TYPED_COSINE = 0.5
LEXICAL_LEAD = 0.3


_RANK = {"low": 0, "medium": 1, "high": 2}
_JOINED = "- / @ :"


def ceiling(query: str, unknown: Iterable[str] = ()) -> str:
    """The best label any hit of this query may get, from the query and the terms of it no stored
    text holds (``unknown``, after respelling).

    A query of stopwords alone ("the", "what is it") names nothing, so a hit holding its words is
    evidence of nothing: ``low``. An unknown term the query writes as a name or an identifier
    (``text.written_as_names``: "Tanaka" in "Yuki Tanaka parental leave dates", "bramble-infra")
    is most likely what the question is about, and the store has never heard of it: the hit that
    holds the rest ("Yuki Brandt is on parental leave ...") is a near miss, at most ``medium``. A
    lowercase word the store lacks ("interval" in "scraping interval of Prometheus") is more often
    the question's own wording, which the known-term coverage lets pass; so is a word naming the
    attribute asked (``answer_types``), however it is written: "URL" in "Halden ClaimLink sandbox
    URL" asks for an address, which the answer holds without the word."""
    if only_stopwords(query):
        return "low"
    unknown = [term for term in unknown if answer_types.kind_of(term) is None]
    return "medium" if written_as_names(query, unknown) else "high"


def label(
    cosine: float | None, term_share: float, distinct_terms: int, score: float, top_score: float, coverage: float = 0.0,
    known_coverage: float | None = None, lead: float = 1.0, asks: Callable[[], bool] | None = None,
    ceiling: str = "high", names_something: bool = False, answers_missing: Callable[[], bool] | None = None,
    cosine_lead: float = 0.0, lacks_amount: Callable[[], bool] | None = None,
) -> str:
    """``high`` / ``medium`` / ``low`` for one hit, no better than ``ceiling`` (``labels.ceiling``);
    ``names_something``: the query writes a word as a name or an identifier (``names_something``);
    ``answers_missing``: whether the hit holds the kind of value each query term it lacks asks for
    (``typed_high``), read only when nothing else makes the hit ``high``; ``cosine_lead``: how much
    closer in meaning the result's best hit is than any other text (``engine.cosine_lead``);
    ``lacks_amount``: whether the hit lacks a value for an amount the query asks and the hit does not
    name (``answer_types.lacks_amount``), read only for a would-be ``high``, which it vetoes."""
    got = _label(cosine, term_share, distinct_terms, score, top_score, coverage, known_coverage, lead, asks,
                 ceiling == "high", names_something, answers_missing, cosine_lead, lacks_amount)
    return got if _RANK[got] <= _RANK[ceiling] else ceiling


def _label(
    cosine: float | None, term_share: float, distinct_terms: int, score: float, top_score: float, coverage: float,
    known_coverage: float | None, lead: float, asks: Callable[[], bool] | None, may_be_high: bool,
    names_something: bool = False, answers_missing: Callable[[], bool] | None = None, cosine_lead: float = 0.0,
    lacks_amount: Callable[[], bool] | None = None,
) -> str:
    """``high`` / ``medium`` / ``low`` for one hit (``cosine`` None when the vector leg did not run).

    ``term_share`` is the share of the ``distinct_terms`` query terms the hit contains, ``coverage``
    their IDF-weighted share, ``known_coverage`` that share of the terms some stored text holds
    (None: every term is known); ``lead`` is how far this result's best hit stands ahead of its
    second (``lead_of``; 1.0 when it has no second). ``asks`` tells whether the hit asks about the
    query's words (``asks_about``); it is called only when everything else says ``high`` and
    ``may_be_high`` (the query's ceiling) allows it, so the rank-only path reads the text of the best
    hit at most; so is ``answers_missing`` (whether the hit holds a value of the kind each query term
    it lacks asks for, ``answer_types.answers_missing``), and only when nothing else makes it ``high``."""
    best = top_score <= 0 or score >= top_score
    if cosine is not None:
        evidence = ((vector_high(cosine, coverage, round(term_share * distinct_terms), term_share, known_coverage)
                     and stands_out(cosine, lead, distinct_terms))
                    or every_term_high(cosine, term_share, distinct_terms, lead)
                    or paraphrase_high(cosine, term_share, distinct_terms, names_something, cosine_lead))
    else:
        evidence = vectorless_high(term_share, distinct_terms) and lead >= LEXICAL_LEAD
    if (may_be_high and best and (evidence or typed_high(cosine, term_share, distinct_terms, lead, answers_missing))
            and not (asks is not None and asks()) and not (lacks_amount is not None and lacks_amount())):
        return "high"
    if (cosine is not None and cosine >= MEDIUM_COSINE) or term_share >= MEDIUM_TERM_SHARE:
        return "medium"
    return "low"


# a sentence ends at . ! ? and a space, or at the marks of CJK (full stop, full-width ! and ?), which
# no space follows, and Arabic's question mark
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？؟])\s*")
_QUESTION_MARKS = ("?", "？", "؟")


def asks_about(terms: Iterable[str], text: str) -> bool:
    """Whether the hit asks about the query: one of its sentences holding a query term is a question.
    In a conversation the turn that repeats a question ("Wow, your new hair color looks amazing! What
    made you choose that shade?") shares its words and often leads the turn that answers it; a
    question is not an answer, so it is never ``high``."""
    terms = list(terms)
    return any(mark in text for mark in _QUESTION_MARKS) and any(sentence.rstrip().endswith(_QUESTION_MARKS)
                                                                 and match_terms(terms, sentence)
                                                                 for sentence in _SENTENCE_END.split(text.strip()))


def lead_of(top_score: float, runner_up: float | None) -> float:
    """How far the best hit stands ahead of the second, as a share of its own score (0-1); 1.0
    when there is no second hit or the best scores nothing."""
    if runner_up is None or top_score <= 0:
        return 1.0
    return max(0.0, (top_score - runner_up) / top_score)


def stands_out(cosine: float, lead: float, distinct_terms: int) -> bool:
    """The second half of the vector ``high``: the hit is close in meaning (``LEAD_COSINE``) and not
    tied with the second (a lead of ``TIE`` at least), or the result's best hit leads its second by
    ``LEAD`` - and a long query (``LONG_QUERY_TERMS`` distinct terms or more) needs the larger
    ``LONG_LEAD`` whatever the cosine. The tie matters in semantic mode, where a hit's score is its
    cosine: eight of a chat's "Bye Nate!" turns at cosine .76-.80 within 1 % of each other were all
    ``high`` for "What did Nate do for Joanna on 25 May, 2022?" (eval/baselines/README.md, "Fifteenth pass")."""
    if distinct_terms >= LONG_QUERY_TERMS:
        return lead >= LONG_LEAD
    return (cosine >= LEAD_COSINE and lead >= TIE) or lead >= LEAD


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


def every_term_high(cosine: float, term_share: float, distinct_terms: int, lead: float) -> bool:
    """A hit holding every distinct query term (two or more), close in meaning and well ahead of the
    second: a keyword question ("Halvard Utilities rate limit on kestrel-api") answered word for word.
    It is held neither to the long query's lead nor to the coverage branches' standing-out test: the
    near misses they guard against lack a word of the question ("Chime staging port" against the
    production port), and those holding them all sit lower ("Argo CD version" -> a rollback memory
    naming Argo CD and a version placeholder, cosine .54; LoCoMo's questions with their answers taken
    out, .67 at most with such a lead)."""
    return vectorless_high(term_share, distinct_terms) and cosine >= EVERY_TERM_COSINE and lead >= EVERY_TERM_LEAD


def paraphrase_high(cosine: float, term_share: float, distinct_terms: int, names_something: bool,
                    cosine_lead: float = 0.0) -> bool:
    """A hit sharing no word with the question yet close in meaning: a paraphrase ("Who can't drink
    cow's milk?" -> "The user is lactose intolerant ..."). Its cosine comes from meaning alone, where
    a near miss's is raised by the names it shares with the question ("Yuki Tanaka parental leave"
    -> Yuki Brandt's leave), so a lower cosine proves more here. Not when the question names
    something (``names_something``): a hit holding none of its words lacks that name and is about
    something else ("what did Diego decide about the iOS widget" -> another person's onboarding
    screens, cosine .49; "Terraform annual budget" -> "AWS spend is reviewed monthly ...", .09 closer
    than any other text). Then either
    - cosine >= ``PARAPHRASE_COSINE`` for a short question (under ``LONG_QUERY_TERMS`` terms): a long
      question whose words no hit holds is answered by a topic, not a paraphrase (npl's "mechanisms
      whereby transmission at high frequencies is affected by weather" -> interference in the very
      long wave range, .45); or
    - cosine >= ``CLEAR_PARAPHRASE_COSINE``, whatever the length, when the hit is at least
      ``CLEAR_COSINE_LEAD`` closer in meaning than any other text (``cosine_lead``): one text
      clearly closest ("deadline for getting reimbursed for money I spent on work trips?" ->
      "Expense claims ... must be filed within 60 days.", .51, .08 ahead). A paraphrased question's
      wrong best hit sits among others nearly as close ("When do we get warned automatically that a
      boat has strayed off course?" -> a mooring-rope report, .51, .03 ahead; eval/baselines/README.md,
      "Twenty-first pass")."""
    if term_share != 0 or distinct_terms < 1 or names_something:
        return False
    return ((distinct_terms < LONG_QUERY_TERMS and cosine >= PARAPHRASE_COSINE)
            or (cosine >= CLEAR_PARAPHRASE_COSINE and cosine_lead >= CLEAR_COSINE_LEAD))


def typed_high(cosine: float | None, term_share: float, distinct_terms: int, lead: float,
               answers_missing: Callable[[], bool] | None) -> bool:
    """A hit holding some of a short question's words and, for each word it lacks, a value of the
    kind that word asks for (``answer_types``): "Kestrel Airflow version" -> "Kestrel runs on Apache
    Airflow 2.8.1." (cosine .77), "lisbon holiday dates" -> "Family holiday in Lisbon booked for
    18-25 October 2025". The standing-out test is not asked beyond a tie (``TIE``): an agent's
    memories name the same thing often ("Kestrel backfills run with airflow dags backfill ..."), so
    the answer's fused lead is small, and what tells it from its neighbours is the value it holds.
    The near miss of a question about an attribute the store lacks holds the thing's words and not
    the value ("the budget for the Heron redesign" -> "The Heron redesign kicks off on
    2024-07-01.": no sum of money), and a missing word that names no attribute ("staging", a name)
    is not answered this way. Without the vector leg (``cosine`` None) the hit must stand out as the
    lexical ``high`` must (``LEXICAL_LEAD``)."""
    close = lead >= LEXICAL_LEAD if cosine is None else cosine >= TYPED_COSINE and lead >= TIE
    return (0 < term_share < 1 and distinct_terms < LONG_QUERY_TERMS and close
            and answers_missing is not None and answers_missing())


def names_something(query: str, tokens: Iterable[str] | None = None) -> bool:
    """Whether the query writes a word as a name or an identifier (``text.written_as_names``: a
    capital letter or a digit, or joined by ``- / @ :``), known to the store or not; ``tokens``: the
    query's ``search_tokens`` as written (before any respelling), when the caller has them."""
    return bool(written_as_names(query, search_tokens(query) if tokens is None else tokens))


def describe() -> str:
    """The rule in one line, for the eval report's "what ran" (every threshold that shaped a label)."""
    return (f"high: the best hit and (cosine >= {HIGH_COSINE_ALONE}, or >= {HIGH_COSINE} with "
            f"coverage >= {HIGH_COVERAGE} (of the known terms when >= {KNOWN_TERMS} match; a word asking a quantity counts "
            f"though no text holds it), or >= {SEVERAL_COSINE} with >= {SEVERAL_TERMS} terms and coverage >= "
            f"{SEVERAL_COVERAGE}, or >= {MANY_COSINE} with >= {MANY_TERMS} terms, >= {MEDIUM_TERM_SHARE} of them, and coverage >= {MANY_COVERAGE}) "
            f"and (cosine >= {LEAD_COSINE} with a lead >= {TIE}, or the best hit leads the second by >= {LEAD} of its score; with >= {LONG_QUERY_TERMS} "
            f"query terms a lead >= {LONG_LEAD}), or every term (>= 2) at cosine >= {EVERY_TERM_COSINE} with a lead >= "
            f"{EVERY_TERM_LEAD}, or no term at cosine >= {PARAPHRASE_COSINE} when the query has < {LONG_QUERY_TERMS} terms and writes no word "
            f"as a name (or, any length, at cosine >= {CLEAR_PARAPHRASE_COSINE} and >= {CLEAR_COSINE_LEAD} above every other text's), or (the query has < {LONG_QUERY_TERMS} terms) some terms and for each missing one a value of the kind it "
            f"asks (a date, a version, a price ...) at cosine >= {TYPED_COSINE} with a lead >= {TIE}; "
            f"and no sentence holding a query term is a question, and no query word asking an amount (money, a quantity) is missing without "
            f"a value of its kind (unless the question opens with when/where/who/why); without vectors every "
            f"term (>= 2), or some and a value of the kind each missing one asks, not asked, leading the second by >= "
            f"{LEXICAL_LEAD} of its BM25 score; medium: cosine >= {MEDIUM_COSINE} or "
            f">= {MEDIUM_TERM_SHARE} of the terms; at most medium when a query word no stored text holds is written "
            f"as a name (a capital, a digit, or joined by {_JOINED}, not a hyphenated phrase through a stopword), "
            f"low when the query is stopwords alone")
