"""What the one-time upgrade scan costs (``Semantic._adopt_stamps``: a store embedded before the
vector leg read memories without their leading timestamp reads every embedded memory's text once
and queues the stamped ones). A store of ``--memories`` texts, half of them stamped, gets one
placeholder vector each (no model run: the scan reads texts, not vectors), loses the meta key that
records the rule, and the scan is timed. Medians over ``--repeats``.

    python bench/stamp_upgrade_scan.py --memories 100000

Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import kenning
from kenning.store.semantic import STAMPS_META


def texts(n: int) -> list[str]:
    return [f"{i % 28 + 1} May, 2023: note {i} about the garden and the weekly shopping list" if i % 2 else
            f"The service number {i} listens on port {8000 + i % 1000} behind the gateway" for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, kenning.open_store(Path(folder) / "s") as store:
        store.import_records([{"content": t, "scopes": ["bench"]} for t in texts(args.memories)])
        encoder = store.semantic.encoder()
        vector = (np.ones(encoder.dim, np.float32) / np.sqrt(encoder.dim)).tobytes()
        with store.db.transaction() as c:
            c.execute("DELETE FROM embed_queue")
            c.execute("INSERT INTO embeddings(mem, model_id, content_hash, vector) "
                      "SELECT rowid, ?, content_hash, ? FROM memories", (encoder.model_id, vector))
        took, queued = [], 0
        for _ in range(args.repeats):
            with store.db.transaction() as c:
                c.execute("DELETE FROM embed_queue")
                c.execute("DELETE FROM meta WHERE key = ?", (STAMPS_META,))
            start = time.perf_counter()
            store.semantic._adopt_stamps(encoder)
            took.append(time.perf_counter() - start)
            queued = store.semantic.pending_count()
    print(f"{args.memories} memories, {queued} queued: scan {statistics.median(took):.2f} s "
          f"(runs {', '.join(f'{t:.2f}' for t in took)})")


if __name__ == "__main__":
    main()
