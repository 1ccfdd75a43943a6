"""store/search.py through the library: which legs run for each mode, what an explained hit carries
(the memory's own fields, its legs' ranks and scores), the filters applied before ranking (scopes,
category, scopes disabled for the session, on every leg), the degraded note when the embeddings
cannot run, and the rank-only path with the same filters. Expected values are read off the memories
written here, not off another ranking."""

from __future__ import annotations

import pytest

import kenning

AUTH = "The auth service listens on port 8443"
BILLING = "The billing service listens on port 9090 behind the auth proxy"
KIWI = "Kiwi orchard watering happens at dawn"
QUERY = "auth service port"


@pytest.fixture
def store(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        ids = {"auth": s.write(AUTH, scopes=["ops"]).id,
               "billing": s.write(BILLING, scopes=["billing"], category="ambient").id,
               "kiwi": s.write(KIWI, scopes=["farm"]).id}
        yield s, ids


def test_an_explained_hit_carries_its_memory_and_its_legs(store):
    s, ids = store
    result = s.search(QUERY, mode="bm25", auto_scope=False)
    assert (result.query, result.mode, result.legs_run) == (QUERY, "bm25", ["bm25"])
    assert result.degraded is None and result.pending_embeddings is None  # a lexical mode asks no vector leg
    assert [h.id for h in result.hits] == [ids["auth"], ids["billing"]]  # the shorter text, same terms
    for rank, hit in enumerate(result.hits, start=1):
        memory = s.get(hit.id)
        assert (hit.scopes, hit.category, hit.confidence, hit.created, hit.updated) == \
            (memory.scopes, memory.category, memory.confidence, memory.created, memory.updated)
        assert hit.snippet == memory.content and hit.match_terms == ["auth", "service", "port"]
        assert hit.matched_leg == "lexical" and set(hit.legs) == {"bm25"} and hit.legs["bm25"].rank == rank
        assert hit.legs["bm25"].score == hit.score == round(hit.score, 6) > 0
    assert result.hits[0].score > result.hits[1].score
    assert [h.relevance for h in result.hits] == ["high", "medium"]


def test_keyword_mode_runs_the_keyword_leg_and_its_phrase_check(store):
    s, ids = store
    result = s.search("listens on port 8443", mode="keyword", auto_scope=False)
    assert result.legs_run == ["keyword"] and result.pending_embeddings is None
    assert [h.id for h in result.hits] == [ids["auth"], ids["billing"]]
    assert set(result.hits[0].legs) == {"keyword"} and result.hits[0].score > result.hits[1].score
    assert result.hits[0].match_terms == ["listens", "port", "8443"] and result.hits[1].match_terms == ["listens", "port"]


@pytest.mark.parametrize("mode", ["bm25", "keyword"])
def test_filters_apply_before_ranking(store, mode):
    s, ids = store
    assert [h.id for h in s.search(QUERY, mode=mode, scopes=["billing"], auto_scope=False).hits] == [ids["billing"]]
    assert [h.id for h in s.search(QUERY, mode=mode, category="ambient", auto_scope=False).hits] == [ids["billing"]]
    assert [h.id for h in s.search(QUERY, mode=mode, scopes=["ops"], category="ambient", auto_scope=False).hits] == []
    assert [h.id for h in s.search("kiwi dawn", mode=mode, scopes=["ops", "farm"], auto_scope=False).hits] == \
        [ids["kiwi"]]
    s.disable_scope("ops")  # hidden for this session: every search leaves it out
    assert [h.id for h in s.search(QUERY, mode=mode, auto_scope=False).hits] == [ids["billing"]]
    assert [h.id for h in s.search(QUERY, mode=mode, scopes=["billing", "ops"], auto_scope=False).hits] == \
        [ids["billing"]]
    s.enable_scope("ops")
    assert len(s.search(QUERY, mode=mode, auto_scope=False).hits) == 2


def test_the_rank_only_path_filters_and_labels_like_the_explained_one(store):
    s, ids = store
    bare = s.rank(QUERY, mode="bm25", depth=10, scopes=["ops"], explain=False)
    assert [(h.id, h.relevance) for h in bare.hits] == [(ids["auth"], "high")]
    both = s.rank(QUERY, mode="bm25", depth=10, explain=False)
    explained = s.rank(QUERY, mode="bm25", depth=10)
    assert [(h.id, h.score, h.relevance) for h in both.hits] == \
        [(h.id, h.score, h.relevance) for h in explained.hits] == \
        [(ids["auth"], explained.hits[0].score, "high"), (ids["billing"], explained.hits[1].score, "medium")]
    assert s.rank(QUERY, mode="bm25", depth=10, category="fact", explain=False).hits[0].id == ids["auth"]
    assert [h.id for h in s.rank(QUERY, mode="bm25", depth=1, explain=False).hits] == [ids["auth"]]


def test_hybrid_without_working_embeddings_runs_the_lexical_legs_and_says_why(store, monkeypatch):
    s, ids = store
    monkeypatch.setenv("KENNING_ENCODER", "no-such-backend")  # a real way to break the vector leg
    result = s.search(QUERY, mode="hybrid", auto_scope=False)
    assert result.legs_run == ["keyword", "bm25"] and result.pending_embeddings is None
    assert result.degraded is not None and result.degraded.reason == "embeddings_broken"
    assert result.degraded.fix == "unset KENNING_ENCODER"
    assert [h.id for h in result.hits] == [ids["auth"], ids["billing"]]
    bare = s.rank(QUERY, mode="hybrid", depth=10, explain=False)
    assert bare.legs_run == ["keyword", "bm25"] and bare.degraded == result.degraded
    assert s.rank(QUERY, mode="bm25", depth=10, explain=False).degraded is None
    semantic = s.search(QUERY, mode="semantic", auto_scope=False)  # degrades the same way
    assert semantic.legs_run == ["keyword", "bm25"] and semantic.degraded == result.degraded


@pytest.mark.embeddings
def test_the_vector_leg_runs_in_hybrid_and_semantic_modes_and_obeys_the_filters(store):
    s, ids = store
    hybrid = s.search(QUERY, mode="hybrid", auto_scope=False)
    assert hybrid.legs_run == ["keyword", "bm25", "vector"] and hybrid.degraded is None
    assert hybrid.pending_embeddings == 0
    semantic = s.search("when is the fruit farm irrigated", mode="semantic", auto_scope=False)
    assert semantic.legs_run == ["vector"] and semantic.hits[0].id == ids["kiwi"]
    assert set(semantic.hits[0].legs) == {"vector"} and semantic.hits[0].matched_leg == "semantic"
    filtered = s.search("when is the fruit farm irrigated", mode="semantic", scopes=["ops"], auto_scope=False)
    assert ids["kiwi"] not in [h.id for h in filtered.hits]  # the vector leg only sees the scope's memories
    widened = s.search("when is the fruit farm irrigated", mode="semantic", scopes=["ops", "farm"], auto_scope=False)
    assert widened.hits[0].id == ids["kiwi"]
    s.disable_scope("farm")
    assert ids["kiwi"] not in [h.id for h in s.search("when is the fruit farm irrigated", mode="semantic",
                                                        auto_scope=False).hits]
