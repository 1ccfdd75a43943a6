"""A run of every mode whose encoder cannot run says so, is judged only on what ran, and fails the gate."""

from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from kenning.eval.commands import eval_app

runner = CliRunner()
CAUSE = "KENNING_ONNX_THREADS='0' is below 1"


@pytest.mark.embeddings  # a base install's cause is the missing extra
def test_a_broken_encoder_is_named_and_the_verdict_judges_only_the_modes_that_ran():
    result = runner.invoke(eval_app, ["run", "builtin"], env={"KENNING_ONNX_THREADS": "0"})
    assert result.exit_code == 1, result.output
    assert "semantic and hybrid did not run: " + CAUSE in result.stderr
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("verdict"))
    assert "as good as" not in verdict and verdict.endswith("not in the report: semantic, hybrid")


@pytest.mark.embeddings
def test_the_json_report_says_which_modes_did_not_run_and_why():
    result = runner.invoke(eval_app, ["run", "builtin", "--json"], env={"KENNING_ONNX_THREADS": "0"})
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["not_run"]["modes"] == ["semantic", "hybrid"] and CAUSE in report["not_run"]["cause"]
    assert report["baseline"]["unjudged"] == ["semantic", "hybrid"]


def test_lexical_modes_asked_for_by_name_run_without_a_note_and_pass():
    result = runner.invoke(eval_app, ["run", "builtin", "--modes", "keyword,bm25", "--json"],
                           env={"KENNING_ONNX_THREADS": "0"})
    assert result.exit_code == 0, result.output
    assert "did not run" not in result.stderr and "not_run" not in json.loads(result.stdout)


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is not None, reason="an install without the extra")
def test_an_install_without_the_extra_runs_lexically_says_so_and_passes():
    """No encoder by design: the note names the extra, the verdict names what did not run, the exit is 0."""
    result = runner.invoke(eval_app, ["run", "builtin", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["not_run"]["reason"] == "embeddings_absent" and report["baseline"]["unjudged"] == ["semantic", "hybrid"]
    assert "semantic and hybrid did not run" in result.stderr
