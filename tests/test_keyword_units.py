"""The keyword leg called directly: exact scores (1 + ln count a term, the recency nudge at known ages),
a filter, a one-word query earning no phrase bonus, and the phrase check reaching the best candidates
when more than PHRASE_CHECK_LIMIT hold every term."""

import math

import pytest

from kenning.retrieval import keyword
from kenning.retrieval.text import query_terms

DAY = 86400.0


def _lexicon(store, texts):
    store.import_records([{"content": t, "scopes": ["test"]} for t in texts])
    return store.lexicon.refresh()


def test_scores_are_one_plus_log_count_per_term(store):
    lex = _lexicon(store, ["apple apple pie", "apple tart", "plum jam"])
    hits = keyword.search(lex, query_terms("apple pie"), 5)
    assert hits == [(1, pytest.approx(1 + math.log(2) + 1, rel=1e-12)), (2, pytest.approx(1.0, rel=1e-12))]


def test_recency_adds_at_most_the_nudge_and_halves_each_half_life(store):
    lex = _lexicon(store, ["apple pie"])
    ts = float(lex.doc_ts[(lex.doc_key == 1) & lex.live][0])  # when the memory was indexed (epoch seconds)
    fresh = keyword.search(lex, ["appl"], 5, now=ts)
    assert fresh == [(1, pytest.approx(1.0 + keyword.RECENCY_MAX, rel=1e-12))]
    later = keyword.search(lex, ["appl"], 5, now=ts + keyword.RECENCY_HALF_LIFE_DAYS * DAY)
    assert later == [(1, pytest.approx(1.0 + keyword.RECENCY_MAX / 2, rel=1e-12))]


def test_a_filter_keeps_only_allowed_documents(store):
    lex = _lexicon(store, ["red apple", "green apple"])
    assert [k for k, _ in keyword.search(lex, ["appl"], 5, allowed=lex.live & (lex.doc_key == 2))] == [2]


def test_a_one_word_query_earns_no_phrase_bonus(store):
    texts = ["apple pie"]
    lex = _lexicon(store, texts)
    text_of = lambda keys: {k: texts[k - 1] for k in keys}
    assert keyword.search(lex, ["appl"], 5, phrase="apple", text_of=text_of) == [(1, pytest.approx(1.0))]


def test_the_phrase_check_reaches_the_best_of_many_full_matches(store):
    texts = [f"beta {i} then alpha" for i in range(keyword.PHRASE_CHECK_LIMIT + 5)] + ["alpha beta alpha"]
    lex = _lexicon(store, texts)
    text_of = lambda keys: {k: texts[k - 1] for k in keys}
    hits = keyword.search(lex, query_terms("alpha beta"), 3, phrase="alpha beta", text_of=text_of)
    assert hits[0] == (len(texts), pytest.approx(1 + math.log(2) + 1 + keyword.PHRASE_BONUS))
