"""One Store shared by many threads (what a server does): searches and writes interleave without errors
and without losing a write. The lexicon's in-memory caches used to change under a running ranking
(KeyError from the postings cache), which bench/bench_http.py's library reference found: this runs
that reference at full size (16 threads x 500 requests, 70% search) and asks for zero of either."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import bench_http  # noqa: E402
from corpus import Corpus  # noqa: E402

pytestmark = pytest.mark.slow


def test_threads_sharing_a_store_search_and_write_without_errors_or_lost_writes(tmp_path):
    corpus = Corpus()
    plan = bench_http.Plan(corpus, clients=16, requests=500, search_share=0.7, seed=17, run=0)
    path = tmp_path / "store"
    bench_http.seed_store(path, corpus, 2000, "bm25")
    ledger = bench_http.Ledger()
    result = bench_http.run_library(path, plan, ledger)
    assert result["error_samples"] == [] and result["errors"] == 0
    assert len(ledger.texts) > 1000
    assert bench_http.lost_writes(path, ledger) == 0
