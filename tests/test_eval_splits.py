"""A BEIR folder judged by another split than test: the advice given is one that yields right figures."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kenning.errors import InvalidInput
from kenning.eval.commands import eval_app
from kenning.eval.datasets import load_dataset
from kenning.eval.harness import run_eval

from test_eval_datasets import write_collection

runner = CliRunner()


@pytest.fixture
def dev_only(tmp_path):
    """Three dev queries judged in qrels/dev.tsv, two test queries queries.jsonl also holds."""
    folder = write_collection(
        tmp_path / "beir",
        [{"_id": "d1", "text": "the auth port is 8443"}, {"_id": "d2", "text": "deploys run on tuesdays"},
         {"_id": "d3", "text": "lunch is at noon"}],
        [{"_id": "q1", "text": "auth port"}, {"_id": "q2", "text": "when do deploys run"},
         {"_id": "q3", "text": "what colour is the sky"}, {"_id": "t1", "text": "lunch time"},
         {"_id": "t2", "text": "auth deploys"}],
        [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 0)],
    )
    (folder / "qrels").mkdir()
    (folder / "qrels.tsv").rename(folder / "qrels" / "dev.tsv")
    return folder


def test_the_error_for_a_dev_only_folder_advises_split_not_a_copy(dev_only):
    result = runner.invoke(eval_app, ["run", str(dev_only), "--modes", "bm25"])
    assert result.exit_code == 2
    assert "qrels/ holds dev.tsv" in result.stderr and "(--split dev)" in result.stderr
    assert "copy" not in result.stderr


def test_following_the_advice_runs_only_the_splits_queries(dev_only):
    report = run_eval(load_dataset(dev_only, "dev"), modes="bm25", progress=False)
    assert report["queries"] == 3 and report["other_split_queries"] == 2  # t1, t2 are the test split's
    assert report["modes"]["bm25"]["unanswerable"]["queries"] == 1  # q3 alone, judged with no relevant document
    result = runner.invoke(eval_app, ["run", str(dev_only), "--modes", "bm25", "--split", "dev", "--baseline", "none"])
    assert result.exit_code == 0, result.output
    assert "2 query(ies) of queries.jsonl that qrels/dev.tsv does not name (another split's) were not run" in result.stdout


def test_a_split_the_folder_lacks_is_refused_naming_those_it_has(dev_only):
    with pytest.raises(InvalidInput, match=r"--split train: no .*qrels/train.tsv; qrels/ holds the splits dev"):
        load_dataset(dev_only, "train")
    with pytest.raises(InvalidInput, match="builtin is shipped with one qrels.tsv"):
        load_dataset("builtin", "dev")
