"""SQLite and PostgreSQL side by side: search and write latency, and many processes on one store.

Run from the repository root (starts its own PostgreSQL 16 + pgvector from the pgserver package,
or uses ``--url``, whose database must be empty or a scratch schema is made in it):

    python bench/bench_backends.py --memories 10000 --procs 8 --ops 1000 --out bench/results-backends.json

For each backend the same store is built (``--memories`` corpus memories, imported in bulk), then:
search p50/p99 per lexical mode (``keyword``, ``bm25``: the legs both backends run the same way;
``--vector`` adds ``semantic`` and ``hybrid`` after embedding the corpus, which takes long on CPU),
write p50/p99 (single gated writes of new text), and ``--procs`` client processes each doing
``--ops`` mixed operations (70 % searches, 30 % writes) at once: throughput, p99, errors and lost
writes (acknowledged ids a fresh process cannot read afterwards). Medians over ``--repeats`` runs
of the single-process figures. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402
from server_cpu import ServerCpu  # noqa: E402

import kenning  # noqa: E402

WRITE_OFFSET = 1_000_000
SEARCH_SHARE = 0.7
# corpus text is made up: accept every risk a gate may see in it, so each write is a full gated commit
ACCEPT = {"force": True, "acknowledge_transient": True, "acknowledge_user_claim": True,
          "acknowledge_scope_mismatch": True}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))]


def ms(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 50) * 1000, 2), "p99_ms": round(percentile(values, 99) * 1000, 2)}


def _phase(started: float, cpu: float, server: float, server_cpu: ServerCpu, name: str) -> dict[str, float]:
    row = {f"{name}_s": round(time.perf_counter() - started, 1), f"{name}_client_cpu_s": round(time.process_time() - cpu, 1)}
    if server_cpu.pid is not None:
        row[f"{name}_server_cpu_s"] = round(server_cpu() - server, 1)
    print(json.dumps(row), flush=True)
    return row


def build(location: str, corpus: Corpus, n: int, vector: bool, encode: int, batch_size: int,
          server_cpu: ServerCpu) -> dict[str, float]:
    """The corpus store through the bulk import (``batch_size`` memories a transaction), then with
    ``vector`` its vectors and the vector leg's index: each phase's wall time, this process's CPU and
    the server's (PostgreSQL's own work is in the server's processes, not here)."""
    first = time.perf_counter()
    row: dict[str, float] = {}
    with kenning.open_store(location) as store:
        mark = (time.perf_counter(), time.process_time(), server_cpu())
        store.import_records(corpus.records(n), batch_size=batch_size)
        row.update(_phase(*mark, server_cpu, "import"))
        if vector and store.semantic.availability().working:
            mark = (time.perf_counter(), time.process_time(), server_cpu())
            if encode >= n:
                store.semantic.embed_pending()
            else:
                synthetic_vectors(store, encode)
            row.update(_phase(*mark, server_cpu, "vectors"))
            mark = (time.perf_counter(), time.process_time(), server_cpu())
            store.semantic.rebuild_index()  # hnswlib's graph (saved) or pgvector's HNSW index
            row.update(_phase(*mark, server_cpu, "vector_index"))
    row["build_s"] = round(time.perf_counter() - first, 1)
    return row


def store_size_mb(name: str, location: str) -> float:
    """The store on disk: the SQLite store's files, or the PostgreSQL schema's tables with their
    indexes and TOAST (the server's WAL and catalogs not counted)."""
    if name == "sqlite":
        return round(sum(p.stat().st_size for p in Path(location).rglob("*") if p.is_file()) / 2**20, 1)
    with kenning.open_store(location) as store:
        size = store.db.read(lambda c: c.raw.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(t.oid)), 0) FROM pg_class t "
            "JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = current_schema() AND t.relkind = 'r'"
        ).fetchone()[0])
    return round(int(size) / 2**20, 1)


def synthetic_vectors(store, encode: int, seed: int = 0) -> None:
    """Embed ``encode`` memories for real and give every other queued memory one of those vectors plus
    noise (unit length): a large store needs vectors of the right shape and spread for the speed rows,
    and encoding 100k texts on a shared CPU takes an hour. The same seed gives both backends the same rows."""
    import numpy as np

    from kenning.store.semantic import bump_generation

    encoder = store.semantic.encoder()
    queued = store.db.read(lambda c: c.execute(
        "SELECT q.mem, m.content_hash FROM embed_queue q JOIN memories m ON m.rowid = q.mem ORDER BY q.mem").fetchall())
    first = [mem for mem, _ in queued[:encode]]
    texts = dict(store.db.read(lambda c: c.execute(
        f"SELECT rowid, content FROM memories WHERE rowid IN ({','.join('?' * len(first))})", first).fetchall()))
    real = encoder.encode([texts[mem] for mem in first])
    rng = np.random.default_rng(seed)
    for start in range(0, len(queued), 10_000):
        chunk = queued[start:start + 10_000]
        base = real[np.arange(start, start + len(chunk)) % len(real)]
        noisy = base + rng.standard_normal(base.shape).astype(np.float32) * (0.6 / np.sqrt(base.shape[1]))
        noisy[: max(0, min(len(chunk), encode - start))] = base[: max(0, min(len(chunk), encode - start))]
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        with store.db.transaction() as c:
            c.executemany("INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (?, ?, ?, ?)",
                          [(mem, encoder.model_id, digest, v.astype(np.float32).tobytes())
                           for (mem, digest), v in zip(chunk, noisy)])
            # the chunk is a run of the ordered queue: its key range holds no other queued memory
            c.execute("DELETE FROM embed_queue WHERE mem BETWEEN ? AND ?", (chunk[0][0], chunk[-1][0]))
            bump_generation(c)


def single_process(location: str, corpus: Corpus, modes: list[str], queries: list[str], writes: int,
                   offset: int, server_cpu: ServerCpu) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with kenning.open_store(location) as store:
        for mode in modes:
            t0 = time.perf_counter()
            store.search(queries[0], mode=mode)  # warm: load the lexicon, the encoder, the index
            warm = time.perf_counter() - t0
            lat = []
            cpu0, server0 = time.process_time(), server_cpu()
            for q in queries:
                t0 = time.perf_counter()
                store.search(q, mode=mode, limit=10)
                lat.append(time.perf_counter() - t0)
            out[f"search_{mode}"] = {**ms(lat), "client_cpu_ms_per_op": round((time.process_time() - cpu0) / len(lat) * 1000, 2),
                                     "first_search_s": round(warm, 2)}
            if server_cpu.pid is not None:
                out[f"search_{mode}"]["server_cpu_ms_per_op"] = round((server_cpu() - server0) / len(lat) * 1000, 2)
            print(json.dumps({f"search_{mode}": out[f"search_{mode}"]}), flush=True)  # a stopped run keeps it
        if not writes:
            return out
        lat = []
        cpu0 = time.process_time()
        for i, text in enumerate(corpus.memories(writes, offset=offset)):
            t0 = time.perf_counter()
            result = store.write(f"{text} (bench write {offset + i})", scopes=["bench:writes"], **ACCEPT)
            lat.append(time.perf_counter() - t0)
            assert result.status == "committed", result
        out["write"] = {**ms(lat), "client_cpu_ms_per_op": round((time.process_time() - cpu0) / max(1, len(lat)) * 1000, 2)}
    return out


def client(location: str, worker: int, ops: int, queries: list[str], texts: list[str], start: float, out) -> None:
    rng = random.Random(worker)
    lat, errors, written, kinds = [], 0, [], {}
    store = kenning.open_store(location)
    store.search(queries[0], mode="bm25")
    while time.time() < start:
        time.sleep(0.001)
    t_begin = time.perf_counter()
    for i in range(ops):
        t0 = time.perf_counter()
        try:
            if rng.random() < SEARCH_SHARE:
                store.search(rng.choice(queries), mode="bm25", limit=10)
            else:
                result = store.write(f"{texts[i]} (client {worker} op {i})", scopes=[f"bench:client{worker}"],
                                     **ACCEPT)
                if result.status == "committed":
                    written.append(result.id)
                else:
                    errors += 1  # every gate is accepted, so anything but committed is a failure
        except Exception as exc:  # noqa: BLE001 - counted by kind, the run goes on
            errors += 1
            kind = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            kinds[kind] = kinds.get(kind, 0) + 1
        lat.append(time.perf_counter() - t0)
    out.put({"lat": lat, "errors": errors, "kinds": kinds, "written": written,
             "seconds": time.perf_counter() - t_begin, "cpu_s": time.process_time()})
    store.close()


def many_processes(location: str, corpus: Corpus, procs: int, ops: int, queries: list[str]) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start = time.time() + 5 + procs  # every client opened and warm before the first operation
    workers = []
    for w in range(procs):
        texts = list(corpus.memories(ops, offset=WRITE_OFFSET * 2 + w * ops))
        workers.append(ctx.Process(target=client, args=(location, w, ops, queries, texts, start, out)))
    for p in workers:
        p.start()
    results = [out.get(timeout=3600) for _ in workers]
    for p in workers:
        p.join()
    lat = [x for r in results for x in r["lat"]]
    written = [i for r in results for i in r["written"]]
    with kenning.open_store(location) as store:  # a fresh process's view: every acknowledged write readable
        lost = 0
        for mid in written:
            try:
                store.get(mid)
            except kenning.NotFound:
                lost += 1
    wall = max(r["seconds"] for r in results)
    return {"processes": procs, "ops_per_process": ops, "throughput_ops_s": round(len(lat) / wall, 1),
            **ms(lat), "errors": sum(r["errors"] for r in results),
            "error_kinds": {k: sum(r["kinds"].get(k, 0) for r in results) for r in results for k in r["kinds"]},
            "writes_acknowledged": len(written), "clients_cpu_s": round(sum(r["cpu_s"] for r in results), 1),
            "lost_writes": lost}


def median_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: {m: round(statistics.median(r[k][m] for r in runs), 2) for m in runs[0][k]} for k in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--vector", action="store_true", help="also semantic and hybrid (embeds the corpus first)")
    parser.add_argument("--encode", type=int, default=2000,
                        help="with --vector: memories embedded for real; the rest get those vectors plus noise")
    parser.add_argument("--batch-size", type=int, default=50_000,
                        help="memories a transaction in the bulk import of the corpus")
    parser.add_argument("--backends", default="sqlite,postgresql", help="which to run (comma-separated)")
    parser.add_argument("--url", default=None, help="a PostgreSQL server to use (default: start one with pgserver)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    server = None
    url = args.url
    server_cpu = ServerCpu(None)
    if url is None:
        import pgserver

        pgdata = Path(tempfile.mkdtemp(prefix="kenning-bench-pg-"))
        server = pgserver.get_server(pgdata, cleanup_mode="delete")
        url = server.get_uri()
        server_cpu = ServerCpu(pgdata)
    from kenning.store.postgres.database import scratch_schema

    corpus = Corpus()
    queries = corpus.queries(args.queries, corpus_size=args.memories)
    modes = ["keyword", "bm25"] + (["semantic", "hybrid"] if args.vector else [])
    report: dict[str, Any] = {"command": " ".join(sys.argv), "memories": args.memories, "queries": len(queries),
                              "repeats": args.repeats, "encoded_for_real": min(args.encode, args.memories) if args.vector else 0,
                              "modes": modes, "load_average_at_start": round(os.getloadavg()[0], 1), "backends": {}}
    with tempfile.TemporaryDirectory(prefix="kenning-bench-") as tmp, \
            scratch_schema(url, f"kenning_bench_{uuid.uuid4().hex[:8]}") as pg_location:
        for name, location in (("sqlite", str(Path(tmp) / "store")), ("postgresql", pg_location)):
            if name not in args.backends.split(","):
                continue
            print(f"{name}: building {args.memories} memories", flush=True)
            cpu = server_cpu if name == "postgresql" else ServerCpu(None)
            row: dict[str, Any] = build(location, corpus, args.memories, args.vector, args.encode, args.batch_size, cpu)
            row["store_mb"] = store_size_mb(name, location)
            print(json.dumps({name: row}), flush=True)
            runs = [single_process(location, corpus, modes, queries, args.writes, WRITE_OFFSET + r * args.writes, cpu)
                    for r in range(args.repeats)]
            row.update(median_runs(runs))
            row["load_average_after"] = round(os.getloadavg()[0], 1)
            print(json.dumps({name: row}, indent=1), flush=True)
            if args.procs:
                print(f"{name}: {args.procs} processes x {args.ops} operations", flush=True)
                row["concurrent"] = many_processes(location, corpus, args.procs, args.ops, queries)
            report["backends"][name] = row
            print(json.dumps({name: row}, indent=1), flush=True)
            if args.out is not None:  # what has finished is kept should a long run be stopped
                args.out.write_text(json.dumps(report, indent=1) + "\n")
    report["load_average_at_end"] = round(os.getloadavg()[0], 1)
    if server is not None:
        server.cleanup()
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
