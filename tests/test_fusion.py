import pytest

from kenning.retrieval.fusion import rrf


def test_rrf_values_by_hand():
    fused = rrf({"bm25": [(10, 7.0), (20, 5.0)], "vector": [(20, 0.9), (30, 0.8), (10, 0.7)]}, k=60)
    scores = {f.key: f.score for f in fused}
    assert scores[10] == 1 / (60 + 1) + 1 / (60 + 3)
    assert scores[20] == 1 / (60 + 2) + 1 / (60 + 1)
    assert scores[30] == 1 / (60 + 2)
    assert [f.key for f in fused] == [20, 10, 30]
    assert fused[1].legs == {"bm25": (1, 7.0), "vector": (3, 0.7)}


def test_weights_scale_each_leg():
    fused = rrf({"a": [(1, 1.0)], "b": [(2, 1.0)]}, k=60, weights={"a": 0.5, "b": 2.0})
    assert [f.key for f in fused] == [2, 1]
    assert fused[0].score == 2.0 / 61 and fused[1].score == 0.5 / 61


def test_ties_break_by_best_rank_then_key():
    fused = rrf({"a": [(5, 1.0), (3, 0.5)], "b": [(3, 1.0), (5, 0.5)]}, k=60)
    assert fused[0].score == fused[1].score
    assert [f.key for f in fused] == [3, 5]


def test_an_equal_score_goes_to_the_better_best_rank_before_the_smaller_key():
    # k=0: ranks (2, 6) and (3, 3) both score 1/2 + 1/6 == 1/3 + 1/3 exactly; key 9 has the better best rank
    fused = rrf({"a": [(100, 1.0), (9, 0.9), (2, 0.8), (101, 0.7), (102, 0.6), (103, 0.5)],
                 "b": [(104, 1.0), (105, 0.9), (2, 0.8), (106, 0.7), (107, 0.6), (9, 0.5)]}, k=0)
    by_key = {f.key: f for f in fused}
    assert by_key[9].score == by_key[2].score
    assert [f.key for f in fused][:4] == [100, 104, 9, 2]


def test_empty_rankings():
    assert rrf({}) == [] and rrf({"a": []}) == []


def test_evidence_fusion_by_hand():
    from kenning.retrieval.fusion import evidence

    rankings = {"bm25": [(1, 9.0), (2, 4.0)], "vector": [(3, 0.82), (1, 0.46)]}
    coverage = {1: 1.0, 2: 0.5, 3: 0.0}
    fused = evidence(rankings, coverage, alpha=0.45, cos_floor=0.1, power=2.0, bm25_share=0.0)
    scores = {f.key: f.score for f in fused}
    assert scores[1] == pytest.approx(0.45 * 1.0 + 0.55 * (0.46 - 0.1) / 0.9)
    assert scores[2] == pytest.approx(0.45 * 0.25)
    assert scores[3] == pytest.approx(0.55 * (0.82 - 0.1) / 0.9)
    assert [f.key for f in fused] == [1, 3, 2]
    assert fused[0].legs == {"bm25": (1, 9.0), "vector": (2, 0.46)}


def test_bm25_decides_among_texts_of_equal_coverage():
    """Same coverage, no vector evidence: the text BM25 scores higher (term frequency, length) wins,
    by its ratio to the query's best BM25 score; a text outside BM25's list keeps 1 - share."""
    from kenning.retrieval.fusion import evidence

    rankings = {"bm25": [(1, 8.0), (2, 2.0)], "vector": [(4, 0.3)]}
    fused = evidence(rankings, {1: 0.5, 2: 0.5, 3: 0.5, 4: 0.0}, alpha=0.5, cos_floor=0.2, power=1.0, bm25_share=0.8)
    scores = {f.key: f.score for f in fused}
    assert scores[1] == pytest.approx(0.5 * 0.5 * (0.2 + 0.8 * 1.0))
    assert scores[2] == pytest.approx(0.5 * 0.5 * (0.2 + 0.8 * 0.25))
    assert scores[4] == pytest.approx(0.5 * (0.3 - 0.2) / 0.8)
    assert 3 not in scores  # only the legs' candidates are fused
    assert [f.key for f in fused] == [1, 2, 4]


def test_evidence_ignores_cosines_below_the_floor():
    from kenning.retrieval.fusion import evidence

    fused = evidence({"vector": [(7, 0.05)], "bm25": [(8, 1.0)]}, {8: 0.2}, cos_floor=0.1)
    assert {f.key: f.score for f in fused}[7] == 0.0


def test_a_leg_missing_from_the_weights_counts_once():
    fused = rrf({"a": [(1, 1.0)], "b": [(2, 1.0)]}, k=60, weights={"a": 3.0})
    assert {f.key: f.score for f in fused} == {1: 3.0 / 61, 2: 1.0 / 61}


def test_evidence_defaults_by_hand():
    """alpha 0.78, cosine floor 0.1, coverage cubed, BM25 share 0.5: the values the engine relies on
    when it passes none."""
    from kenning.retrieval.fusion import evidence

    fused = evidence({"bm25": [(1, 5.0), (2, 2.5)], "vector": [(1, 0.6), (3, 0.1)]}, {1: 1.0, 2: 0.5})
    scores = {f.key: f.score for f in fused}
    assert scores[1] == pytest.approx(0.78 * 1.0 + 0.22 * (0.6 - 0.1) / 0.9)
    assert scores[2] == pytest.approx(0.78 * 0.5 ** 3 * (0.5 + 0.5 * 0.5))
    assert scores[3] == 0.0
    assert [f.key for f in fused] == [1, 2, 3]


def test_evidence_without_a_bm25_leg_is_coverage_and_cosine_alone():
    """keyword + vector (no BM25 list): nothing scales the coverage term, by hand."""
    from kenning.retrieval.fusion import evidence

    fused = evidence({"keyword": [(1, 3.0), (2, 1.0)], "vector": [(2, 0.8), (3, 0.55)]}, {1: 0.9, 2: 0.5},
                     alpha=0.6, cos_floor=0.1, power=2.0, bm25_share=0.5)
    scores = {f.key: f.score for f in fused}
    assert scores[1] == pytest.approx(0.6 * 0.9 ** 2)
    assert scores[2] == pytest.approx(0.6 * 0.5 ** 2 + 0.4 * (0.8 - 0.1) / 0.9)
    assert scores[3] == pytest.approx(0.4 * (0.55 - 0.1) / 0.9)
    assert [f.key for f in fused] == [1, 2, 3]
    assert evidence({}, {}) == [] and evidence({"vector": []}, {}) == []


def test_evidence_scales_by_a_best_bm25_below_one_and_counts_a_text_outside_bm25_as_zero():
    """BM25 scores under 1 still scale; a keyword-only candidate keeps only the (1 - share) part."""
    from kenning.retrieval.fusion import evidence

    fused = evidence({"bm25": [(1, 0.5), (2, 0.25)], "keyword": [(3, 2.0)]}, {1: 1.0, 2: 1.0, 3: 1.0},
                     alpha=1.0, cos_floor=0.1, power=1.0, bm25_share=0.4)
    scores = {f.key: f.score for f in fused}
    assert scores == pytest.approx({1: 1.0, 2: 0.6 + 0.4 * 0.5, 3: 0.6})
    assert [f.key for f in fused] == [1, 2, 3]


def test_evidence_with_a_limit_is_the_head_of_the_full_order():
    """Random legs with many exact ties (few distinct scores): the limited answer is the full sort's head."""
    import random

    from kenning.retrieval.fusion import evidence

    rng = random.Random(5)
    for _ in range(200):
        keys = rng.sample(range(60), rng.randint(0, 40))
        legs = {leg: [(k, rng.choice([0.2, 0.5, 0.9])) for k in rng.sample(keys, rng.randint(0, len(keys)))]
                for leg in ("keyword", "bm25", "vector")}
        coverage = {k: rng.choice([0.0, 0.5, 1.0]) for k in keys}
        full = evidence(legs, coverage)
        for limit in (0, 1, 5, len(full), len(full) + 3):
            head = evidence(legs, coverage, limit=limit)
            assert [(f.key, f.score, f.legs) for f in head] == [(f.key, f.score, f.legs) for f in full[:limit]]


def test_evidence_equals_a_plain_reference_on_random_legs():
    """The formula written out per candidate, every candidate sorted by (-score, best rank in any
    leg, key), legs listed in the rankings' order: the same keys, floats and legs, with or without
    a limit (a candidate missing from bm25 or vector counts 0 there; its coverage defaults to 0)."""
    import random

    from kenning.retrieval.fusion import evidence

    def reference(rankings, coverage, alpha=0.78, cos_floor=0.1, power=3.0, bm25_share=0.5):
        legs_of = {}
        for leg, ranking in rankings.items():
            for rank, (key, native) in enumerate(ranking, start=1):
                legs_of.setdefault(key, {})[leg] = (rank, native)
        best_bm25 = max((s for _, s in rankings.get("bm25", [])), default=0.0)
        rows = []
        for key, legs in legs_of.items():
            lexical = coverage.get(key, 0.0) ** power
            if best_bm25 > 0:
                lexical *= (1.0 - bm25_share) + bm25_share * (legs["bm25"][1] / best_bm25 if "bm25" in legs else 0.0)
            cos = legs["vector"][1] if "vector" in legs else None
            if cos is not None and coverage.get(key, 0.0) < 0.7 and cos < 0.4:  # part of the query, far in meaning
                lexical *= (max(0.0, cos) / 0.4) ** power
            semantic = max(0.0, cos - cos_floor) / max(1e-9, 1.0 - cos_floor) if cos is not None else 0.0
            rows.append((-(alpha * lexical + (1.0 - alpha) * semantic), min(r for r, _ in legs.values()), key, legs))
        rows.sort(key=lambda row: row[:3])
        return [(key, -neg, legs, list(legs)) for neg, _, key, legs in rows]

    rng = random.Random(17)
    for _ in range(300):
        keys = rng.sample(range(80), rng.randint(0, 50))
        rankings = {leg: [(k, rng.choice([0.05, 0.3, 0.6, 0.9])) for k in rng.sample(keys, rng.randint(0, len(keys)))]
                    for leg in rng.sample(["keyword", "bm25", "vector"], rng.randint(1, 3))}
        coverage = {k: rng.choice([0.0, 0.25, 0.5, 1.0]) for k in keys if rng.random() < 0.9}
        expected = reference(rankings, coverage)
        for limit in (None, 0, 1, 2, 10, len(expected) + 1):
            got = [(f.key, f.score, f.legs, list(f.legs)) for f in evidence(rankings, coverage, limit=limit)]
            assert got == expected[:limit]


def test_evidence_breaks_equal_scores_by_the_best_rank_in_any_leg_then_the_key():
    """No coverage, cosines under the floor: every score is 0, so the order is the tie-break alone.
    Key 5 is 2nd in one leg and 1st in another: its best rank (1) ties key 7's, and the smaller key goes first;
    a tie-break on the first leg's rank ([7, 5, 9]) or the last one's ([5, 9, 7]) would differ."""
    from kenning.retrieval.fusion import evidence

    rankings = {"keyword": [(7, 1.0), (5, 1.0)], "vector": [(5, 0.05), (9, 0.05), (7, 0.05)]}
    for limit in (None, 2):
        fused = evidence(rankings, {}, limit=limit)
        assert {f.score for f in fused} == {0.0}
        assert [f.key for f in fused] == [5, 7, 9][:limit]


def test_one_shared_word_of_several_is_weak_lexical_evidence():
    """A text holding one of the query's several terms (``lone``) keeps LONE_TERM_WEIGHT of its
    lexical evidence; the same coverage from the other text counts in full (the far-in-meaning
    discount switched off, ``far_cosine=0``: it is the next test's)."""
    from kenning.retrieval.fusion import LONE_TERM_WEIGHT, evidence

    rankings = {"bm25": [(1, 4.0), (2, 4.0)], "vector": [(3, 0.5), (1, 0.2), (2, 0.2)]}
    coverage = {1: 0.5, 2: 0.5, 3: 0.0}
    fused = evidence(rankings, coverage, alpha=0.8, cos_floor=0.1, power=3.0, bm25_share=0.5, lone={2}, far_cosine=0.0)
    scores = {f.key: f.score for f in fused}
    semantic = 0.2 * (0.2 - 0.1) / 0.9
    assert scores[1] == pytest.approx(0.8 * 0.5**3 + semantic)
    assert scores[2] == pytest.approx(0.8 * 0.5**3 * LONE_TERM_WEIGHT + semantic)
    assert scores[3] == pytest.approx(0.2 * (0.5 - 0.1) / 0.9)
    assert [f.key for f in fused] == [1, 3, 2]
    assert [f.key for f in evidence(rankings, coverage, alpha=0.8, cos_floor=0.1, power=3.0, bm25_share=0.5,
                                    far_cosine=0.0)] == [1, 2, 3]


def test_part_of_the_query_far_in_meaning_is_weak_lexical_evidence():
    """A text holding less than PARTIAL_COVERAGE of the query at a cosine below FAR_COSINE keeps
    (cosine / FAR_COSINE) ** power of its lexical evidence: memval3's "How late can a wheelchair user
    request help boarding?" - a holiday memory sharing "late" and "help" (coverage .43, cosine .29)
    came before the answer sharing no word (cosine .48). A text holding most of the query, or one the
    vector leg did not return (no cosine to judge by), keeps its evidence in full."""
    from kenning.retrieval.fusion import FAR_COSINE, PARTIAL_COVERAGE, evidence

    assert (PARTIAL_COVERAGE, FAR_COSINE) == (0.7, 0.4)
    rankings = {"bm25": [(1, 3.0), (4, 3.0), (5, 3.0)], "vector": [(2, 0.48), (1, 0.29), (4, 0.29)]}
    coverage = {1: 0.43, 2: 0.0, 4: 0.7, 5: 0.43}
    settings = {"alpha": 0.78, "cos_floor": 0.1, "power": 3.0, "bm25_share": 0.5}
    scores = {f.key: f.score for f in evidence(rankings, coverage, **settings)}
    far = 0.22 * (0.29 - 0.1) / 0.9
    assert scores[1] == pytest.approx(0.78 * 0.43**3 * (0.29 / 0.4) ** 3 + far)
    assert scores[2] == pytest.approx(0.22 * (0.48 - 0.1) / 0.9)
    assert scores[4] == pytest.approx(0.78 * 0.7**3 + far)  # most of the query: in full
    assert scores[5] == pytest.approx(0.78 * 0.43**3)  # not in the vector leg's list: in full
    assert [f.key for f in evidence(rankings, coverage, **settings)][:2] == [4, 2]
    assert [f.key for f in evidence(rankings, coverage, **settings, far_cosine=0.0)][:3] == [4, 1, 2]
