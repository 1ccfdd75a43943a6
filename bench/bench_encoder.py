"""The ONNX encoder against the targets of issue 10, with sentence-transformers on torch measured in
the same run as the reference.

    python bench/bench_encoder.py --sizes 1000,10000,100000 --out bench/results-encoder.json

Every figure is a median over repeated runs. Timings that must not see torch (warm search, writes,
RSS, cold CLI and MCP) run in fresh child processes; the encoder rows load both backends in one
child. Stores are built once under --workdir from bench/corpus.py and embedded through the shared
embedding cache ($KENNING_CACHE_DIR), so a second run only pays for what it times. The machine is
shared: the load average at start and end is in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import Corpus  # noqa: E402

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "200"}
# An installed package has its bytecode compiled; a shell that forbids writing it makes every cold
# process compile kenning's sources again (measured: ~0.65 s of CPU a `kenning search`).
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
TARGETS = {
    "query_encode_ms": "<= 4 ms",
    "batch_speedup": ">= 3x torch",
    "cold_cli_hybrid_10k_s": "<= 1.0 s",
    "mcp_first_hybrid_s": "<= 1.5 s",
    "warm_hybrid_10k_ms": "<= 8 ms",
    "warm_hybrid_100k_ms": "<= 15 ms",
    "write_ms": "<= 10 ms",
    "rss_1k_mb": "<= 250 MB",
    "rss_100k_mb": "reported",
}


def child(code: str, env: dict | None = None, timeout: float = 3600) -> dict:
    """Run code in a fresh interpreter; its last stdout line is JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=timeout, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        sys.exit(f"child failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median(values: list[float]) -> float:
    return float(statistics.median(values))


# ---------------------------------------------------------------------------------- encoders
ENCODERS = """
import json, os, sys, time, statistics
sys.path.insert(0, {here!r})
from corpus import Corpus
from kenning.retrieval import embeddings
from kenning.retrieval.torch_encoder import TorchEncoder
corpus = Corpus()
queries = corpus.queries({queries})
texts = list(corpus.memories({batch}))
if {batch_corpus!r}:  # a BEIR corpus.jsonl instead: its first documents, title and text
    with open({batch_corpus!r}, encoding="utf-8") as handle:
        rows = [json.loads(line) for _, line in zip(range({batch}), handle)]
    texts = [" ".join(filter(None, [r.get("title"), r.get("text")])) for r in rows]
spec = embeddings.resolve_model()
out = {{}}


def one_thread_encoder(spec):  # the shipped graph on one intra-op thread, the default before 2
    from kenning.retrieval import onnx_export
    from kenning.retrieval.onnx_encoder import OnnxEncoder
    return OnnxEncoder(spec, onnx_export.ensure(spec), "one-thread-timing", threads=1, cache_optimized=True)


backends = [("onnx", lambda: embeddings.get_encoder(spec, "onnx")),
            ("onnx-1thread", lambda: one_thread_encoder(spec)),
            ("onnx-q8", lambda: embeddings.get_encoder(spec, "onnx-q8")),
            ("torch", lambda: TorchEncoder(spec))]
for name, load in backends:
    t0 = time.perf_counter(); encoder = load(); load_s = time.perf_counter() - t0
    for q in queries[:20]:
        encoder.encode_query(q)
    query_ms, query_cpu = [], []
    for _ in range({repeats}):
        for q in queries:
            c0, t0 = time.process_time(), time.perf_counter(); encoder.encode_query(q)
            query_ms.append((time.perf_counter() - t0) * 1000); query_cpu.append((time.process_time() - c0) * 1000)
    out[name] = {{"load_s": load_s, "query_ms_p50": statistics.median(query_ms),
                 "query_ms_p95": sorted(query_ms)[int(len(query_ms) * 0.95)], "query_cpu_ms_p50": statistics.median(query_cpu),
                 "batch": {{}}}}
    if name == "onnx-1thread":
        continue  # query rows only: batches run one per thread anyway
    for parallel in (1, 2):  # onnx: batches run side by side; torch: intra-op threads
        if name == "torch":
            import torch; torch.set_num_threads(parallel)
        else:
            os.environ["KENNING_ONNX_BATCH_WORKERS"] = str(parallel)
        rates, cpu_rates = [], []
        for _ in range({repeats}):
            c0, t0 = time.process_time(), time.perf_counter(); encoder.encode(texts)
            rates.append(len(texts) / (time.perf_counter() - t0)); cpu_rates.append(len(texts) / (time.process_time() - c0))
        out[name]["batch"][parallel] = {{"per_s": statistics.median(rates), "per_cpu_s": statistics.median(cpu_rates)}}
    best = max(out[name]["batch"].values(), key=lambda r: r["per_s"])
    out[name]["batch_per_s"], out[name]["batch_per_cpu_s"] = best["per_s"], best["per_cpu_s"]
print(json.dumps(out))
"""


# ---------------------------------------------------------------------------------- stores
BUILD = """
import json, sys, time
sys.path.insert(0, {here!r})
from corpus import Corpus
import kenning
from kenning.retrieval.embedding_cache import EmbeddingCache
store = kenning.open_store({path!r})
if store.count() == 0:
    store.import_records(Corpus().records({n}), batch_size=5000)
store.semantic.cache = EmbeddingCache()
t0 = time.perf_counter()
real = {real}
if real and store.count() > real and store.semantic.pending_count():
    # encode the first `real` memories; the rest reuse those vectors with noise (see --real-vectors)
    import numpy as np
    from kenning.store.semantic import bump_generation
    encoder = store.semantic.encoder()
    rows = store.db.read(lambda c: c.execute("SELECT rowid, content, content_hash FROM memories ORDER BY rowid").fetchall())
    from kenning.retrieval.embedding_cache import embed_with_cache
    base = embed_with_cache(encoder, [r[1] for r in rows[:real]], store.semantic.cache)
    rng = np.random.default_rng(7)
    with store.db.transaction() as c:
        for start in range(0, len(rows), 5000):
            chunk = rows[start:start + 5000]
            vectors = base[np.arange(start, start + len(chunk)) % real].copy()
            if start >= real:
                vectors += rng.normal(0, 0.02, vectors.shape).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            c.executemany("INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (?, ?, ?, ?)",
                          [(r[0], encoder.model_id, r[2], v.astype(np.float32).tobytes()) for r, v in zip(chunk, vectors)])
        c.execute("DELETE FROM embed_queue")
        bump_generation(c)
    done = len(rows)
else:
    done = store.semantic.embed_pending()
seconds = time.perf_counter() - t0
store.search("warm the index file", mode="semantic")
store.close()
print(json.dumps({{"embedded": done, "seconds": seconds}}))
"""


def build_store(path: Path, n: int, backend: str, real: int = 0) -> dict:
    return child(BUILD.format(here=str(HERE), path=str(path), n=n, real=real), {"KENNING_ENCODER": backend},
                 timeout=4 * 3600)


WARM = """
import json, resource, sys, time, statistics
sys.path.insert(0, {here!r})
from corpus import Corpus
import kenning
queries = Corpus().queries({queries}, corpus_size={n})
store = kenning.open_store({path!r})
for q in queries[:20]:
    store.search(q, mode="hybrid", limit=5, auto_scope=False)
hybrid, hybrid_cpu, bm25, encode = [], [], [], []
encoder = store.semantic.encoder()
for _ in range({repeats}):
    for q in queries:
        c0, t0 = time.process_time(), time.perf_counter(); r = store.search(q, mode="hybrid", limit=5, auto_scope=False)
        hybrid.append((time.perf_counter() - t0) * 1000); hybrid_cpu.append((time.process_time() - c0) * 1000)
        assert "vector" in r.legs_run and r.pending_embeddings == 0, (r.legs_run, r.pending_embeddings)
        t0 = time.perf_counter(); store.search(q, mode="bm25", limit=5, auto_scope=False)
        bm25.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter(); encoder.encode_query(q); encode.append((time.perf_counter() - t0) * 1000)
print(json.dumps({{"hybrid_ms_p50": statistics.median(hybrid), "hybrid_ms_p95": sorted(hybrid)[int(len(hybrid) * .95)],
                  "hybrid_cpu_ms_p50": statistics.median(hybrid_cpu),
                  "bm25_ms_p50": statistics.median(bm25), "encode_ms_p50": statistics.median(encode),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "torch_loaded": "torch" in sys.modules}}))
"""

WRITES = """
import json, sys, time, statistics
sys.path.insert(0, {here!r})
from corpus import Corpus
import kenning
store = kenning.open_store({path!r})
store.search("warm up", mode="hybrid", auto_scope=False)
texts = list(Corpus().memories({writes}, offset=10**7))
ms, cpu, refused = [], [], []
for text in texts:
    c0, t0 = time.process_time(), time.perf_counter()
    r = store.write(text, scopes=["bench:writes"], acknowledge_transient=True)  # synthetic text may name a weekday
    if r.status != "committed":  # a gate held it (say, as a near-duplicate): no vector was made, not timed
        refused.append(r.status)
        continue
    ms.append((time.perf_counter() - t0) * 1000); cpu.append((time.process_time() - c0) * 1000)
assert store.semantic.pending_count() == 0, "a write left its vector pending"
print(json.dumps({{"write_ms_p50": statistics.median(ms), "write_ms_p95": sorted(ms)[int(len(ms) * .95)],
                  "timed": len(ms), "not_committed": refused,
                  "write_cpu_ms_p50": statistics.median(cpu),
                  "torch_loaded": "torch" in sys.modules}}))
"""

RSS = """
import json, resource, sys
sys.path.insert(0, {here!r})
from corpus import Corpus
import kenning
store = kenning.open_store({path!r})
for q in Corpus().queries(50, corpus_size={n}):
    r = store.search(q, mode={mode!r}, limit=5, auto_scope=False)
print(json.dumps({{"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "legs": r.legs_run,
                  "torch_loaded": "torch" in sys.modules}}))
"""


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold_cli(path: Path, queries: list[str], runs: int, backend: str) -> dict:
    samples, cpu = [], []
    for i in range(runs):
        cmd = [sys.executable, "-m", "kenning.cli", "--store", str(path), "search", queries[i % len(queries)],
               "--mode", "hybrid", "--no-auto-scope", "--json"]
        c0, t0 = child_cpu(), time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env={**ENV, "KENNING_ENCODER": backend},
                              cwd=tempfile.gettempdir())
        samples.append(time.perf_counter() - t0)
        cpu.append(child_cpu() - c0)
        if done.returncode != 0:
            sys.exit(f"cold search failed: {done.stderr[-1000:]}")
        result = json.loads(done.stdout)
        if "vector" not in result["legs_run"]:
            sys.exit(f"cold search ran without the vector leg: {result.get('degraded')}")
    return {"wall_s": median(samples), "cpu_s": median(cpu)}


def mcp_first_answer(path: Path, query: str, env: dict[str, str]) -> tuple[float, float]:
    """Spawn `python -m kenning.serve.mcp` on `path`, initialize, run one hybrid memory_search:
    (seconds to initialized, seconds to the answer)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "kenning.serve.mcp", "--store", str(path)],
                                   cwd=tempfile.gettempdir(), env=env)

    async def once() -> tuple[float, float]:
        t0 = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            ready = time.perf_counter() - t0
            result = await session.call_tool("memory_search", {"query": query, "mode": "hybrid", "auto_scope": False})
            total = time.perf_counter() - t0
            assert not result.is_error and "vector" in result.structured_content["legs_run"], result
        return ready, total

    return anyio.run(once)


def mcp_first_search(path: Path, query: str, runs: int, backend: str) -> dict:
    """Medians of `runs` cold MCP first searches with the given encoder backend."""
    env = {**ENV, "KENNING_ENCODER": backend}
    samples, cpu = [], []
    for _ in range(runs):
        c0 = child_cpu()
        samples.append(mcp_first_answer(path, query, env))
        cpu.append(child_cpu() - c0)  # the server process, once it has exited
    return {"initialize_s": median([s[0] for s in samples]), "first_hybrid_s": median([s[1] for s in samples]),
            "server_cpu_s": median(cpu)}


# ---------------------------------------------------------------------------------- report
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "kenning-bench-encoder")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=1024, help="texts per throughput run")
    parser.add_argument("--batch-corpus", type=Path, help="time batches on this BEIR corpus.jsonl's first --batch "
                        "documents (e.g. scifact abstracts, ~250 tokens) instead of ~60-token synthetic memories")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runs", type=int, default=7, help="cold CLI / MCP processes per measure")
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--skip-torch-stores", action="store_true", help="no torch-backed reference stores")
    parser.add_argument("--real-vectors", type=int, default=10**9,
                        help="above this size, encode only this many memories and give the rest those vectors "
                             "plus noise (encoding 100k texts takes an hour on a busy 2-core machine)")
    parser.add_argument("--backend", default="onnx", choices=["onnx", "onnx-q8"],
                        help="the encoder of the stores, warm searches, writes, cold CLI and MCP rows "
                             "(KENNING_ENCODER); the encoder rows time onnx, onnx-q8 and torch in any case")
    parser.add_argument("--skip-cold", action="store_true", help="no cold CLI and MCP rows")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    args.workdir.mkdir(parents=True, exist_ok=True)
    corpus = Corpus()
    report: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                "load_average_at_start": list(os.getloadavg()), "args": vars(args) | {
                                    "workdir": str(args.workdir), "out": str(args.out),
                                    "batch_corpus": str(args.batch_corpus or "")}}}

    print("encoders ...", file=sys.stderr, flush=True)
    report["encoders"] = child(ENCODERS.format(here=str(HERE), queries=args.queries, batch=args.batch,
                                               batch_corpus=str(args.batch_corpus or ""), repeats=args.repeats))
    report["sizes"] = {}
    backend, backend_env = args.backend, {"KENNING_ENCODER": args.backend}
    for n in sizes:
        path = args.workdir / f"{backend}-{n}"
        print(f"{n}: building ...", file=sys.stderr, flush=True)
        real = args.real_vectors if n > args.real_vectors else 0
        row = {"build": build_store(path, n, backend, real), "vectors": "real" if not real else
               f"{real} encoded, the rest those vectors + N(0, 0.02) noise, renormalised"}
        print(f"{n}: warm search ...", file=sys.stderr, flush=True)
        row["warm"] = child(WARM.format(here=str(HERE), path=str(path), n=n, queries=args.queries,
                                        repeats=args.repeats), backend_env)
        row["rss_hybrid"] = child(RSS.format(here=str(HERE), path=str(path), n=n, mode="hybrid"), backend_env)
        row["rss_bm25"] = child(RSS.format(here=str(HERE), path=str(path), n=n, mode="bm25"), backend_env)
        if n <= 10_000 and not args.skip_cold:
            queries = corpus.queries(args.runs, corpus_size=n)
            print(f"{n}: cold CLI and MCP ...", file=sys.stderr, flush=True)
            row["cold_cli_hybrid_s"] = cold_cli(path, queries, args.runs, backend)
            row["mcp"] = mcp_first_search(path, queries[0], args.runs, backend)
        report["sizes"][n] = row
    smallest = min(sizes)
    copy = args.workdir / f"writes-{backend}-{smallest}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(args.workdir / f"{backend}-{smallest}", copy)
    report["writes"] = {"onnx": child(WRITES.format(here=str(HERE), path=str(copy), writes=args.writes), backend_env)}
    if not args.skip_torch_stores:
        print("torch reference store ...", file=sys.stderr, flush=True)
        torch_path = args.workdir / f"torch-{smallest}"
        build_store(torch_path, smallest, "torch")
        queries = corpus.queries(args.runs, corpus_size=smallest)
        env = {"KENNING_ENCODER": "torch"}
        report["torch_reference"] = {
            "size": smallest,
            "warm": child(WARM.format(here=str(HERE), path=str(torch_path), n=smallest, queries=args.queries,
                                      repeats=1), env),
            "rss_hybrid": child(RSS.format(here=str(HERE), path=str(torch_path), n=smallest, mode="hybrid"), env),
            "cold_cli_hybrid_s": cold_cli(torch_path, queries, max(3, args.runs // 2), "torch"),
            "mcp": mcp_first_search(torch_path, queries[0], max(3, args.runs // 2), "torch"),
        }
        copy = args.workdir / f"torch-writes-{smallest}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(torch_path, copy)
        report["writes"]["torch"] = child(WRITES.format(here=str(HERE), path=str(copy), writes=args.writes // 2), env)
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    report["table"] = table(report, sizes, backend)
    print_table(report["table"])
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


def table(report: dict, sizes: list[int], backend: str = "onnx") -> list[dict]:
    enc, at, torch_ref = report["encoders"], report["sizes"], report.get("torch_reference", {})

    def size_row(n, *keys):
        value = at.get(n)
        for key in keys:
            value = None if value is None else value.get(key)
        return value

    def pair(wall, cpu):
        return None if wall is None else (wall, cpu)

    def get(d, *keys):
        for key in keys:
            d = None if d is None else d.get(key)
        return d

    onnx, one, q8, torch = enc["onnx"], enc["onnx-1thread"], enc["onnx-q8"], enc["torch"]
    cold10 = size_row(10_000, "cold_cli_hybrid_s") or {}
    mcp = size_row(10_000, "mcp") or size_row(min(sizes), "mcp") or {}
    tw = report["writes"].get("torch", {})
    rows = [
        ("query encode, p50 ms", pair(onnx["query_ms_p50"], onnx["query_cpu_ms_p50"]),
         pair(torch["query_ms_p50"], torch["query_cpu_ms_p50"]), TARGETS["query_encode_ms"]),
        ("query encode, 1 intra-op thread, p50 ms", pair(one["query_ms_p50"], one["query_cpu_ms_p50"]),
         pair(torch["query_ms_p50"], torch["query_cpu_ms_p50"]), "(the default before: same run)"),
        ("query encode onnx-q8 (8-bit weights), p50 ms", pair(q8["query_ms_p50"], q8["query_cpu_ms_p50"]),
         pair(torch["query_ms_p50"], torch["query_cpu_ms_p50"]), TARGETS["query_encode_ms"]),
        ("batch throughput, texts/s", pair(onnx["batch_per_s"], onnx["batch_per_cpu_s"]),
         pair(torch["batch_per_s"], torch["batch_per_cpu_s"]),
         f"{TARGETS['batch_speedup']}: x{onnx['batch_per_s'] / torch['batch_per_s']:.1f} "
         f"(cpu x{onnx['batch_per_cpu_s'] / torch['batch_per_cpu_s']:.1f})"),
        ("batch throughput onnx-q8, texts/s", pair(q8["batch_per_s"], q8["batch_per_cpu_s"]),
         pair(torch["batch_per_s"], torch["batch_per_cpu_s"]),
         f"x{q8['batch_per_s'] / torch['batch_per_s']:.1f} (cpu x{q8['batch_per_cpu_s'] / torch['batch_per_cpu_s']:.1f})"),
        ("cold `kenning search --mode hybrid` at 10k, s", pair(cold10.get("wall_s"), cold10.get("cpu_s")),
         pair(get(torch_ref, "cold_cli_hybrid_s", "wall_s"), get(torch_ref, "cold_cli_hybrid_s", "cpu_s")),
         TARGETS["cold_cli_hybrid_10k_s"] + " (torch column: at 1k)"),
        ("MCP spawn + initialize + first hybrid search, s", pair(mcp.get("first_hybrid_s"), mcp.get("server_cpu_s")),
         pair(get(torch_ref, "mcp", "first_hybrid_s"), get(torch_ref, "mcp", "server_cpu_s")),
         TARGETS["mcp_first_hybrid_s"] + " (10k; torch column: at 1k; cpu = the server's)"),
        ("warm hybrid p50 at 1k, ms", pair(size_row(1000, "warm", "hybrid_ms_p50"), size_row(1000, "warm", "hybrid_cpu_ms_p50")),
         pair(get(torch_ref, "warm", "hybrid_ms_p50"), get(torch_ref, "warm", "hybrid_cpu_ms_p50")), "-"),
        ("warm hybrid p50 at 10k, ms", pair(size_row(10_000, "warm", "hybrid_ms_p50"),
                                            size_row(10_000, "warm", "hybrid_cpu_ms_p50")), None, TARGETS["warm_hybrid_10k_ms"]),
        ("warm hybrid p50 at 100k, ms", pair(size_row(100_000, "warm", "hybrid_ms_p50"),
                                             size_row(100_000, "warm", "hybrid_cpu_ms_p50")), None, TARGETS["warm_hybrid_100k_ms"]),
        ("memory_write with its vector, p50 ms", pair(report["writes"]["onnx"]["write_ms_p50"],
                                                      report["writes"]["onnx"]["write_cpu_ms_p50"]),
         pair(tw.get("write_ms_p50"), tw.get("write_cpu_ms_p50")), TARGETS["write_ms"]),
        ("peak RSS, hybrid at 1k, MB", pair(size_row(1000, "rss_hybrid", "rss_mb"), None),
         pair(get(torch_ref, "rss_hybrid", "rss_mb"), None),
         TARGETS["rss_1k_mb"] + f" (bm25-only peer {size_row(1000, 'rss_bm25', 'rss_mb') or 0:.0f} MB)"),
        ("peak RSS, hybrid at 100k, MB", pair(size_row(100_000, "rss_hybrid", "rss_mb"), None), None, TARGETS["rss_100k_mb"]),
    ]
    rows = [(m.replace("warm hybrid", f"warm hybrid ({backend})").replace("memory_write", f"memory_write ({backend})"),
             o, t, g) for m, o, t, g in rows]
    return [{"measure": m, "onnx": o, "torch": t, "target": g} for m, o, t, g in rows]


def print_table(rows: list[dict]) -> None:
    def num(v):
        return f"{v:.3g}" if v < 100 else f"{v:.0f}"

    def fmt(pair):
        if pair is None:
            return "-"
        wall, cpu = pair
        return num(wall) if cpu is None else f"{num(wall)} (cpu {num(cpu)})"

    print("| measure | onnx: wall (cpu) | torch: wall (cpu) | target |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['measure']} | {fmt(row['onnx'])} | {fmt(row['torch'])} | {row['target']} |")


if __name__ == "__main__":
    main()
