"""BM25 leg details the parity test cannot see: the exact Okapi score of a repeated term, a query term
no memory has, a filter that keeps the whole store's document frequencies, and IDF coverage on a
one-document store. Expected values come from the formulas in retrieval/bm25.py's docstring."""

import math

import numpy as np
import pytest

from kenning.retrieval import bm25
from kenning.retrieval.text import query_terms


def _lexicon(store, texts):
    store.import_records([{"content": t, "scopes": ["test"]} for t in texts])
    return store.lexicon.refresh()


def test_a_repeated_term_scores_by_the_okapi_formula(store):
    lex = _lexicon(store, ["apple apple pie", "pear tart", "plum jam"])
    (key, score), = bm25.search(lex, query_terms("apple"), 5)
    n, df, tf, length, avg = 3, 1, 2, 3, 7 / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    norm = bm25.K1 * (1 - bm25.B + bm25.B * length / avg)
    assert key == 1 and score == pytest.approx(idf * tf * (bm25.K1 + 1) / (tf + norm))


def test_a_term_no_memory_has_does_not_stop_the_others(store):
    lex = _lexicon(store, ["red apple", "green pear"])
    assert [key for key, _ in bm25.search(lex, query_terms("zzzunknown apple"), 5)] == [1]


def test_a_filter_keeps_only_allowed_documents_and_the_store_wide_idf(store):
    lex = _lexicon(store, ["red apple", "green apple", "green pear"])
    unfiltered = dict(bm25.search(lex, query_terms("apple"), 5))
    allowed = lex.live & (lex.doc_key == 2)
    filtered = bm25.search(lex, query_terms("apple"), 5, allowed)
    assert [key for key, _ in filtered] == [2] and filtered[0][1] == pytest.approx(unfiltered[2])


def test_idf_coverage_on_a_one_document_store(store):
    lex = _lexicon(store, ["kiwi orchard"])
    assert bm25.idf_coverage(lex, ["kiwi"], [1]) == {1: 1.0}
    have, missing = math.log(1 + 0.5 / 1.5), math.log(1 + 1.5 / 0.5)  # df 1 and df 0 of N = 1
    assert bm25.idf_coverage(lex, ["kiwi", "zzz"], [1])[1] == pytest.approx(have / (have + missing))
    assert np.isclose(bm25.idf(1, 0), missing)


def test_new_k1_and_b_rescore_instead_of_reusing_the_remembered_saturation(store):
    """The per-term saturation is remembered between searches; another k1 or b must not reuse it."""
    lex = _lexicon(store, ["apple apple pie", "pear tart", "plum jam"])
    n, df, tf, length, avg = 3, 1, 2, 3, 7 / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    for k1, b in ((bm25.K1, bm25.B), (2.0, bm25.B), (2.0, 0.0), (bm25.K1, bm25.B)):
        (key, score), = bm25.search(lex, query_terms("apple"), 5, k1=k1, b=b)
        norm = k1 * (1 - b + b * length / avg)
        assert key == 1 and score == pytest.approx(idf * tf * (k1 + 1) / (tf + norm)), (k1, b)
