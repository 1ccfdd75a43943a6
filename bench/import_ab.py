"""CPU time of importing the Store facade (what every CLI search pays before it opens a store) in a
fresh process, two code trees alternating run after run; medians, as one JSON line.

    python bench/import_ab.py --runs 21 before=/tmp/before after=/tmp/after

Each tree is ``label=folder holding kenning/``. Narrower than cold_ab.py (no store, no search), so a
change to the import graph shows above the noise of a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CODE = "import time; t = time.process_time(); import kenning.memory.facade; print(time.process_time() - t)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("trees", nargs="+", help="label=folder (repeat)")
    args = parser.parse_args()
    trees = dict(spec.split("=", 1) for spec in args.trees)
    samples: dict[str, list[float]] = {label: [] for label in trees}
    # the CLI's own process defaults (commands/support.py), so the import is the one a search makes
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "__all__", "OPENBLAS_NUM_THREADS": "1"}
    for i in range(args.runs + 1):  # the first round warms page cache and bytecode, and is dropped
        for label, tree in trees.items():
            done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, cwd="/tmp",
                                  env={**env, "PYTHONPATH": tree}, check=True)
            if i:
                samples[label].append(float(done.stdout))
    report = {"runs": args.runs, "load_at_end": os.getloadavg()}
    report.update({label: {"cpu_ms": round(statistics.median(v) * 1000, 1),
                           "cpu_q1_ms": round(statistics.quantiles(v, n=4)[0] * 1000, 1)}
                   for label, v in samples.items()})
    print(json.dumps(report))


if __name__ == "__main__":
    main()
