"""CLI commands and options the other CLI tests leave out, through a real subprocess: `kenning index`,
`kenning models`, --no-auto-scope, the degraded note, and an example in every subcommand's help."""

import json
import os
import subprocess
import sys

import pytest


def kenning(tmp_path, *args, cwd=None):
    env = {**os.environ, "KENNING_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "kenning.cli", *args], env=env, capture_output=True, text=True,
                          cwd=cwd or tmp_path)


@pytest.mark.parametrize("command", [("index",), ("models",), ("serve",), ("episodes", "list"),
                                     ("episodes", "search"), ("episodes", "prune")])
def test_subcommand_help_has_an_example(tmp_path, command):
    done = kenning(tmp_path, *command, "--help")
    if done.returncode == 2 and "No such command" in done.stderr:
        pytest.fail(f"{' '.join(command)} is not a command: {done.stderr}")
    assert done.returncode == 0, done.stderr
    assert "Example: kenning" in done.stdout, command


@pytest.mark.embeddings  # lists the packaged model and embeds
def test_models_and_index_report_the_store_as_json(tmp_path):
    assert kenning(tmp_path, "write", "kiwi orchard watering schedule", "--scope", "x").returncode == 0
    models = kenning(tmp_path, "models", "--json")
    assert models.returncode == 0, models.stderr
    listed = json.loads(models.stdout)
    assert listed["configured"] in {m["name"] for m in listed["models"]}
    index = kenning(tmp_path, "index", "--json")
    assert index.returncode == 0, index.stderr
    done = json.loads(index.stdout)
    assert done["embedded"] <= done["pending_before"]
    after = json.loads(kenning(tmp_path, "models", "--json").stdout)
    if listed["store"].get("model_id"):  # the extra is installed: nothing is left waiting for a vector
        assert after["store"]["pending"] == 0
