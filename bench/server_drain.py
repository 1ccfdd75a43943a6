"""How long a server's background embedder takes to drain an unembedded import, per bulk runtime.

A server started on a store imported without ``--embed`` embeds the backlog in its background
thread (store/semantic.py ``_BackgroundEmbedder``). With ``KENNING_BULK_RUNTIME=openvino`` it takes
batches of ``BULK_MIN`` so the backlog runs on the bulk runtime. Each run is its own process, the
runtimes alternate, the model is loaded before the clock starts:

    python bench/server_drain.py --memories 1000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import json, sys, tempfile, time
sys.path.insert(0, {here!r})
from corpus import Corpus
import kenning
texts = list(Corpus().memories({n}))
with tempfile.TemporaryDirectory() as folder:
    store = kenning.open_store(folder + "/store")
    store.import_records([{{"content": t, "scopes": ["bench"]}} for t in texts])
    queued = store.semantic.pending_count()
    store.semantic.warm()
    t0 = time.perf_counter()
    store.semantic.start_background(poll_s=0.05)
    while store.semantic.pending_count():
        time.sleep(0.02)
    print(json.dumps({{"seconds": time.perf_counter() - t0, "queued": queued,
                       "batch": store.semantic.background_batch()}}))
    store.close()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runtimes", default="onnxruntime,openvino")
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {r: [] for r in args.runtimes.split(",")}
    for _ in range(args.rounds):
        for runtime in runs:
            env = {**os.environ, "KENNING_BULK_RUNTIME": runtime, "HF_HUB_OFFLINE": "1"}
            done = subprocess.run([sys.executable, "-c", CHILD.format(here=str(HERE), n=args.memories)],
                                  env=env, capture_output=True, text=True, check=True)
            runs[runtime].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(runtime, runs[runtime][-1], flush=True)
    first = statistics.median(r["seconds"] for r in next(iter(runs.values())))
    for runtime, got in runs.items():
        seconds = statistics.median(r["seconds"] for r in got)
        print(f"{runtime:12} batches of {got[0]['batch']:3}: {got[0]['queued']} memories in {seconds:.2f} s "
              f"({got[0]['queued'] / seconds:.0f}/s), x{first / seconds:.2f}")


if __name__ == "__main__":
    main()
