"""Which int8 dynamic quantisation of the fused ONNX graph, if any, keeps the issue's bar.

The bar (issue 10): int8 is offered only if nDCG@10 of the semantic and hybrid modes stays within
0.01 of sentence-transformers on torch on every development collection. Each recipe below quantises
some of the fused graph's weight matrices (onnxruntime ``quantize_dynamic``) and leaves the rest in
float; for each one this measures, with torch computed in the same run:

1. cosine to torch over the same 1,000 texts ``encoder_parity.py`` uses;
2. nDCG@10 per collection and mode through the eval harness (``Store.rank``, as `kenning eval run`).

The recipe's encoder is put in the encoder registry under the onnx-q8 backend with a model id of
its own, so its vectors never mix with another recipe's in the embedding cache (--work/cache).
torch vectors come from, and go to, the shared cache ($KENNING_CACHE_DIR).

    KENNING_CACHE_DIR=/work/wt/cache nice python bench/int8_recipes.py ../shared/eval-data \\
        --recipes all,no-ffn-out --collections builtin,med --out bench/results-encoder-int8.json

Results accumulate in --work/results.json (a re-run only measures what is missing). Each recipe also
gets its encode rate over the texts (per CPU-second) and how far a text encoded alone is from the same
text encoded in its batch; ``--recipes fp32,...`` adds the float file as the same-run reference and
``--collections none`` skips the nDCG runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from encoder_parity import GROUP_SEP, collections, sample_texts  # noqa: E402

LAYERS = 6
ALONE = 100  # texts also encoded one at a time, to measure how much a vector depends on its batch


def _attention(layers):
    return [f"Attention_{i}" for i in layers]


def _mm(kind, layers):
    path = {"attn-out": "attention/output/dense", "ffn-in": "intermediate/dense", "ffn-out": "output/dense"}[kind]
    return [f"/model/model.0/encoder/layer.{i}/{path}/MatMul" for i in layers]


ALL = range(LAYERS)
# name -> (quantize_dynamic keyword arguments, nodes left in float)
RECIPES: dict[str, tuple[dict, list[str]]] = {
    "all": ({"op_types_to_quantize": ["MatMul", "Attention"]}, []),
    "matmul-only": ({"op_types_to_quantize": ["MatMul"]}, []),
    "no-ffn-out": ({"op_types_to_quantize": ["MatMul", "Attention"]}, _mm("ffn-out", ALL)),
    "no-attn-out": ({"op_types_to_quantize": ["MatMul", "Attention"]}, _mm("attn-out", ALL)),
    "no-last": ({"op_types_to_quantize": ["MatMul", "Attention"]},
                _attention([5]) + _mm("attn-out", [5]) + _mm("ffn-in", [5]) + _mm("ffn-out", [5])),
    "no-first": ({"op_types_to_quantize": ["MatMul", "Attention"]},
                 _attention([0]) + _mm("attn-out", [0]) + _mm("ffn-in", [0]) + _mm("ffn-out", [0])),
    "ffn-in-only": ({"op_types_to_quantize": ["MatMul"]}, _mm("attn-out", ALL) + _mm("ffn-out", ALL)),
    "attn-only": ({"op_types_to_quantize": ["Attention"]}, []),
    "ffn-only": ({"op_types_to_quantize": ["MatMul"]}, _mm("attn-out", ALL)),
    "reduce-range": ({"op_types_to_quantize": ["MatMul", "Attention"], "reduce_range": True}, []),
    "no-ffn-out-reduce": ({"op_types_to_quantize": ["MatMul", "Attention"], "reduce_range": True},
                          _mm("ffn-out", ALL)),
}


# Weight-only 8-bit blocks (MatMulNBits, 32 weights a scale) with int8 compute (accuracy_level 4):
# activations are quantised per block of 32 along K, not per tensor. Needs the onnx_ir package.
NBITS = {"nbits8-b32": 32, "nbits8-b128": 128}

# Activations quantised per row x weights per column through MatMulInteger (retrieval/onnx_rowwise.py,
# the onnx-rows8 encoder): name -> regex of the MatMul names left float.
ROWWISE = {"rowwise": None, "rowwise-no-ffn-out": r"layer\.\d+/output/dense"}


def build(recipe: str, source: Path, folder: Path) -> Path:
    """The recipe's quantised file (built once; per-channel int8 weights, uint8 activations);
    ``fp32`` is the float file itself, the same-run reference for speed and batch dependence."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if recipe == "fp32":
        return source
    target = folder / f"{recipe}.onnx"
    if recipe in ROWWISE and not target.is_file():
        partial = folder / f".{recipe}.partial.onnx"
        from kenning.retrieval.onnx_rowwise import rewrite

        rewrite(source, partial, ROWWISE[recipe])
        os.replace(partial, target)
    if recipe in NBITS and not target.is_file():
        import onnx
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        quantizer = MatMulNBitsQuantizer(onnx.load(str(source)), bits=8, block_size=NBITS[recipe],
                                         is_symmetric=True, accuracy_level=4)
        quantizer.process()
        quantizer.model.save_model_to_file(str(target), False)
    if not target.is_file():
        kwargs, exclude = RECIPES[recipe]
        partial = folder / f".{recipe}.partial.onnx"
        quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_exclude=exclude, extra_options={"DefaultTensorType": 1}, **kwargs)
        os.replace(partial, target)
    return target


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:10]


def torch_vectors(spec, texts, shared_cache: Path) -> np.ndarray:
    from kenning.retrieval.embedding_cache import EmbeddingCache, embed_with_cache

    class Lazy:  # loads torch only when the shared cache misses a text
        model_id, dim, _enc = spec.model_id, 384, None

        def encode(self, chunk, batch_size=16, progress=None):
            if self._enc is None:
                from kenning.retrieval.torch_encoder import TorchEncoder

                self._enc = TorchEncoder(spec)
            return self._enc.encode(chunk, batch_size=batch_size, progress=progress)

    with EmbeddingCache(shared_cache / "embeddings.sqlite") as cache:
        return embed_with_cache(Lazy(), texts, cache)


def ndcg(name: str, target: str, encoder, cache_dir: Path, modes: str) -> dict:
    """nDCG@10 per mode with ``encoder`` serving the onnx-q8 backend (or torch when None)."""
    from kenning.eval.harness import run_eval
    from kenning.retrieval import embeddings

    spec = embeddings.resolve_model()
    backend = "torch" if encoder is None else "onnx-q8"
    os.environ["KENNING_ENCODER"] = backend
    os.environ["KENNING_CACHE_DIR"] = str(cache_dir)
    if encoder is not None:
        embeddings._encoders[embeddings.encoder_id(spec, backend)] = encoder
    report = run_eval(target, modes=modes, group_sep=GROUP_SEP.get(name), progress=False)
    # a backend that did not load answers lexically: its figures would be the lexical leg's, not the recipe's
    assert embeddings.probe().working, f"the {backend} encoder did not run: {embeddings.probe().cause}"
    return {mode: row["nDCG@10"] for mode, row in report["modes"].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--recipes", default=",".join([*RECIPES, *NBITS, *ROWWISE]))
    parser.add_argument("--collections", default="builtin")
    parser.add_argument("--modes", default="semantic,hybrid")
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=Path("int8-runs"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    from kenning.retrieval import embeddings, onnx_export
    from kenning.retrieval.onnx_encoder import OnnxEncoder

    shared = onnx_export.cache_root()
    spec = embeddings.resolve_model()
    source = onnx_export.ensure(spec, "onnx")
    args.work.mkdir(parents=True, exist_ok=True)
    own_cache = (args.work / "cache").resolve()
    own_cache.mkdir(exist_ok=True)
    results_file = args.work / "results.json"
    results = json.loads(results_file.read_text()) if results_file.is_file() else {}
    texts = sample_texts(args.data_dir, args.texts)
    reference = torch_vectors(spec, texts, shared)
    wanted = [c for c in collections(args.data_dir, None) if c[0] in args.collections.split(",")]
    for name, target in wanted:  # torch's own row, once per collection
        if name not in results.get("torch", {}).get("ndcg", {}):
            results.setdefault("torch", {}).setdefault("ndcg", {})[name] = ndcg(name, target, None, shared, args.modes)
            results_file.write_text(json.dumps(results, indent=1))
    for recipe in args.recipes.split(","):
        path = build(recipe, source, args.work)
        row = results.setdefault(recipe, {})
        digest = file_digest(path)
        if row.get("file") != digest:
            row.clear()
            row["file"] = digest
        encoder = OnnxEncoder(spec, path, model_id=f"{spec.model_id}@int8-trial.{recipe}.{digest}")
        if "cosine" not in row or "alone_vs_batch" not in row:
            started = time.process_time()
            vectors = encoder.encode(texts)
            row["per_cpu_s"] = len(texts) / (time.process_time() - started)
            cos = np.sum(reference * vectors, axis=1)
            row["cosine"] = {"min": float(cos.min()), "p01": float(np.quantile(cos, 0.01)),
                             "median": float(np.median(cos)), "below_0.99": int((cos < 0.99).sum())}
            row["bytes"] = path.stat().st_size
            # per-tensor activation scales span the whole batch: a text's vector then depends on its
            # batch-mates. Cosine between a text encoded alone and the same text in its batch of 32:
            alone = np.stack([encoder.encode_query(t) for t in texts[:ALONE]])
            same = np.sum(alone * vectors[:ALONE], axis=1)
            row["alone_vs_batch"] = {"min": float(same.min()), "median": float(np.median(same))}
        for name, target in wanted:
            if name not in row.setdefault("ndcg", {}):
                started = time.monotonic()
                row["ndcg"][name] = ndcg(name, target, encoder, own_cache, args.modes)
                print(f"{recipe} {name} {row['ndcg'][name]} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
        results_file.write_text(json.dumps(results, indent=1))
        torch_rows = results.get("torch", {}).get("ndcg", {})
        worst = max((abs(row["ndcg"][c][m] - torch_rows[c][m]) for c in row.get("ndcg", {}) if c in torch_rows
                     for m in row["ndcg"][c]), default=None)
        print(f"{recipe:18} cos min {row['cosine']['min']:.4f} median {row['cosine']['median']:.4f} "
              f"alone vs batch min {row['alone_vs_batch']['min']:.4f} {row['per_cpu_s']:.1f} texts/CPU-s "
              f"worst |Δ nDCG@10| {worst}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
