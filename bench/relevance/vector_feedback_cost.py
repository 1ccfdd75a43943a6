"""What the vector leg's feedback (retrieval/feedback.py, ``moved_query``) costs a hybrid search.

1. On the eval's own stores: the questions it moves (``VECTOR_FEEDBACK_TERMS`` distinct terms or
   more), ``Store.rank(mode="hybrid", depth=10, explain=False)`` with feedback off and on in turn,
   three rounds; the median per question of each, and their ratio.
2. ``--vectors N``: a ``VectorIndex`` of N random unit vectors (HNSW above 10k, as a store's), the
   vector leg's walk for 100 with and without the first walk for the nearest 2 before it (medians of
   200 queries). A moved search also reads the two texts' vectors and the labelled hits' (one
   indexed query each).
    KENNING_EVAL_DATA=../shared/eval-data python bench/relevance/vector_feedback_cost.py memval3 scifact-train
    python bench/relevance/vector_feedback_cost.py --vectors 100000
"""
import argparse, os, statistics, time
import numpy as np
from kenning.eval import harness
from kenning.eval.datasets import load_dataset
from kenning.retrieval import feedback
from kenning.retrieval.text import search_tokens

DATA = os.environ.get("KENNING_EVAL_DATA", "../shared/eval-data")


def on_store(name):
    source = name if name.startswith(("builtin", "memval")) else os.path.join(DATA, name)
    sep = ":" if name == "locomo-dev" else None
    data = load_dataset(source)
    moved = [q for q in data.queries.values() if len(set(search_tokens(q.text))) >= feedback.VECTOR_FEEDBACK_TERMS]
    shipped = feedback.VECTOR_FEEDBACK_TERMS
    times = {"off": [[] for _ in moved], "on": [[] for _ in moved]}
    with harness.loaded_store(data, sep, semantic=True) as store:
        try:
            for _ in range(3):
                for state, terms in (("off", 10 ** 9), ("on", shipped)):
                    feedback.VECTOR_FEEDBACK_TERMS = terms
                    for i, q in enumerate(moved):
                        start = time.perf_counter()
                        store.rank(q.text, mode="hybrid", depth=10, explain=False,
                                   scopes=harness.query_scopes(q.id, sep))
                        times[state][i].append((time.perf_counter() - start) * 1000)
        finally:
            feedback.VECTOR_FEEDBACK_TERMS = shipped
    off = statistics.median(statistics.median(t) for t in times["off"])
    on = statistics.median(statistics.median(t) for t in times["on"])
    print(f"{name}: {len(moved)} of {len(data.queries)} questions moved; hybrid rank {off:.2f} ms -> {on:.2f} ms "
          f"(x{on / off:.2f}), medians of 3")


def on_index(n):
    from kenning.retrieval.vector import VectorIndex

    rng = np.random.default_rng(0)
    index = VectorIndex(384)
    for start in range(0, n, 10_000):
        block = rng.normal(size=(min(10_000, n - start), 384)).astype(np.float32)
        index.add(np.arange(start, start + len(block)), block)
    queries = rng.normal(size=(200, 384)).astype(np.float32)
    plain, moved = [], []
    for q in queries:
        start = time.perf_counter()
        index.search(q, 100, floor=-1.0)
        plain.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        index.search(q, feedback.VECTOR_FEEDBACK_DOCS, floor=-1.0)
        index.search(q, 100, floor=-1.0)
        moved.append((time.perf_counter() - start) * 1000)
    print(f"{n} vectors ({'hnsw' if index.uses_hnsw else 'exact'}): the leg's walk {statistics.median(plain):.2f} ms, "
          f"with the first walk for the nearest {feedback.VECTOR_FEEDBACK_DOCS} {statistics.median(moved):.2f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--vectors", type=int, default=0)
    a = ap.parse_args()
    for name in a.names:
        on_store(name)
    if a.vectors:
        on_index(a.vectors)
