"""The harness through the real store: grouping, unanswerable queries, compare, tuning and the CLI."""

from __future__ import annotations

import io
import json

import pytest
from typer.testing import CliRunner

import kenning
from kenning.errors import InvalidInput
from kenning.eval.commands import eval_app
from kenning.eval.datasets import load_dataset
from kenning.eval.comparison import compare
from kenning.eval.harness import run_eval
from kenning.eval.tuning import TUNABLE, tune, write_config

from test_eval_datasets import write_collection

runner = CliRunner()


@pytest.fixture
def grouped(tmp_path):
    """Two conversations; the same words occur in both, so only grouping keeps them apart."""
    return write_collection(
        tmp_path / "grouped",
        [
            {"_id": "a:1", "title": "", "text": "the auth service listens on port 8443"},
            {"_id": "a:2", "title": "", "text": "deploys happen on tuesdays"},
            {"_id": "b:1", "title": "", "text": "the auth service of project b now uses port 9000 instead"},
            {"_id": "b:2", "title": "", "text": "lunch is at noon"},
            {"_id": "b:3", "title": "", "text": ""},
        ],
        [
            {"_id": "a:q1", "text": "auth service port", "metadata": {"category": 1}},
            {"_id": "b:q1", "text": "auth port", "metadata": {"category": 2}},
            {"_id": "a:q2", "text": "what colour is the sky", "metadata": {"category": 2}},
        ],
        [("a:q1", "a:1", 1), ("b:q1", "b:1", 1)],
    )


def test_grouping_restricts_each_query_to_its_own_documents(grouped):
    flat = run_eval(grouped, modes="bm25", progress=False)
    per_group = run_eval(grouped, modes="bm25", group_sep=":", progress=False)
    # across groups the shorter a:1 outranks b:1 for "auth port"; within group b it is alone
    assert flat["modes"]["bm25"]["MRR@10"] == pytest.approx(0.75)
    assert per_group["modes"]["bm25"]["MRR@10"] == pytest.approx(1.0)
    assert per_group["modes"]["bm25"]["nDCG@10"] == pytest.approx(1.0)


def test_report_shape_unanswerable_and_categories(grouped):
    report = run_eval(grouped, modes=["keyword", "bm25"], group_sep=":", progress=False, reference=["rank-bm25"])
    assert report["dataset"] == "grouped"
    assert report["queries"] == 3
    assert report["skipped_documents"] == 1  # b:3 has no text
    assert set(report["modes"]) == {"keyword", "bm25", "rank-bm25"}
    row = report["modes"]["bm25"]
    for key in ("nDCG@10", "R@10", "R@100", "MRR@10", "latency_ms_p50", "latency_ms_p95"):
        assert isinstance(row[key], float)
    assert row["queries"] == 2  # metrics average over answerable queries
    assert row["legs_run"] == ["bm25"]
    # nothing in group a mentions the sky: the lexical legs come back empty
    assert row["unanswerable"] == {"queries": 1, "empty": 1.0, "top_high": 0.0}
    assert row["by_category"]["1"] == {"queries": 1, "nDCG@10": 1.0, "R@10": 1.0, "R@100": 1.0, "MRR@10": 1.0}
    assert row["by_category"]["2"]["queries"] == 2
    assert row["by_category"]["2"]["unanswerable"]["queries"] == 1
    assert report["modes"]["rank-bm25"]["nDCG@10"] == pytest.approx(1.0)
    json.dumps(report)  # the report is plain JSON


def test_limit_queries_and_bad_arguments(grouped):
    report = run_eval(grouped, modes="bm25", progress=False, limit_queries=1)
    assert report["queries"] == 1 and report["modes"]["bm25"]["queries"] == 1
    with pytest.raises(InvalidInput, match="unknown mode"):
        run_eval(grouped, modes="bm42", progress=False)
    with pytest.raises(InvalidInput, match="unknown reference"):
        run_eval(grouped, modes="bm25", progress=False, reference=["elastic"])


def test_config_overrides_reach_the_engine(grouped):
    report = run_eval(grouped, modes="bm25", progress=False, config_overrides={"bm25_k1": 0.5, "bm25_b": 0.1})
    assert report["config"]["bm25_k1"] == 0.5 and report["config"]["bm25_b"] == 0.1


def test_the_report_names_the_label_rule_in_what_ran(grouped):
    from kenning.eval.commands import _what_ran
    from kenning.retrieval import labels, spelling

    report = run_eval(grouped, modes="bm25", progress=False)
    assert report["config"]["label_rule"] == labels.describe()
    assert f"query spelling: {spelling.describe()}" in _what_ran(report)
    assert f"label_rule {labels.describe()}" in _what_ran(report)
    assert "bm25 leg with feedback rm3: 10 texts, 20 terms, query keeps 0.6" in _what_ran(report)
    assert ("vector leg with feedback rocchio: a question of >= 5 terms moved 0.2 toward its 2 nearest texts, "
            "labelled by its own cosines") in _what_ran(report)
    assert "a text holding < 0.7 of the query at cosine < 0.4 x (cosine/0.4)^power" in _what_ran(report)


def test_the_report_says_which_summing_step_ran(grouped, sums):
    from kenning.eval.commands import _what_ran

    report = run_eval(grouped, modes="bm25", progress=False)
    said = "compiled (retrieval/_postings.c)" if sums == "compiled" else "numpy"
    assert f"lexical sums: {said}" in _what_ran(report)


def test_builtin_lexical_run_matches_the_rank_bm25_reference():
    report = run_eval("builtin", modes="bm25", progress=False, reference=["rank-bm25"])
    engine, reference = report["modes"]["bm25"], report["modes"]["rank-bm25"]
    assert report["queries"] == 80 and engine["queries"] == 65
    assert engine["by_category"]["exact"]["nDCG@10"] > 0.9
    # lexical legs cannot find a paraphrase that shares no token with its target
    assert engine["by_category"]["paraphrase"]["R@100"] == 0.0
    # the same BM25 wherever the query is spelt right; misspelt words the engine respells
    # (retrieval/spelling.py), rank-bm25 takes verbatim
    for category in ("exact", "wordform"):
        assert engine["by_category"][category]["nDCG@10"] == pytest.approx(
            reference["by_category"][category]["nDCG@10"], abs=0.02)
    assert engine["by_category"]["typo"]["nDCG@10"] > reference["by_category"]["typo"]["nDCG@10"] + 0.2


def _report(ndcg: float, mrr: float = 0.5) -> dict:
    return {"dataset": "x", "modes": {"bm25": {"nDCG@10": ndcg, "R@10": 0.5, "R@100": 0.9, "MRR@10": mrr,
                                               "latency_ms_p50": 1.0}}}


def test_compare_flags_only_drops_beyond_tolerance():
    same = compare(_report(0.700), _report(0.700))
    assert same["regressions"] == [] and same["modes"]["bm25"]["nDCG@10"]["diff"] == 0.0
    assert compare(_report(0.696), _report(0.700), tolerance=0.005)["regressions"] == []
    drop = compare(_report(0.690, mrr=0.4), _report(0.700), tolerance=0.005)
    assert {(r["mode"], r["metric"]) for r in drop["regressions"]} == {("bm25", "nDCG@10"), ("bm25", "MRR@10")}
    assert drop["modes"]["bm25"]["nDCG@10"]["diff"] == pytest.approx(-0.01)
    missing = compare({"dataset": "x", "modes": {}}, _report(0.7))
    assert missing["missing_modes"] == ["bm25"] and missing["regressions"] == []


@pytest.mark.slow  # loads the embedding model when the extra is installed
def test_tune_returns_settings_and_writes_them_into_a_store(grouped, tmp_path):
    result = tune([grouped, "builtin"], group_sep=":", progress=False, k1_grid=(0.9, 1.2), b_grid=(0.75,),
                  rrf_k_grid=(20.0, 60.0), keyword_weights=(0.0, 1.0), vector_weights=(1.0, 2.0),
                  alpha_grid=(0.3, 0.6), cos_floor_grid=(0.1,), power_grid=(2.0,))
    best = result["best"]
    assert set(best) == set(TUNABLE)
    assert result["datasets"] == ["grouped", "builtin"]
    # the defaults are scored first, then every grid point they are not already
    default = (result["default"]["bm25_k1"], result["default"]["bm25_b"])
    assert [(r["bm25_k1"], r["bm25_b"]) for r in result["bm25_grid"]] == list(dict.fromkeys([default, (0.9, 0.75), (1.2, 0.75)]))
    if result["semantic"]:  # the sweep's winner is at least as good as the defaults it also scored
        default_row = next(r for r in result["fusion_grid"]
                           if r["fusion"] == "rrf" and r["rrf_k"] == 60.0 and r["weights"] == result["default"]["weights"])
        assert result["fusion_grid"][0]["nDCG@10"] >= default_row["nDCG@10"]
    else:  # without the vector leg hybrid is BM25: there is no fusion to sweep
        assert result["fusion_grid"] == []
    # the defaults compete end to end, so the chosen setting is never worse on average
    assert result["best_score"] >= result["default_score"]
    for figures in result["per_dataset"].values():
        assert {"default", "best", "legs", "sweep_estimate"} <= set(figures)
        if figures["sweep_estimate"] is not None:
            # the sweep's estimate is what hybrid search measures end to end with the same setting
            assert figures["best"]["nDCG@10"] == pytest.approx(figures["sweep_estimate"], abs=0.02)
    written = write_config(tmp_path / "store", best)
    assert written["rrf_k"] == best["rrf_k"]
    with kenning.open_store(tmp_path / "store") as store:
        assert store.config.bm25_k1 == best["bm25_k1"] and store.config.weights == best["weights"]
    with pytest.raises(InvalidInput, match="not a tunable setting"):
        write_config(tmp_path / "store", {"default_mode": "bm25"})


def test_cli_run_json_out_and_plot(grouped, tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    result = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--group-sep", ":", "--json",
                                      "--out", str(out), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["modes"]["bm25"]["nDCG@10"] == 1.0
    assert json.loads(out.read_text()) == printed
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_plot_path_matplotlib_cannot_write_is_refused_before_the_run(grouped, tmp_path):
    result = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--group-sep", ":",
                                      "--plot", str(tmp_path / "r.txt"), "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 2 and "--plot" in result.stderr and ".png" in result.stderr, result.output
    assert not (tmp_path / "r.json").exists()  # refused before the run, not after it


@pytest.mark.parametrize("tolerance", ["nan", "inf", "-0.1"])
def test_cli_compare_refuses_a_tolerance_that_would_pass_every_drop(tmp_path, tolerance):
    base, bad = tmp_path / "base.json", tmp_path / "bad.json"
    base.write_text(json.dumps(_report(0.70)))
    bad.write_text(json.dumps(_report(0.10)))
    result = runner.invoke(eval_app, ["compare", str(bad), str(base), "--tolerance", tolerance])
    assert result.exit_code == 2 and "tolerance" in result.stderr, result.output


def test_cli_tune_refuses_a_write_config_path_with_no_store_before_the_run(grouped, tmp_path):
    typo = tmp_path / "no-such-store"
    result = runner.invoke(eval_app, ["tune", str(grouped), "--group-sep", ":", "--write-config", str(typo)])
    assert result.exit_code == 2 and "no kenning store there" in result.stderr, result.output
    assert not typo.exists()  # a mistyped path starts no second store


def test_cli_table_output(grouped):
    result = runner.invoke(eval_app, ["run", str(grouped), "--modes", "keyword,bm25", "--group-sep", ":"])
    assert result.exit_code == 0, result.output
    assert "nDCG@10" in result.stdout and "keyword" in result.stdout and "unanswerable" in result.stdout


def test_cli_compare_exit_codes(tmp_path):
    base, good, bad = tmp_path / "base.json", tmp_path / "good.json", tmp_path / "bad.json"
    base.write_text(json.dumps(_report(0.70)))
    good.write_text(json.dumps(_report(0.71)))
    bad.write_text(json.dumps(_report(0.60)))
    assert runner.invoke(eval_app, ["compare", str(good), str(base)]).exit_code == 0
    result = runner.invoke(eval_app, ["compare", str(bad), str(base)])
    assert result.exit_code == 1 and "regression" in result.stdout
    assert runner.invoke(eval_app, ["compare", str(bad), str(base), "--tolerance", "0.2"]).exit_code == 0


def test_cli_errors_are_one_line_with_exit_2(tmp_path):
    result = runner.invoke(eval_app, ["run", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert "no such collection folder" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    (tmp_path / "broken.json").write_text("{")
    result = runner.invoke(eval_app, ["compare", str(tmp_path / "broken.json"), str(tmp_path / "broken.json")])
    assert result.exit_code == 2 and "not valid JSON" in result.stderr


def test_every_command_has_an_example_in_its_help():
    for command in ("run", "compare", "tune"):
        result = runner.invoke(eval_app, [command, "--help"])
        assert result.exit_code == 0 and "kenning eval " + command in result.stdout


def test_loader_is_reused_for_a_loaded_dataset(grouped):
    data = load_dataset(grouped)
    assert run_eval(data, modes="bm25", progress=False)["dataset"] == "grouped"


def test_modes_an_empty_entry_is_an_error_and_a_repeated_one_runs_once():
    from kenning.eval.harness import resolve_modes

    for typo in ("bm25,,hybrid", "bm25,", ",bm25", ["bm25", ""]):
        with pytest.raises(InvalidInput, match="--modes has an empty entry"):
            resolve_modes(typo)
    assert resolve_modes("bm25,bm25") == resolve_modes(["bm25", "bm25"]) == ["bm25"]
    assert resolve_modes(" keyword , bm25 ,keyword") == ["keyword", "bm25"]
    result = runner.invoke(eval_app, ["run", "builtin", "--modes", "bm25,,keyword"])
    assert result.exit_code == 2 and "empty entry ('bm25,,keyword')" in result.stderr


def test_a_ranking_shallower_than_100_reports_no_r_at_100(grouped):
    """R@100 of a 10-deep ranking would be R@10 under another name."""
    row = run_eval(grouped, modes="bm25", group_sep=":", depth=10, progress=False)["modes"]["bm25"]
    assert "R@100" not in row and "R@10" in row
    assert all("R@100" not in block for block in row["by_category"].values())
    result = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--depth", "10", "--baseline", "none"])
    assert result.exit_code == 0 and "R@10 " in result.stdout and "R@100 " not in result.stdout


def test_the_config_names_the_model_and_floor_once(grouped):
    """What ran: model_id and vector_floor_applied, not beside a null "model" / "vector_floor"."""
    config = run_eval(grouped, modes="bm25", progress=False)["config"]
    assert "model" not in config and "vector_floor" not in config


def test_outputs_and_baseline_are_checked_before_the_run(grouped, tmp_path, monkeypatch):
    from kenning.eval import harness

    def tripwire(*args, **kwargs):
        raise AssertionError("the collection ran before its options were checked")

    monkeypatch.setattr(harness, "run_eval", tripwire)
    (tmp_path / "not-a-report.json").write_text('{"dataset": "x"}')
    for option, message in (
        (["--out", str(tmp_path / "missing" / "r.json")], f"--out {tmp_path / 'missing' / 'r.json'}: the folder"),
        (["--plot", str(tmp_path)], f"--plot {tmp_path}: is a folder"),
        (["--baseline", str(tmp_path / "nowhere.json")], "nowhere.json: file not found"),
        (["--baseline", str(tmp_path / "not-a-report.json")], "not an eval report"),
    ):
        result = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", *option])
        assert result.exit_code == 2, result.output
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_unknown_judgments_are_one_note_line_on_stderr(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": "d1", "text": "the auth port is 8443"}],
                              [{"_id": "q1", "text": "auth port"}], [("q1", "d1", 1), ("q1", "gone", 1)])
    result = runner.invoke(eval_app, ["run", str(folder), "--modes", "bm25", "--json"])
    assert result.exit_code == 0
    assert result.stderr == f"note: {folder}/qrels.tsv: 1 judgment(s) name a query or document not in the collection; ignored\n"
    assert json.loads(result.stdout)["unknown_qrels"] == 1


def test_an_empty_collection_is_a_one_line_error(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": "d1", "text": "the auth port is 8443"}], [], [])
    result = runner.invoke(eval_app, ["run", str(folder), "--modes", "bm25"])
    assert result.exit_code == 2 and result.stderr == f"error: {folder}/queries.jsonl: no queries; nothing to evaluate\n"


def test_the_unanswerable_table_names_its_categories(grouped):
    result = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--group-sep", ":"])
    table = result.stdout.split("unanswerable queries (no relevant document)")[1]
    header, row = [line.split() for line in table.splitlines()[2:5:2]]
    assert header[:3] == ["mode", "category", "queries"] and row[:3] == ["bm25", "2", "1"]


def test_the_category_table_mentions_unanswerable_categories_only_when_there_are_some(tmp_path, grouped):
    answered = write_collection(tmp_path / "answered", [{"_id": "d1", "text": "the auth port is 8443"}],
                                [{"_id": "q1", "text": "auth port", "metadata": {"kind": "exact"}}], [("q1", "d1", 1)])
    result = runner.invoke(eval_app, ["run", str(answered), "--modes", "bm25", "--baseline", "none"])
    assert "nDCG@10 by query category\n" in result.stdout and "unanswerable" not in result.stdout
    # a plain collection with --foreign: the one category has no answerable query, so no category table
    plain = write_collection(tmp_path / "plain", [{"_id": "d1", "text": "the auth port is 8443"}],
                             [{"_id": "q1", "text": "auth port"}], [("q1", "d1", 1)])
    result = runner.invoke(eval_app, ["run", str(plain), "--modes", "bm25", "--foreign", str(answered)])
    assert result.exit_code == 0 and "by query category" not in result.stdout
    assert "  bm25   foreign " in result.stdout  # the unanswerable table names it


def test_the_label_table_fits_80_columns_with_every_variant():
    """Its headers were cut to 'preci…' and '(answ…' in an 80-column terminal; the short headers and
    the caption that explains them fit, with the longest mode name and a 100.0 % in every cell."""
    from rich.console import Console

    from kenning.eval.commands import _reliability_table

    full = {"share": 1.0, "precision": 1.0}
    modes = {mode: {"reliability": {"high": full, "medium": full, "low": full, "top_high": 1.0}}
             for mode in ("keyword", "bm25", "semantic", "hybrid", "hybrid-rrf", "hybrid-lexical")}
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(_reliability_table({"modes": modes}))
    shown = console.export_text()
    assert "…" not in shown and max(len(line) for line in shown.splitlines()) <= 80
    header = next(line for line in shown.splitlines() if line.strip().startswith("mode"))
    assert header.split() == ["mode", "high", "prec", "medium", "prec", "low", "prec", "top", "high"]
    assert "hybrid-lexical" in shown and shown.count("100.0%") == 6 * 7
    assert "prec: the share of those judged relevant" in " ".join(shown.split())


def test_beir_layout_runs_only_the_test_splits_queries_and_says_so(tmp_path):
    """BEIR's queries.jsonl holds every split's queries and qrels/test.tsv judges the test ones; a
    train query must not run as an 'unanswerable' one (its results would fill the unanswerable
    block of a collection that has none) - it is left out and counted."""
    folder = write_collection(
        tmp_path / "beir",
        [{"_id": "d1", "text": "the auth service listens on port 8443"}, {"_id": "d2", "text": "lunch is at noon"}],
        [{"_id": "q1", "text": "auth service port"}, {"_id": "t1", "text": "when is lunch"}],
        [("q1", "d1", 1)])
    (folder / "qrels").mkdir()
    (folder / "qrels.tsv").rename(folder / "qrels" / "test.tsv")
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nt1\td2\t1\n", encoding="utf-8")
    data = load_dataset(folder)
    assert list(data.queries) == ["q1"] and data.other_split_queries == 1
    report = run_eval(folder, modes="bm25", progress=False)
    assert report["queries"] == 1 and report["other_split_queries"] == 1
    assert "unanswerable" not in report["modes"]["bm25"] and report["modes"]["bm25"]["nDCG@10"] == 1.0
    text = runner.invoke(eval_app, ["run", str(folder), "--modes", "bm25", "--baseline", "none"])
    assert text.exit_code == 0, text.output
    assert "1 query(ies) of queries.jsonl that qrels/test.tsv does not name (another split's) were not run" in text.stdout
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"qrels/test.tsv: names none of the queries in .*queries.jsonl; nothing to evaluate"):
        load_dataset(folder)


def test_a_plain_qrels_tsv_keeps_unjudged_queries_as_unanswerable(tmp_path):
    folder = write_collection(tmp_path / "plain", [{"_id": "d1", "text": "auth port 8443"}],
                              [{"_id": "q1", "text": "auth port"}, {"_id": "q2", "text": "the sky"}], [("q1", "d1", 1)])
    data = load_dataset(folder)
    assert list(data.queries) == ["q1", "q2"] and data.other_split_queries == 0


def test_a_query_whose_relevant_documents_are_all_missing_is_not_run_as_unanswerable(tmp_path):
    """q2's only relevant document is not in the corpus: it used to count as an unanswerable query
    ('none on purpose'), its hits scored in the unanswerable block. It is left out and counted; a
    query with a known relevant document beside a missing one is still scored."""
    folder = write_collection(
        tmp_path / "c",
        [{"_id": "d1", "text": "the auth service listens on port 8443"}, {"_id": "d2", "text": "lunch is at noon"}],
        [{"_id": "q1", "text": "auth service port"}, {"_id": "q2", "text": "when is lunch"},
         {"_id": "q3", "text": "what colour is the sky"}],
        [("q1", "d1", 1), ("q1", "gone1", 1), ("q2", "gone2", 1), ("q2", "d2", 0)])
    data = load_dataset(folder)
    assert list(data.queries) == ["q1", "q3"] and data.orphaned_queries == 1 and data.unknown_qrels == 2
    report = run_eval(folder, modes="bm25", progress=False)
    assert report["queries"] == 2 and report["orphaned_queries"] == 1
    assert report["modes"]["bm25"]["queries"] == 1 and report["modes"]["bm25"]["unanswerable"]["queries"] == 1
    text = runner.invoke(eval_app, ["run", str(folder), "--modes", "bm25", "--baseline", "none"])
    assert text.exit_code == 0, text.output
    assert "1 query(ies) whose every relevant document is missing from the corpus were not run" in text.stdout



def test_the_report_says_how_many_pairs_were_judged_twice_with_different_grades(tmp_path):
    folder = write_collection(
        tmp_path / "c",
        [{"_id": "d1", "text": "the auth service listens on port 8443"}, {"_id": "d2", "text": "lunch is at noon"}],
        [{"_id": "q1", "text": "auth service port"}, {"_id": "q2", "text": "when is lunch"}],
        [("q1", "d1", 1), ("q2", "d2", 1), ("q2", "d2", 0)])
    report = run_eval(folder, modes="bm25", progress=False)
    assert report["conflicting_judgments"] == 1 and report["modes"]["bm25"]["queries"] == 2
    text = runner.invoke(eval_app, ["run", str(folder), "--modes", "bm25", "--baseline", "none"])
    assert text.exit_code == 0, text.output
    assert "1 (query, document) pair(s) are judged twice in the qrels with different grades: the higher grade was kept" \
        in " ".join(text.stdout.split())

@pytest.mark.parametrize("limit", ["0", "-1"])
def test_tune_refuses_a_limit_below_one_instead_of_tuning_on_all_but_the_last(grouped, limit):
    """`eval tune --limit-queries -1` tuned on every query but the last (a Python slice), and 0 said
    'has no query with a relevant document'; `eval run` already refused both."""
    result = runner.invoke(eval_app, ["tune", str(grouped), "--limit-queries", limit])
    assert result.exit_code == 2 and result.stderr.strip() == "error: --limit-queries must be at least 1"
    with pytest.raises(InvalidInput, match="--limit-queries must be at least 1"):
        load_dataset(grouped).limit_queries(int(limit))


def test_json_output_keeps_the_progress_bar_on_stderr(grouped, monkeypatch):
    """`eval run --json > report.json` (and tune --json) showed no progress at all, minutes of silence
    on SciFact; the bars go to stderr, only when it is a terminal, so stdout stays pure JSON."""
    import kenning.eval.harness as harness
    import kenning.eval.tuning as tuning

    seen = {}
    real_run, real_tune = harness.run_eval, tuning.tune

    def run_eval_spy(*args, **kwargs):
        seen["run"] = kwargs["progress"]
        return real_run(*args, **{**kwargs, "progress": False})

    def tune_spy(*args, **kwargs):
        seen["tune"] = kwargs["progress"]
        raise InvalidInput("stop here")

    monkeypatch.setattr(harness, "run_eval", run_eval_spy)
    monkeypatch.setattr(tuning, "tune", tune_spy)
    result = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--baseline", "none", "--json"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)
    runner.invoke(eval_app, ["tune", str(grouped), "--json"])
    assert seen == {"run": True, "tune": True}


def test_the_table_says_how_deep_each_query_was_ranked(grouped):
    """--depth shaped the figures (R@100 is left out below 100) but the text report never said it."""
    result = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--baseline", "none", "--depth", "20"])
    assert result.exit_code == 0, result.output
    assert "20 hits ranked per query" in " ".join(result.stdout.split())


def test_a_group_sep_that_hides_relevant_documents_is_said_or_refused(grouped, tmp_path):
    """--group-sep '1' over ids like 'q1' / 'd1' put every query in a group holding none of its answers:
    nDCG@10 fell (.80 -> .54 on a 3-query set) with no word said. Every grouped query cut off from an
    answer is refused; some are counted (relevant_outside_group) and named under the table."""
    with pytest.raises(InvalidInput, match=r"--group-sep 'q': every grouped query has a relevant document outside its group"):
        run_eval(grouped, modes="bm25", group_sep="q", progress=False)  # 'a:q1' -> group 'a:', docs 'a:1' -> none
    qrels = grouped / "qrels.tsv"
    qrels.write_text(qrels.read_text(encoding="utf-8") + "b:q1\ta:2\t1\n", encoding="utf-8")  # across conversations
    report = run_eval(grouped, modes="bm25", group_sep=":", progress=False)
    assert report["relevant_outside_group"] == 1
    text = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--baseline", "none", "--group-sep", ":"])
    assert ("1 query(ies) have a relevant document outside their --group-sep group, which they never search"
            in " ".join(text.stdout.split()))
    assert "relevant_outside_group" not in run_eval(grouped, modes="bm25", progress=False)


def test_tune_refuses_a_group_sep_that_cuts_every_query_off_from_its_answers(grouped):
    result = runner.invoke(eval_app, ["tune", str(grouped), "--group-sep", "q"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --group-sep 'q': every grouped query of grouped has a relevant document outside")


def test_a_limit_that_cuts_no_query_is_no_setting(grouped, tmp_path):
    """--limit-queries 99 on a 3-query collection ran every query but was recorded, so the run got
    'no verdict: --limit-queries: 99 here, none in the baseline' against its own full baseline."""
    report = run_eval(grouped, modes="bm25", limit_queries=99, progress=False)
    assert "limit_queries" not in report and report["queries"] == 3
    assert run_eval(grouped, modes="bm25", limit_queries=2, progress=False)["limit_queries"] == 2
    base = tmp_path / "base.json"
    assert runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--out", str(base), "--baseline", "none"]).exit_code == 0
    result = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--limit-queries", "99", "--baseline", str(base)])
    assert f"verdict: as good as the baseline {base}" in result.stdout


@pytest.mark.parametrize("command", ["run", "tune"])
def test_an_empty_group_sep_is_refused_in_one_line(grouped, command):
    """--group-sep '' (say "$SEP" with SEP unset) ran ungrouped with exit 0, a run that looked grouped
    and was not; it is now one line, exit 2, as the library's InvalidInput."""
    result = runner.invoke(eval_app, [command, str(grouped), "--group-sep", ""])
    assert result.exit_code == 2, result.output
    assert result.stderr == ("error: --group-sep is empty: give the separator between group and id (such as ':'), "
                             "or leave the option out to group nothing\n")
    with pytest.raises(InvalidInput, match="--group-sep is empty"):
        (run_eval if command == "run" else tune)(grouped, group_sep="", progress=False)


def test_a_judged_relevant_document_without_text_is_named(grouped):
    """b:3 has no text, so it is not indexed; judged relevant to b:q1 it lowered b:q1's recall while
    the report said only '1 document(s) without text were not indexed'."""
    qrels = grouped / "qrels.tsv"
    qrels.write_text(qrels.read_text(encoding="utf-8") + "b:q1\tb:3\t1\n", encoding="utf-8")
    report = run_eval(grouped, modes="bm25", group_sep=":", progress=False)
    assert report["skipped_documents"] == 1 and report["queries_judged_relevant_to_skipped"] == 1
    text = runner.invoke(eval_app, ["run", str(grouped), "--modes", "bm25", "--baseline", "none", "--group-sep", ":"])
    assert ("1 document(s) without text were not indexed; 1 query(ies) have one judged relevant, which no mode can "
            "return" in " ".join(text.stdout.split()))


def test_a_baseline_made_with_foreign_queries_names_the_option_to_compare_with_it(tmp_path):
    """`eval run med` against the committed baseline (made with cranfield's queries as foreign ones)
    said only that the collection and query count differ; the note now names --foreign and the
    collection, and a run with it gets its verdict."""
    plain = write_collection(tmp_path / "plain", [{"_id": "d1", "text": "the auth port is 8443"}],
                             [{"_id": "q1", "text": "auth port"}], [("q1", "d1", 1)])
    other = write_collection(tmp_path / "other", [{"_id": "e1", "text": "lunch is at noon"}],
                             [{"_id": "r1", "text": "when is lunch"}], [("r1", "e1", 1)])
    base = tmp_path / "base.json"
    made = runner.invoke(eval_app, ["run", str(plain), "--modes", "bm25", "--foreign", str(other), "--out", str(base),
                                    "--baseline", "none"])
    assert made.exit_code == 0, made.output
    result = runner.invoke(eval_app, ["run", str(plain), "--modes", "bm25", "--baseline", str(base)])
    assert "the baseline also ran other's queries as unanswerable ones: add --foreign" in result.stdout
    again = runner.invoke(eval_app, ["run", str(plain), "--modes", "bm25", "--foreign", str(other),
                                     "--baseline", str(base)])
    assert "verdict: as good as the baseline" in again.stdout
