"""Messages of eval said in eval's terms: a float id, a group the store would read as two, the reference row."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kenning.errors import InvalidInput
from kenning.eval.commands import eval_app
from kenning.eval.datasets import load_dataset
from kenning.eval.harness import run_eval

from test_eval_datasets import write_collection

runner = CliRunner()


def test_a_float_id_is_said_to_be_of_the_wrong_type_not_missing(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": 1.0, "text": "the auth port is 8443"}],
                              [{"_id": "q1", "text": "auth port"}], [("q1", "1", 1)])
    with pytest.raises(InvalidInput, match=r"corpus.jsonl:1: '_id' must be a string or an integer, got float 1.0$"):
        load_dataset(folder)


def test_a_group_holding_comma_space_is_refused_in_group_sep_terms(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": "a, b:d1", "text": "the auth port is 8443"}],
                              [{"_id": "a, b:q1", "text": "auth port"}], [("a, b:q1", "a, b:d1", 1)])
    with pytest.raises(InvalidInput) as refused:
        run_eval(folder, modes="bm25", group_sep=":", progress=False)
    message = str(refused.value)
    assert message.startswith(f"{folder / 'corpus.jsonl'}:1: group 'a, b' (the part of _id 'a, b:d1' before "
                              "--group-sep ':') holds a comma and a space")
    assert "scope" not in message


def test_what_ran_states_the_rank_bm25_reference_settings(tmp_path):
    folder = write_collection(tmp_path / "c", [{"_id": "d1", "text": "the auth port is 8443"}],
                              [{"_id": "q1", "text": "auth port"}], [("q1", "d1", 1)])
    report = run_eval(folder, modes="bm25", reference=["rank-bm25"], progress=False)
    settings = report["config"]["rank_bm25"]
    assert (settings["k1"], settings["b"]) == (report["config"]["bm25_k1"], report["config"]["bm25_b"])
    result = runner.invoke(eval_app, ["run", str(folder), "--modes", "bm25", "--reference", "rank-bm25",
                                      "--baseline", "none"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())
    assert (f"rank-bm25 reference: rank_bm25.BM25Okapi, k1 {settings['k1']}, b {settings['b']}, epsilon 0.25, "
            "tokenizer the engine's token stream (v") in said
