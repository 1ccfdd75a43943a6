"""Issue 14's "warm hybrid minus query encoding": a hybrid search with its vector leg, timed with the
query's encoding taken out, on a store whose memories all have their vectors.

The queries are encoded first with the store's own encoder; then the encoder's ``encode_query`` is
replaced by a look-up of those vectors, so every path that encodes (inline or on the encode-ahead
worker) gets the same vector at no cost, and what is timed is the rest of the search: the lexical
legs, the HNSW or exact scan, fusion, explanation and trust annotation. The real hybrid search
(encode included), bm25 and the query encode are timed in the same process as references.

    python bench/bench_encoder.py ...  # or bench_encoder.build_store(path, 100000, "onnx")
    python bench/hybrid_no_encode.py /tmp/v100k --queries 50 --repeats 3 --limit 10

One JSON line on stdout: p50/p95 wall and p50 CPU per measure (ms); ``--reference`` adds rank_bm25
on the same texts and queries, to scale a figure to another machine. Run trees one after the other
(``PYTHONPATH`` on a byte-compiled ``git archive`` snapshot) and compare medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import Corpus  # noqa: E402


def timed(run, queries, repeats):
    wall, cpu = [], []
    for _ in range(repeats):
        for q in queries:
            c0, t0 = time.process_time(), time.perf_counter()
            run(q)
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
    wall.sort()
    return {"p50": round(statistics.median(wall), 3), "p95": round(wall[int(len(wall) * 0.95)], 3),
            "cpu_p50": round(statistics.median(cpu), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--profile", type=Path, help="write a cProfile of the no-encode searches here")
    parser.add_argument("--reference", action="store_true",
                        help="also time rank_bm25 over the store's texts and queries (the issue's yardstick)")
    args = parser.parse_args()

    import kenning

    store = kenning.open_store(str(args.store))
    n = store.count()
    queries = Corpus().queries(args.queries, corpus_size=n)
    encoder = store.semantic.encoder()
    real_encode = encoder.encode_query
    vectors = {q: real_encode(q) for q in queries}

    def hybrid(q):
        r = store.search(q, mode="hybrid", limit=args.limit, auto_scope=False)
        assert "vector" in r.legs_run and not r.pending_embeddings, (r.legs_run, r.pending_embeddings)

    for q in queries[:20]:
        hybrid(q)
    out = {"store": str(args.store), "memories": n, "limit": args.limit, "queries": len(queries),
           "repeats": args.repeats, "kenning": str(Path(kenning.__file__).parent)}
    out["encode"] = timed(real_encode, queries, args.repeats)
    out["hybrid"] = timed(hybrid, queries, args.repeats)
    out["bm25"] = timed(lambda q: store.search(q, mode="bm25", limit=args.limit, auto_scope=False), queries,
                        args.repeats)
    encoder.encode_query = vectors.__getitem__  # the instance attribute shadows the method
    try:
        for q in queries[:20]:
            hybrid(q)
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
            out["hybrid_no_encode"] = timed(hybrid, queries, args.repeats)
            profiler.disable()
            profiler.dump_stats(str(args.profile))
        else:
            out["hybrid_no_encode"] = timed(hybrid, queries, args.repeats)
    finally:
        del encoder.encode_query
    if args.reference:
        from bench_lexical import bench_rank_bm25

        texts = [row[0] for row in store.db.read(lambda c: c.execute(
            "SELECT content FROM memories WHERE removed_at IS NULL ORDER BY rowid").fetchall())]
        out["rank_bm25"] = {k: round(v, 3) for k, v in bench_rank_bm25(texts, queries, 1, args.limit)["ms"].items()}
    store.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
