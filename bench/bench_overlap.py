"""A hybrid query encoded on a worker thread while the lexical legs run, against encoding inline, in the
same process (issue 10).

A hybrid search encodes its query on a worker thread while its lexical legs run
(``Semantic.query_vector_ahead``). This alternates each query between that and the inline path (the
method replaced by one that encodes on the caller's thread), so both see the same load:

    python bench/bench_overlap.py --store /tmp/kenning-bench-encoder/onnx-10000 --queries 50 --repeats 2

Stores come from ``bench_encoder.py``. Prints p50 wall and CPU ms of each side. (A write encoding its
text while its gates ran was measured the same way and removed: it did not pay, even on a quiet machine.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import Corpus  # noqa: E402


def timed(samples: tuple[list, list], call):
    c0, t0 = time.process_time(), time.perf_counter()
    result = call()
    samples[0].append((time.perf_counter() - t0) * 1000)
    samples[1].append((time.process_time() - c0) * 1000)
    return result


def report(what: str, sides: dict) -> None:
    for side, (wall, cpu) in sides.items():
        print(f"{what} {side:7} p50 {statistics.median(wall):6.2f} ms (cpu {statistics.median(cpu):6.2f}) n={len(wall)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    import kenning

    corpus = Corpus()
    store = kenning.open_store(args.store)
    sem = store.semantic
    ahead = sem.query_vector_ahead
    queries = corpus.queries(args.queries, corpus_size=store.count())
    for q in queries[:20]:
        store.search(q, mode="hybrid", limit=5, auto_scope=False)
    sides = {"ahead": ([], []), "inline": ([], [])}
    for _ in range(args.repeats):
        for q in queries:
            for side in sides:
                sem.query_vector_ahead = ahead if side == "ahead" else (lambda query: lambda: sem.query_vector(query))
                timed(sides[side], lambda: store.search(q, mode="hybrid", limit=5, auto_scope=False))
    report(f"hybrid at {store.count()}", sides)
    store.close()
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
