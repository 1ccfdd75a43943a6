"""One cold CLI search, two code trees, many alternating runs: the focused A/B behind
bench_cold_start.py's rows when the machine is too loaded for 7 runs to settle a median.

    python bench/cold_ab.py --tree before=/tmp/before:/tmp/stores-before/onnx-100000 \\
        --tree after=/tmp/after:/tmp/stores-after/onnx-100000 --runs 15 -- --mode bm25

Each tree is ``label=folder holding kenning/:store directory`` (its own store copy: a newer schema
migrates the store it opens). Prints the medians, first quartiles and minima of wall and CPU time
(user + system of the child, from RUSAGE_CHILDREN) as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

QUERY = "billing helios migration"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="label=folder:store (repeat)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("search_args", nargs="*", help="after --: options of `kenning search`")
    args = parser.parse_args()
    trees = {label: spec.rsplit(":", 1) for label, spec in (t.split("=", 1) for t in args.tree)}
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
    for i in range(args.runs + 1):  # the first round warms page cache and bytecode, and is dropped
        for label, (tree, store) in trees.items():
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env.update(PYTHONPATH=tree, HF_HUB_OFFLINE="1", NO_COLOR="1")
            before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "kenning", "--store", store, "search", QUERY,
                                   *args.search_args], capture_output=True, env=env, cwd="/tmp")
            wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                sys.exit(done.stderr.decode()[-800:])
            if i:
                samples[label].append((wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    report: dict = {"runs": args.runs, "search_args": args.search_args, "load_at_end": os.getloadavg()}
    for label, rows in samples.items():
        walls, cpus = zip(*rows)
        report[label] = {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3),
                         "cpu_q1_s": round(statistics.quantiles(cpus, n=4)[0], 3), "cpu_min_s": round(min(cpus), 3)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
