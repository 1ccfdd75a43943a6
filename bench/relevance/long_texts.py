"""Long documents and the vector leg: MiniLM reads at most 256 word pieces of a text, so what a long
document says after them never reaches its vector. Measures exact-cosine semantic nDCG@10 / R@10 with
the document truncated (what ships) against the document cut into token windows whose vectors are
averaged (one vector a document) or whose best cosine counts (one vector a window).

    python bench/relevance/long_texts.py med cranfield scifact-train --windows 128,256 --cache /tmp/lt
    python bench/relevance/long_texts.py med cranfield scifact-train --hybrid 0,0.5,0.7 --cache /tmp/lt

``--hybrid`` runs kenning's own eval (semantic and hybrid) with the vector leg's score of a document
raised toward its best 128-piece window, ``cos + lam * max(0, best_window - cos)``, by wrapping
``VectorIndex``'s two scoring methods (a measurement, not a design: a document's row is found by its
truncated vector, which the harness embeds identically). Twelfth pass in eval/baselines/README.md:
the vector leg gains on every long-document set, the hybrid does not; not shipped.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from kenning.eval.datasets import load_dataset
from kenning.eval.harness import run_eval
from kenning.eval.metrics import evaluate
from kenning.retrieval import embeddings


def windows(tokenizer, text: str, size: int) -> list[str]:
    """``text`` cut at word-piece boundaries into pieces of at most ``size - 2`` pieces (room for the
    [CLS] and [SEP] the encoder adds); a short text is itself."""
    enc = tokenizer.encode(text, add_special_tokens=False)
    step = size - 2
    if len(enc.ids) <= step:
        return [text]
    out = []
    for start in range(0, len(enc.ids), step):
        span = enc.offsets[start : start + step]
        out.append(text[span[0][0] : span[-1][1]])
    return out


def encode_cached(encoder, texts: list[str], path: Path) -> np.ndarray:
    if path.exists():
        return np.load(path)
    t = time.time()
    vectors = encoder.encode(texts, batch_size=16)
    np.save(path, vectors)
    print(f"  encoded {len(texts)} texts in {time.time() - t:.0f} s -> {path.name}", file=sys.stderr)
    return vectors


def with_windows(base: np.ndarray, pieces: np.ndarray, owner: np.ndarray, lam: float, run):
    """``run()`` with every vector-leg score s of a document raised to s + lam * max(0, w - s), w its
    best window's cosine to the query."""
    from kenning.retrieval.vector import VectorIndex

    scores, scores_of = VectorIndex._scores, VectorIndex._scores_of
    memo: dict = {}

    def adjusted(original):
        def score(index, rows, query):
            s = original(index, rows, query)
            if lam == 0:
                return s
            if getattr(index, "_doc_of_row", None) is None or len(index._doc_of_row) != index._count:
                index._doc_of_row = np.argmax(index._vectors[: index._count] @ base.T, axis=1)
            key = query.tobytes()
            if memo.get("key") != key:
                best = np.full(len(base), -1.0, np.float32)
                np.maximum.at(best, owner, pieces @ query)
                memo.update(key=key, best=best)
            w = memo["best"][index._doc_of_row[rows]]
            return (s + lam * np.maximum(0, w - s)).astype(np.float32)
        return score

    VectorIndex._scores, VectorIndex._scores_of = adjusted(scores), adjusted(scores_of)
    try:
        return run()
    finally:
        VectorIndex._scores, VectorIndex._scores_of = scores, scores_of


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("collections", nargs="+")
    parser.add_argument("--windows", default="128,256")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/lt"))
    parser.add_argument("--queries", type=int, default=0, help="first N queries only (0: all)")
    parser.add_argument("--hybrid", help="comma-separated lam values: run kenning's semantic and hybrid with windows")
    args = parser.parse_args()
    encoder = embeddings.require()
    from kenning.retrieval.onnx_encoder import load_tokenizer
    tokenizer = load_tokenizer(encoder.spec.path)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    for name in args.collections:
        data = load_dataset(name if name in ("builtin", "memval") else Path("/work/shared/eval-data") / name)
        if args.queries:
            data = data.limit_queries(args.queries)
        ids = list(data.documents)
        texts = [data.documents[i].content for i in ids]
        qids = [q for q in data.queries if data.is_answerable(q)]
        qv = encode_cached(encoder, [data.queries[q].text for q in qids], args.cache / f"{name}-q{len(qids)}.npy")
        base = encode_cached(encoder, texts, args.cache / f"{name}-trunc.npy")

        def score(matrix_scores: np.ndarray) -> dict:
            run = {q: [ids[j] for j in np.argsort(-matrix_scores[i], kind="stable")[:100]] for i, q in enumerate(qids)}
            m = evaluate(data.qrels, run, qids)
            return {"nDCG@10": round(m["nDCG@10"], 4), "R@10": round(m["R@10"], 4), "R@100": round(m["R@100"], 4)}

        if args.hybrid:
            made = args.cache / f"{name}-w128.npy"
            if not made.exists():
                sys.exit(f"{made}: run once without --hybrid first (with 128 among --windows)")
            pieces = np.load(made)
            owner = np.array([j for j, text in enumerate(texts) for _ in windows(tokenizer, text, 128)])
            for lam in (float(x) for x in args.hybrid.split(",")):
                report = with_windows(base, pieces, owner, lam, lambda: run_eval(
                    data, modes=["semantic", "hybrid"], progress=False, limit_queries=400 if "scifact" in name else None))
                print(name, "lam", lam, {m: (round(v["nDCG@10"], 4), round(v["R@10"], 4))
                                         for m, v in report["modes"].items()}, flush=True)
            continue
        print(name, "truncated", score(qv @ base.T), flush=True)
        for size in [int(w) for w in args.windows.split(",")]:
            pieces, owner = [], []
            for j, text in enumerate(texts):
                for piece in windows(tokenizer, text, size):
                    pieces.append(piece)
                    owner.append(j)
            owner = np.array(owner)
            pv = encode_cached(encoder, pieces, args.cache / f"{name}-w{size}.npy")
            mean = np.zeros_like(base)
            np.add.at(mean, owner, pv)
            mean /= np.linalg.norm(mean, axis=1, keepdims=True)
            sims = qv @ pv.T
            best = np.full((len(qids), len(ids)), -1.0, dtype=np.float32)
            np.maximum.at(best.T, owner, sims.T)
            first = np.zeros(len(pieces), bool)
            first[np.r_[0, np.flatnonzero(np.diff(owner)) + 1]] = True
            # the truncated vector kept, the later windows averaged in with it
            rest = np.zeros_like(base)
            counts = np.bincount(owner, minlength=len(ids)).astype(np.float32)
            np.add.at(rest, owner[~first], pv[~first])
            blend = base + rest
            blend /= np.linalg.norm(blend, axis=1, keepdims=True)
            print(f"{name} w{size} ({len(pieces)} pieces, {(counts > 1).mean():.0%} split)",
                  "mean", score(qv @ mean.T), "max", score(best), "trunc+rest", score(qv @ blend.T), flush=True)


if __name__ == "__main__":
    main()
