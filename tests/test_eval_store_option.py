"""`kenning --store X eval run`: the root's --store reaches the evaluation as its own --store does.

A user writes the option where every other command takes it; before, the evaluation silently ran on
a temporary SQLite store and printed a verdict as if the PostgreSQL server named had been measured.
A postgresql:// URL is now used (here one no server answers, so the run must fail on it in one line,
where it used to pass on SQLite); a store directory is named as unused, and nothing is written there.
"""

from __future__ import annotations

import os
import subprocess
import sys

UNREACHABLE = "postgresql://kenning:secret@127.0.0.1:1/kenning"
EVAL = ["eval", "run", "builtin", "--modes", "keyword", "--limit-queries", "2", "--baseline", "none"]


def _kenning(*args: str, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "KENNING_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "KENNING_ENCODER": "none",
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "kenning.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_the_roots_postgresql_store_is_the_one_evaluated(tmp_path):
    done = _kenning("--store", UNREACHABLE, *EVAL, tmp_path=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "verdict" not in done.stdout and "nDCG@10" not in done.stdout  # nothing measured elsewhere
    assert "secret" not in done.stderr


def test_a_store_directory_given_to_the_root_is_named_as_unused(tmp_path):
    folder = tmp_path / "mystore"
    done = _kenning("--store", str(folder), *EVAL, tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"--store {folder} is not used" in " ".join(done.stderr.split())
    assert "nDCG@10" in done.stdout
    assert not folder.exists()


def test_the_subcommands_own_option_still_refuses_a_directory(tmp_path):
    done = _kenning(*EVAL, "--store", str(tmp_path / "mystore"), tmp_path=tmp_path)
    assert done.returncode == 2
    assert "--store takes a postgresql:// URL" in done.stderr
