"""The relevance gate's cases, how a case runs, how it is judged, and how baselines are re-recorded.

A case is one collection run in every variant: the four modes, hybrid with RRF fusion
(``hybrid-rrf``) and the hybrid a user without the embeddings extra gets (``hybrid-lexical``:
the BM25 leg alone, marked degraded). ``record`` writes ``eval/baselines/<name>.json``;
``judge`` compares a fresh run with it and lists every regression it can see: a changed collection
or setting (``comparison.differences``), headline metrics, per-category metrics and the
unanswerable block.

Tolerances (why these numbers):

- Lexical variants (keyword, bm25, hybrid-lexical) are exact arithmetic over the same postings:
  two runs on any machine give the same figures, so ``LEXICAL_TOLERANCE`` (0.0002) only absorbs
  last-digit float noise - a planted bug that moved med keyword nDCG@10 by 0.0004 must fail.
- Variants with the vector leg depend on the encoder's float arithmetic, which differs between
  CPUs and runtimes (torch vs ONNX are held to 0.003 nDCG@10 of each other), so
  ``SEMANTIC_TOLERANCE`` is 0.005 on a headline mean. A category mean moves more per flipped query,
  so it gets ``max(tolerance, 1 / (2 n))``: half of one query's worth, which a lost hit (nDCG 1 -> 0)
  always exceeds.
- The unanswerable block counts queries, one by one: its empty share may not fall and its top-hit
  ``high`` share may not rise by even one query. Each such query is an off-topic question that
  now reaches an agent as if answered; that is a change to look at and re-record, never noise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kenning.errors import InvalidInput

from .comparison import describe, differences
from .datasets import PACKAGED
from .harness import run_eval
from .metrics import METRICS

BASELINES = Path(__file__).resolve().parent / "baselines"
EVAL_DATA_ENV = "KENNING_EVAL_DATA"
LEXICAL_TOLERANCE = 0.0002
SEMANTIC_TOLERANCE = 0.005
LEXICAL_VARIANTS = ("keyword", "bm25", "hybrid-lexical")
VARIANTS = ("keyword", "bm25", "semantic", "hybrid", "hybrid-rrf", "hybrid-lexical")


@dataclass(frozen=True)
class Case:
    name: str  # a packaged collection ("builtin", "memval") or a folder name under the eval data
    group_sep: str | None = None
    limit_queries: int | None = None
    foreign: str | None = None  # another collection whose queries run as unanswerable ones


CASES = (
    Case("builtin"),
    Case("memval"),
    Case("memval2"),
    Case("memval3"),
    Case("med", foreign="cranfield"),
    Case("cranfield"),
    Case("npl"),
    Case("locomo-dev", group_sep=":"),
    # 400 of 809 queries keep the case affordable: the cost is embedding the 5,183 abstracts once
    Case("scifact-train", limit_queries=400),
)

def eval_data() -> Path:
    """``$KENNING_EVAL_DATA``, else ``../shared/eval-data`` beside the repository."""
    configured = os.environ.get(EVAL_DATA_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(__file__).resolve().parents[2] / "shared" / "eval-data"


def source(name: str, data: Path | None = None) -> str | Path:
    """Where a collection is read from; a missing folder is an error naming the setting."""
    if name in PACKAGED:
        return name
    folder = (data or eval_data()) / name
    if not folder.is_dir():
        how = "pass --data" if data is not None else f"set {EVAL_DATA_ENV}"  # name what the user set
        raise InvalidInput(f"eval data {folder} is missing: {how} to the folder holding {name}/")
    return folder


@contextmanager
def embeddings_absent() -> Iterator[None]:
    """Answer as an install without the embeddings extra does: the probe says ``absent``."""
    from kenning.retrieval import embeddings

    key = (None, None, embeddings.backend())  # the probe's cache key for the default model
    saved = embeddings._availability.get(key)
    embeddings._availability[key] = embeddings.Availability("absent", "the gate runs the lexical-only hybrid", None)
    try:
        yield
    finally:
        if saved is None:
            embeddings._availability.pop(key, None)
        else:
            embeddings._availability[key] = saved


def run_case(case: Case, variants: tuple[str, ...] = VARIANTS, data: Path | None = None) -> dict:
    """One report whose ``modes`` hold every requested variant of the case."""
    where = source(case.name, data)
    foreign = source(case.foreign, data) if case.foreign else None
    common = {"group_sep": case.group_sep, "progress": False, "limit_queries": case.limit_queries, "foreign": foreign}
    modes = [v for v in variants if v in ("keyword", "bm25", "semantic", "hybrid")]
    report = run_eval(where, modes=modes, **common) if modes else None
    if "hybrid-rrf" in variants:
        rrf = run_eval(where, modes=["hybrid"], config_overrides={"fusion": "rrf"}, **common)
        report = _merge(report, rrf, "hybrid", "hybrid-rrf")
    if "hybrid-lexical" in variants:
        with embeddings_absent():
            lexical = run_eval(where, modes=["hybrid"], **common)
        if not lexical["modes"]["hybrid"].get("degraded"):
            raise AssertionError("the lexical-only hybrid did not run degraded")
        report = _merge(report, lexical, "hybrid", "hybrid-lexical")
    report["gate"] = {"case": case.name, "variants": list(variants)}
    return report


def _merge(report: dict | None, other: dict, mode: str, as_name: str) -> dict:
    if report is None:
        report = {**other, "modes": {}}
    report["modes"][as_name] = other["modes"][mode]
    report.setdefault("variant_config", {})[as_name] = other["config"]
    return report


def record(names: list[str] | None = None, data: Path | None = None, out: Path = BASELINES) -> list[Path]:
    """Re-run the cases (all, or those named) and write their baselines; returns the files written."""
    chosen = [c for c in CASES if names is None or c.name in names]
    unknown = set(names or []) - {c.name for c in CASES}
    if unknown:
        raise InvalidInput(f"no gate case named {', '.join(sorted(unknown))}; cases: {', '.join(c.name for c in CASES)}")
    for case in chosen:  # every folder first: a missing one must not stop the run half-way, some files rewritten
        source(case.name, data)
        if case.foreign:
            source(case.foreign, data)
    written = []
    for case in chosen:
        report = run_case(case, data=data)
        for row in report["modes"].values():  # machine-dependent; kept out of the committed file
            for key in ("latency_ms_p50", "latency_ms_p95"):
                row.pop(key, None)
        path = out / f"{case.name}.json"
        path.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        written.append(path)
    return written


def judge(report: Mapping, baseline: Mapping) -> list[str]:
    """Every regression of ``report`` against ``baseline``, one readable line each (empty: passed)."""
    problems = [f"{describe(d)}: the collection or the case changed; re-record the baseline"
                for d in differences(report, baseline)]
    for variant, base in baseline["modes"].items():
        row = report["modes"].get(variant)
        if row is None:
            problems.append(f"{variant}: not run")
            continue
        tolerance = LEXICAL_TOLERANCE if variant in LEXICAL_VARIANTS else SEMANTIC_TOLERANCE
        problems += _metrics(variant, row, base, tolerance)
        for category, base_cat in base.get("by_category", {}).items():
            cat = row.get("by_category", {}).get(category, {})
            n = base_cat.get("queries", 1)
            problems += _metrics(f"{variant} [{category}]", cat, base_cat, max(tolerance, 1 / (2 * n)))
            problems += _unanswerable(f"{variant} [{category}]", cat.get("unanswerable"), base_cat.get("unanswerable"))
        problems += _unanswerable(variant, row.get("unanswerable"), base.get("unanswerable"))
    return problems


def _metrics(where: str, row: Mapping, base: Mapping, tolerance: float) -> list[str]:
    out = []
    for metric in METRICS:
        old, new = base.get(metric), row.get(metric)
        if old is None:
            continue
        if new is None or new < old - tolerance:
            out.append(f"{where} {metric}: {new} < baseline {old} - {tolerance:.4f}")
    return out


def _unanswerable(where: str, block: Mapping | None, base: Mapping | None) -> list[str]:
    if not base:
        return []
    if not block:
        return [f"{where}: the unanswerable block is missing"]
    out = []
    if block.get("empty", 0) < base.get("empty", 0):
        out.append(f"{where} unanswerable came back empty {block['empty']} < baseline {base['empty']}")
    if "top_high" in base and block.get("top_high", 1) > base["top_high"]:
        out.append(f"{where} unanswerable top hit high {block.get('top_high')} > baseline {base['top_high']}")
    return out

