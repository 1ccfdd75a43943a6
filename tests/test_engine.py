"""The engine's own rules, without a store: which legs a mode runs, how legs' rankings become
candidates (one leg passes through, RRF, evidence when the vector leg ran), and how a candidate is
explained (matched leg, match terms, relevance label, snippet). Leg runs are plain functions."""

import pytest

from kenning.retrieval import engine, fusion
from kenning.retrieval.labels import HIGH_COSINE, HIGH_COSINE_ALONE


def test_each_mode_runs_its_legs_and_says_when_it_is_degraded():
    assert engine.legs_for_mode("keyword", False) == (["keyword"], False)
    assert engine.legs_for_mode("bm25", True) == (["bm25"], False)
    assert engine.legs_for_mode("semantic", True) == (["vector"], False)
    assert engine.legs_for_mode("semantic", False) == (["bm25"], True)
    assert engine.legs_for_mode("hybrid", True) == (["keyword", "bm25", "vector"], False)
    assert engine.legs_for_mode("hybrid", False) == (["bm25"], True)
    with pytest.raises(ValueError, match="unknown mode 'fuzzy'"):
        engine.legs_for_mode("fuzzy", True)


def test_one_leg_passes_through_with_its_own_ranks_and_scores():
    asked = []
    leg = lambda n: asked.append(n) or [(7, 3.0), (5, 2.0), (9, 1.0)]
    out = engine.rank({"bm25": leg}, depth=20, limit=2)
    assert asked == [2]  # nothing to fuse: the leg ranks only as deep as the result
    assert [(c.key, c.score, c.legs) for c in out] == [(7, 3.0, {"bm25": (1, 3.0)}), (5, 2.0, {"bm25": (2, 2.0)})]


def test_rank_with_lead_keeps_the_second_score_whatever_the_limit():
    asked = []
    leg = lambda n: asked.append(n) or [(7, 3.0), (5, 2.0), (9, 1.0)][:n]
    out, lead, _ = engine.rank_with_lead({"bm25": leg}, depth=20, limit=1)
    assert asked == [2]  # one more than asked for, so the label's lead is the same at limit 1 and 10
    assert [c.key for c in out] == [7] and lead == pytest.approx(1 / 3)
    out, lead, _ = engine.rank_with_lead({"bm25": lambda n: [(7, 3.0)]}, depth=20, limit=10)
    assert [c.key for c in out] == [7] and lead == 1.0


def test_legs_fused_by_rank_are_led_on_one_legs_own_scores():
    """RRF puts a first and a second hit a rank's share apart whatever their texts hold, so the lead is
    read on one leg's scores: BM25's without the vector leg (far ahead here, 10 against 2), the
    cosines with it (.9 against .85, as semantic mode reads them). Evidence fusion's scores are
    absolute: its lead is the fused one."""
    legs = {"keyword": lambda n: [(1, 4.0), (2, 3.9)][:n], "bm25": lambda n: [(1, 10.0), (2, 2.0)][:n]}
    out, lead, _ = engine.rank_with_lead(legs, depth=20, limit=10)
    fused = 1 - out[1].score / out[0].score
    assert [c.key for c in out] == [1, 2] and lead == pytest.approx(0.8) and fused < 0.05
    with_vector = dict(legs, vector=lambda n: [(1, 0.9), (2, 0.85)][:n])
    out, lead, _ = engine.rank_with_lead(with_vector, depth=20, limit=10)
    assert lead == pytest.approx(0.05 / 0.9)
    evidence = {"alpha": 0.78, "cos_floor": 0.1, "power": 3.0}
    coverage_of = lambda keys: ({1: 1.0, 2: 0.5}, ())  # noqa: E731
    out, lead, _ = engine.rank_with_lead(with_vector, depth=20, limit=10, evidence=evidence, coverage_of=coverage_of)
    assert lead == pytest.approx(1 - out[1].score / out[0].score) and lead > 0.5



def test_the_cosine_lead_is_the_best_hits_distance_in_meaning_from_every_other_text():
    """``cosine_lead``: the best hit's cosine minus the best other cosine in the vector leg's own list
    (not the fused second's, nor only the hits returned), negative when another text is closer, 1.0
    when the leg found no other, 0.0 without the vector leg; ``limit=1`` reads it as ``limit=10``."""
    legs = {"bm25": lambda n: [(1, 10.0), (2, 2.0)][:n], "vector": lambda n: [(3, 0.6), (1, 0.5), (2, 0.45)][:n]}
    evidence = {"alpha": 0.78, "cos_floor": 0.1, "power": 3.0}
    coverage_of = lambda keys: ({1: 1.0, 2: 0.5}, ())  # noqa: E731
    for limit in (1, 10):
        out, _, closer = engine.rank_with_lead(legs, depth=20, limit=limit, evidence=evidence, coverage_of=coverage_of)
        assert out[0].key == 1 and closer == pytest.approx(0.5 - 0.6)  # key 3 is closer in meaning
    semantic = {"vector": lambda n: [(3, 0.6), (1, 0.5), (2, 0.45)][:n]}
    for limit in (1, 10):
        assert engine.rank_with_lead(semantic, depth=20, limit=limit)[2] == pytest.approx(0.1)
    assert engine.rank_with_lead({"vector": lambda n: [(3, 0.6)][:n]}, depth=20, limit=10)[2] == 1.0
    assert engine.rank_with_lead({"bm25": lambda n: [(1, 3.0), (2, 1.0)][:n]}, depth=20, limit=10)[2] == 0.0
    rrf = engine.rank_with_lead(legs, depth=20, limit=10)
    assert rrf[2] == pytest.approx(rrf[0][0].legs["vector"][1] - max(
        cos for key, cos in [(3, 0.6), (1, 0.5), (2, 0.45)] if key != rrf[0][0].key))

def test_lexical_legs_fuse_by_weighted_rrf_even_when_evidence_settings_are_given():
    legs = {"keyword": lambda n: [(1, 5.0), (2, 4.0)], "bm25": lambda n: [(1, 3.0)]}
    settings = {"alpha": 0.5, "cos_floor": 0.0, "power": 1.0}
    out = engine.rank(legs, depth=10, limit=10, rrf_k=10, weights={"keyword": 2.0},
                      evidence=settings, coverage_of=lambda keys: ({1: 1.0, 2: 0.0}, frozenset()))
    assert [c.key for c in out] == [1, 2]
    assert out[0].score == pytest.approx(2 / 11 + 1 / 11) and out[1].score == pytest.approx(2 / 12)


def test_with_the_vector_leg_evidence_settings_fuse_on_coverage_and_cosine():
    seen = []
    legs = {"keyword": lambda n: [(1, 5.0)], "vector": lambda n: [(2, 0.9), (1, 0.2)]}
    settings = {"alpha": 0.5, "cos_floor": 0.0, "power": 1.0}
    out = engine.rank(legs, depth=10, limit=10, evidence=settings,
                      coverage_of=lambda keys: seen.append(keys) or ({1: 1.0}, frozenset()))
    assert seen == [[1, 2]]  # every candidate of every leg, once, in first-seen order
    assert [c.key for c in out] == [1, 2]
    assert out[0].score == pytest.approx(0.5 * 1.0 + 0.5 * 0.2) and out[1].score == pytest.approx(0.5 * 0.9)
    # a key named lone (one of several query terms) keeps fusion.LONE_TERM_WEIGHT of its lexical evidence
    lone = engine.rank(legs, depth=10, limit=10, evidence=settings, coverage_of=lambda keys: ({1: 1.0}, {1}))
    assert lone[0].key == 2 and lone[1].score == pytest.approx(0.5 * 1.0 * fusion.LONE_TERM_WEIGHT + 0.5 * 0.2)
    rrf = engine.rank(legs, depth=10, limit=10, rrf_k=10, coverage_of=lambda keys: ({1: 1.0}, frozenset()))
    assert rrf[0].score == pytest.approx(1 / 11 + 1 / 12)  # without evidence settings: RRF


def _cand(**legs):
    return engine.Candidate(key=1, score=1.0, legs=legs)


def test_matched_leg_names_the_legs_that_found_the_hit():
    assert engine.explain(_cand(keyword=(1, 2.0)), ["x"], "x").matched_leg == "lexical"
    assert engine.explain(_cand(vector=(1, 0.9)), ["x"], "x").matched_leg == "semantic"
    assert engine.explain(_cand(bm25=(1, 2.0), vector=(1, 0.9)), ["x"], "x").matched_leg == "both"


def test_match_terms_show_what_the_query_wrote():
    text = "we run the deploy daily"
    assert engine.explain(_cand(bm25=(1, 1.0)), ["run", "deploy", "zzz"], text).match_terms == ["run", "deploy"]
    shown = {"run": "running"}  # a term the map lacks is shown as itself
    assert engine.explain(_cand(bm25=(1, 1.0)), ["run", "deploy"], text, shown).match_terms == ["running", "deploy"]


def test_the_label_sees_the_vector_leg_only_when_it_ran():
    text = "auth port"
    lexical = _cand(bm25=(1, 1.0))
    assert engine.explain(lexical, ["auth", "port"], text).relevance == "high"  # every term, no vector leg
    # the vector leg ran and did not rank it: cosine 0, so every term is not enough for high
    assert engine.explain(_cand(bm25=(1, 1.0)), ["auth", "port"], text, vector_ran=True).relevance == "medium"
    assert engine.explain(_cand(vector=(1, HIGH_COSINE_ALONE)), ["zzz"], text).relevance == "high"
    moderate = (HIGH_COSINE + HIGH_COSINE_ALONE) / 2  # high only with the rare words: coverage defaults to none
    assert engine.explain(_cand(vector=(1, moderate)), ["auth"], text).relevance == "medium"
    assert engine.explain(_cand(vector=(1, moderate)), ["auth"], text, coverage=1.0).relevance == "high"


def test_near_top_uses_the_result_best_score_or_the_hit_own():
    assert engine.explain(_cand(bm25=(1, 1.0)), ["auth", "port"], "auth port", top_score=10.0).relevance == "medium"
    assert engine.explain(_cand(bm25=(1, 1.0)), ["auth", "port"], "auth port", top_score=1.0).relevance == "high"


def test_no_terms_is_no_share_and_the_snippet_follows_the_matches():
    assert engine.explain(_cand(bm25=(1, 1.0)), [], "anything at all").relevance == "low"
    body = "filler " * 80 + "the auth service listens on port 8443 " + "padding " * 80
    snippet = engine.explain(_cand(bm25=(1, 1.0)), ["auth"], body).snippet
    assert snippet.startswith("…") and "auth service" in snippet
