"""Speed of the lexical engine at 1k / 10k / 100k memories, against the targets of issue 2.

Run from the repository root:

    python bench/bench_lexical.py --sizes 1000,10000,100000 --repeats 5 --out bench/results-lexical.json

At each size, on a synthetic corpus of ~40-word memories (bench/corpus.py, fixed seed):

- bulk ``import_records`` throughput into a fresh store (memories/s), over repeated imports;
- warm-process search latency per query for ``hybrid`` (lexical legs only), ``bm25`` and ``keyword``
  over ~200 varied 2-6-word queries, repeated; plus the first search after opening the store;
- single ``write`` latency on the populated store;
- wall time of a cold ``kenning --store DIR search QUERY --mode bm25`` subprocess;
- the reference: ``rank_bm25.BM25Okapi`` on the same texts and queries, tokenized by
  kenning's own token stream, and the ratio of kenning's BM25 latency to it.

The embeddings extra is hidden from the benchmark process (as on a base install), so ``hybrid``
runs the keyword and BM25 legs and reports itself degraded; ``legs_run`` in the JSON shows it.

Once per run, the import floor every cold CLI call pays: ``python -c pass``,
``python -c "import kenning.cli"`` and ``kenning --help``. Every figure is a median and a p95 over
the repeated samples. The stores live in a temporary directory removed at the end (``--keep`` keeps
them). Timings are wall-clock (the targets are wall-clock) with the process's CPU time beside
them: on a shared machine a high load average inflates wall time, and CPU time shows how much.
Set PYTHONPATH to a snapshot of the repository's parent to time a frozen copy of the code.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# The lexical engine is what a base install (no embeddings extra) runs. Hide the extra from this
# process, so ``hybrid`` means keyword + bm25 and no search or import waits on a model.
sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None  # type: ignore[assignment]  # a base install

import kenning  # noqa: E402
from kenning.retrieval.text import query_tokens, tokenize  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402  (bench/ is a folder of scripts, not a package)

MODES = ("hybrid", "bm25", "keyword")
TARGETS = {  # issue 2, "Speed": at 100k memories
    "search_hybrid_p50_ms": ("<=", 10.0),
    "write_p50_ms": ("<=", 5.0),
    "import_per_s": (">=", 5000.0),
    "cli_search_p50_s": ("<=", 1.0),
}
CHILD_ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "200"}


def summary(samples: list[float]) -> dict:
    """Median, p95, min, max and count of a list of samples (seconds or any unit)."""
    arr = np.asarray(samples, dtype=np.float64)
    return {
        "p50": float(np.median(arr)),
        "p95": float(np.percentile(arr, 95)),
        "min": float(arr.min()),
        "max": float(arr.max()),
        "n": int(arr.size),
    }


def in_ms(stats: dict) -> dict:
    return {k: (v * 1000.0 if k != "n" else v) for k, v in stats.items()}


def kenning_script() -> str:
    """The venv's ``kenning`` console script (beside this interpreter), else the one on PATH."""
    beside = Path(sys.executable).parent / "kenning"
    found = str(beside) if beside.exists() else shutil.which("kenning")
    if not found:
        sys.exit("no `kenning` console script found; run `pip install -e .` first")
    return found


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall(cmd: list[str], runs: int) -> dict:
    """Wall time of a fresh process per run (and its CPU time); a non-zero exit aborts the benchmark."""
    samples, cpu = [], []
    for _ in range(runs):
        c0, t0 = child_cpu(), time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=CHILD_ENV, cwd=tempfile.gettempdir())
        samples.append(time.perf_counter() - t0)
        cpu.append(child_cpu() - c0)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return {**summary(samples), "cpu": summary(cpu)}


def bench_floor(runs: int) -> dict:
    """What any cold CLI call pays before it touches a store."""
    py = sys.executable
    return {
        "python_pass_s": wall([py, "-c", "pass"], runs),
        "import_kenning_cli_s": wall([py, "-c", "import kenning.cli"], runs),
        "kenning_help_s": wall([kenning_script(), "--help"], runs),
    }


def bench_import(records: list[dict], repeats: int, workdir: Path, batch_size: int) -> tuple[dict, Path]:
    """Import into fresh stores ``repeats`` times; keep the first store for the later stages."""
    times, cpu, kept = [], [], None
    for r in range(repeats):
        directory = workdir / f"import-{len(records)}-{r}"
        store = kenning.open_store(directory)
        c0, t0 = time.process_time(), time.perf_counter()
        store.import_records(records, batch_size=batch_size)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        store.close()
        if kept is None:
            kept = directory
        else:
            shutil.rmtree(directory)
    seconds = summary(times)
    n = len(records)
    return {
        "seconds": seconds,
        "per_s_p50": n / seconds["p50"],
        "per_s_p95": n / seconds["p95"],  # throughput of the slow (p95) import
        "cpu_seconds": summary(cpu),
        "batch_size": batch_size,
    }, kept


def bench_search(directory: Path, queries: list[str], repeats: int, limit: int) -> dict:
    """Per-query latency in a warm process: one store object, every query once to warm, then timed."""
    out: dict = {}
    for mode in MODES:
        store = kenning.open_store(directory)
        t0 = time.perf_counter()
        store.search(queries[0], mode=mode, limit=limit)
        first = time.perf_counter() - t0
        for q in queries:
            store.search(q, mode=mode, limit=limit)
        samples, cpu, hits, legs = [], [], 0, set()
        for _ in range(repeats):
            for q in queries:
                c0, t0 = time.process_time(), time.perf_counter()
                result = store.search(q, mode=mode, limit=limit)
                samples.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
                hits += len(result.hits)
                legs.add(",".join(result.legs_run))
        store.close()
        out[mode] = {
            "ms": in_ms(summary(samples)),
            "cpu_ms": in_ms(summary(cpu)),
            "first_after_open_ms": first * 1000.0,
            "mean_hits": hits / len(samples),
            "legs_run": sorted(legs),
        }
    return out


def bench_open(directory: Path, runs: int) -> dict:
    """Opening the store object in a process that already imported kenning."""
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        kenning.open_store(directory).close()
        samples.append(time.perf_counter() - t0)
    return in_ms(summary(samples))


def bench_writes(directory: Path, texts: list[str]) -> dict:
    """Single ``write`` calls on the populated store, each its own transaction.

    A write runs the write gates first (the duplicates gate probes the lexical index) and records
    the git origin of the working directory, so run the benchmark from inside a repository for
    the figure an agent at work sees.
    """
    store = kenning.open_store(directory)
    store.search("warm up", mode="bm25")
    samples, cpu, statuses = [], [], {}
    for text in texts:
        c0, t0 = time.process_time(), time.perf_counter()
        status = store.write(text, scopes=["bench:writes"]).status
        samples.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        statuses[status] = statuses.get(status, 0) + 1
    store.close()
    return {**in_ms(summary(samples)), "cpu": in_ms(summary(cpu)), "statuses": statuses}


def bench_cli(directory: Path, queries: list[str], runs: int) -> dict:
    script = kenning_script()
    samples, cpu = [], []
    for i in range(runs):
        query = queries[i % len(queries)]
        one = wall([script, "--store", str(directory), "search", query, "--mode", "bm25"], 1)
        samples.append(one["p50"])
        cpu.append(one["cpu"]["p50"])
    return {**summary(samples), "cpu": summary(cpu)}


def bench_rank_bm25(texts: list[str], queries: list[str], repeats: int, limit: int) -> dict:
    """The reference: BM25Okapi over kenning's tokens, get_scores + top-``limit`` per query."""
    from rank_bm25 import BM25Okapi

    t0 = time.perf_counter()
    tokenized = [tokenize(t) for t in texts]
    t1 = time.perf_counter()
    model = BM25Okapi(tokenized)
    t2 = time.perf_counter()
    tokenized_queries = [query_tokens(q) for q in queries]
    samples, cpu = [], []
    for _ in range(repeats):
        for q in tokenized_queries:
            c0, t0q = time.process_time(), time.perf_counter()
            scores = model.get_scores(q)
            top = np.argpartition(-scores, limit)[:limit]
            top[np.argsort(-scores[top])]
            samples.append(time.perf_counter() - t0q)
            cpu.append(time.process_time() - c0)
    return {"ms": in_ms(summary(samples)), "cpu_ms": in_ms(summary(cpu)),
            "tokenize_s": t1 - t0, "build_s": t2 - t1}


def run_size(corpus: Corpus, n: int, args: argparse.Namespace, workdir: Path) -> dict:
    log = lambda msg: print(f"[{n:>7}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    records = corpus.records(n)
    queries = corpus.queries(args.queries, corpus_size=n)
    import_repeats = args.repeats if n <= 10_000 else min(args.repeats, args.big_import_repeats)
    log(f"import x{import_repeats}")
    imported, directory = bench_import(records, import_repeats, workdir, args.batch_size)
    log(f"  {imported['per_s_p50']:.0f} memories/s; store {directory}")
    result: dict = {"memories": n, "import": imported}
    result["open_ms"] = bench_open(directory, 5)
    log("warm search")
    result["search"] = bench_search(directory, queries, args.repeats, args.limit)
    log("  " + ", ".join(f"{m} p50 {result['search'][m]['ms']['p50']:.2f} ms" for m in MODES))
    if not args.skip_reference:
        ref_repeats = args.repeats if n <= 10_000 else 1
        log(f"rank_bm25 x{ref_repeats}")
        reference = bench_rank_bm25([r["content"] for r in records], queries, ref_repeats, args.limit)
        reference["ratio_kenning_bm25_to_rank_bm25_p50"] = (
            result["search"]["bm25"]["ms"]["p50"] / reference["ms"]["p50"]
        )
        result["rank_bm25"] = reference
        log(f"  p50 {reference['ms']['p50']:.2f} ms")
    log(f"cold CLI x{args.cli_runs}")
    result["cli_search_s"] = bench_cli(directory, queries, args.cli_runs)
    log(f"  p50 {result['cli_search_s']['p50']:.3f} s")
    log(f"single writes x{args.writes}")
    result["write_ms"] = bench_writes(directory, list(corpus.memories(args.writes, offset=n)))
    log(f"  p50 {result['write_ms']['p50']:.2f} ms")
    return result


def verdicts(at: dict) -> dict:
    figures = {
        "search_hybrid_p50_ms": at["search"]["hybrid"]["ms"]["p50"],
        "write_p50_ms": at["write_ms"]["p50"],
        "import_per_s": at["import"]["per_s_p50"],
        "cli_search_p50_s": at["cli_search_s"]["p50"],
    }
    out = {}
    for name, (op, target) in TARGETS.items():
        value = figures[name]
        met = value <= target if op == "<=" else value >= target
        out[name] = {"value": value, "target": f"{op} {target:g}", "met": met}
    return out


def print_table(report: dict) -> None:
    rows = [
        ("hybrid search p50 / p95 ms", lambda s: _pair(s["search"]["hybrid"]["ms"])),
        ("  (CPU time p50 / p95 ms)", lambda s: _pair(s["search"]["hybrid"]["cpu_ms"])),
        ("bm25 search p50 / p95 ms", lambda s: _pair(s["search"]["bm25"]["ms"])),
        ("keyword search p50 / p95 ms", lambda s: _pair(s["search"]["keyword"]["ms"])),
        ("first search after open ms", lambda s: f"{s['search']['hybrid']['first_after_open_ms']:.1f}"),
        ("rank_bm25 p50 / p95 ms", lambda s: _pair(s["rank_bm25"]["ms"]) if "rank_bm25" in s else "-"),
        ("kenning bm25 / rank_bm25 (p50)",
         lambda s: f"{s['rank_bm25']['ratio_kenning_bm25_to_rank_bm25_p50']:.3f}" if "rank_bm25" in s else "-"),
        ("single write p50 / p95 ms", lambda s: _pair(s["write_ms"])),
        ("single write max ms", lambda s: f"{s['write_ms']['max']:.1f}"),
        ("bulk import memories/s p50 (p95)",
         lambda s: f"{s['import']['per_s_p50']:,.0f} ({s['import']['per_s_p95']:,.0f})"),
        ("open store ms p50", lambda s: f"{s['open_ms']['p50']:.1f}"),
        ("cold CLI search p50 / p95 s", lambda s: f"{s['cli_search_s']['p50']:.3f} / {s['cli_search_s']['p95']:.3f}"),
        ("  (CPU time p50 s)", lambda s: f"{s['cli_search_s']['cpu']['p50']:.3f}"),
    ]
    sizes = report["sizes"]
    header = ["measure"] + [f"{int(n):,}" for n in sizes]
    table = [header] + [[label] + [fn(sizes[n]) for n in sizes] for label, fn in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    floor = report["floor"]
    print()
    print("import floor, wall p50 / p95 (CPU p50) s:")
    for k, v in floor.items():
        print(f"  {k[:-2]:<20} {v['p50']:.3f} / {v['p95']:.3f} ({v['cpu']['p50']:.3f})")
    load = report["machine"]
    print(f"load average at start / end: {load['load_average_at_start'][0]:.2f} / "
          f"{load.get('load_average_at_end', [float('nan')])[0]:.2f} on {load['cpus']} CPUs")
    if report.get("targets"):
        print(f"targets at {report['targets']['at']:,} memories:")
        for name, v in report["targets"]["checks"].items():
            print(f"  {name:<22} {v['value']:>10.3f}  target {v['target']:<8} {'met' if v['met'] else 'MISSED'}")


def _pair(stats: dict) -> str:
    return f"{stats['p50']:.2f} / {stats['p95']:.2f}"


def machine() -> dict:
    code = Path(kenning.__file__).resolve().parent
    try:  # the commit of the code timed; empty for a snapshot outside git (say which in the notes)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=code).stdout.strip()
    except OSError:
        commit = ""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "kenning": kenning.__version__,
        "kenning_path": str(code),
        "commit": commit,
        "cwd": os.getcwd(),
        "load_average_at_start": list(os.getloadavg()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated store sizes")
    parser.add_argument("--repeats", type=int, default=5, help="timed passes over the queries; imports per size")
    parser.add_argument("--big-import-repeats", type=int, default=3, help="import repeats above 10k memories")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=200, help="single writes timed per size")
    parser.add_argument("--cli-runs", type=int, default=12, help="cold CLI processes per size")
    parser.add_argument("--limit", type=int, default=5, help="hits per search")
    parser.add_argument("--batch-size", type=int, default=2000, help="import_records batch size")
    parser.add_argument("--skip-reference", action="store_true", help="do not time rank_bm25")
    parser.add_argument("--seed", type=int, default=Corpus().seed)
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    parser.add_argument("--keep", action="store_true", help="keep the stores (printed path)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    corpus = Corpus(args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="kenning-bench-"))
    started = time.time()
    try:
        report: dict = {
            "machine": machine(),
            "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "floor": bench_floor(args.cli_runs),
            "sizes": {},
        }
        for n in sizes:
            report["sizes"][str(n)] = run_size(corpus, n, args, workdir)
        largest = str(max(sizes))
        report["targets"] = {"at": int(largest), "checks": verdicts(report["sizes"][largest])}
        report["elapsed_s"] = time.time() - started
        report["machine"]["load_average_at_end"] = list(os.getloadavg())
    finally:
        if args.keep:
            print(f"stores kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(report)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
