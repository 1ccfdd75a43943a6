"""When eval reports may be compared: `eval run`'s baseline verdict and `eval compare` hold back when
the collection or a setting that changes the figures differs, and say which."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kenning.eval.commands import BASELINES, _what_ran, eval_app
from kenning.eval.comparison import compare, differences

from test_eval_datasets import write_collection

runner = CliRunner()


@pytest.fixture
def notes(tmp_path):
    """Five memories and three questions, one of them without an answer."""
    return write_collection(
        tmp_path / "notes",
        [
            {"_id": "a:1", "title": "", "text": "the auth service listens on port 8443"},
            {"_id": "a:2", "title": "", "text": "deploys happen on tuesdays after the standup"},
            {"_id": "b:1", "title": "", "text": "the billing service moved to port 9000"},
            {"_id": "b:2", "title": "", "text": "lunch is at noon in the big room"},
            {"_id": "b:3", "title": "", "text": "the auth tokens expire after an hour"},
        ],
        [
            {"_id": "a:q1", "text": "auth service port"},
            {"_id": "b:q1", "text": "when is lunch"},
            {"_id": "a:q2", "text": "what colour is the sky"},
        ],
        [("a:q1", "a:1", 1), ("b:q1", "b:2", 1)],
    )


@pytest.fixture
def recorded(notes, tmp_path):
    """A baseline of the whole collection with the defaults."""
    path = tmp_path / "base.json"
    result = runner.invoke(eval_app, ["run", str(notes), "--modes", "bm25", "--out", str(path), "--baseline", "none"])
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.parametrize("option, said", [
    (["--limit-queries", "1"], "--limit-queries: 1 here, none in the baseline"),
    (["--depth", "10"], "--depth: 10 here, 100 in the baseline"),
    (["--group-sep", ":"], "--group-sep: ':' here, none in the baseline"),
])
def test_a_run_with_other_settings_gets_no_verdict_and_exit_0(notes, recorded, option, said):
    result = runner.invoke(eval_app, ["run", str(notes), "--modes", "bm25", "--baseline", str(recorded), *option])
    assert result.exit_code == 0, result.output
    assert f"no verdict: this run's settings differ from the baseline {recorded}: " in result.stdout
    assert said in result.stdout
    assert "--baseline none" in result.stdout
    assert "verdict: WORSE" not in result.stdout and "as good as" not in result.stdout


def test_the_same_settings_get_a_verdict(notes, recorded):
    result = runner.invoke(eval_app, ["run", str(notes), "--modes", "bm25", "--baseline", str(recorded)])
    assert result.exit_code == 0, result.output
    assert f"verdict: as good as the baseline {recorded}" in result.stdout


def test_json_says_what_differs_and_judges_nothing(notes, recorded):
    result = runner.invoke(eval_app, ["run", str(notes), "--modes", "bm25", "--baseline", str(recorded),
                                      "--limit-queries", "2", "--json"])
    verdict = json.loads(result.stdout)["baseline"]
    assert verdict["differences"] == [{"setting": "queries", "report": 2, "baseline": 3},
                                      {"setting": "--limit-queries", "report": 2, "baseline": None}]
    assert verdict["regressions"] == [] and verdict["modes_compared"] == []


def test_a_folder_named_like_a_shipped_set_is_not_judged_by_its_baseline(tmp_path):
    """The default baseline is chosen by name; the counts tell another collection apart."""
    folder = write_collection(tmp_path / "memval", [{"_id": "d1", "text": "the auth port is 8443"},
                                                    {"_id": "d2", "text": "lunch is at noon"}],
                              [{"_id": "q1", "text": "auth port"}], [("q1", "d1", 1)])
    result = runner.invoke(eval_app, ["run", str(folder), "--modes", "bm25"])
    assert result.exit_code == 0, result.output
    assert f"differ from the baseline {BASELINES / 'memval.json'}: documents: 2 here, 400 in the baseline" in result.stdout
    assert "the baseline holds another collection of that name" in result.stdout
    assert "\nverdict:" not in result.stdout


def test_compare_refuses_reports_of_other_collections_or_settings(notes, recorded, tmp_path):
    other = write_collection(tmp_path / "other", [{"_id": "d1", "text": "the auth port is 8443"}],
                             [{"_id": "q1", "text": "auth port"}], [("q1", "d1", 1)])
    for args, said in (([str(other)], "collection: 'other' in the report, 'notes' in the baseline"),
                       ([str(notes), "--depth", "10"], "--depth: 10 in the report, 100 in the baseline")):
        report = tmp_path / "report.json"
        ran = runner.invoke(eval_app, ["run", *args, "--modes", "bm25", "--out", str(report), "--baseline", "none"])
        assert ran.exit_code == 0, ran.output
        result = runner.invoke(eval_app, ["compare", str(report), str(recorded)])
        assert result.exit_code == 2 and result.stdout == ""
        assert f"{report} and {recorded} are not comparable: " in result.stderr and said in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_committed_baselines_stay_comparable_and_readable():
    """Old files: every committed baseline compares with itself, and its config still reads
    (model_id and vector_floor_applied, beside the null model / vector_floor of older reports)."""
    for path in sorted(BASELINES.glob("*.json")):
        baseline = json.loads(path.read_text(encoding="utf-8"))
        assert differences(baseline, baseline) == [], path
        assert compare(baseline, baseline)["regressions"] == []
        assert f"model {baseline['config']['model_id']}, vector no-match floor" in _what_ran(baseline)
        assert "(a memory opening with a timestamp is ranked by its text without it;" in _what_ran(baseline)


def test_a_setting_an_older_report_does_not_record_is_not_held_against_it():
    old = {"dataset": "x", "modes": {"bm25": {"nDCG@10": 0.5}}}
    new = {**old, "documents": 5, "queries": 3, "group_sep": None, "depth": 100}
    assert differences(new, old) == [] and differences(old, new) == []
    assert differences({**new, "limit_queries": 2}, old) == [{"setting": "--limit-queries", "report": 2, "baseline": None}]


def test_a_mode_without_its_semantic_leg_is_not_compared_with_one_that_had_it():
    full = {"dataset": "x", "modes": {"hybrid": {"nDCG@10": 0.8, "legs_run": ["keyword", "bm25", "vector"]}}}
    lexical = {"dataset": "x", "modes": {"hybrid": {"nDCG@10": 0.6, "legs_run": ["keyword", "bm25"],
                                                    "degraded": "embeddings extra missing"}}}
    result = compare(lexical, full)
    assert result["differences"] == [{"setting": "hybrid mode's semantic leg", "report": "not run", "baseline": "run"}]
    assert result["regressions"] == [] and result["modes"] == {}


@pytest.mark.parametrize("damage, said", [
    (lambda r: r["modes"]["bm25"].update({"nDCG@10": "0.9"}), "bm25 nDCG@10 is '0.9', not a number"),
    (lambda r: r["modes"]["bm25"].update({"latency_ms_p50": None, "R@10": [1]}), "bm25 R@10 is [1], not a number"),
    (lambda r: r["modes"].update({"bm25": [0.9]}), "mode 'bm25' is not an object"),
    (lambda r: r.update({"config": "x"}), "'config' is not an object"),
])
def test_a_damaged_baseline_is_refused_in_one_line_not_a_traceback(recorded, tmp_path, damage, said):
    """A hand-edited baseline whose metric is text used to end `eval compare` in a TypeError
    traceback (float - str) half-way through the table; `eval run --baseline` the same."""
    report = json.loads(recorded.read_text(encoding="utf-8"))
    damage(report)
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(report), encoding="utf-8")
    for args in (["compare", str(recorded), str(damaged)],
                 ["run", str(recorded.parent / "notes"), "--modes", "bm25", "--baseline", str(damaged)]):
        result = runner.invoke(eval_app, args)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == (f"error: baseline {damaged}: damaged eval report ({said}); make it again with "
                                         "`kenning eval run --out` (a committed baseline: `kenning eval "
                                         "record-baselines`, or restore it from git)")


def test_the_committed_baselines_read_as_undamaged():
    from kenning.eval.commands import _read_json

    for path in sorted(BASELINES.glob("*.json")):
        assert _read_json(path, "baseline")["modes"]


def test_compare_with_no_mode_in_common_is_refused_not_passed(notes, recorded, tmp_path):
    """A keyword-only report against a bm25 baseline diffed nothing and still said 'no regression',
    exit 0: a gate passed on no evidence."""
    report = tmp_path / "keyword.json"
    ran = runner.invoke(eval_app, ["run", str(notes), "--modes", "keyword", "--out", str(report), "--baseline", "none"])
    assert ran.exit_code == 0, ran.output
    for extra in ([], ["--json"]):
        result = runner.invoke(eval_app, ["compare", str(report), str(recorded), *extra])
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr.strip() == (f"error: {report} and {recorded} have no mode in common (the report: keyword; "
                                         "the baseline: bm25); nothing compared (run the baseline's modes with --modes)")
    assert runner.invoke(eval_app, ["compare", str(recorded), str(recorded)]).exit_code == 0


def test_an_edited_judgment_with_the_same_counts_is_another_collection_not_a_regression(notes, recorded, tmp_path):
    """Moving a judgment to another document kept every count, so `eval compare` diffed the two
    runs and called the engine WORSE (exit 1) for a change in the qrels; now the contents' hash
    differs and the comparison is refused, naming it."""
    qrels = notes / "qrels.tsv"
    qrels.write_text(qrels.read_text(encoding="utf-8").replace("b:q1\tb:2", "b:q1\tb:3"), encoding="utf-8")
    report = tmp_path / "edited.json"
    ran = runner.invoke(eval_app, ["run", str(notes), "--modes", "bm25", "--out", str(report), "--baseline", "none"])
    assert ran.exit_code == 0, ran.output
    edited, base = (json.loads(p.read_text(encoding="utf-8")) for p in (report, recorded))
    assert (edited["queries"], edited["documents"]) == (base["queries"], base["documents"])
    assert edited["contents"] != base["contents"]
    result = runner.invoke(eval_app, ["compare", str(report), str(recorded)])
    assert result.exit_code == 2, result.output
    assert (f"not comparable: collection contents: {edited['contents']} in the report, {base['contents']} "
            "in the baseline") in result.stderr
    verdict = runner.invoke(eval_app, ["run", str(notes), "--modes", "bm25", "--baseline", str(recorded)])
    assert "no verdict: this run's settings differ" in verdict.stdout and "collection contents:" in verdict.stdout
    # the same contents compare as before
    again = tmp_path / "again.json"
    runner.invoke(eval_app, ["run", str(notes), "--modes", "bm25", "--out", str(again), "--baseline", "none"])
    assert runner.invoke(eval_app, ["compare", str(again), str(report)]).exit_code == 0
