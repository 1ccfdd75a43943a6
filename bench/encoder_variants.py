"""Warm hybrid search and single writes per encoder variant, each on a store it embedded itself:
what `KENNING_ENCODER=onnx-rows8` or `onnx-q8` buys against the default fp32 graph on issue 10's
search and write rows (encoder_ab.py compares code trees on one store, which a variant cannot share:
its model id differs, so the store's vectors would all be pending).

    python bench/encoder_variants.py --variants onnx,onnx-rows8,onnx-q8 --memories 1000 --rounds 3 \\
        --out bench/results-encoder-variants-s17.json

Each variant gets a new store of the same N synthetic memories (bench/corpus.py, `kenning import
--no-gates --embed`). Each round runs one process per variant, in alternating order: 10 warm-up
queries, 60 hybrid searches at limit 5 (p50 wall and CPU, the query's encode included), then 40 new
memories written one at a time with their vectors (p50 of the committed ones). Prints medians over
the rounds. The 8-bit variants must be converted first (`KENNING_ENCODER=onnx-rows8 kenning models
--convert`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from warm_process import measure  # noqa: E402  (bench/ is not a package)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default="onnx,onnx-rows8,onnx-q8", help="KENNING_ENCODER values")
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from corpus import Corpus

    variants = args.variants.split(",")
    base = {**os.environ, "HF_HUB_OFFLINE": "1"}
    results: dict[str, list[dict]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="encoder-variants-") as tmp:
        lines = Path(tmp) / "memories.jsonl"
        lines.write_text("".join(json.dumps({"content": t}) + "\n" for t in Corpus().memories(args.memories)))
        for variant in variants:
            env = {**base, "KENNING_ENCODER": variant, "KENNING_HOME": str(Path(tmp) / variant)}
            subprocess.run([sys.executable, "-m", "kenning", "import", str(lines), "--no-gates", "--embed"],
                           env=env, check=True, capture_output=True)
        for round_no in range(args.rounds):
            for variant in variants if round_no % 2 == 0 else variants[::-1]:
                row = measure(str(Path(tmp) / variant), {**base, "KENNING_ENCODER": variant}, queries=60, warm=10,
                              writes=40, offset=10**7 + 1000 * round_no)
                assert not row["torch_loaded"], f"{variant} loaded torch"
                results[variant].append(row)
                print(f"round {round_no + 1} {variant}: hybrid {row['hybrid']['wall_p50_ms']:.2f} ms "
                      f"({row['hybrid']['cpu_p50_ms']:.2f} CPU), write {row['write']['wall_p50_ms']:.2f} ms "
                      f"({row['write']['cpu_p50_ms']:.2f} CPU)", file=sys.stderr)
    summary = {}
    for variant, rows in results.items():
        summary[variant] = {f"{what}_{kind}_p50_ms": round(statistics.median(r[what][f"{kind}_p50_ms"] for r in rows), 2)
                            for what in ("hybrid", "write") for kind in ("wall", "cpu")}
        summary[variant]["rounds"] = rows
        print(f"{variant:11s} hybrid {summary[variant]['hybrid_wall_p50_ms']:.2f} ms ({summary[variant]['hybrid_cpu_p50_ms']:.2f} CPU)"
              f"  write {summary[variant]['write_wall_p50_ms']:.2f} ms ({summary[variant]['write_cpu_p50_ms']:.2f} CPU)")
    if args.out:
        args.out.write_text(json.dumps({"memories": args.memories, "rounds": args.rounds, "variants": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
