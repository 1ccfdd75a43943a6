"""A hybrid query encoded on a worker thread while the lexical legs run, against encoding inline, and
against what ``Semantic.query_vector_ahead`` chooses, in the same process (issue 10).

A hybrid search encodes its query on a worker thread while its lexical legs run when a core is free
or the legs' expected work reaches ``semantic.OVERLAP_MIN_WORK`` (``semantic.overlap_pays``), else on
its own thread. This alternates each query between the three sides (rotating which goes first), so
all see the same load: ``chosen`` (the shipped rule), ``ahead`` (always overlapped) and ``inline``:

    python bench/bench_overlap.py --store /tmp/kenning-bench-encoder/onnx-10000 --queries 50 --repeats 2

Stores come from ``bench_encoder.py``. Prints p50 wall and CPU ms of each side and how many of the
chosen side's searches overlapped. (A write encoding its text while its gates ran was measured the
same way and removed: it did not pay, even on a quiet machine.)
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

    from kenning.store import semantic

    corpus = Corpus()
    store = kenning.open_store(args.store)
    sem = store.semantic
    queries = corpus.queries(args.queries, corpus_size=store.count())
    for q in queries[:20]:
        store.search(q, mode="hybrid", limit=5, auto_scope=False)
    rule, cores = semantic.OVERLAP_MIN_WORK, semantic.available_cores
    overlapped = []
    chosen = semantic.overlap_pays
    semantic.overlap_pays = lambda threads, work: overlapped.append(chosen(threads, work)) or overlapped[-1]
    sides = {"chosen": ([], []), "ahead": ([], []), "inline": ([], [])}
    names = list(sides)
    for repeat in range(args.repeats):
        for n, q in enumerate(queries):
            for i in range(len(names)):
                side = names[(n + repeat + i) % len(names)]
                semantic.OVERLAP_MIN_WORK = {"chosen": rule, "ahead": 0, "inline": 10**18}[side]
                semantic.available_cores = cores if side == "chosen" else (lambda: 1)  # no free core unless chosen
                if side == "chosen":
                    overlapped.clear()
                timed(sides[side], lambda: store.search(q, mode="hybrid", limit=5, auto_scope=False))
                if side == "chosen":
                    sides.setdefault("_overlapped", []).extend(overlapped)
    semantic.OVERLAP_MIN_WORK, semantic.available_cores = rule, cores
    decided = sides.pop("_overlapped")
    print(f"chosen side: {sum(decided)} of {len(decided)} searches overlapped (cores {cores()})")
    report(f"hybrid at {store.count()}", sides)
    store.close()
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
