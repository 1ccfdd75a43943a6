"""Pseudo-relevance feedback on the query's vector (Rocchio), measured on the vector leg alone: the
query vector moved toward the cosine-weighted mean of its top k documents,
q' = normalise(q + beta * sum(w_i d_i) / sum(w_i)), w = cosine, then exact search again with the
shipped floor (0.15). Eleventh pass in eval/baselines/README.md: it lowers memval, not shipped.

    python bench/relevance/vector_prf.py builtin memval ../shared/eval-data/{med,cranfield,npl,locomo-dev,scifact-train}

Vectors come from the eval harness's embedding cache (``$KENNING_CACHE_DIR``), so a collection the
harness ran before is not encoded again. LoCoMo questions search their own conversation only.
"""
import json
import sys

import numpy as np

from kenning.eval import metrics
from kenning.eval.datasets import group_of, load_dataset
from kenning.eval.harness import indexable
from kenning.retrieval import embeddings
from kenning.retrieval.embedding_cache import EmbeddingCache, embed_with_cache

FLOOR = 0.15  # embeddings.NO_MATCH_FLOORS for MiniLM
VARIANTS = [(0, 0.0)] + [(k, beta) for k in (3, 5, 10) for beta in (0.2, 0.4, 0.7)]


def measure(source: str, encoder, cache) -> dict[str, float]:
    data = load_dataset(source)
    sep = ":" if "locomo" in source else None
    docs = indexable(data)
    ids = [doc_id for doc_id, _ in docs]
    vectors = embed_with_cache(encoder, [text for _, text in docs], cache)
    groups = np.array([group_of(doc_id, sep) or "" for doc_id in ids])
    queries = [q for q in data.queries if data.is_answerable(q)]
    if "scifact" in source:
        queries = queries[:400]  # as the gate runs it
    query_vectors = np.stack([encoder.encode_query(data.queries[q].text) for q in queries])
    out = {}
    for k, beta in VARIANTS:
        run = {}
        for q, vector in zip(queries, query_vectors):
            rows = np.flatnonzero(groups == (group_of(q, sep) or "")) if sep else np.arange(len(ids))
            cosines = vectors[rows] @ vector
            if k:
                top = np.argsort(-cosines)[:k]
                weights = np.maximum(cosines[top], 0)
                moved = vector + beta * (weights[:, None] * vectors[rows][top]).sum(0) / max(weights.sum(), 1e-9)
                cosines = vectors[rows] @ (moved / np.linalg.norm(moved))
            order = np.argsort(-cosines)[:100]
            run[q] = [ids[rows[j]] for j in order if cosines[j] >= FLOOR]
        out[f"k{k} beta{beta}"] = round(metrics.evaluate(data.qrels, run, queries)["nDCG@10"], 4)
    return out


def main() -> None:
    encoder = embeddings.get_encoder(embeddings.resolve_model(), "onnx")
    cache = EmbeddingCache()
    for source in sys.argv[1:]:
        print(source.rstrip("/").rsplit("/", 1)[-1], json.dumps(measure(source, encoder, cache)), flush=True)


if __name__ == "__main__":
    main()
