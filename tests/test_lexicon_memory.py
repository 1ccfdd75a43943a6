"""A long-running process (an MCP or HTTP server) searches its lexical view for hours: what the view
caches between searches must stay bounded however many distinct words the queries bring, and
forgetting it must not change an answer."""

from __future__ import annotations

import kenning
from kenning.store import lexicon


def test_the_cached_postings_are_bounded_and_searches_answer_alike_after_a_clear(tmp_path, monkeypatch):
    monkeypatch.setattr(lexicon, "POSTINGS_MEMO_TERMS", 40, raising=False)
    store = kenning.open_store(tmp_path / "s")
    store.import_records([{"content": f"The billing service {name} runs on port {5400 + i}", "scopes": ["t"]}
                          for i, name in enumerate(["alpha", "bravo", "charlie"])])
    first = [(h.id, h.score) for h in store.search("billing bravo port", mode="bm25", record=False).hits]
    assert len(first) == 3 and "bravo" in store.get(first[0][0]).content
    view = store.lexicon
    for i in range(300):  # words no memory holds, each searched once (an agent's new query words)
        store.search(f"zq{i}x wv{i}k", mode="bm25", record=False)
        assert len(view._cache) <= 40 and len(view._filtered) <= 40
    again = [(h.id, h.score) for h in store.search("billing bravo port", mode="bm25", record=False).hits]
    assert again == first
    store.close()
