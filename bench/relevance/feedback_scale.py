"""What feedback (RM3 on hybrid's BM25 leg) costs inside a full hybrid search on a large store.

Builds (once) a SQLite store of ``--memories`` synthetic memories (bench/corpus.py) with vectors
(``--encode`` embedded for real, the rest those plus noise, as bench_backends.py does) and its HNSW
index, then times ``Store.search(q, mode="hybrid", limit=10)`` per query, CPU (process time) and
wall, in one process:
- ``feedback``: hybrid as shipped (evidence fusion, BM25 leg with feedback);
- ``plain``: the same search with the BM25 leg's feedback pass replaced by plain BM25
  (``store.search._with_feedback`` swapped for the plain leg - the reference, same run);
- ``feedback, first after a write``: one memory written before each query, so the store state
  changed and the feedback texts' tokens (remembered per store state) are tokenized afresh.
Medians over ``--repeats`` rounds of every query, plain and feedback alternating.
    python bench/relevance/feedback_scale.py --memories 100000 --encode 2000 --store DIR --out bench/results-feedback-100k.json
"""
from __future__ import annotations

import argparse, json, os, statistics, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_backends import build  # noqa: E402
from corpus import Corpus  # noqa: E402
from server_cpu import ServerCpu  # noqa: E402

import kenning  # noqa: E402
from kenning.retrieval import bm25  # noqa: E402
from kenning.store import search as store_search  # noqa: E402

SHIPPED = store_search._with_feedback


def plain_leg(db, lexicon, tokens, allowed, config):
    return lambda n: bm25.search(lexicon, tokens, n, allowed, k1=config.bm25_k1, b=config.bm25_b)


def timed(store, queries, write=None):
    cpu, wall = [], []
    for i, q in enumerate(queries):
        if write is not None:
            write(i)
        c0, w0 = time.process_time(), time.perf_counter()
        store.search(q, mode="hybrid", limit=10)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu) * 1000, statistics.median(wall) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--encode", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--writes", type=int, default=30)
    ap.add_argument("--store", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    corpus = Corpus()
    queries = corpus.queries(args.queries, corpus_size=args.memories)
    location = args.store
    report = {"command": " ".join(sys.argv), "memories": args.memories, "queries": len(queries),
              "load_average_at_start": round(os.getloadavg()[0], 1)}
    if not Path(location).exists():  # built once; a later run reuses it
        report["build"] = build(location, corpus, args.memories, True, args.encode, 5000, ServerCpu(None))
    rounds = {"plain": [], "feedback": []}
    with kenning.open_store(location) as store:
        store.search(queries[0], mode="hybrid")  # load the lexicon, the encoder, the index
        for _ in range(args.repeats):
            for name, leg in (("plain", plain_leg), ("feedback", SHIPPED)):
                store_search._with_feedback = leg
                rounds[name].append(timed(store, queries))
        store_search._with_feedback = SHIPPED
        texts = list(corpus.memories(args.writes, offset=2_000_000))
        written = {}

        def write(i):
            written[i] = store.write(f"{texts[i % len(texts)]} (feedback bench {i})", scopes=["bench:writes"], force=True,
                                     acknowledge_transient=True, acknowledge_user_claim=True, acknowledge_scope_mismatch=True)
        after_write = timed(store, queries[: args.writes], write)
        store_search._with_feedback = plain_leg
        plain_after_write = timed(store, queries[args.writes: 2 * args.writes], write=lambda i: write(args.writes + i))
        store_search._with_feedback = SHIPPED
    med = {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in rounds.items()}
    report["hybrid_cpu_ms_per_query"] = {k: round(v[0], 2) for k, v in med.items()}
    report["hybrid_wall_ms_per_query"] = {k: round(v[1], 2) for k, v in med.items()}
    report["feedback_extra_cpu_ms"] = round(med["feedback"][0] - med["plain"][0], 2)
    report["after_a_write_cpu_ms"] = {"feedback": round(after_write[0], 2), "plain": round(plain_after_write[0], 2)}
    report["after_a_write_wall_ms"] = {"feedback": round(after_write[1], 2), "plain": round(plain_after_write[1], 2)}
    report["rounds_cpu_ms"] = {k: [round(c, 2) for c, _ in v] for k, v in rounds.items()}
    report["load_average_at_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
