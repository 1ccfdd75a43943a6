"""The relevance gate's judge: what it flags, with hand-made reports (the gate itself is test_relevance.py)."""

from kenning.eval.gate import LEXICAL_TOLERANCE, SEMANTIC_TOLERANCE, judge


def _row(ndcg=0.5, empty=0.2, high=0.1, cat_ndcg=0.6, n=20):
    block = {"queries": 15, "empty": empty, "top_high": high}
    return {"nDCG@10": ndcg, "R@10": 0.5, "R@100": 0.9, "MRR@10": 0.5, "unanswerable": block,
            "by_category": {"paraphrase": {"queries": n, "nDCG@10": cat_ndcg}, "none": {"queries": 15, "unanswerable": block}}}


def _report(**variants):
    return {"queries": 80, "modes": variants}


def test_identical_runs_pass():
    assert judge(_report(bm25=_row(), hybrid=_row()), _report(bm25=_row(), hybrid=_row())) == []


def test_lexical_variants_are_held_to_float_noise_and_semantic_ones_to_encoder_noise():
    drop = 2 * LEXICAL_TOLERANCE
    assert judge(_report(bm25=_row(0.5 - drop)), _report(bm25=_row())) != []
    assert judge(_report(hybrid=_row(0.5 - drop)), _report(hybrid=_row())) == []
    assert judge(_report(hybrid=_row(0.5 - 2 * SEMANTIC_TOLERANCE)), _report(hybrid=_row())) != []


def test_a_category_may_not_lose_a_hit_even_when_the_mean_holds():
    # 20 queries: one lost hit moves the category mean by 0.05 > 1 / (2 * 20)
    problems = judge(_report(hybrid=_row(cat_ndcg=0.55)), _report(hybrid=_row()))
    assert any("[paraphrase] nDCG@10" in p for p in problems)
    assert judge(_report(hybrid=_row(cat_ndcg=0.59)), _report(hybrid=_row())) == []


def test_unanswerable_block_may_not_move_by_one_query():
    better_looking = _report(hybrid=_row(ndcg=0.6, empty=0.2 - 1 / 15))  # more hits returned, nDCG up
    assert any("came back empty" in p for p in judge(better_looking, _report(hybrid=_row())))
    assert any("top hit high" in p for p in judge(_report(hybrid=_row(high=0.1 + 1 / 15)), _report(hybrid=_row())))


def test_missing_variant_and_changed_collection_fail():
    problems = judge({"queries": 81, "modes": {}}, _report(bm25=_row()))
    assert any(p.startswith("queries: 81 here, 80 in the baseline") for p in problems)
    assert any("bm25: not run" in p for p in problems)


def test_a_case_run_with_other_settings_fails():
    """The same figures from another depth, grouping or query limit are another measurement."""
    base = {**_report(bm25=_row()), "depth": 100, "group_sep": ":"}
    problems = judge({**_report(bm25=_row()), "depth": 10, "group_sep": None, "limit_queries": 40}, base)
    assert [p.split(":")[0] for p in problems] == ["--group-sep", "--depth", "--limit-queries"]


def test_record_checks_every_collection_folder_before_rewriting_any_baseline(tmp_path):
    """`record-baselines builtin med --data WRONG` re-recorded builtin, then stopped at med, and told
    the user to set KENNING_EVAL_DATA though they had passed --data."""
    import pytest

    from kenning.errors import InvalidInput
    from kenning.eval.gate import record

    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InvalidInput, match=r"eval data .*nope/med is missing: pass --data to the folder holding med/"):
        record(["builtin", "med"], data=tmp_path / "nope", out=out)
    assert list(out.iterdir()) == []
