"""How kenning's costs grow with the store: one script, 1k to 1M memories, references in the same run.

Run from the repository root:

    python bench/bench_scale.py --sizes 1000,10000,100000 --out bench/results-scale.json --plot bench/scale.png

At each size, on the synthetic corpus of bench/corpus.py (fixed seed, ~40-word memories):

- import rate: ``import_records`` of every memory into a fresh store (memories/s, CPU time beside);
- store size on disk (the directory, WAL included, after a checkpointing close);
- cold open: a fresh process opens the store and runs its first ``bm25`` search (the time a CLI
  call or a server's first request pays beyond the interpreter start); the same process then
  times warm ``bm25`` searches (limit 10): p50 / p99 wall and CPU, and reports its peak RSS;
- the same process times ``hybrid`` searches (limit 10): with the embeddings extra hidden that is
  keyword + BM25 fused, i.e. hybrid without the vector leg and its query encoding;
- cold CLI: ``kenning --store DIR search QUERY --mode bm25`` as a new process (median of
  ``--cli-runs``), wall and CPU;
- single gated writes (``write``, duplicates probe and origin included): p50 / p99;
- the engine alone: ``Store.rank(mode="bm25", depth=10, explain=False)`` in the same process (no
  snippets, trust annotation or event row), p50 wall and CPU;
- references over the same texts and queries, tokenized by kenning's token stream, in this run:
  ``rank_bm25.BM25Okapi`` (get_scores + top 10) and ``bm25s`` (numpy backend, retrieve k=10).

The embeddings extra is hidden (a base install), so nothing waits on a model. Figures are medians
of many queries; on a loaded machine compare ratios against the references, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None  # type: ignore[assignment]  # a base install

import kenning  # noqa: E402
from kenning.retrieval.text import query_tokens, tokenize  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402

LIMIT = 10

# The searching child: open, first search, warm searches; prints one JSON line.
CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None
import kenning
t1 = time.perf_counter()
directory, queries, repeats, limit = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
store = kenning.open_store(directory)
t2 = time.perf_counter()
store.search(queries[0], mode="bm25", limit=limit)
t3 = time.perf_counter()
cold_cpu = time.process_time()
for q in queries:
    store.search(q, mode="bm25", limit=limit)
wall, cpu = [], []
for _ in range(repeats):
    for q in queries:
        c0, w0 = time.process_time(), time.perf_counter()
        store.search(q, mode="bm25", limit=limit)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
hybrid_wall, hybrid_cpu = [], []
for _ in range(repeats):
    for q in queries:
        c0, w0 = time.process_time(), time.perf_counter()
        store.search(q, mode="hybrid", limit=limit)
        hybrid_wall.append(time.perf_counter() - w0)
        hybrid_cpu.append(time.process_time() - c0)
engine_wall, engine_cpu = [], []
for _ in range(repeats):
    for q in queries:
        c0, w0 = time.process_time(), time.perf_counter()
        store.rank(q, mode="bm25", depth=limit, explain=False)
        engine_wall.append(time.perf_counter() - w0)
        engine_cpu.append(time.process_time() - c0)
store.close()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_search_s": t3 - t2, "cold_cpu_s": cold_cpu,
                  "wall": wall, "cpu": cpu, "engine_wall": engine_wall, "engine_cpu": engine_cpu,
                  "hybrid_wall": hybrid_wall, "hybrid_cpu": hybrid_cpu,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def pct(samples, q) -> float:
    return float(np.percentile(np.asarray(samples, dtype=np.float64), q))


def disk_mb(directory: Path) -> float:
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()) / 1e6


def bench_import(records: list[dict], directory: Path) -> dict:
    store = kenning.open_store(directory)
    c0, t0 = time.process_time(), time.perf_counter()
    store.import_records(records, batch_size=5000)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    store.close()
    return {"per_s": len(records) / wall, "wall_s": wall, "cpu_s": cpu}


def bench_child(directory: Path, queries: list[str], repeats: int) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(directory), json.dumps(queries), str(repeats), str(LIMIT)],
                          capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        sys.exit(f"search child failed: {done.stderr[-800:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    wall, cpu = out.pop("wall"), out.pop("cpu")
    engine_wall, engine_cpu = out.pop("engine_wall"), out.pop("engine_cpu")
    hybrid_wall, hybrid_cpu = out.pop("hybrid_wall"), out.pop("hybrid_cpu")
    out.update(search_p50_ms=pct(wall, 50) * 1e3, search_p99_ms=pct(wall, 99) * 1e3,
               search_cpu_p50_ms=pct(cpu, 50) * 1e3, search_cpu_p99_ms=pct(cpu, 99) * 1e3,
               hybrid_p50_ms=pct(hybrid_wall, 50) * 1e3, hybrid_cpu_p50_ms=pct(hybrid_cpu, 50) * 1e3,
               engine_p50_ms=pct(engine_wall, 50) * 1e3, engine_cpu_p50_ms=pct(engine_cpu, 50) * 1e3)
    return out


def bench_cli(directory: Path, queries: list[str], runs: int) -> dict:
    """``kenning --store DIR search QUERY --mode bm25`` as a new process: wall and CPU (user + system)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    wall, cpu = [], []
    for i in range(runs):
        before = os.times()
        t0 = time.perf_counter()
        # ``-m kenning`` is what the ``kenning`` executable runs (its entry point is kenning.__main__,
        # with the fast search path); ``-m kenning.cli`` would skip it
        done = subprocess.run([sys.executable, "-m", "kenning", "--store", str(directory), "search",
                               queries[i % len(queries)], "--mode", "bm25"], capture_output=True, text=True,
                              env=env, cwd=tempfile.gettempdir())
        wall.append(time.perf_counter() - t0)
        after = os.times()
        cpu.append(after.children_user - before.children_user + after.children_system - before.children_system)
        if done.returncode != 0:
            sys.exit(f"cold CLI search failed: {done.stderr[-800:]}")
    return {"p50_s": pct(wall, 50), "cpu_p50_s": pct(cpu, 50), "runs": runs}


def bench_writes(directory: Path, texts: list[str]) -> dict:
    store = kenning.open_store(directory)
    store.search("warm up", mode="bm25")
    wall, cpu = [], []
    for text in texts:
        c0, t0 = time.process_time(), time.perf_counter()
        store.write(text, scopes=["bench:writes"])
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    store.close()
    return {"p50_ms": pct(wall, 50) * 1e3, "p99_ms": pct(wall, 99) * 1e3, "cpu_p50_ms": pct(cpu, 50) * 1e3}


def bench_references(texts: list[str], queries: list[str]) -> dict:
    """rank_bm25 and bm25s over kenning's tokens: per-query p50 (wall and CPU), top 10."""
    from rank_bm25 import BM25Okapi
    import bm25s

    docs = [tokenize(t) for t in texts]
    toks = [query_tokens(q) for q in queries]
    out = {}
    model = BM25Okapi(docs)
    wall, cpu = [], []
    for q in toks:
        c0, t0 = time.process_time(), time.perf_counter()
        scores = model.get_scores(q)
        top = np.argpartition(-scores, LIMIT)[:LIMIT]
        top[np.argsort(-scores[top])]
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    out["rank_bm25"] = {"p50_ms": pct(wall, 50) * 1e3, "cpu_p50_ms": pct(cpu, 50) * 1e3}
    del model
    retriever = bm25s.BM25()
    retriever.index(docs, show_progress=False)
    vocab = retriever.vocab_dict
    wall, cpu = [], []
    for q in toks:
        q = [t for t in q if t in vocab] or [next(iter(vocab))]
        c0, t0 = time.process_time(), time.perf_counter()
        retriever.retrieve([q], k=LIMIT, show_progress=False)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    out["bm25s"] = {"p50_ms": pct(wall, 50) * 1e3, "cpu_p50_ms": pct(cpu, 50) * 1e3}
    return out


def run_size(corpus: Corpus, n: int, args, workdir: Path) -> dict:
    log = lambda msg: print(f"[{n:>8,}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    records = corpus.records(n)
    queries = corpus.queries(args.queries, corpus_size=n)
    directory = workdir / f"store-{n}"
    row: dict = {"memories": n}
    row["import"] = bench_import(records, directory)
    log(f"import {row['import']['per_s']:,.0f}/s")
    row["disk_mb"] = disk_mb(directory)
    row["search"] = bench_child(directory, queries, args.repeats)
    log(f"search p50 {row['search']['search_p50_ms']:.2f} ms, open {row['search']['open_s']:.3f} s")
    row["cli"] = bench_cli(directory, queries, args.cli_runs)
    log(f"cold CLI bm25 search p50 {row['cli']['p50_s']:.3f} s")
    row["write"] = bench_writes(directory, list(corpus.memories(args.writes, offset=n)))
    log(f"write p50 {row['write']['p50_ms']:.2f} ms")
    if not args.skip_reference and n <= args.reference_max:
        row["reference"] = bench_references([r["content"] for r in records], queries[: args.reference_queries])
        for name, ref in row["reference"].items():
            ref["x_kenning"] = ref["p50_ms"] / row["search"]["search_p50_ms"]
            ref["cpu_x_kenning"] = ref["cpu_p50_ms"] / row["search"]["search_cpu_p50_ms"]
            ref["cpu_x_engine"] = ref["cpu_p50_ms"] / row["search"]["engine_cpu_p50_ms"]
        log(", ".join(f"{k} p50 {v['p50_ms']:.2f} ms" for k, v in row["reference"].items()))
    shutil.rmtree(directory, ignore_errors=True)
    return row


ROWS = [
    ("bm25 search p50 / p99 ms", lambda r: f"{r['search']['search_p50_ms']:.2f} / {r['search']['search_p99_ms']:.2f}"),
    ("  CPU p50 / p99 ms", lambda r: f"{r['search']['search_cpu_p50_ms']:.2f} / {r['search'].get('search_cpu_p99_ms', float('nan')):.2f}"),
    ("lexical hybrid search p50 ms (CPU)", lambda r: f"{r['search']['hybrid_p50_ms']:.2f} ({r['search']['hybrid_cpu_p50_ms']:.2f})"),
    ("engine only (rank, no explain) p50 ms", lambda r: f"{r['search']['engine_p50_ms']:.2f}"),
    ("  CPU p50 ms", lambda r: f"{r['search']['engine_cpu_p50_ms']:.2f}"),
    ("rank_bm25 p50 ms (x kenning)", lambda r: _ref(r, "rank_bm25")),
    ("bm25s p50 ms (x kenning)", lambda r: _ref(r, "bm25s")),
    ("gated write p50 / p99 ms", lambda r: f"{r['write']['p50_ms']:.2f} / {r['write']['p99_ms']:.2f}"),
    ("import memories/s", lambda r: f"{r['import']['per_s']:,.0f}"),
    ("store on disk MB", lambda r: f"{r['disk_mb']:.1f}"),
    ("searching process RSS MB", lambda r: f"{r['search']['rss_mb']:.0f}"),
    ("cold open s (open + 1st search)", lambda r: f"{r['search']['open_s']:.3f} + {r['search']['first_search_s']:.3f}"),
    ("  process CPU s (import kenning too)", lambda r: f"{r['search']['cold_cpu_s']:.3f}"),
    ("cold CLI `search --mode bm25` s (CPU)", lambda r: f"{r['cli']['p50_s']:.3f} ({r['cli']['cpu_p50_s']:.3f})"),
]


def _ref(r: dict, name: str) -> str:
    if "reference" not in r:
        return "-"
    ref = r["reference"][name]
    return (f"{ref['p50_ms']:.2f} ({ref['x_kenning']:.1f}x; CPU {ref['cpu_x_kenning']:.1f}x search, "
            f"{ref['cpu_x_engine']:.1f}x engine)")


def print_table(report: dict) -> None:
    sizes = report["sizes"]
    table = [["measure"] + [f"{int(n):,}" for n in sizes]]
    table += [[label] + [fn(sizes[n]) for n in sizes] for label, fn in ROWS]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for i, row in enumerate(table):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"load average at start / end: {report['load'][0]:.1f} / {report['load_end'][0]:.1f} on {os.cpu_count()} CPUs")


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = report["sizes"]
    n = [int(k) for k in sizes]
    rows = list(sizes.values())
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    left.plot(n, [r["search"]["search_p50_ms"] for r in rows], "o-", label="kenning bm25 p50")
    left.plot(n, [r["search"]["search_p99_ms"] for r in rows], "o--", label="kenning bm25 p99")
    left.plot(n, [r["search"]["search_cpu_p50_ms"] for r in rows], "o-", label="kenning search CPU p50")
    left.plot(n, [r["search"]["engine_cpu_p50_ms"] for r in rows], "o-", label="kenning engine only CPU p50")
    left.plot(n, [r["write"]["p50_ms"] for r in rows], "s-", label="kenning gated write p50")
    timed = [(size, r["reference"]) for size, r in zip(n, rows) if "reference" in r]
    for name in ("rank_bm25", "bm25s"):
        if timed:
            left.plot([s for s, _ in timed], [ref[name]["p50_ms"] for _, ref in timed], "^:", label=f"{name} p50")
            left.plot([s for s, _ in timed], [ref[name]["cpu_p50_ms"] for _, ref in timed], "v:",
                      label=f"{name} CPU p50")
    left.set(xscale="log", yscale="log", xlabel="memories", ylabel="ms", title="bm25 latency, limit 10 (wall, CPU)")
    left.legend(fontsize=8)
    right.plot(n, [r["disk_mb"] for r in rows], "o-", label="store on disk MB")
    right.plot(n, [r["search"]["rss_mb"] for r in rows], "s-", label="searching process RSS MB")
    right.plot(n, [r["import"]["per_s"] / 1000 for r in rows], "^-", label="import (1000 memories/s)")
    right.plot(n, [1000 * (r["search"]["open_s"] + r["search"]["first_search_s"]) for r in rows], "d-",
               label="cold open + 1st search ms")
    right.set(xscale="log", yscale="log", xlabel="memories", title="size, memory, import, cold open")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="timed passes over the queries")
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--reference-queries", type=int, default=50, help="queries timed on the references")
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--reference-max", type=int, default=100_000,
                        help="time the references only up to this size (rank_bm25 holds every token list in memory)")
    parser.add_argument("--cli-runs", type=int, default=7, help="cold CLI searches per size (median)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--plot", type=Path, help="write the scale curve as a PNG here")
    args = parser.parse_args(argv)
    corpus = Corpus()
    workdir = Path(tempfile.mkdtemp(prefix="kenning-scale-"))
    report = {"load": list(os.getloadavg()), "settings": {k: str(v) for k, v in vars(args).items()}, "sizes": {}}
    try:
        for n in (int(s) for s in args.sizes.split(",") if s.strip()):
            report["sizes"][str(n)] = run_size(corpus, n, args, workdir)
            if args.out:  # after every size: a long run cut short keeps what it measured
                args.out.write_text(json.dumps(report, indent=2) + "\n")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report["load_end"] = list(os.getloadavg())
    report["self_cpu_s"] = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    print_table(report)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    if args.plot:
        plot(report, args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
