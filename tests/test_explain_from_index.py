"""A hit's match terms and coverage come from the postings, not from re-tokenizing its text; they
must say exactly what the text says."""

from __future__ import annotations

import kenning
from kenning.retrieval import bm25
from kenning.retrieval.lexical import contains
from kenning.retrieval.text import match_terms, query_terms, surface_forms, token_spans, tokenize

TEXTS = [
    "The auth service listens on port 8443 behind the gateway",
    "Python 3.12.1 is pinned for the data pipelines and node.js 20 for the web app",
    "東京都 の サーバー runs the billing service",
    "Ｆｕｌｌ-width billing notes for the gateway",
    "C++ and c# builds run on the staging cluster; the gateway caches matches",
    "Queries against the search index time out when the cluster is under load",
]
QUERIES = ["auth gateway port", "python 3.12.1 node.js", "東京都 billing", "full width billing",
           "c++ c# gateway", "queries index cluster load", "nothing matches zzz"]


def test_match_terms_and_coverage_from_the_index_equal_the_texts(tmp_path):
    with kenning.open_store(tmp_path / "s") as store:
        for text in TEXTS[:3]:  # single writes go to the delta table ...
            store.write(text, scopes=["t"], acknowledge_transient=True)
        store.import_records([{"content": t, "scopes": ["t"]} for t in TEXTS[3:]])  # ... an import to segments
        store.write("the gateway billing cluster port index", scopes=["t"], acknowledge_transient=True)
        by_id = {m.id: m.content for m in store.list(limit=50, record=False)}
        lex = store.lexicon.refresh()
        for query in QUERIES:
            terms, shown = query_terms(query), surface_forms(query)
            for mode in ("bm25", "keyword"):
                for hit in store.search(query, mode=mode, limit=10, record=False).hits:
                    expected = [shown.get(t, t) for t in match_terms(terms, by_id[hit.id])]
                    assert hit.match_terms == expected, (query, by_id[hit.id])
            keys = [int(k) for k in lex.doc_key[lex.live]]
            texts = dict(store.db.read(lambda c: c.execute("SELECT rowid, content FROM memories").fetchall()))
            matrix = contains(lex, terms, keys)
            for row, key in zip(matrix.tolist(), keys):
                present = set(tokenize(texts[key]))
                assert row == [t in present for t in terms]
            coverage = bm25.idf_coverage(lex, terms, keys)
            for key in keys:
                present = set(tokenize(texts[key]))
                weights = {t: float(bm25.idf(lex.n_docs, lex.postings([t])[t][0].size)) for t in terms}
                total = sum(weights.values())
                want = sum(w for t, w in weights.items() if t in present) / total if total else 0.0
                assert abs(coverage[key] - want) < 1e-12


def test_the_ascii_road_of_token_spans_gives_the_same_tokens_and_spans():
    for text in ["The Auth-Service's port 8443; node.js C++ c# snake_case 3.12.1 end.", "  lots   of  space ",
                 "MixedCase WORDS running generously"]:
        spans = token_spans(text)
        assert [t for t, _, _ in spans] == tokenize(text)
        assert all(tokenize(text[s:e], compounds=False) == [t] for t, s, e in spans)  # a piece of snake_case too
