"""Choose the vector leg's no-match floor for a model by measurement, and time the model.

Run from the repository root (needs the embeddings extra and ../shared/eval-data):

    python bench/measure_floor.py [--target 0.99] [--skip-timing]

The floor should cut what a store "has never heard of" without cutting what it knows. Two
cosine distributions per collection, on all-MiniLM-L6-v2 (or --model):

- *kept*: cosine(query, relevant doc) for every judged relevant doc that exact search puts in
  the query's top 10 of its own collection (locomo-dev: of its own conversation). These are
  the hits a floor could actually take away from a result list; a relevant doc ranked 500th is
  not returned anyway.
- *foreign*: cosine of the top-1 and top-10 hits when the same queries are posed against a
  DIFFERENT collection (every other one; for locomo-dev also every other conversation), i.e. a
  store that holds nothing about the question. These are the hits the floor should drop.

The chosen floor is the highest one (on a 0.005 grid) that keeps at least ``--target`` (99%) of the
relevant top-10 hits in every collection; the script prints the whole trade-off table so the
choice can be argued with. Also printed: model import/load time (fresh process), single-query
encode latency, and batch encode throughput at batch sizes 8/16/32.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_vector import collections, load_collection  # noqa: E402  (script-local helper)

from kenning.retrieval.embedding_cache import EmbeddingCache, embed_with_cache  # noqa: E402
from kenning.retrieval.embeddings import require  # noqa: E402

GRID = np.round(np.arange(0.05, 0.601, 0.005), 3)


def group_of(doc_or_query_id: str, grouped: bool) -> str:
    """locomo ids are ``conv-26:D1:3`` / ``conv-26:q0``: the conversation is the group."""
    return doc_or_query_id.split(":", 1)[0] if grouped else ""


def embedded_collections(encoder, cache: EmbeddingCache) -> dict[str, dict]:
    out = {}
    for folder in collections():
        corpus, queries, qrels = load_collection(folder)
        doc_ids = list(corpus)
        query_ids = [q for q in queries if q in qrels]
        print(f"  {folder.name}: {len(doc_ids)} docs, {len(query_ids)} queries", file=sys.stderr, flush=True)
        out[folder.name] = {
            "doc_ids": doc_ids,
            "docs": embed_with_cache(encoder, [corpus[d] for d in doc_ids], cache),
            "query_ids": query_ids,
            "queries": embed_with_cache(encoder, [queries[q] for q in query_ids], cache),
            "qrels": qrels,
            "grouped": folder.name.startswith("locomo"),
        }
    return out


def ranked_top10(col: dict) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per query: (query id, top-10 doc rows, their cosines) by exact search within its group."""
    doc_groups = np.array([group_of(d, col["grouped"]) for d in col["doc_ids"]])
    scores = col["queries"] @ col["docs"].T
    out = []
    for row, query_id in enumerate(col["query_ids"]):
        candidates = np.nonzero(doc_groups == group_of(query_id, col["grouped"]))[0]
        top = candidates[np.argsort(-scores[row, candidates], kind="stable")[:10]]
        out.append((query_id, top, scores[row, top]))
    return out


def relevant_top10_cosines(col: dict, ranked: list) -> np.ndarray:
    """Cosines of judged relevant docs that exact search ranks in the top 10 (within the group)."""
    kept = []
    for query_id, top, cosines in ranked:
        relevant = {d for d, grade in col["qrels"][query_id].items() if grade > 0}
        kept.extend(float(c) for i, c in zip(top, cosines) if col["doc_ids"][i] in relevant)
    return np.asarray(kept)


def ndcg_at_10(col: dict, ranked: list, floor: float) -> float:
    """The vector leg's nDCG@10 (gain 2^grade - 1) when hits below the floor are dropped."""
    total = 0.0
    for query_id, top, cosines in ranked:
        grades = col["qrels"][query_id]
        gains = [2 ** grades.get(col["doc_ids"][i], 0) - 1 for i, c in zip(top, cosines) if c >= floor]
        ideal = sorted((2**g - 1 for g in grades.values() if g > 0), reverse=True)[:10]
        dcg = sum(g / np.log2(rank + 2) for rank, g in enumerate(gains))
        total += dcg / sum(g / np.log2(rank + 2) for rank, g in enumerate(ideal))
    return total / len(ranked)


def foreign_cosines(queries: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-1 cosine per query, and all top-10 cosines, against a collection about something else."""
    scores = queries @ docs.T
    k = min(10, scores.shape[1])
    top = -np.sort(-np.partition(scores, scores.shape[1] - k, axis=1)[:, -k:], axis=1)
    return top[:, 0], top.ravel()


def measure_floor(cols: dict[str, dict], target: float) -> float:
    ranked = {name: ranked_top10(col) for name, col in cols.items()}
    kept = {name: relevant_top10_cosines(col, ranked[name]) for name, col in cols.items()}
    foreign_top1, foreign_top10 = [], []
    pairs = {}
    for name, col in cols.items():
        for other, other_col in cols.items():
            if other != name:
                top1, top10 = foreign_cosines(col["queries"], other_col["docs"])
                foreign_top1.append(top1)
                foreign_top10.append(top10)
                pairs[f"{name} -> {other}"] = top1
        if col["grouped"]:  # each conversation's questions against every other conversation
            doc_groups = np.array([group_of(d, True) for d in col["doc_ids"]])
            query_groups = np.array([group_of(q, True) for q in col["query_ids"]])
            cross = []
            for group in np.unique(query_groups):
                top1, top10 = foreign_cosines(col["queries"][query_groups == group], col["docs"][doc_groups != group])
                cross.append(top1)
                foreign_top1.append(top1)
                foreign_top10.append(top10)
            pairs[f"{name} -> other conversations"] = np.concatenate(cross)
    foreign_top1 = np.concatenate(foreign_top1)
    foreign_top10 = np.concatenate(foreign_top10)

    print("\nrelevant docs in the exact top 10 (the hits a floor could remove):")
    for name, values in kept.items():
        print(f"  {name:15s} n={len(values):5d}  p1={np.percentile(values, 1):.3f}  p2={np.percentile(values, 2):.3f}"
              f"  p5={np.percentile(values, 5):.3f}  median={np.median(values):.3f}")
    print("\nforeign top-1 cosine (queries posed to a store that holds nothing about them):")
    for pair, values in pairs.items():
        print(f"  {pair:42s} median={np.median(values):.3f}  p90={np.percentile(values, 90):.3f}"
              f"  max={values.max():.3f}")

    print("\nfloor | relevant top-10 hits kept (per collection)       | foreign dropped: top-1  top-10")
    for floor in GRID[::5]:
        per = "  ".join(f"{np.mean(v >= floor):.3f}" for v in kept.values())
        print(f"{floor:5.3f} | {per} | {np.mean(foreign_top1 < floor):20.3f} {np.mean(foreign_top10 < floor):7.3f}")
    print(f"      ({', '.join(kept)})")

    def highest_floor(share: float) -> float:
        eligible = [f for f in GRID if all(np.mean(v >= f) >= share for v in kept.values())]
        return float(max(eligible)) if eligible else float(GRID[0])

    print("\nkeep-share target -> highest floor, foreign top-1 dropped, vector-leg nDCG@10 per collection")
    print(f"   no floor                          {'  '.join(f'{ndcg_at_10(c, ranked[n], -1):.4f}' for n, c in cols.items())}")
    for share in sorted({0.97, 0.98, 0.99, 0.995, target}):
        f = highest_floor(share)
        ndcgs = "  ".join(f"{ndcg_at_10(c, ranked[n], f):.4f}" for n, c in cols.items())
        print(f"  {share:.3f} -> {f:.3f}  drops {np.mean(foreign_top1 < f):.3f}          {ndcgs}")

    floor = highest_floor(target)
    kept_all = np.concatenate(list(kept.values()))
    print(
        f"\nchosen floor {floor:.3f}: the highest keeping >= {target:.1%} of relevant top-10 hits in every collection;"
        f"\n  keeps {np.mean(kept_all >= floor):.4f} of all {len(kept_all)} relevant top-10 hits"
        f" (worst collection {min(np.mean(v >= floor) for v in kept.values()):.4f}),"
        f"\n  drops {np.mean(foreign_top1 < floor):.3f} of foreign top-1 and {np.mean(foreign_top10 < floor):.3f}"
        f" of foreign top-10 hits ({len(foreign_top1)} foreign queries)"
    )
    return floor


LOAD_TIMING = """
import json, time
start = time.perf_counter()
import sentence_transformers
imported = time.perf_counter()
from kenning.retrieval.embeddings import get_encoder, resolve_model
get_encoder(resolve_model({model!r}))
print(json.dumps({{"import_s": imported - start, "load_s": time.perf_counter() - imported}}))
"""


def measure_speed(encoder, model: str | None, texts: dict[str, list[str]]) -> None:
    runs = []
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", LOAD_TIMING.format(model=model)], capture_output=True, text=True, check=True
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(
        f"\nmodel load in a fresh process (median of 3): import sentence-transformers "
        f"{statistics.median(r['import_s'] for r in runs):.2f} s, load model "
        f"{statistics.median(r['load_s'] for r in runs):.2f} s"
    )
    queries = texts["queries"][:200]
    encoder.encode_query(queries[0])
    times = []
    for _ in range(3):
        for query in queries:
            start = time.perf_counter_ns()
            encoder.encode_query(query)
            times.append(time.perf_counter_ns() - start)
    print(f"single-query encode: median {statistics.median(times) / 1e6:.1f} ms over {len(times)} encodes")
    for label, sample in (("short (locomo turns)", texts["short"][:256]), ("long (scifact abstracts)", texts["long"][:64])):
        rates = []
        for batch in (8, 16, 32):
            per_run = []
            for _ in range(3):
                start = time.perf_counter()
                encoder.encode(sample, batch_size=batch)
                per_run.append(len(sample) / (time.perf_counter() - start))
            rates.append(f"batch {batch}: {statistics.median(per_run):6.1f}/s")
        print(f"batch encode, {label:26s} " + "  ".join(rates))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--target", type=float, default=0.99)
    parser.add_argument("--skip-timing", action="store_true")
    args = parser.parse_args()
    encoder = require(args.model)
    print(f"model {encoder.model_id}, dim {encoder.dim}; embedding collections ...", file=sys.stderr)
    with EmbeddingCache() as cache:
        cols = embedded_collections(encoder, cache)
    measure_floor(cols, args.target)
    if not args.skip_timing:
        locomo = load_collection(next(p for p in collections() if p.name.startswith("locomo")))
        scifact = load_collection(next(p for p in collections() if p.name.startswith("scifact")))
        texts = {
            "queries": list(scifact[1].values()),
            "short": list(locomo[0].values()),
            "long": list(scifact[0].values()),
        }
        measure_speed(encoder, args.model, texts)


if __name__ == "__main__":
    main()
