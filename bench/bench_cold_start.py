"""Cold start of two code trees side by side (issues 10 and 14): the CLI's first search, the MCP
server's first hybrid search, and the peak RSS of a searching process.

Each tree is a folder holding ``kenning`` (a ``git archive`` snapshot, or a folder with a ``kenning``
symlink to a checkout), put on PYTHONPATH for its child processes. The trees run alternately, run
after run, so a busy machine slows both alike; every figure is a median, wall time with the child's
CPU time (user + system, from ``os.wait4`` / ``RUSAGE_CHILDREN``) beside it.

    mkdir -p /tmp/before && git archive 7082a3c --prefix=kenning/ | tar -x -C /tmp/before
    mkdir -p /tmp/after && git archive HEAD --prefix=kenning/ | tar -x -C /tmp/after
    python bench/bench_cold_start.py --tree before=/tmp/before --tree after=/tmp/after --runs 9 \\
        --out bench/results-cold-start.json

The stores are bench_encoder.py's (``/tmp/kenning-bench-encoder/onnx-N``: synthetic memories, every
one with a vector). Copy them first if other runs use them: a newer tree may migrate a store, which
an older tree then refuses; ``--stores-of LABEL=DIR`` gives a tree its own copy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_encoder import mcp_first_answer  # bench/ is the script's folder, first on sys.path

QUERY = "billing helios migration"
RSS_CHILD = """
import json, resource, sys
sys.path.insert(0, {here!r})
from corpus import Corpus
import kenning
store = kenning.open_store({path!r})
for q in Corpus().queries(50, corpus_size={n}):
    r = store.search(q, mode="hybrid", limit=5, auto_scope=False)
print(json.dumps({{"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "legs": r.legs_run}}))
"""


def environment(tree: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # an install has its bytecode
    return {**env, "PYTHONPATH": tree, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}


def run_child(argv: list[str], env: dict[str, str], check=None) -> tuple[float, float]:
    """Wall and CPU seconds of one child (CPU from RUSAGE_CHILDREN before and after)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or (check and not check(done.stdout)):
        sys.exit(f"{' '.join(argv)} failed: {done.stderr.decode()[-800:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def has_vector_leg(stdout: bytes) -> bool:
    return "vector" in json.loads(stdout)["legs_run"]


def mcp_first_search(store: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Spawn the MCP server, initialize, one hybrid memory_search: (initialize s, first answer s, server CPU s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ready, total = mcp_first_answer(store, QUERY, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the server, once it has exited
    return ready, total, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def med(values) -> float:
    return round(float(statistics.median(values)), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="label=folder holding kenning/ (repeat)")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--mcp-runs", type=int, default=5)
    parser.add_argument("--stores", type=Path, default=Path(tempfile.gettempdir()) / "kenning-bench-encoder",
                        help="folder with onnx-1000, onnx-10000, onnx-100000 (bench_encoder.py's)")
    parser.add_argument("--stores-of", action="append", default=[], metavar="LABEL=DIR",
                        help="that tree's own copy of the stores (a tree with a newer schema migrates the "
                             "stores it opens, which an older tree then refuses)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    own = {label: Path(d) for label, d in (t.split("=", 1) for t in args.stores_of)}
    stores = {label: {n: own.get(label, args.stores) / f"onnx-{n}" for n in (1000, 10_000, 100_000)}
              for label in trees}
    here = str(Path(__file__).resolve().parent)
    py = sys.executable
    names = ["python -c pass", "cold `kenning search --mode bm25` at 100k", "cold `kenning search --mode hybrid` at 10k"]

    def measures_of(label: str) -> dict:
        store = stores[label]
        return dict(zip(names, [
            ([py, "-c", "pass"], None),
            ([py, "-m", "kenning", "--store", str(store[100_000]), "search", QUERY, "--mode", "bm25"], None),
            ([py, "-m", "kenning", "--store", str(store[10_000]), "search", QUERY, "--mode", "hybrid",
              "--no-auto-scope", "--json"], has_vector_leg),
        ]))

    measures = {label: measures_of(label) for label in trees}
    report: dict = {"load_average_at_start": list(os.getloadavg()), "cpus": os.cpu_count(), "runs": args.runs,
                    "mcp_runs": args.mcp_runs, "trees": trees, "results": {label: {} for label in trees}}
    samples = {(label, name): [] for label in trees for name in names}
    mcp = {label: [] for label in trees}
    for label, tree in trees.items():  # warm: page cache, bytecode, a first open's snapshot, the ONNX copy
        for name, (argv, check) in measures[label].items():
            run_child(argv, environment(tree), check)
    for i in range(args.runs):
        for label, tree in trees.items():
            for name, (argv, check) in measures[label].items():
                samples[(label, name)].append(run_child(argv, environment(tree), check))
        print(f"run {i + 1}/{args.runs} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    for i in range(args.mcp_runs + 1):
        for label, tree in trees.items():
            row = mcp_first_search(stores[label][10_000], environment(tree))
            if i:
                mcp[label].append(row)
    for label, tree in trees.items():
        out = report["results"][label]
        for name in names:
            walls, cpus = zip(*samples[(label, name)])
            out[name] = {"wall_s": med(walls), "cpu_s": med(cpus), "wall_min_s": round(min(walls), 3),
                         "cpu_min_s": round(min(cpus), 3)}
        out["MCP spawn + initialize + first hybrid search at 10k"] = {
            "initialize_s": med(r[0] for r in mcp[label]), "wall_s": med(r[1] for r in mcp[label]),
            "cpu_s": med(r[2] for r in mcp[label])}
        for n in (1000, 100_000):
            done = subprocess.run([py, "-c", RSS_CHILD.format(here=here, path=str(stores[label][n]), n=n)], capture_output=True,
                                  text=True, env=environment(tree), cwd=tempfile.gettempdir())
            if done.returncode != 0:
                sys.exit(f"RSS child failed: {done.stderr[-800:]}")
            rss = json.loads(done.stdout.strip().splitlines()[-1])
            assert "vector" in rss["legs"], rss
            out[f"peak RSS, hybrid search at {n // 1000}k, MB"] = {"rss_mb": round(rss["rss_mb"], 1)}
    report["load_average_at_end"] = list(os.getloadavg())
    rows = list(next(iter(report["results"].values())))
    print(f"{'measure':55}" + "".join(f"{label:>26}" for label in trees))
    for name in rows:
        cells = []
        for label in trees:
            row = report["results"][label][name]
            cells.append(f"{row['rss_mb']:.0f} MB" if "rss_mb" in row else f"{row['wall_s']:.3f} s ({row['cpu_s']:.3f} cpu)")
        print(f"{name:55}" + "".join(f"{c:>26}" for c in cells))
    print(f"load average {report['load_average_at_start'][0]:.1f} at start, {report['load_average_at_end'][0]:.1f} at end")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
