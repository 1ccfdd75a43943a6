"""Our BM25 leg against rank_bm25 on the same token stream and the same formula.

rank_bm25's BM25Okapi computes the textbook Okapi term-frequency/length part; we swap only its
IDF for the Lucene form our leg uses (see retrieval/bm25.py for why), so every other factor is
rank_bm25's own code. rank_bm25 counts a repeated query term at full weight each time; our leg
saturates it (k3), so a repeated term's expected score is rank_bm25's single-term score times
``bm25.query_weight(n)``.
"""

import math

import pytest

rank_bm25 = pytest.importorskip("rank_bm25")

from kenning.retrieval import bm25
from collections import Counter

from kenning.retrieval.text import query_terms, query_tokens, tokenize

CORPUS = [
    "The auth service listens on port 8443 behind the gateway",
    "Deploys go through the staging cluster before production",
    "Alice prefers tabs over spaces and reviews every pull request",
    "The gateway terminates TLS and forwards to the auth service",
    "Postgres runs version 15 on the database host with nightly backups",
    "Backups of the database are kept for thirty days in cold storage",
    "The staging cluster has three nodes and mirrors the production gateway",
    "Bob owns the billing service and its Stripe integration",
    "Python 3.12.1 is pinned for the data pipelines and node.js 20 for the web app",
    "Queries against the search index time out when the cluster is under load",
]
QUERIES = ["auth service port", "staging cluster gateway", "database backups", "python pipelines", "billing",
           "gateway gateway auth: the gateways of the auth service"]


class LuceneIdfBM25(rank_bm25.BM25Okapi):
    def _calc_idf(self, nd):
        self.idf = {w: math.log1p((self.corpus_size - f + 0.5) / (f + 0.5)) for w, f in nd.items()}


@pytest.mark.parametrize("k1,b", [(1.2, 0.75), (0.9, 0.4), (1.5, 1.0)])
def test_scores_equal_rank_bm25(store, k1, b):
    for text in CORPUS:
        store.write(text, scopes=["parity"])
    lex = store.lexicon.refresh()
    reference = LuceneIdfBM25([tokenize(t) for t in CORPUS], k1=k1, b=b)
    for query in QUERIES:
        counts = Counter(query_tokens(query))
        expected = sum(bm25.query_weight(n) * reference.get_scores([t]) for t, n in counts.items())
        ours = dict(bm25.search(lex, query_tokens(query), k=len(CORPUS), k1=k1, b=b))
        for doc, score in enumerate(expected, start=1):
            assert ours.get(doc, 0.0) == pytest.approx(score, rel=1e-9, abs=1e-12)
        if max(counts.values()) == 1:  # no repeats: exactly rank_bm25's own query scoring
            assert list(expected) == pytest.approx(list(reference.get_scores(query_terms(query))))


def test_repeated_query_terms_weigh_more_but_saturate():
    assert bm25.query_weight(1) == 1.0
    assert 1.0 < bm25.query_weight(2) < bm25.query_weight(3) < 1.0 + bm25.K3


def test_idf_coverage_weights_rare_terms_more(store):
    store.import_records([{"content": t, "scopes": ["c"]} for t in
                          ["common rare", "common", "common other", "common again"]])
    lex = store.lexicon.refresh()
    cov = bm25.idf_coverage(lex, ["common", "rare"], [1, 2, 3])
    w_common, w_rare = bm25.idf(4, 4), bm25.idf(4, 1)
    assert cov[1] == pytest.approx(1.0)
    assert cov[2] == pytest.approx(w_common / (w_common + w_rare))
    assert cov[2] < 0.5 and cov[3] == cov[2]


def test_idf_coverage_counts_an_absent_term_and_each_term_once(store):
    store.import_records([{"content": t, "scopes": ["c"]} for t in
                          ["common rare", "common", "common other", "common again"]])
    lex = store.lexicon.refresh()
    w_common, w_rare, w_absent = bm25.idf(4, 4), bm25.idf(4, 1), bm25.idf(4, 0)
    cov = bm25.idf_coverage(lex, ["rare", "common", "missing", "rare"], [1, 2, 4])
    assert cov[1] == pytest.approx((w_rare + w_common) / (w_rare + w_common + w_absent))
    assert cov[2] == cov[4] == pytest.approx(w_common / (w_rare + w_common + w_absent))
    assert bm25.idf_coverage(lex, [], [1, 2]) == {1: 0.0, 2: 0.0}
    assert bm25.idf_coverage(lex, ["rare"], []) == {}
    assert set(bm25.idf_coverage(lex, ["rare"], [3])) == {3} and bm25.idf_coverage(lex, ["rare"], [3])[3] == 0.0


def test_idf_coverage_of_an_empty_store_is_zero(store):
    assert bm25.idf_coverage(store.lexicon.refresh(), ["anything"], [1]) == {1: 0.0}


def test_fusion_coverage_names_the_texts_holding_one_of_several_terms(store):
    store.import_records([{"content": t, "scopes": ["c"]} for t in
                          ["common rare", "common", "rare other", "nothing shared"]])
    lex = store.lexicon.refresh()
    coverage, lone = bm25.fusion_coverage(lex, ["common", "rare", "common"], [1, 2, 3, 4])
    assert coverage == bm25.idf_coverage(lex, ["common", "rare"], [1, 2, 3, 4])
    assert lone == {2, 3}  # one of the two terms each; 1 holds both, 4 neither
    assert bm25.fusion_coverage(lex, ["common"], [1, 2])[1] == frozenset()  # one term: nothing to weigh
    assert bm25.fusion_coverage(lex, [], [1]) == ({1: 0.0}, frozenset())
