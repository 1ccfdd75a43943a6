"""Hybrid search with evidence fusion (the default) over several candidates whose order is known by
construction (tests/hybrid_order.py): through the library on a real SQLite store, then through a
real CLI subprocess on the same store."""

import json
import os
import subprocess
import sys

import pytest

import kenning
from hybrid_order import MEMORIES, QUERY, check

pytestmark = pytest.mark.embeddings  # the vector leg is one of the fused legs


def test_hybrid_evidence_orders_several_candidates_as_constructed(tmp_path):
    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        assert s.config.fusion == "evidence"
        names = {s.write(text, scopes=["ops"]).id: name for name, text in MEMORIES.items()}
        result = s.search(QUERY, mode="hybrid", limit=10).to_dict()
        alpha = s.config.evidence_alpha
        # a lexical mode never asks the vector leg, so it reports nothing about pending vectors
        assert s.search(QUERY, mode="bm25").pending_embeddings is None and result["pending_embeddings"] == 0
    assert result["legs_run"] == ["keyword", "bm25", "vector"] and result["degraded"] is None
    check(result["hits"], names, alpha)

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(path), "search", QUERY,
                           "--mode", "hybrid", "--limit", "10", "--no-auto-scope", "--json"],
                          env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    check(json.loads(done.stdout)["hits"], names, alpha)
