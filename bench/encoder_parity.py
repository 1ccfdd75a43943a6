"""Parity of the ONNX encoder with sentence-transformers on torch, the reference it was exported from.

Two measures, both with the reference computed in the same run:

1. cosine between ONNX and torch vectors of the same texts (default 1,000 texts drawn from the
   development collections, short and long);
2. nDCG@10 of the semantic and hybrid modes per development collection (the bundled ``builtin``
   and every BEIR folder in the data dir), by running ``kenning eval run`` once per backend
   (``KENNING_ENCODER=torch|onnx``; ``onnx+openvino`` is the float graph with its corpus encoded
   on the OpenVINO bulk runtime, ``KENNING_BULK_RUNTIME=openvino``). torch reads and fills the shared embedding cache
   ($KENNING_CACHE_DIR: its vectors depend only on the model). Each ONNX backend gets an embedding
   cache of its own under --work, sharing only the converted model, so every ONNX vector in the
   table was computed by the graph under test, never read from a run of an earlier export.

    KENNING_CACHE_DIR=/work/wt/cache python bench/encoder_parity.py ../shared/eval-data --out parity.json

The issue's bar: cosine >= 0.999 on every text; nDCG@10 within 0.003 of torch for onnx on every
collection; a quantised model is offered only if it stays within 0.01 everywhere (onnx+openvino:
bfloat16 products, offered by that rule).
``int8_recipes.py`` measures the quantisation recipes the same way (figures in
results-encoder-int8.json): the weight-only 8-bit one is the onnx-q8 backend; no per-tensor int8
recipe passed (results-encoder-parity.json keeps the int8 column of that withdrawn backend).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np

GROUP_SEP = {"locomo-dev": ":"}
BACKENDS = ("onnx", "onnx+openvino", "torch")  # torch last: its vectors are likely cached already


def sample_texts(data_dir: Path, n: int, seed: int = 7) -> list[str]:
    """n texts from the collections' corpora and queries, mixed lengths, reproducible."""
    texts: list[str] = []
    for folder in sorted(p for p in data_dir.iterdir() if (p / "corpus.jsonl").is_file()):
        for name in ("corpus.jsonl", "queries.jsonl"):
            with open(folder / name, encoding="utf-8") as handle:
                for line in handle:
                    row = json.loads(line)
                    text = " ".join(filter(None, [row.get("title"), row.get("text")])).strip()
                    if text:
                        texts.append(text)
    random.Random(seed).shuffle(texts)
    return texts[:n]


def cosine_parity(texts: list[str]) -> dict:
    from kenning.retrieval import embeddings
    from kenning.retrieval.torch_encoder import TorchEncoder

    spec = embeddings.resolve_model()
    reference = TorchEncoder(spec).encode(texts)
    out = {"texts": len(texts)}
    for variant in ("onnx", "onnx+openvino"):
        os.environ["KENNING_BULK_RUNTIME"] = "openvino" if variant.endswith("+openvino") else "onnxruntime"
        encoder = embeddings.get_encoder(spec, "onnx")
        vectors = encoder.encode(texts)
        assert encoder.last_runtime.startswith("openvino" if variant.endswith("+openvino") else "onnxruntime")
        cos = np.sum(reference * vectors, axis=1)
        out[variant] = {"min": float(cos.min()), "p01": float(np.quantile(cos, 0.01)),
                        "median": float(np.median(cos)), "below_0.999": int((cos < 0.999).sum())}
    return out


def collections(data_dir: Path, only: list[str] | None) -> list[tuple[str, str]]:
    """(name, what `kenning eval run` takes) for builtin and each BEIR folder, smallest corpus first."""
    folders = sorted((p for p in data_dir.iterdir() if (p / "corpus.jsonl").is_file()),
                     key=lambda p: (p / "corpus.jsonl").stat().st_size)
    found = [("builtin", "builtin")] + [(p.name, str(p)) for p in folders]
    return [c for c in found if not only or c[0] in only]


def backend_env(backend: str, work: Path) -> dict:
    encoder, _, bulk = backend.partition("+")
    env = {**os.environ, "KENNING_ENCODER": encoder, "KENNING_BULK_RUNTIME": bulk or "onnxruntime", "HF_HUB_OFFLINE": "1"}
    if backend != "torch":
        shared = Path(os.environ.get("KENNING_CACHE_DIR") or _default_cache())
        own = work / f"cache-{backend.replace('+', '-')}"
        own.mkdir(parents=True, exist_ok=True)
        (shared / "onnx").mkdir(parents=True, exist_ok=True)
        if not (own / "onnx").exists():
            (own / "onnx").symlink_to((shared / "onnx").resolve(), target_is_directory=True)
        env["KENNING_CACHE_DIR"] = str(own)
    return env


def _default_cache() -> Path:
    from kenning.retrieval.onnx_export import cache_root

    return cache_root()


def ndcg_runs(data_dir: Path, modes: str, work: Path, backends: list[str], only: list[str] | None) -> None:
    """One `kenning eval run` per collection and backend whose report is not in ``work`` yet."""
    for name, target in collections(data_dir, only):
        for backend in backends:
            report_file = work / f"{name}-{backend}.json"
            if not report_file.is_file():
                command = [sys.executable, "-m", "kenning.cli", "eval", "run", target, "--modes", modes,
                           "--json", "--out", str(report_file)]
                if name in GROUP_SEP:
                    command += ["--group-sep", GROUP_SEP[name]]
                print(f"{name} {backend} ...", file=sys.stderr, flush=True)
                subprocess.run(command, env=backend_env(backend, work), check=True, stdout=subprocess.DEVNULL)


def read_reports(data_dir: Path, work: Path, only: list[str] | None) -> dict:
    results: dict = {}
    for name, _ in collections(data_dir, only):
        for backend in BACKENDS:
            report_file = work / f"{name}-{backend}.json"
            if report_file.is_file():
                report = json.loads(report_file.read_text())
                results.setdefault(name, {})[backend] = {m: r["nDCG@10"] for m, r in report["modes"].items()}
    return results


def print_table(ndcg: dict) -> None:
    others = [b for b in BACKENDS if b != "torch"]
    print(f"{'collection':15} {'mode':9} {'torch':>7} " + " ".join(f"{b:>13} {'Δ':>8}" for b in others))
    for name, rows in ndcg.items():
        for mode, ref in rows.get("torch", {}).items():
            cells = []
            for backend in others:
                value = rows.get(backend, {}).get(mode)
                cells.append(f"{'-':>13} {'-':>8}" if value is None else f"{value:13.4f} {value - ref:+8.4f}")
            print(f"{name:15} {mode:9} {ref:7.4f} " + " ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--modes", default="semantic,hybrid")
    parser.add_argument("--work", type=Path, default=Path("parity-runs"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--skip-ndcg", action="store_true")
    parser.add_argument("--skip-cosine", action="store_true")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="run only these (the table reads every "
                        "report already in --work)")
    parser.add_argument("--collections", help="comma-separated names (builtin, med, ...); default all")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    report = {}
    if not args.skip_cosine:
        report["cosine"] = cosine_parity(sample_texts(args.data_dir, args.texts))
        print(json.dumps(report["cosine"], indent=1), flush=True)
    if not args.skip_ndcg:
        only = args.collections.split(",") if args.collections else None
        ndcg_runs(args.data_dir, args.modes, args.work, args.backends.split(","), only)
        report["ndcg@10"] = read_reports(args.data_dir, args.work, only)
        print_table(report["ndcg@10"])
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
