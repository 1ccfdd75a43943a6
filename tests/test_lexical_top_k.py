"""The cut top_k takes over concatenated posting lists returns exactly what summing every document does."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from kenning.retrieval.lexical import accumulate, best, top_k


def test_the_cut_keeps_the_exact_top_k_ties_included():
    rng = np.random.default_rng(7)
    for trial in range(300):
        n_docs = int(rng.integers(1, 400)) if trial % 3 else int(rng.integers(1000, 100_000))  # also sparse
        index = SimpleNamespace(doc_key=rng.permutation(n_docs).astype(np.int64) + 1)
        lists = int(rng.integers(1, 7))
        ids, scores = [], []
        for _ in range(lists):
            size = int(rng.integers(0, min(n_docs, 400) + 1))
            ids.append(np.sort(rng.choice(n_docs, size, replace=False)).astype(np.int64))
            # few distinct values, so ties at the cut are common
            scores.append(rng.choice([0.5, 1.0, 1.5, 2.0], size) if trial % 2 else rng.random(size))
        lexids, values = np.concatenate(ids), np.concatenate(scores)
        for k in (1, 3, 10, 50):
            if not lexids.size:
                assert top_k(index, lexids, values, k, lists=lists) == []
                continue
            uniq, totals, _ = accumulate(lexids, values)
            expected = best(index, uniq, totals, k)
            assert top_k(index, lexids, values, k, lists=lists) == expected
            assert top_k(index, lexids, values, k, lists=lists, top=int(lexids.max())) == expected
            for one in ids:  # the cut taken from any one list of at least k documents
                if one.size >= k:
                    assert top_k(index, lexids, values, k, lists=lists, shortest=one) == expected
            assert top_k(index, lexids, values, k) == expected  # no hint: no cut
        assert top_k(index, lexids, values, 0, lists=lists) == top_k(index, lexids, values, 0) == []
