"""One contract every leg honours (empty store, one document, k beyond the store, no match, ties)."""

import pytest

from kenning.retrieval import bm25, keyword
from kenning.retrieval.text import query_terms

LEGS = {
    "keyword": lambda lex, q, k: keyword.search(lex, query_terms(q), k),
    "bm25": lambda lex, q, k: bm25.search(lex, query_terms(q), k),
}


@pytest.fixture(params=sorted(LEGS))
def leg(request):
    return LEGS[request.param]


def _lexicon(store, texts):
    # import, not write: the duplicate gate would (rightly) refuse the identical texts of the tie test
    store.import_records([{"content": t, "scopes": ["test"]} for t in texts])
    return store.lexicon.refresh()


def test_empty_store_returns_nothing(store, leg):
    assert leg(store.lexicon.refresh(), "anything at all", 5) == []


def test_one_document(store, leg):
    lex = _lexicon(store, ["the auth service listens on port 8443"])
    hits = leg(lex, "auth port", 5)
    assert [key for key, _ in hits] == [1] and hits[0][1] > 0


def test_k_larger_than_the_store(store, leg):
    lex = _lexicon(store, ["red apple", "green apple", "apple pie"])
    assert len(leg(lex, "apple", 50)) == 3


def test_no_match_means_no_hits(store, leg):
    lex = _lexicon(store, ["red apple", "green pear"])
    assert leg(lex, "submarine", 5) == []


def test_ties_are_broken_by_key(store, leg):
    lex = _lexicon(store, ["blue whale", "blue whale", "blue whale"])
    hits = leg(lex, "whale", 3)
    assert [key for key, _ in hits] == [1, 2, 3]
    assert len({score for _, score in hits}) == 1


def test_results_are_best_first(store, leg):
    lex = _lexicon(store, ["cat", "cat dog", "cat dog bird"])
    hits = leg(lex, "cat dog bird", 3)
    assert [key for key, _ in hits][0] == 3
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
