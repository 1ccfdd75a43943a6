"""Exact numpy vs hnswlib for the vector leg, on real MiniLM embeddings: where is the crossover?

Run from the repository root (needs the embeddings extra and ../shared/eval-data):

    python bench/bench_vector.py [--sizes 1000,5000,...] [--queries 200] [--repeats 3]

The first run encodes 100k texts (about an hour on two busy cores); ``--encode-only`` does just
that, so it can run apart from the timed part (e.g. with OMP_NUM_THREADS=1 on a shared machine).

The texts are the documents of every collection in ../shared/eval-data plus their sentences,
titles and pairs of adjacent sentences (the first 100k distinct ones); the queries are the collections' real queries. Embeddings are
cached (retrieval/embedding_cache.py), so only the first run pays for encoding.

One index grows through the sizes; at each size it is searched through both paths by flipping
``exact_threshold`` (the same data, so the timings and recall are comparable):

- exact vs hnswlib median search latency (k=10), over queries x repeats, per ef_search;
- recall@10 of hnswlib against exact search, per ef_search;
- filtered search (``allowed`` = a random fraction of keys) exact-over-subset vs hnswlib filter;
- save/load time and file size at the largest size.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kenning.retrieval.embedding_cache import EmbeddingCache, embed_with_cache
from kenning.retrieval.embeddings import require
from kenning.retrieval.vector import VectorIndex

EVAL_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "eval-data"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def load_collection(folder: Path) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    """A BEIR folder as (doc id -> title + text, query id -> text, query id -> {doc id: grade})."""
    corpus = {}
    with (folder / "corpus.jsonl").open() as lines:
        for line in lines:
            doc = json.loads(line)
            corpus[doc["_id"]] = f"{doc.get('title', '')}\n{doc['text']}".strip()
    with (folder / "queries.jsonl").open() as lines:
        queries = {q["_id"]: q["text"] for q in map(json.loads, lines)}
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels.tsv").open() as lines:
        next(lines)
        for line in lines:
            query_id, doc_id, grade = line.rstrip("\n").split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(grade)
    return corpus, queries, qrels


def collections() -> list[Path]:
    return sorted(p for p in EVAL_DATA.iterdir() if (p / "corpus.jsonl").is_file())


def real_texts(limit: int) -> tuple[list[str], list[str]]:
    """Up to ``limit`` distinct texts and all queries of every collection.

    The texts are documents, their sentences, their titles, then pairs of adjacent sentences.
    """
    docs, sentences, titles, pairs, queries = [], [], [], [], []
    for folder in collections():
        corpus, qs, _ = load_collection(folder)
        docs.extend(corpus.values())
        queries.extend(qs.values())
        for text in corpus.values():
            split = [s for s in _SENTENCE_END.split(text) if len(s) > 20]
            sentences.extend(split)
            titles.append(text.split("\n", 1)[0])
            pairs.extend(f"{a} {b}" for a, b in zip(split, split[1:]))
    texts = list(dict.fromkeys(docs + sentences + titles + pairs))[:limit]
    return texts, list(dict.fromkeys(queries))


def median_ms(fn, queries: np.ndarray, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        for query in queries:
            start = time.perf_counter_ns()
            fn(query)
            times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


def recall_at_10(index: VectorIndex, queries: np.ndarray, truth: list[list[int]]) -> float:
    found = [len({key for key, _ in index.search(q, 10)} & set(t)) / len(t) for q, t in zip(queries, truth)]
    return float(np.mean(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,10000,20000,50000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ef", default="16,32,64,128")
    parser.add_argument("--fractions", default="0.01,0.05,0.1,0.2,0.5")
    parser.add_argument(
        "--encode-only", action="store_true", help="fill the embedding cache and stop (slow the first time)"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    efs = [int(e) for e in args.ef.split(",")]
    fractions = [float(f) for f in args.fractions.split(",")]

    encoder = require()
    texts, query_texts = real_texts(max(sizes))
    print(f"{len(texts)} texts, {len(query_texts)} queries; encoding misses ...", file=sys.stderr)
    with EmbeddingCache() as cache:
        done = [0]

        def progress(n: int) -> None:
            done[0] += n
            print(f"\r  encoded {done[0]}", end="", file=sys.stderr)

        vectors = embed_with_cache(encoder, texts, cache, progress=progress)
        query_vectors = embed_with_cache(encoder, query_texts, cache)
    print(file=sys.stderr)
    if args.encode_only:
        return
    rng = np.random.default_rng(7)
    order = rng.permutation(len(texts))  # mix collections and documents with sentences
    vectors = vectors[order]
    queries = query_vectors[rng.choice(len(query_vectors), size=args.queries, replace=False)]

    # exact_threshold=0: the graph exists from the first add; flip the threshold to pick the path.
    index = VectorIndex(encoder.dim, exact_threshold=0)
    rows = []
    for size in sizes:
        start = time.perf_counter()
        index.add(np.arange(len(index), size), vectors[len(index) : size])
        build_s = time.perf_counter() - start
        index.exact_threshold = 10**12
        truth = [[key for key, _ in index.search(q, 10)] for q in queries]
        exact_ms = median_ms(lambda q: index.search(q, 10), queries, args.repeats)
        index.exact_threshold = 0
        row = {"size": size, "add_s": round(build_s, 2), "exact_ms": round(exact_ms, 3)}
        for ef in efs:
            index.ef_search = ef
            row[f"hnsw_ef{ef}_ms"] = round(median_ms(lambda q: index.search(q, 10), queries, args.repeats), 3)
            row[f"recall_ef{ef}"] = round(recall_at_10(index, queries, truth), 4)
        rows.append(row)
        print(json.dumps(row), flush=True)

    print("\nfiltered search at", sizes[-1], "(allowed = random fraction of keys, k=10):")
    index.ef_search = 64
    for fraction in fractions:
        allowed = set(rng.choice(sizes[-1], size=int(sizes[-1] * fraction), replace=False).tolist())
        index.exact_threshold = 10**12
        truth = [[key for key, _ in index.search(q, 10, allowed=allowed)] for q in queries]
        exact_ms = median_ms(lambda q: index.search(q, 10, allowed=allowed), queries, args.repeats)
        index.exact_threshold = 0
        hnsw_ms = median_ms(lambda q: index.search(q, 10, allowed=allowed), queries, args.repeats)
        found = [
            len({key for key, _ in index.search(q, 10, allowed=allowed)} & set(t)) / len(t)
            for q, t in zip(queries, truth)
        ]
        print(
            json.dumps(
                {
                    "allowed": len(allowed),
                    "exact_subset_ms": round(exact_ms, 3),
                    "hnsw_filter_ms": round(hnsw_ms, 3),
                    "hnsw_filter_recall": round(float(np.mean(found)), 4),
                }
            ),
            flush=True,
        )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vectors.idx"
        start = time.perf_counter()
        index.save(path, {"model_id": encoder.model_id})
        save_s = time.perf_counter() - start
        start = time.perf_counter()
        loaded = VectorIndex.load(path, encoder.dim, {"model_id": encoder.model_id})
        load_s = time.perf_counter() - start
        assert loaded is not None and len(loaded) == len(index)
        print(
            json.dumps(
                {
                    "size": len(index),
                    "save_s": round(save_s, 2),
                    "load_s": round(load_s, 2),
                    "file_mb": round(os.path.getsize(path) / 2**20, 1),
                }
            )
        )

    crossover = next((r["size"] for r in rows if r["hnsw_ef64_ms"] < r["exact_ms"]), None) if 64 in efs else None
    print(f"\nfirst size where hnswlib (ef 64) beats exact: {crossover}")


if __name__ == "__main__":
    main()
