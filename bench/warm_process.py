"""The process both encoder benchmarks time, written once: it opens a store, warms it with a few
queries, times hybrid searches at limit 5 (the query's encode included), then writes synthetic
memories one at a time, each embedded inline. encoder_ab.py runs it per code tree on one store,
encoder_variants.py per encoder variant on a store each variant embedded itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROCESS = r"""
import json, statistics, sys, time
sys.path.insert(0, {here!r})
from corpus import Corpus
import kenning

def p50(wall, cpu):
    return {{"wall_p50_ms": statistics.median(wall), "cpu_p50_ms": statistics.median(cpu), "n": len(wall)}}

out = {{}}
store = kenning.open_store({store!r})
queries = Corpus().queries({queries}, corpus_size=store.count())
for q in queries[:{warm}]:
    store.search(q, mode="hybrid", limit=5, auto_scope=False)
wall, cpu = [], []
for _ in range({repeats}):
    for q in queries:
        c0, t0 = time.process_time(), time.perf_counter()
        r = store.search(q, mode="hybrid", limit=5, auto_scope=False)
        wall.append((time.perf_counter() - t0) * 1000); cpu.append((time.process_time() - c0) * 1000)
        assert "vector" in r.legs_run and r.pending_embeddings == 0, (r.legs_run, r.pending_embeddings)
out["hybrid"] = p50(wall, cpu)
if {writes}:
    if {write_store!r} != {store!r}:  # a copy made for the writes: opened and warmed like the first
        store.close()
        store = kenning.open_store({write_store!r})
        store.search("warm up", mode="hybrid", auto_scope=False)
    wall, cpu = [], []
    for text in Corpus().memories({writes}, offset={offset}):
        c0, t0 = time.process_time(), time.perf_counter()
        r = store.write(text, scopes=["bench:writes"], acknowledge_transient=True)
        if r.status == "committed":
            wall.append((time.perf_counter() - t0) * 1000); cpu.append((time.process_time() - c0) * 1000)
    assert store.semantic.pending_count() == 0, "a write left its vector pending"
    out["write"] = p50(wall, cpu)
store.close()
out["torch_loaded"] = "torch" in sys.modules
print(json.dumps(out))
"""


def measure(store: str, env: dict, *, queries: int, warm: int, repeats: int = 1, writes: int = 0,
            write_store: str | None = None, offset: int = 10**7, timeout: float = 3600) -> dict:
    """One process's figures: ``{"hybrid": {"wall_p50_ms", "cpu_p50_ms", "n"}, "write": {...} (with
    ``writes``), "torch_loaded": bool}``. ``env`` is the whole environment of the process (a tree on
    its PYTHONPATH, an encoder variant)."""
    code = PROCESS.format(here=str(HERE), store=str(store), queries=queries, warm=warm, repeats=repeats,
                          writes=writes, write_store=str(write_store or store), offset=offset)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/tmp",
                          timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"{store}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
