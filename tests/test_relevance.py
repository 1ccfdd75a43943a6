"""Relevance regression gate: re-run every committed baseline and fail on a metric drop.

Baselines live in ``eval/baselines/<collection>.json`` (reports written by ``kenning eval run
--out``). Each is re-run with the same modes and grouping and compared with
``eval.harness.compare``; any metric more than ``TOLERANCE`` below its baseline fails. Lexical
modes run for every collection, semantic and hybrid where the baseline has them (skipped when
the embeddings extra cannot run here). Collections other than ``builtin`` come from
``$KENNING_EVAL_DATA`` or ``../shared/eval-data`` beside the repository; the test skips when the
folder is absent.

Regenerate a baseline after an intended change with e.g.
``kenning eval run ../shared/eval-data/med --modes keyword,bm25 --out eval/baselines/med.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import kenning
import kenning.eval
from kenning.eval.harness import LEXICAL_MODES, SEMANTIC_MODES, compare, run_eval

TOLERANCE = 0.005
BASELINES = Path(kenning.eval.__file__).parent / "baselines"
EVAL_DATA = Path(os.environ.get("KENNING_EVAL_DATA") or Path(__file__).resolve().parents[2] / "shared" / "eval-data")

pytestmark = [pytest.mark.relevance, pytest.mark.slow]


def _cases():
    cases = []
    for path in sorted(BASELINES.glob("*.json")):
        baseline = json.loads(path.read_text(encoding="utf-8"))
        lexical = [m for m in baseline["modes"] if m in LEXICAL_MODES]
        semantic = [m for m in baseline["modes"] if m in SEMANTIC_MODES]
        if lexical:
            cases.append(pytest.param(path, lexical, id=f"{path.stem}-lexical"))
        if semantic:
            cases.append(pytest.param(path, semantic, id=f"{path.stem}-semantic", marks=pytest.mark.embeddings))
    return cases


def test_there_are_baselines():
    assert (BASELINES / "builtin.json").is_file()


@pytest.mark.parametrize("baseline_path, modes", _cases())
def test_no_regression_against_baseline(baseline_path: Path, modes: list[str]):
    baseline = json.loads(baseline_path.read_text(encoding="utf-8"))
    if baseline["dataset"] == "builtin":
        source = "builtin"
    else:
        source = EVAL_DATA / baseline["dataset"]
        if not source.is_dir():
            pytest.skip(f"{source} is absent (set KENNING_EVAL_DATA to the eval-data folder)")
    if set(modes) & set(SEMANTIC_MODES) and not kenning.embeddings_available():
        pytest.skip("the embeddings extra cannot run here")

    report = run_eval(source, modes=modes, group_sep=baseline.get("group_sep"), depth=baseline.get("depth", 100),
                      progress=False, limit_queries=baseline.get("limit_queries"))
    assert report["queries"] == baseline["queries"], "the collection changed; regenerate the baseline"
    result = compare(report, {"modes": {m: baseline["modes"][m] for m in modes}}, tolerance=TOLERANCE)
    assert not result["missing_modes"]
    assert not result["regressions"], json.dumps(result["regressions"], indent=1)
