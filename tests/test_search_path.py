"""store/search.py through the library: which legs run for each mode, what an explained hit carries
(the memory's own fields, its legs' ranks and scores), the filters applied before ranking (scopes,
category, scopes disabled for the session, on every leg), the degraded note when the embeddings
cannot run, and the rank-only path with the same filters. Expected values are read off the memories
written here, not off another ranking."""

from __future__ import annotations

import datetime as dt
import math

import pytest

import kenning
from kenning.retrieval import labels
from kenning.retrieval.fusion import BM25_SHARE
from kenning.retrieval.keyword import PHRASE_BONUS, RECENCY_HALF_LIFE_DAYS, RECENCY_MAX

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
    # both hold every query word and the first leads by a few per cent: two candidates, not an answer
    assert 1 - result.hits[1].score / result.hits[0].score < labels.LEXICAL_LEAD
    assert [h.relevance for h in result.hits] == ["medium", "medium"]
    alone = s.search(QUERY, mode="bm25", scopes=["ops"], auto_scope=False).hits
    assert [(h.id, h.relevance) for h in alone] == [(ids["auth"], "high")]


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
    s.disable_scope("farm")  # hidden keys and a scope filter together: both apply
    assert [h.id for h in s.search(QUERY, mode=mode, scopes=["ops"], auto_scope=False).hits] == [ids["auth"]]


def test_the_rank_only_path_filters_and_labels_like_the_explained_one(store):
    s, ids = store
    bare = s.rank(QUERY, mode="bm25", depth=10, scopes=["ops"], explain=False)
    assert (bare.query, bare.mode, bare.legs_run) == (QUERY, "bm25", ["bm25"])
    assert [(h.id, h.relevance) for h in bare.hits] == [(ids["auth"], "high")]  # alone in its scope: it stands out
    both = s.rank(QUERY, mode="bm25", depth=10, explain=False)
    explained = s.rank(QUERY, mode="bm25", depth=10)
    # both hold every word and the first leads by a few per cent of its BM25 score: two candidates
    assert [(h.id, h.score, h.relevance) for h in both.hits] == \
        [(h.id, h.score, h.relevance) for h in explained.hits] == \
        [(ids["auth"], explained.hits[0].score, "medium"), (ids["billing"], explained.hits[1].score, "medium")]
    assert s.rank(QUERY, mode="bm25", depth=10, category="fact", explain=False).hits[0].id == ids["auth"]
    assert [h.id for h in s.rank(QUERY, mode="bm25", depth=1, explain=False).hits] == [ids["auth"]]


def test_hybrid_without_working_embeddings_runs_the_bm25_leg_and_says_why(store, monkeypatch):
    s, ids = store
    monkeypatch.setenv("KENNING_ENCODER", "no-such-backend")  # a real way to break the vector leg
    result = s.search(QUERY, mode="hybrid", auto_scope=False)
    assert result.legs_run == ["bm25"]
    # known from the store though the leg could not run: 0 where writes embedded, all 3 in a base install
    assert result.pending_embeddings is not None and result.pending_embeddings == s.semantic.pending_count()
    assert result.degraded is not None and result.degraded.reason == "embeddings_broken"
    assert result.degraded.fix == "unset KENNING_ENCODER"
    assert [h.id for h in result.hits] == [ids["auth"], ids["billing"]]
    bare = s.rank(QUERY, mode="hybrid", depth=10, explain=False)
    assert bare.legs_run == ["bm25"] and bare.degraded == result.degraded
    assert s.rank(QUERY, mode="bm25", depth=10, explain=False).degraded is None
    semantic = s.search(QUERY, mode="semantic", auto_scope=False)  # degrades the same way
    assert semantic.legs_run == ["bm25"] and semantic.degraded == result.degraded


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


def test_since_prior_session_keeps_only_what_changed_after_another_sessions_last_event(store, tmp_path):
    s, ids = store
    with kenning.open_store(tmp_path / "s") as later:
        new = later.write("The auth gateway listens on port 8444", scopes=["ops"]).id
        for mode in ("bm25", "keyword"):
            found = later.search(QUERY, mode=mode, auto_scope=False, since_prior_session=True)
            assert [h.id for h in found.hits] == [new]
            assert {h.id for h in later.search(QUERY, mode=mode, auto_scope=False).hits} == \
                {ids["auth"], ids["billing"], new}
            assert [h.id for h in later.search(QUERY, mode=mode, scopes=["ops"], auto_scope=False,
                                               since_prior_session=True).hits] == [new]


def test_bm25_uses_the_configured_k1_and_b(tmp_path):
    """With b = 0 there is no length normalisation, so a term said once scores its IDF exactly and a term
    said twice ``2 (k1 + 1) / (2 + k1)`` times it: here k1 = 0.5 gives 1.2. Two of three memories hold
    "kiwi": IDF = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6."""
    with kenning.open_store(tmp_path / "s") as s:
        s.import_records([{"id": "twice", "content": "The kiwi crate holds kiwi fruit"},
                          {"id": "once", "content": "The kiwi orchard is watered at dawn by the new pump"},
                          {"id": "none", "content": "Apples are stored in the cold barn"}])
        s.configure(bm25_k1=0.5, bm25_b=0.0)
        hits = s.search("kiwi", mode="bm25", auto_scope=False).hits
        assert [(h.id, h.score) for h in hits] == [("twice", round(1.2 * math.log(1.6), 6)),
                                                   ("once", round(math.log(1.6), 6))]


def test_the_keyword_leg_gets_the_query_phrase_the_texts_and_the_clock(tmp_path):
    """Every memory holds both words once (1 + ln 1 each). The two holding the phrase "kiwi deploy" earn
    PHRASE_BONUS; the one updated 300 days ago loses part of the recency nudge."""
    long_ago = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=300)).isoformat()
    with kenning.open_store(tmp_path / "s") as s:
        s.import_records([{"id": "old-phrase", "content": "Rotate the kiwi deploy keys monthly",
                           "created": long_ago, "updated": long_ago},
                          {"id": "scattered", "content": "deploy keys for kiwi rotate monthly"},
                          {"id": "new-phrase", "content": "The kiwi deploy runs at noon"}])
        hits = s.search("kiwi deploy", mode="keyword", auto_scope=False).hits
    scores = {h.id: h.score for h in hits}
    assert [h.id for h in hits] == ["new-phrase", "old-phrase", "scattered"]
    assert scores["new-phrase"] - scores["scattered"] == pytest.approx(PHRASE_BONUS, abs=1e-4)
    aged = RECENCY_MAX * (1 - 0.5 ** (300 / RECENCY_HALF_LIFE_DAYS))
    assert scores["new-phrase"] - scores["old-phrase"] == pytest.approx(aged, abs=1e-4)


def test_the_phrase_holder_checked_first_gets_its_bonus_too(tmp_path):
    """The best-scoring full match is the first text the phrase check reads."""
    with kenning.open_store(tmp_path / "s") as s:
        s.import_records([{"id": "plain", "content": "deploy keys for kiwi"},
                          {"id": "phrase", "content": "The kiwi deploy ships kiwi builds"}])
        hits = s.search("kiwi deploy", mode="keyword", auto_scope=False).hits
    assert [h.id for h in hits] == ["phrase", "plain"]
    assert hits[0].score - hits[1].score == pytest.approx(math.log(2) + PHRASE_BONUS, abs=1e-4)


def test_hybrid_without_the_vector_leg_is_bm25_whatever_the_fusion_settings(store, monkeypatch):
    """RRF's k and leg weights fuse legs with the vector leg; without it hybrid is the BM25 leg alone."""
    s, ids = store
    monkeypatch.setenv("KENNING_ENCODER", "no-such-backend")
    s.configure(rrf_k=10.0, weights={"keyword": 0.5, "bm25": 2.0, "vector": 1.0})
    hits = s.search(QUERY, mode="hybrid", auto_scope=False).hits
    plain = s.search(QUERY, mode="bm25", auto_scope=False).hits
    assert [h.id for h in hits] == [ids["auth"], ids["billing"]] == [h.id for h in plain]
    for hit, alone in zip(hits, plain):
        assert set(hit.legs) == {"bm25"} and hit.score == alone.score == alone.legs["bm25"].score


@pytest.mark.embeddings
def test_hybrid_with_the_vector_leg_fuses_on_evidence_unless_rrf_is_configured(store):
    """No memory shares a word with this query, so every hit is the vector leg's alone: on evidence its
    score is ``(1 - alpha) * (cosine - cos_floor) / (1 - cos_floor)``, by RRF ``1 / (rrf_k + rank)``."""
    s, ids = store
    query = "when is the fruit farm irrigated"
    s.configure(evidence_alpha=0.6, evidence_cos_floor=0.2)
    hits = s.search(query, mode="hybrid", auto_scope=False).hits
    assert hits[0].id == ids["kiwi"] and all(set(h.legs) == {"vector"} for h in hits)
    for hit in hits:
        assert hit.score == pytest.approx(0.4 * max(0.0, hit.legs["vector"].score - 0.2) / 0.8, abs=2e-6)
    s.configure(fusion="rrf")
    hits = s.search(query, mode="hybrid", auto_scope=False).hits
    assert hits[0].id == ids["kiwi"]
    for hit in hits:
        assert hit.score == round(1.0 / (60 + hit.legs["vector"].rank), 6)


@pytest.mark.embeddings
def test_a_label_with_the_vector_leg_turns_on_coverage_and_on_being_found_by_it(store):
    """With the vector leg, a hit below the paraphrase cosine is ``high`` only with most of the query's
    IDF weight (coverage) and, below ``LEAD_COSINE``, well ahead of the next hit; one the vector leg did not score (its memory not embedded yet) counts
    cosine 0 and is at most ``medium``, however well it matches the words."""
    s, ids = store
    for hits in (s.search(QUERY, mode="hybrid", auto_scope=False).hits,
                 s.rank(QUERY, mode="hybrid", depth=10, explain=False).hits):
        assert hits[0].id == ids["auth"] and hits[0].relevance == "high"
    top = s.search("port 8443", mode="hybrid", auto_scope=False).hits[0]  # both words, a looser paraphrase
    assert top.id == ids["auth"] and top.relevance == "high"
    assert labels.HIGH_COSINE <= top.legs["vector"].score < labels.LEAD_COSINE  # high through coverage, and far ahead
    # "auth port": the billing memory holds both words too, close behind - two candidates, neither promised
    both = s.search("auth port", mode="hybrid", auto_scope=False).hits
    assert both[0].id == ids["auth"] and both[0].legs["vector"].score < labels.LEAD_COSINE
    assert [h.relevance for h in both[:2]] == ["medium", "medium"]
    s.import_records([{"id": "queued", "content": "The zebra crossing sensor reports every minute"}])
    explained = s.search("zebra crossing sensor", mode="hybrid", auto_scope=False)
    assert explained.pending_embeddings == 1 and explained.legs_run == ["keyword", "bm25", "vector"]
    assert explained.hits[0].id == "queued" and "vector" not in explained.hits[0].legs
    assert explained.hits[0].match_terms == ["zebra", "crossing", "sensor"]
    assert explained.hits[0].relevance == "medium"
    bare = s.rank("zebra crossing sensor", mode="hybrid", depth=10, explain=False)
    assert (bare.hits[0].id, bare.hits[0].relevance) == ("queued", "medium")


def test_version_of_answers_for_a_parsed_memory_whose_remembered_version_was_dropped(store):
    """The remembered versions are cleared past 8192 while the parse cache (4096) still hands out older
    Memory objects: for those, version_of computes the version instead of failing."""
    from kenning.store.search import parsed, version_of

    s, ids = store
    base = s.get(ids["auth"])
    records = [base.model_copy(update={"content": f"The auth service listens on port {9000 + i}"}).model_dump_json()
               for i in range(8200)]
    memories = [parsed(r) for r in records]
    for i in (5000, 8199):  # dropped from the remembered versions / still remembered
        assert parsed(records[i]) is memories[i]
        assert version_of(memories[i]) == memories[i].version
