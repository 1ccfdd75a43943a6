"""A gated write's CPU and wall time at one store size, two code trees alternating run after run.

    python bench/write_ab.py STORE_DIR --offset 100000 --writes 150 --runs 7 \
        before=/tmp/write14-before after=/work/wt/write14-pkg

Each tree is ``label=folder holding kenning/``. Every run is a fresh process of one tree, on its
own copy of STORE_DIR (made by ``import_records`` of bench/corpus.py's records, e.g. by
bench_lexical.py ``--keep``): it opens the copy with the embeddings extra hidden, makes one bm25
search and one write (the session's first, which measures the curation pressure), then times
``--writes`` writes of the corpus' memories from ``--offset`` on, the same texts for every run.
The trees take turns, so a change in the machine's load falls on both. Prints, per tree, the
median over runs of each run's p50 (CPU: user+sys of the process, and wall), as one JSON object.
Run it from inside a git repository: a write records the repository it was made in.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, statistics, sys, time
sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None  # a base install
sys.path.insert(0, {bench!r})
import kenning
from corpus import Corpus

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

texts = list(Corpus().memories({writes}, offset={offset}))
store = kenning.open_store({store!r})
store.search("warm up", mode="bm25")
store.write("a first write about the deploy pipeline and its cache", scopes=["bench:writes"])
cpus, walls, statuses = [], [], {{}}
for text in texts:
    c0, t0 = cpu(), time.perf_counter()
    status = store.write(text, scopes=["bench:writes"]).status
    walls.append(time.perf_counter() - t0)
    cpus.append(cpu() - c0)
    statuses[status] = statuses.get(status, 0) + 1
store.close()
print(json.dumps({{"cpu": cpus, "wall": walls, "statuses": statuses, "file": kenning.__file__}}))
"""


def run_once(tree: str, store: Path, offset: int, writes: int, workdir: Path) -> dict:
    """One fresh process of ``tree`` timing ``writes`` writes on a copy of ``store``."""
    copy = workdir / "store"
    shutil.copytree(store, copy)
    try:
        code = CHILD.format(bench=str(Path(__file__).resolve().parent), writes=writes, offset=offset,
                            store=str(copy))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONPATH": tree, "HF_HUB_OFFLINE": "1"})
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(copy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path)
    parser.add_argument("--offset", type=int, required=True, help="first corpus memory to write (the store's size)")
    parser.add_argument("--writes", type=int, default=150)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("trees", nargs="+", help="label=folder (repeat)")
    args = parser.parse_args()
    trees = dict(spec.split("=", 1) for spec in args.trees)
    runs: dict[str, list[dict]] = {label: [] for label in trees}
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for label, tree in trees.items():
                runs[label].append(run_once(tree, args.store, args.offset, args.writes, Path(tmp)))
    report: dict = {"store": str(args.store), "writes": args.writes, "runs": args.runs,
                    "load_at_start": load_start, "load_at_end": os.getloadavg()}
    for label, done in runs.items():
        cpu = [statistics.median(r["cpu"]) * 1e3 for r in done]
        wall = [statistics.median(r["wall"]) * 1e3 for r in done]
        report[label] = {"cpu_p50_ms": round(statistics.median(cpu), 3), "wall_p50_ms": round(statistics.median(wall), 3),
                         "cpu_p50_ms_runs": [round(x, 3) for x in cpu], "wall_p50_ms_runs": [round(x, 3) for x in wall],
                         "statuses": done[0]["statuses"], "file": done[0]["file"]}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
