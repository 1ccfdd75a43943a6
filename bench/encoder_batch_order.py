"""Batches sorted by token count against batches sorted by characters (issue 10), torch in the same
loop: texts per CPU-second of one intra-op thread on 512 corpus memories (bench/corpus.py).

    python bench/encoder_batch_order.py --rounds 3 [--torch]

The ONNX encoder (one intra-op thread, one batch at a time) runs the same 16 batches of 32 in both
orders, alternating which goes first; each batch is timed with ``time.thread_time`` (all of the
work is on the calling thread) and the fastest of the rounds is kept, which holds up on a shared
machine where wall time does not. Also prints the padded-over-real token ratio of each order.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import Corpus  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--torch", action="store_true", help="also sentence-transformers on torch, one thread")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from kenning.retrieval import embeddings, onnx_export
    from kenning.retrieval.onnx_encoder import OnnxEncoder

    spec = embeddings.resolve_model()
    encoder = OnnxEncoder(spec, onnx_export.onnx_file(spec), "batch-order", threads=1, cache_optimized=True)
    texts = list(Corpus().memories(512))
    tokens = encoder._token_counts(texts)

    def batches(key) -> list[list[int]]:
        order = sorted(range(len(texts)), key=key, reverse=True)
        return [order[s : s + 32] for s in range(0, len(order), 32)]

    sides = {"tokens": batches(tokens.__getitem__), "chars": batches(lambda i: len(texts[i]))}
    for side, rows in sides.items():
        padded = sum(max(tokens[i] for i in b) * len(b) for b in rows)
        print(f"{side}: padded / real tokens {padded / sum(tokens):.3f}")
    best = {side: [float("inf")] * len(rows) for side, rows in sides.items()}
    torch_best = [float("inf")] * len(sides["chars"])
    run_torch = None
    if args.torch:
        import torch

        from kenning.retrieval.torch_encoder import TorchEncoder

        torch.set_num_threads(1)
        reference = TorchEncoder(spec)
        reference.encode(texts[:32], batch_size=32)
        run_torch = lambda rows: reference.encode([texts[i] for i in rows], batch_size=32)  # noqa: E731
    for round_ in range(args.rounds):
        for b in range(len(best["tokens"])):
            for side in (("tokens", "chars") if (round_ + b) % 2 == 0 else ("chars", "tokens")):
                t0 = time.thread_time()
                encoder._encode_batch([texts[i] for i in sides[side][b]])
                best[side][b] = min(best[side][b], time.thread_time() - t0)
            if run_torch is not None:  # sentence-transformers sorts by characters itself
                t0 = time.thread_time()
                run_torch(sides["chars"][b])
                torch_best[b] = min(torch_best[b], time.thread_time() - t0)
    for side, times in best.items():
        print(f"onnx, batches by {side}: {len(texts) / sum(times):.1f} texts per CPU-second")
    if run_torch is not None:
        print(f"torch, its own order: {len(texts) / sum(torch_best):.1f} texts per CPU-second")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
