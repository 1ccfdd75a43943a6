"""Warm hybrid searches and writes with their vectors, two code trees, alternating rounds on the same
stores: the same-run before/after behind issue 10's warm-hybrid and write rows when the machine is too
busy for two separate bench_encoder.py runs to be compared.

    python bench/encoder_ab.py --tree before=/tmp/enc10-before --tree after=/tmp/enc10-after \\
        --store /tmp/kenning-bench-encoder/onnx-10000 --rounds 4 --out /tmp/ab.json

``--tree`` is a folder to put on PYTHONPATH (one holding a ``kenning`` package). Each round runs one
process per tree, in alternating order: it opens the store, warms with 20 queries, then times
``--repeats`` passes of the bench_encoder.py queries in hybrid mode at limit 5 (p50 of per-search
wall and CPU time, the encode included). With ``--writes N`` the process then writes N synthetic
memories into a copy of ``--write-store`` made for it, each embedded inline (p50 per write). Prints and
writes the medians over the rounds and each tree's ratio to the first tree's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from warm_process import measure  # noqa: E402  (bench/ is not a package)


def run_tree(tree: str, args: argparse.Namespace, write_store: str) -> dict:
    env = {**os.environ, "PYTHONPATH": tree, "HF_HUB_OFFLINE": "1"}
    return measure(str(args.store), env, queries=args.queries, warm=20, repeats=args.repeats, writes=args.writes,
                   write_store=write_store or None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="name=folder for PYTHONPATH (two or more)")
    parser.add_argument("--store", type=Path, required=True, help="a bench_encoder.py store, embedded")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--writes", type=int, default=0, help="writes a round into a fresh copy of --write-store")
    parser.add_argument("--write-store", type=Path, help="the store copied for the writes (default --store)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    samples: dict[str, list[dict]] = {name: [] for name in trees}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="kenning-encoder-ab-") as work:
        for round_ in range(args.rounds):
            order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
            for name in order:
                target = ""
                if args.writes:
                    target = str(Path(work) / f"{name}-{round_}")
                    shutil.copytree(args.write_store or args.store, target)
                samples[name].append(run_tree(trees[name], args, target))
                if target:
                    shutil.rmtree(target)
            loads.append(os.getloadavg()[0])
            print(f"round {round_ + 1}: " + "  ".join(
                f"{n} hybrid {s[-1]['hybrid']['wall_p50_ms']:.2f} ({s[-1]['hybrid']['cpu_p50_ms']:.2f})"
                + (f" write {s[-1]['write']['wall_p50_ms']:.2f} ({s[-1]['write']['cpu_p50_ms']:.2f})" if "write" in s[-1] else "")
                for n, s in samples.items()) + f"  load {loads[-1]:.1f}", flush=True)
    report = {"store": str(args.store), "rounds": args.rounds, "load_averages": loads, "trees": trees, "medians": {}}
    first = next(iter(trees))
    for name, rows in samples.items():
        assert not any(r["torch_loaded"] for r in rows), f"{name} loaded torch"
        report["medians"][name] = {
            measure: {key: statistics.median(r[measure][key] for r in rows) for key in ("wall_p50_ms", "cpu_p50_ms")}
            for measure in rows[0] if measure != "torch_loaded"}
    for name, medians in report["medians"].items():
        line = [f"{name:10}"]
        for measure, figures in medians.items():
            base = report["medians"][first][measure]
            line.append(f"{measure} p50 {figures['wall_p50_ms']:.2f} ms wall ({figures['cpu_p50_ms']:.2f} CPU), "
                        f"x{figures['wall_p50_ms'] / base['wall_p50_ms']:.2f} / x{figures['cpu_p50_ms'] / base['cpu_p50_ms']:.2f} of {first}")
        print("  ".join(line))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
