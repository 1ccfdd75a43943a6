"""``bm25.search_expanded`` (a feedback query summed only where a bound says it can matter) returns
exactly what the full weighted pass returns: the same documents, scores and order."""

from __future__ import annotations

import numpy as np
import pytest

from kenning.retrieval import bm25

pytestmark = pytest.mark.usefixtures("sums")  # the compiled and the numpy summing step


class Index:
    """A lexical index of random postings: the arrays and ``postings`` the BM25 leg reads."""

    def __init__(self, rng: np.random.Generator, n_docs: int, terms: int):
        self.doc_key = rng.permutation(n_docs).astype(np.int64) + 1
        self.doc_len = rng.integers(5, 80, n_docs).astype(np.float64)
        self.n_docs = n_docs
        self.avg_len = float(self.doc_len.mean())
        self._postings = {}
        for t in range(terms):
            size = int(min(n_docs, rng.zipf(1.3) * 3))  # a few common terms, many rare ones
            ids = np.sort(rng.choice(n_docs, size, replace=False)).astype(np.int64)
            # few distinct frequencies, so equal scores (ties at the cut) are common
            self._postings[f"t{t}"] = (ids, rng.integers(1, 4, size).astype(np.int32))

    def postings(self, terms):
        empty = (np.empty(0, np.int64), np.empty(0, np.int32))
        return {t: self._postings.get(t, empty) for t in terms}


def test_the_expanded_pass_equals_the_full_weighted_pass():
    rng = np.random.default_rng(11)
    for trial in range(200):
        index = Index(rng, int(rng.integers(20, 3000)), 40)
        names = [f"t{i}" for i in rng.choice(45, int(rng.integers(2, 25)), replace=False)]  # t40+: unknown
        essential = names[: int(rng.integers(1, 4))]
        weights = {t: float(rng.random()) * (3.0 if t in essential else 0.3) for t in names}
        allowed = None if trial % 3 else rng.random(index.n_docs) < 0.6
        for k in (1, 10, 100):
            expected = bm25.search(index, [], k, allowed, weights=weights)
            assert bm25.search_expanded(index, weights, k, essential, allowed) == expected


def test_the_bound_answers_without_the_full_pass_and_falls_back_when_it_cannot(monkeypatch):
    rng = np.random.default_rng(3)
    index = Index(rng, 2000, 40)
    sizes = {t: ids.size for t, (ids, _) in index._postings.items()}
    common = sorted(sizes, key=sizes.get)[-8:]  # the expansion words: the commonest
    query = [t for t in sorted(sizes, key=sizes.get) if sizes[t] >= 150][:2]
    light = {**{t: 0.01 for t in common}, **{t: 1.0 for t in query}}
    heavy = {**{t: 5.0 for t in common}, **{t: 0.01 for t in query}}
    expected = {name: bm25.search(index, [], 100, weights=w) for name, w in (("light", light), ("heavy", heavy))}
    full = bm25.search
    calls = []
    monkeypatch.setattr(bm25, "search", lambda *a, **kw: calls.append(1) or full(*a, **kw))
    assert bm25.search_expanded(index, light, 100, query) == expected["light"]
    assert calls == []  # answered from the query's own documents
    assert bm25.search_expanded(index, heavy, 100, query) == expected["heavy"]
    assert calls == [1]  # the common words outweigh them: the full pass


@pytest.mark.parametrize("k", [1, 5])
def test_fewer_candidates_than_k_or_none_at_all(k):
    rng = np.random.default_rng(5)
    index = Index(rng, 500, 30)
    weights = {"t0": 1.0, "t1": 0.2, "nowhere": 0.5}
    assert bm25.search_expanded(index, weights, k, ["nowhere"]) == bm25.search(index, [], k, weights=weights)
    assert bm25.search_expanded(index, {}, k, ["t0"]) == []
