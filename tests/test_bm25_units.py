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


def _okapi(tf, length, avg, n, df, k1=bm25.K1, b=bm25.B):
    """A plain reference of one term's BM25 score (Lucene IDF), written from the formula."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg))


def test_a_filtered_search_scores_a_repeated_term_by_the_okapi_formula(store):
    """The filtered path multiplies weight and saturation too (a tf of 2 makes the saturation differ from 1)."""
    lex = _lexicon(store, ["apple apple pie", "apple tart", "plum jam"])
    (key, score), = bm25.search(lex, query_terms("apple"), 5, lex.live & (lex.doc_key == 1))
    assert key == 1 and score == pytest.approx(_okapi(2, 3, 7 / 3, 3, 2))


def test_a_filter_that_keeps_no_matching_document_finds_nothing(store):
    lex = _lexicon(store, ["red apple", "green apple", "green pear"])
    assert bm25.search(lex, query_terms("apple"), 5, lex.live & (lex.doc_key == 3)) == []


def test_several_terms_each_in_at_least_k_documents_rank_by_their_summed_scores(store):
    """Two posting lists of different lengths both reach k: the rarest one bounds the top k."""
    texts = ["kiwi mango", "kiwi mango", "kiwi", "plum"]
    lex = _lexicon(store, texts)
    got = bm25.search(lex, query_terms("kiwi mango"), 2)
    avg = 6 / 4
    both = _okapi(1, 2, avg, 4, 3) + _okapi(1, 2, avg, 4, 2)
    assert [key for key, _ in got] == [1, 2] and [s for _, s in got] == pytest.approx([both, both])


def test_search_hands_top_k_exact_hints(store, monkeypatch, numpy_sums):
    """White-box: ``lists`` bounds how often a lexid repeats, ``shortest`` is the rarest list holding at
    least k documents and ``top`` the largest lexid; top_k trusts all three (lexical.top_k's docstring)."""
    lex = _lexicon(store, ["kiwi mango plum", "kiwi mango", "kiwi", "plum", "fig"])
    seen = []
    real = bm25.top_k

    def spy(index, lexids, scores, k, **hints):
        seen.append((lexids.copy(), k, hints))
        return real(index, lexids, scores, k, **hints)

    monkeypatch.setattr(bm25, "top_k", spy)
    postings = lex.postings(["kiwi", "mango", "plum"])
    for k in (2, 3):
        bm25.search(lex, query_terms("kiwi mango plum"), k)
        lexids, _, hints = seen[-1]
        assert hints["lists"] == 3 and hints["top"] == int(lexids.max())
        assert hints["top"] == max(int(postings[t][0].max()) for t in postings)
        rarest = min((postings[t][0] for t in postings if postings[t][0].size >= k), key=len)
        assert np.array_equal(hints["shortest"], rarest)
    bm25.search(lex, query_terms("kiwi mango plum"), 4)  # no list holds 4 documents
    assert seen[-1][2]["shortest"] is None


def test_a_repeated_term_reuses_its_remembered_scores_until_k1_changes(store, numpy_sums):
    """White-box: the memos of saturation and weighted scores hand back the same arrays for a term searched
    again (no pass over its postings), and new ones once k1 differs."""
    lex = _lexicon(store, ["kiwi mango", "kiwi", "plum"])
    bm25.search(lex, query_terms("kiwi mango"), 5)
    sat = {t: bm25._SATURATED[lex][t][2] for t in ("kiwi", "mango")}
    weighted = {t: bm25._WEIGHTED[lex][(t, 1)][2] for t in ("kiwi", "mango")}
    bm25.search(lex, query_terms("mango kiwi"), 5)
    for t in ("kiwi", "mango"):
        assert bm25._SATURATED[lex][t][2] is sat[t] and bm25._WEIGHTED[lex][(t, 1)][2] is weighted[t]
    before = bm25.search(lex, query_terms("kiwi") * 2, 5)  # the term said twice
    assert bm25._WEIGHTED[lex][("kiwi", 2)][2] is not weighted["kiwi"]  # another query count, another weight
    assert before[0] == (2, pytest.approx(4 / 3 * _okapi(1, 1, 4 / 3, 3, 2)))  # lengths 2, 1, 1
    bm25.search(lex, query_terms("kiwi"), 5, k1=2.0)
    assert bm25._SATURATED[lex]["kiwi"][2] is not sat["kiwi"]


def _name(i):
    return "w" + "".join("abcdefghijklmnopqrstuvwxyz"[d] for d in (i // 26, i % 26))


def test_idf_coverage_of_more_documents_than_a_page_matches_a_plain_sum(store):
    """Past FEW_KEYS documents the coverage is summed in arrays; the same shares as the per-term formula."""
    n = bm25.FEW_KEYS + 6
    texts = [" ".join(w for w, on in (("kiwi", i % 2 == 0), ("mango", i % 3 == 0)) if on) + " " + _name(i)
             for i in range(n)]
    lex = _lexicon(store, texts)
    assert lex.n_docs == n
    keys = list(range(1, n + 1))

    def w(df):
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    kiwi, mango, absent = w(sum(i % 2 == 0 for i in range(n))), w(sum(i % 3 == 0 for i in range(n))), w(0)
    got = bm25.idf_coverage(lex, ["kiwi", "mango", "zzzabsent"], keys)
    expected = {i + 1: (kiwi * (i % 2 == 0) + mango * (i % 3 == 0)) / (kiwi + mango + absent) for i in range(n)}
    assert sorted(got) == keys and all(type(k) is int for k in got)
    assert [got[k] for k in keys] == pytest.approx([expected[k] for k in keys])
    page = bm25.idf_coverage(lex, ["kiwi", "mango", "zzzabsent"], keys[:10])  # the per-float path agrees
    assert [page[k] for k in keys[:10]] == pytest.approx([expected[k] for k in keys[:10]])
