"""Bulk import cost of two (or more) code trees, alternating run after run in fresh processes.

    python bench/bulk_import_ab.py --n 100000 --batch-size 2000 --runs 5 \\
        before=/tmp/imp14-before after=/work/wt/imp14-pkg

Each tree is ``label=folder holding kenning/``. A run is one child process that imports ``--n``
bench/corpus.py records (about 40 words, one shape, with ids: what bench_lexical.py's import row
imports) into a fresh store with ``Store.import_records`` (or ``import_checked`` with ``--gated``)
and reports its user and system CPU seconds and wall seconds for that call alone. The trees take
turns, so a change of machine load hits both; medians per tree, as one JSON line, with the load.
On a shared machine compare CPU (user + sys): wall time includes waiting for a core.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent

CHILD = r"""
import json, resource, shutil, sys, tempfile, time
from pathlib import Path
sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None  # a base install
import kenning
sys.path.insert(0, sys.argv[1])
from corpus import Corpus
n, batch, gated = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
records = Corpus().records(n)
folder = Path(tempfile.mkdtemp(prefix="kenning-bulk-ab-"))
try:
    store = kenning.open_store(folder)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    (store.import_checked if gated else store.import_records)(records, batch_size=batch)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    store.close()
finally:
    shutil.rmtree(folder, ignore_errors=True)
print(json.dumps({"user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime, "wall": wall,
                  "tree": str(Path(kenning.__file__).parent)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="records a run imports")
    parser.add_argument("--batch-size", type=int, default=2000, help="import_records batch size (bench_lexical's)")
    parser.add_argument("--runs", type=int, default=5, help="runs per tree")
    parser.add_argument("--gated", action="store_true", help="import_checked (the write gates) instead")
    parser.add_argument("trees", nargs="+", help="label=folder holding kenning/ (repeat)")
    args = parser.parse_args()
    trees = dict(spec.split("=", 1) for spec in args.trees)
    samples: dict[str, list[dict]] = {label: [] for label in trees}
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    for _ in range(args.runs):
        for label, tree in trees.items():
            done = subprocess.run([sys.executable, "-c", CHILD, str(BENCH), str(args.n), str(args.batch_size),
                                   "1" if args.gated else "0"],
                                  capture_output=True, text=True, cwd="/tmp", env={**env, "PYTHONPATH": tree})
            if done.returncode:
                sys.exit(f"{label}: {done.stderr.strip()[-800:]}")
            samples[label].append(json.loads(done.stdout.splitlines()[-1]))
            print(label, samples[label][-1], file=sys.stderr, flush=True)
    report: dict = {"n": args.n, "batch_size": args.batch_size, "runs": args.runs, "gated": args.gated,
                    "load_at_end": os.getloadavg()}
    for label, runs in samples.items():
        cpu = [r["user"] + r["sys"] for r in runs]
        wall = [r["wall"] for r in runs]
        report[label] = {
            "cpu_us_per_memory": round(statistics.median(cpu) / args.n * 1e6, 1),
            "user_us": round(statistics.median(r["user"] for r in runs) / args.n * 1e6, 1),
            "sys_us": round(statistics.median(r["sys"] for r in runs) / args.n * 1e6, 1),
            "wall_us_per_memory": round(statistics.median(wall) / args.n * 1e6, 1),
            "per_s_wall": round(args.n / statistics.median(wall)),
            "per_s_cpu": round(args.n / statistics.median(cpu)),
            "tree": runs[0]["tree"],
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
