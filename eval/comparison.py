"""Whether two eval reports may be compared, and how their metrics differ when they may.

A figure depends on the collection and on the run's settings as much as on the engine: R@100 of a
10-deep ranking, five easy queries of eighty, or LoCoMo searched across conversations instead of
within one are different measurements, not regressions. So a comparison first lists every recorded
setting that changes the figures and differs; only when none does are the metrics diffed.
"""

from __future__ import annotations

from collections.abc import Mapping

from kenning.errors import InvalidInput

from .metrics import METRICS

LATENCY_KEYS = ("latency_ms_p50", "latency_ms_p95")
# (report key, how the reader knows it): what every report records at its top level. A report
# writes limit_queries only when it was given, so its absence means "all queries".
SETTINGS = (
    ("dataset", "collection"),
    ("documents", "documents"),
    ("queries", "queries"),
    ("group_sep", "--group-sep"),
    ("depth", "--depth"),
    ("limit_queries", "--limit-queries"),
    # a hash of the documents, queries and judgments (Dataset.fingerprint): same counts, other contents
    ("contents", "collection contents"),
)
WRITTEN_WHEN_GIVEN = {"limit_queries"}
QUOTED = {"collection", "--group-sep"}  # text as typed: a separator may be a space


def differences(report: Mapping, baseline: Mapping) -> list[dict]:
    """Every recorded setting that changes the figures and differs, as ``{"setting", "report", "baseline"}``.

    A setting one of the two does not record (a report from before it was recorded) is not held
    against it. The contents' hash is named only when no count or setting before it differs. Besides the top-level settings: the embedding model (its files; the backend is
    encoder noise the tolerance absorbs), and a mode that ran without its semantic leg on one side
    only (hybrid without the embeddings extra is another ranking).
    """
    out = []
    for key, label in SETTINGS:
        if key not in WRITTEN_WHEN_GIVEN and (key not in report or key not in baseline):
            continue
        if key == "contents" and out:
            continue  # another count or setting already says why; the hash would only repeat it
        if report.get(key) != baseline.get(key):
            out.append({"setting": label, "report": report.get(key), "baseline": baseline.get(key)})
    models = [_model(r) for r in (report, baseline)]
    if None not in models and models[0] != models[1]:
        out.append({"setting": "model", "report": models[0], "baseline": models[1]})
    for mode, base_row in baseline.get("modes", {}).items():
        row = report.get("modes", {}).get(mode)
        if row is not None and bool(row.get("degraded")) != bool(base_row.get("degraded")):
            ran = ("not run", "run") if row.get("degraded") else ("run", "not run")
            out.append({"setting": f"{mode} mode's semantic leg", "report": ran[0], "baseline": ran[1]})
    return out


def _model(report: Mapping) -> str | None:
    model_id = (report.get("config") or {}).get("model_id")
    return model_id.split("@")[0] if model_id else None


def describe(difference: Mapping, here: str = "here") -> str:
    """``--depth: 10 here, 100 in the baseline``."""
    def shown(value: object) -> str:
        if value is None:
            return "none"
        return repr(value) if difference["setting"] in QUOTED else str(value)

    return f"{difference['setting']}: {shown(difference['report'])} {here}, {shown(difference['baseline'])} in the baseline"


def compare(report: Mapping, baseline: Mapping, tolerance: float = 0.005) -> dict:
    """Per-mode, per-metric differences (report - baseline) and the drops beyond ``tolerance``.

    When the settings differ (``differences``) nothing is diffed: ``modes`` and ``regressions`` stay
    empty and ``differences`` says why. Latency is shown but never judged (it depends on the
    machine). A mode the baseline has and the report lacks is listed under ``missing_modes``, not
    counted as a regression.
    """
    if not tolerance >= 0 or tolerance == float("inf"):  # NaN compares false both ways: it passed every drop
        raise InvalidInput("tolerance must be a finite number, zero or positive")
    out: dict = {
        "dataset": report.get("dataset"), "baseline_dataset": baseline.get("dataset"),
        "tolerance": tolerance, "differences": differences(report, baseline),
        "modes": {}, "regressions": [], "missing_modes": [],
    }
    if out["differences"]:
        return out
    for mode, base_row in baseline.get("modes", {}).items():
        row = report.get("modes", {}).get(mode)
        if row is None:
            out["missing_modes"].append(mode)
            continue
        diffs: dict = {}
        for metric in (*METRICS, *LATENCY_KEYS):
            old, new = base_row.get(metric), row.get(metric)
            if old is None or new is None:
                continue
            diff = round(new - old, 4)
            diffs[metric] = {"baseline": old, "report": new, "diff": diff}
            if metric in METRICS and diff < -tolerance:
                out["regressions"].append({"mode": mode, "metric": metric, "baseline": old, "report": new, "diff": diff})
        out["modes"][mode] = diffs
    return out
