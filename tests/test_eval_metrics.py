"""Metrics from ir-measures pinned to values worked out by hand on a tiny run."""

from __future__ import annotations

import math

import pytest

from kenning.eval.metrics import METRICS, evaluate, per_query

QRELS = {
    "q1": {"d1": 2, "d2": 1},  # graded
    "q2": {"d3": 1},           # its run is empty
    "q3": {"d9": 1},           # found only at rank 11
}
RUN = {
    "q1": ["x", "d2", "d1"],
    "q3": [f"junk{i}" for i in range(10)] + ["d9"],
}


def test_per_query_values_computed_by_hand():
    table = per_query(QRELS, RUN, ["q1", "q2", "q3"])
    assert set(table) == set(METRICS)
    # nDCG@10 with gains 2^rel - 1: d2 (gain 1) at rank 2, d1 (gain 3) at rank 3
    dcg = 1 / math.log2(3) + 3 / math.log2(4)
    ideal = 3 / math.log2(2) + 1 / math.log2(3)
    assert table["nDCG@10"]["q1"] == pytest.approx(dcg / ideal)  # 0.58688
    assert table["MRR@10"]["q1"] == pytest.approx(0.5)
    assert table["R@10"]["q1"] == pytest.approx(1.0)
    # an empty answer is a miss, not a query left out
    assert all(table[m]["q2"] == 0.0 for m in METRICS)
    # rank 11: outside every @10 measure, inside R@100
    assert table["R@10"]["q3"] == 0.0 and table["MRR@10"]["q3"] == 0.0 and table["nDCG@10"]["q3"] == 0.0
    assert table["R@100"]["q3"] == 1.0


def test_means_over_the_given_queries():
    means = evaluate(QRELS, RUN, ["q1", "q2", "q3"])
    assert means["nDCG@10"] == pytest.approx(0.586883 / 3, abs=1e-6)
    assert means["R@10"] == pytest.approx(1 / 3)
    assert means["R@100"] == pytest.approx(2 / 3)
    assert means["MRR@10"] == pytest.approx(0.5 / 3)


def test_rank_order_is_kept_as_given():
    # trec_eval would reorder equal scores by doc id; ranks must stay exactly as returned
    table = per_query({"q": {"a": 1}}, {"q": ["z", "a"]}, ["q"])
    assert table["MRR@10"]["q"] == pytest.approx(0.5)


def test_binary_gains_equal_trec_eval_linear_gains():
    table = per_query({"q": {"a": 1, "b": 1}}, {"q": ["b", "x", "a"]}, ["q"])
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert table["nDCG@10"]["q"] == pytest.approx(expected)
