"""Warm searches, two code trees, alternating rounds on one store, with rank_bm25 in the same run: the
focused A/B behind bench_scale.py's warm rows when the machine is too loaded for two separate runs
to be compared.

    python bench/warm_ab.py --tree before=/tmp/before --tree after=/tmp/after --store /tmp/store-100k \\
        --rounds 4 --out bench/results-warm-ab.json

Each round runs one searching process per tree (the order alternates): it opens the store, warms
with every query once, then times ``--repeats`` passes of the queries (limit 10) for ``bm25`` and
the lexical ``hybrid`` (the embeddings extra hidden, as on a base install), and ``rank`` with
``explain=False`` (the engine alone); each figure is that process's p50 of per-search CPU time
(and wall), and the process's whole CPU over the timed passes a search (``cpu_mean_ms``: with the
read events those searches queued committed, in the background or at the end, and their
settlement). The reference, ``rank_bm25.BM25Okapi`` over the store's live texts tokenized by
kenning's tokenizer (get_scores + top 10), runs in its own process in the first and last rounds.
Prints and writes the medians over the rounds, and each tree's ratio to the reference's CPU p50.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402

SEARCHER = r"""
import json, sys, time
sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None
import numpy as np
import kenning
directory, queries, repeats = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
store = kenning.open_store(directory)
out = {}
for name, call in (("bm25", lambda q: store.search(q, mode="bm25", limit=10)),
                   ("hybrid", lambda q: store.search(q, mode="hybrid", limit=10)),
                   ("engine", lambda q: store.rank(q, mode="bm25", depth=10, explain=False))):
    for q in queries:
        call(q)
    flush = getattr(getattr(store, "_s", None), "deferred", None)
    if flush is not None:
        flush.flush()  # the warm pass's read events, before the timed ones
    cpu, wall = [], []
    start = time.process_time()
    for _ in range(repeats):
        for q in queries:
            c0, w0 = time.process_time(), time.perf_counter()
            call(q)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
    if flush is not None:
        flush.flush()  # what the timed searches queued: the event rows and their settlement
    mean = (time.process_time() - start) / len(cpu)
    out[name] = {"cpu_p50_ms": float(np.median(cpu)) * 1e3, "wall_p50_ms": float(np.median(wall)) * 1e3,
                 "cpu_mean_ms": mean * 1e3}
store.close()
print(json.dumps(out))
"""

REFERENCE = r"""
import json, sqlite3, sys, time
import numpy as np
from rank_bm25 import BM25Okapi
from kenning.retrieval.text import query_tokens, tokenize
directory, queries = sys.argv[1], json.loads(sys.argv[2])
with sqlite3.connect(f"file:{directory}/kenning.sqlite3?mode=ro", uri=True) as c:
    texts = [r[0] for r in c.execute("SELECT content FROM memories WHERE removed_at IS NULL ORDER BY rowid")]
bm25 = BM25Okapi([tokenize(t) for t in texts])
cpu, wall = [], []
for q in queries:
    tokens = query_tokens(q)
    c0, w0 = time.process_time(), time.perf_counter()
    scores = bm25.get_scores(tokens)
    top = np.argsort(-scores)[:10]
    cpu.append(time.process_time() - c0)
    wall.append(time.perf_counter() - w0)
print(json.dumps({"cpu_p50_ms": float(np.median(cpu)) * 1e3, "wall_p50_ms": float(np.median(wall)) * 1e3,
                  "documents": len(texts)}))
"""


def _child(code: str, tree: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": tree, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          cwd="/tmp", timeout=3600)
    if done.returncode != 0:
        sys.exit(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="label=folder holding kenning/ (repeat)")
    parser.add_argument("--store", required=True, help="a store directory (searches log events into it)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--reference-queries", type=int, default=30)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    with __import__("sqlite3").connect(f"file:{args.store}/kenning.sqlite3?mode=ro", uri=True) as c:
        size = c.execute("SELECT count(*) FROM memories WHERE removed_at IS NULL").fetchone()[0]
    queries = Corpus().queries(args.queries, corpus_size=size)
    samples: dict[str, list[dict]] = {label: [] for label in trees}
    references = []
    first_tree = next(iter(trees.values()))
    load = [os.getloadavg()[0]]
    for i in range(args.rounds):
        if i in (0, args.rounds - 1):
            references.append(_child(REFERENCE, first_tree, args.store, json.dumps(queries[: args.reference_queries])))
        order = list(trees.items()) if i % 2 == 0 else list(trees.items())[::-1]
        for label, tree in order:
            samples[label].append(_child(SEARCHER, tree, args.store, json.dumps(queries), str(args.repeats)))
        load.append(os.getloadavg()[0])
    reference_cpu = statistics.median(r["cpu_p50_ms"] for r in references)
    report: dict = {"store": args.store, "memories": size, "rounds": args.rounds, "repeats": args.repeats,
                    "queries": args.queries, "load_average": load,
                    "rank_bm25": {"cpu_p50_ms": reference_cpu,
                                  "wall_p50_ms": statistics.median(r["wall_p50_ms"] for r in references)}}
    for label, rounds in samples.items():
        row = {}
        for name in ("bm25", "hybrid", "engine"):
            row[name] = {key: round(statistics.median(r[name][key] for r in rounds), 3)
                         for key in ("cpu_p50_ms", "wall_p50_ms", "cpu_mean_ms")}
        row["rank_bm25_cpu_over_bm25_cpu"] = round(reference_cpu / row["bm25"]["cpu_p50_ms"], 1)
        row["rank_bm25_cpu_over_engine_cpu"] = round(reference_cpu / row["engine"]["cpu_p50_ms"], 1)
        report[label] = row
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
