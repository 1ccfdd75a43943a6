"""Ctrl-C during `kenning eval run`: one line says what was interrupted, exit 130, nothing half-written."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

# the child restores Python's own SIGINT handler: CI may start it with SIGINT ignored
CHILD = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from kenning.eval.commands import eval_app
print("ready", flush=True)
eval_app(sys.argv[1:], prog_name="kenning eval")
"""


def _collection(folder, documents, queries):
    folder.mkdir()
    words = ["auth", "port", "deploy", "tuesday", "lunch", "noon", "cluster", "backup", "nightly", "gateway"]
    with open(folder / "corpus.jsonl", "w") as corpus:
        for i in range(documents):
            text = " ".join(words[(i * k) % len(words)] for k in (1, 3, 7)) + f" item{i} note number {i}"
            corpus.write(json.dumps({"_id": f"d{i}", "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w") as out:
        for i in range(queries):
            text = f"{words[i % 10]} {words[(i * 3) % 10]} item{i % documents}"
            out.write(json.dumps({"_id": f"q{i}", "text": text}) + "\n")
    judged = "".join(f"q{i}\td{i % documents}\t1\n" for i in range(queries))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + judged)
    return folder


def _interrupted(args, after_s):
    child = subprocess.Popen([sys.executable, "-c", CHILD, "run", *args, "--baseline", "none"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "ready\n"
    time.sleep(after_s)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    return child.returncode, out, err


def test_an_interrupted_lexical_run_says_what_it_stopped_and_exits_130(tmp_path):
    folder = _collection(tmp_path / "big", 4000, 20000)
    code, out, err = _interrupted([str(folder), "--modes", "bm25", "--out", str(tmp_path / "r.json")], 1.0)
    assert code == 130, err
    assert err.startswith("interrupted while ") and "no report was made" in err and len(err.splitlines()) == 1
    assert "kept in" not in err  # no vector was being made
    assert not (tmp_path / "r.json").exists()


@pytest.mark.embeddings
@pytest.mark.slow
def test_an_interrupted_semantic_run_says_the_encoded_vectors_are_kept(tmp_path):
    folder = _collection(tmp_path / "big", 20000, 10)
    code, out, err = _interrupted([str(folder), "--modes", "semantic"], 4.0)
    assert code == 130, err
    assert err.startswith("interrupted while ") and "embeddings.sqlite, so a re-run is faster" in err
