"""Relevance regression gate: every case of ``eval.gate.CASES`` re-run and judged against its baseline.

Each case runs all six variants (keyword, bm25, semantic, hybrid, hybrid with RRF fusion, and the
lexical-only hybrid of an install without the extra) and ``eval.gate.judge`` checks the headline
metrics, every per-category figure and the unanswerable block, with the tolerances justified in
eval/gate.py. The gate never skips: missing eval data or a missing embeddings extra is a failure.
Collections other than ``builtin`` are read from ``$KENNING_EVAL_DATA`` (default
``../shared/eval-data`` beside the repository); deselect the gate with ``-m "not relevance"``.

Embeddings are cached for the whole run in a temporary folder (never between runs), so a corpus is
encoded once however many variants use it; ``KENNING_GATE_CACHE_DIR`` points it at a lasting folder
for local reruns. After a genuine improvement, re-record with ``kenning eval record-baselines``.
"""

from __future__ import annotations

import json
import os

import pytest

import kenning
from kenning.eval.gate import BASELINES, CASES, judge, run_case

pytestmark = [pytest.mark.relevance, pytest.mark.slow]


@pytest.fixture(scope="module", autouse=True)
def run_cache(tmp_path_factory):
    """One embedding cache for this run's cases, fresh for every run unless told otherwise."""
    saved = os.environ.get("KENNING_CACHE_DIR")
    os.environ["KENNING_CACHE_DIR"] = os.environ.get("KENNING_GATE_CACHE_DIR") or str(tmp_path_factory.mktemp("cache"))
    yield
    if saved is None:
        os.environ.pop("KENNING_CACHE_DIR", None)
    else:
        os.environ["KENNING_CACHE_DIR"] = saved


def test_every_case_has_a_baseline_and_every_baseline_a_case():
    assert sorted(p.stem for p in BASELINES.glob("*.json")) == sorted(c.name for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_no_regression_against_baseline(case):
    assert kenning.embeddings_available(), "the embeddings extra cannot run here; the gate needs it"
    baseline = json.loads((BASELINES / f"{case.name}.json").read_text(encoding="utf-8"))
    report = run_case(case, tuple(baseline["modes"]))
    problems = judge(report, baseline)
    assert not problems, "\n".join(problems)
