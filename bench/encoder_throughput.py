"""Batch throughput of encoder configurations, torch in the same run: texts per wall second and per
CPU second (process time, all threads), medians of --repeats after one warm-up pass.

A configuration is ``torch[:batch[:threads]]`` (sentence-transformers, which sorts by length too),
``<onnx file or fp32>[@chars]:<batch>:<parallel batches>:<intra-op threads>`` (onnxruntime only;
``@chars``: batches sorted by characters, not tokens), or ``shipped`` (the float encoder as kenning
loads it, ``KENNING_BULK_RUNTIME`` included: with ``openvino``, long encodes on OpenVINO in bfloat16,
retrieval/openvino_bulk.py):

    KENNING_CACHE_DIR=/work/wt/cache nice python bench/encoder_throughput.py short \\
        torch:32,fp32:32:1:1,fp32:32:2:1,fp32:32:1:2,torch:32:2,torch:32 --repeats 3
    KENNING_BULK_RUNTIME=openvino python bench/encoder_throughput.py short \\
        torch:32:2,shipped,fp32:32:1:2,torch:32:2,shipped --repeats 3

``short``: 512 synthetic memories (bench/corpus.py, ~40 words); ``long``: the first 160 scifact
abstracts (~250 tokens). Put torch first and last: on a shared machine the load moves during a run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import Corpus  # noqa: E402

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "eval-data" / "scifact-train" / "corpus.jsonl"


def texts_of(which: str, scifact: Path) -> list[str]:
    if which == "short":
        return list(Corpus().memories(512))
    with open(scifact, encoding="utf-8") as handle:
        rows = [json.loads(line) for _, line in zip(range(160), handle)]
    return [" ".join(filter(None, [r.get("title"), r.get("text")])) for r in rows]


def runner(config: str, spec, texts: list[str]):
    if config.startswith("torch"):
        import torch

        from kenning.retrieval.torch_encoder import TorchEncoder

        parts = config.split(":")
        encoder = TorchEncoder(spec)
        batch = int(parts[1]) if len(parts) > 1 else 32
        threads = int(parts[2]) if len(parts) > 2 else 1

        def run():
            torch.set_num_threads(threads)
            encoder.encode(texts, batch_size=batch)

        return run
    from kenning.retrieval import onnx_export
    from kenning.retrieval.onnx_encoder import OnnxEncoder

    if config == "shipped":
        encoder = OnnxEncoder(spec, onnx_export.onnx_file(spec), model_id="throughput", bulk=True)
        print(f"shipped: long encodes on {encoder.bulk_runtime}", flush=True)
        return lambda: encoder.encode(texts)
    name, batch, workers, threads = config.split(":")
    name, _, order = name.partition("@")
    path = onnx_export.onnx_file(spec) if name == "fp32" else Path(name)
    encoder = OnnxEncoder(spec, path, model_id="throughput", threads=int(threads))
    if order == "chars":  # batches sorted by characters, as before (and as sentence-transformers does)
        encoder._token_counts = lambda texts: [len(t) for t in texts]

    def run():
        os.environ["KENNING_ONNX_BATCH_WORKERS"] = workers
        encoder.encode(texts, batch_size=int(batch))

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("texts", choices=["short", "long"])
    parser.add_argument("configs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--out", type=Path, help="append one JSON line per configuration")
    args = parser.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    from kenning.retrieval import embeddings

    spec = embeddings.resolve_model()
    texts = texts_of(args.texts, args.scifact)
    for config in args.configs.split(","):
        run = runner(config, spec, texts)
        run()
        walls, cpus = [], []
        for _ in range(args.repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            run()
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        row = {"texts": args.texts, "config": config, "per_s": len(texts) / statistics.median(walls),
               "per_cpu_s": len(texts) / statistics.median(cpus), "load": os.getloadavg()[0]}
        print(f"{args.texts} {config:60} {row['per_s']:8.1f}/s wall {row['per_cpu_s']:8.1f}/cpu-s  "
              f"load {row['load']:.1f}", flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
