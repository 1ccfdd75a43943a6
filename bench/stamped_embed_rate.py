"""What embedding a memory that opens with a timestamp costs (retrieval/stamps.py: it is encoded
twice, its text without the stamp for the index and whole for the label): LoCoMo turns embedded as
stored ("1:56 pm on 8 May, 2023. Caroline: ...") against the same turns without their stamps, each
set into a fresh store, ``embed_pending`` timed with the encoder loaded. Medians over ``--repeats``.

    KENNING_EVAL_DATA=../shared/eval-data python bench/stamped_embed_rate.py --turns 300

Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import kenning
from kenning.retrieval import stamps


def turns(n: int) -> list[str]:
    corpus = Path(os.environ.get("KENNING_EVAL_DATA", "../shared/eval-data")) / "locomo-dev" / "corpus.jsonl"
    with corpus.open(encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(n), f)]
    return [f"{d['title']}. {d['text']}" for d in docs]  # as the eval harness stores a titled text


def rate(texts: list[str]) -> float:
    with tempfile.TemporaryDirectory() as folder, kenning.open_store(Path(folder) / "s") as store:
        store.import_records([{"content": t, "scopes": ["chat"]} for t in texts])
        store.semantic.encoder()
        start = time.perf_counter()
        done = store.semantic.embed_pending()
        return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    stamped = turns(args.turns)
    plain = [stamps.strip(t) for t in stamped]
    print(f"{sum(map(stamps.has_stamp, stamped))} of {len(stamped)} turns open with a stamp")
    rates: dict[str, list[float]] = {"stamped": [], "without stamps": []}
    for _ in range(args.repeats):  # alternating, so a slow spell of the machine touches both
        rates["without stamps"].append(rate(plain))
        rates["stamped"].append(rate(stamped))
    for name, found in rates.items():
        print(f"{name}: {statistics.median(found):.1f} memories/s (runs {', '.join(f'{r:.1f}' for r in found)})")
    print(f"ratio stamped / without: {statistics.median(rates['stamped']) / statistics.median(rates['without stamps']):.2f}")


if __name__ == "__main__":
    main()
