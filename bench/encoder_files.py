"""Query, one-memory and batch encode time of ONNX files against the shipped graph and torch, in one
process (issue 10): for trying a quantised or rewritten graph before it becomes a recipe.

    KENNING_CACHE_DIR=/work/wt/cache nice python bench/encoder_files.py fp32,q8,/tmp/all.onnx,torch --rounds 2

``fp32`` is the shipped float graph (its optimised copy, as the runtime loads it), ``q8`` the onnx-q8
file, ``torch`` sentence-transformers; anything else is a path to an ONNX file of the same model.
Per round and encoder: p50 wall (CPU) ms of 60 queries one at a time and of 40 synthetic memories
(~60 tokens) one at a time, then one batch of 256 memories as texts per second and per CPU-second.
Rounds alternate the encoders, so each sees the same load; the load average is printed on each row.
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


def p50(call, items) -> tuple[float, float]:
    wall, cpu = [], []
    for item in items:
        c0, t0 = time.process_time(), time.perf_counter()
        call(item)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def load(name: str, spec):
    from kenning.retrieval import onnx_export
    from kenning.retrieval.onnx_encoder import OnnxEncoder

    if name == "torch":
        from kenning.retrieval.torch_encoder import TorchEncoder

        return TorchEncoder(spec)
    if name in ("fp32", "q8"):
        path = onnx_export.ensure(spec, "onnx" if name == "fp32" else "onnx-q8")
        return OnnxEncoder(spec, path, model_id=f"timing-{name}", cache_optimized=True)
    return OnnxEncoder(spec, Path(name), model_id=f"timing-{Path(name).stem}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("encoders", help="comma-separated: fp32, q8, torch or ONNX file paths")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from kenning.retrieval import embeddings

    spec = embeddings.resolve_model()
    corpus = Corpus()
    queries = corpus.queries(60, corpus_size=1000)
    memories = list(corpus.memories(40, offset=10**7))
    batch = list(corpus.memories(args.batch, offset=2 * 10**7))
    encoders = {name: load(name, spec) for name in args.encoders.split(",")}
    for _ in range(args.rounds):
        for name, encoder in encoders.items():
            encoder.encode_query(queries[0])
            encoder.encode([memories[0]])
            query = p50(encoder.encode_query, queries)
            memory = p50(lambda text: encoder.encode([text]), memories)
            c0, t0 = time.process_time(), time.perf_counter()
            encoder.encode(batch)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            print(f"{Path(name).stem[:20]:20} query {query[0]:6.2f} ({query[1]:5.2f}) ms  memory {memory[0]:6.2f} "
                  f"({memory[1]:5.2f}) ms  batch {len(batch) / wall:6.1f}/s {len(batch) / cpu:6.1f}/CPU-s  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
