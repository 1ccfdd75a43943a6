"""Draw an eval report as a picture: per-mode metrics and latency side by side.

matplotlib is imported inside the function with the Agg backend, so neither ``import kenning``
nor a run without ``--plot`` pays for it, and it works on a machine without a display.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

from kenning.errors import InvalidInput

from .metrics import METRICS


MISSING = '--plot needs matplotlib; install it with: pip install "kenning[eval]"'


# the formats matplotlib's Agg canvas writes: another suffix failed only after the whole run
FORMATS = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def check_can_plot(path: str | Path | None = None) -> None:
    """Called before a run: a missing matplotlib, or a file suffix it cannot write, found only after
    the run would lose the results."""
    if path is not None and Path(path).suffix.lower() not in FORMATS:
        raise InvalidInput(f"--plot {path}: give a file ending in {', '.join(FORMATS)} (.png is the usual one)")
    if importlib.util.find_spec("matplotlib") is None:
        raise InvalidInput(MISSING)


def plot_report(report: Mapping, path: str | Path) -> Path:
    """Write a PNG with grouped bars of every metric the report holds per mode (left) and latency
    p50/p95 (right)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise InvalidInput(MISSING) from exc

    modes = list(report.get("modes", {}))
    if not modes:
        raise InvalidInput("the report has no modes to plot")
    rows = report["modes"]
    metrics = [m for m in METRICS if any(m in rows[mode] for mode in modes)]  # no R@100 below --depth 100
    width = 0.8 / len(modes)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [2, 1]})

    for i, mode in enumerate(modes):
        values = [rows[mode].get(m) or 0.0 for m in metrics]
        xs = [x + (i - (len(modes) - 1) / 2) * width for x in range(len(metrics))]
        bars = left.bar(xs, values, width, label=mode)
        left.bar_label(bars, fmt="%.2f", fontsize=7)
    left.set_xticks(range(len(metrics)), metrics)
    left.set_ylim(0, 1.05)
    left.set_ylabel("score")
    left.set_title(f"{report.get('dataset', '')}: relevance ({rows[modes[0]].get('queries', '?')} queries)")
    left.legend(fontsize=8)

    p50 = [rows[m].get("latency_ms_p50") or 0.0 for m in modes]
    p95 = [rows[m].get("latency_ms_p95") or 0.0 for m in modes]
    xs = range(len(modes))
    right.bar([x - 0.2 for x in xs], p50, 0.4, label="p50")
    right.bar([x + 0.2 for x in xs], p95, 0.4, label="p95")
    right.set_xticks(list(xs), modes, rotation=20)
    right.set_ylabel("ms per query")
    right.set_title("latency")
    right.legend(fontsize=8)

    fig.tight_layout()
    out = Path(path)
    try:
        fig.savefig(out, dpi=120)
    except OSError as exc:
        raise InvalidInput(f"cannot write the plot to {out}: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)
    return out
