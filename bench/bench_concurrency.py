"""Do reads serialise on SQLite's write lock? 4 searching processes and 1 writing process, one store.

Run from the repository root:

    python bench/bench_concurrency.py --memories 10000 --seconds 20 --out bench/results-concurrency.json

Every ``search`` logs an event (what since_prior_session, the outcome loop and the silent-miss
audit read), so every read takes the write lock for one short transaction. The benchmark runs the
same load twice over one store: readers that log (``search``, the default) and readers that do
not (``search(record=False)``, the read-only path), each time beside one process doing gated
``write`` calls back to back. It reports reads/s over all readers, read p50/p99, writes/s and
write p99, with each process's CPU time, so the cost of the event row under contention is the
difference between the two rows.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None  # type: ignore[assignment]  # a base install

import kenning  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402


def reader(directory: str, queries: list[str], record: bool, start: float, stop: float, out) -> None:
    store = kenning.open_store(directory)
    store.search(queries[0], mode="bm25", limit=10, record=False)  # warm
    while time.time() < start:
        time.sleep(0.001)
    lat, i, c0 = [], 0, time.process_time()
    while time.time() < stop:
        t0 = time.perf_counter()
        store.search(queries[i % len(queries)], mode="bm25", limit=10, record=record)
        lat.append(time.perf_counter() - t0)
        i += 1
    out.put({"role": "reader", "lat": lat, "cpu": time.process_time() - c0})
    store.close()


def writer(directory: str, texts: list[str], start: float, stop: float, out) -> None:
    store = kenning.open_store(directory)
    while time.time() < start:
        time.sleep(0.001)
    lat, i, c0 = [], 0, time.process_time()
    while time.time() < stop and i < len(texts):
        t0 = time.perf_counter()
        store.write(texts[i], scopes=["bench:concurrency"])
        lat.append(time.perf_counter() - t0)
        i += 1
    out.put({"role": "writer", "lat": lat, "cpu": time.process_time() - c0})
    store.close()


def run(directory: str, queries: list[str], texts: list[str], readers: int, seconds: float, record: bool) -> dict:
    out = mp.Queue()
    start = time.time() + 3.0  # everyone opens and warms first
    stop = start + seconds
    procs = [mp.Process(target=reader, args=(directory, queries[r::readers], record, start, stop, out))
             for r in range(readers)]
    procs.append(mp.Process(target=writer, args=(directory, texts, start, stop, out)))
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    reads = [x for r in results if r["role"] == "reader" for x in r["lat"]]
    writes = [x for r in results if r["role"] == "writer" for x in r["lat"]]
    return {
        "readers_log_events": record,
        "reads_per_s": len(reads) / seconds,
        "read_p50_ms": float(np.percentile(reads, 50)) * 1e3,
        "read_p99_ms": float(np.percentile(reads, 99)) * 1e3,
        "reader_cpu_s": sum(r["cpu"] for r in results if r["role"] == "reader"),
        "writes_per_s": len(writes) / seconds,
        "write_p99_ms": float(np.percentile(writes, 99)) * 1e3 if writes else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    corpus = Corpus()
    workdir = Path(tempfile.mkdtemp(prefix="kenning-concurrency-"))
    try:
        store = kenning.open_store(workdir)
        store.import_records(corpus.records(args.memories), batch_size=5000)
        store.close()
        queries = corpus.queries(200, corpus_size=args.memories)
        texts = list(corpus.memories(20_000, offset=args.memories))
        rows = [run(str(workdir), queries, texts[i * 10_000:], args.readers, args.seconds, record)
                for i, record in enumerate((True, False))]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{args.readers} reader processes + 1 writer, {args.memories:,} memories, {args.seconds:g} s each, "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'readers':<22}{'reads/s':>9}{'read p50 ms':>13}{'read p99 ms':>13}{'reader CPU s':>14}"
          f"{'writes/s':>10}{'write p99 ms':>14}")
    for r in rows:
        label = "search (logs event)" if r["readers_log_events"] else "search record=False"
        print(f"{label:<22}{r['reads_per_s']:>9.1f}{r['read_p50_ms']:>13.2f}{r['read_p99_ms']:>13.2f}"
              f"{r['reader_cpu_s']:>14.1f}{r['writes_per_s']:>10.1f}{r['write_p99_ms'] or float('nan'):>14.2f}")
    if args.out:
        args.out.write_text(json.dumps({"settings": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
