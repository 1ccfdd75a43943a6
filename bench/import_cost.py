"""CPU and wall time a memory of ``import_records`` (the bulk path ``kenning import --no-gates`` and
bench_scale.py's import row share), on fresh stores, repeated; one JSON line.

    PYTHONPATH=/tmp/before python bench/import_cost.py --n 20000 --repeats 4
    PYTHONPATH=/work/wt/me-pkg python bench/import_cost.py --n 20000 --repeats 4

Run it alternately with two trees on PYTHONPATH to compare them. On a shared machine the minimum of
the CPU column is the least disturbed figure; the median is printed beside it. Records are
bench/corpus.py's (about 40 words each, one shape), batches of 5,000.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None  # type: ignore[assignment]  # a base install

import kenning  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=5000)
    args = parser.parse_args()
    records = Corpus().records(args.n)
    cpu, wall = [], []
    for _ in range(args.repeats):
        folder = Path(tempfile.mkdtemp(prefix="kenning-import-cost-"))
        try:
            store = kenning.open_store(folder)
            c0, t0 = time.process_time(), time.perf_counter()
            store.import_records(records, batch_size=args.batch_size)
            cpu.append((time.process_time() - c0) / args.n * 1e6)
            wall.append((time.perf_counter() - t0) / args.n * 1e6)
            store.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps({"tree": str(Path(kenning.__file__).parent), "n": args.n, "repeats": args.repeats,
                      "cpu_us_min": round(min(cpu), 1), "cpu_us_median": round(statistics.median(cpu), 1),
                      "wall_us_min": round(min(wall), 1), "wall_us_median": round(statistics.median(wall), 1),
                      "per_s_cpu_min": round(1e6 / min(cpu)), "load_at_end": os.getloadavg()}))


if __name__ == "__main__":
    main()
