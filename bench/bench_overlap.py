"""Encoding overlapped with other work, against encoding inline, in the same process (issue 10).

A hybrid search encodes its query on a worker thread while its lexical legs run
(``Semantic.query_vector_ahead``); a write encodes its text while its gates run
(``Semantic.encode_ahead``). This alternates each call between that and the inline path (the
method replaced by one that encodes on the caller's thread), so both see the same load:

    python bench/bench_overlap.py --store /tmp/kenning-bench-encoder/onnx-10000 --queries 50 --repeats 2
    python bench/bench_overlap.py --store /tmp/kenning-bench-encoder/onnx-1000 --writes 60

Stores come from ``bench_encoder.py``; writes go to a copy. Prints p50 wall and CPU ms of each side.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
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
    parser.add_argument("--queries", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--writes", type=int, default=0)
    args = parser.parse_args()
    import kenning

    corpus = Corpus()
    if args.queries:
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
    if args.writes:
        copy = Path(tempfile.mkdtemp(prefix="kenning-overlap-")) / "store"
        shutil.copytree(args.store, copy)
        store = kenning.open_store(copy)
        sem = store.semantic
        ahead = sem.encode_ahead
        store.search("warm up", mode="hybrid", auto_scope=False)
        sides = {"ahead": ([], []), "after": ([], [])}
        for i, text in enumerate(corpus.memories(args.writes, offset=10**7)):
            side = "ahead" if i % 2 else "after"
            sem.encode_ahead = ahead if side == "ahead" else (lambda text: None)
            samples: tuple[list, list] = ([], [])
            result = timed(samples, lambda: store.write(text, scopes=["bench:writes"], acknowledge_transient=True))
            if result.status == "committed":  # a refused write made no vector: not timed
                sides[side][0].extend(samples[0])
                sides[side][1].extend(samples[1])
        assert sem.pending_count() == 0, "a write left its vector pending"
        report("write", sides)
        store.close()
        shutil.rmtree(copy.parent, ignore_errors=True)
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
