"""A first use on a fresh model cache (no ONNX conversion yet), two or more code trees alternating:
what a new user's first process costs and how long its first answer takes (issue 10, session 16).

For every run and tree, each in a new empty ``KENNING_CACHE_DIR``:

- **library**: a process writes 50 memories and runs one hybrid search (so it converts the model):
  its peak RSS, whether torch is in its ``sys.modules``, its wall time, the legs the search ran;
- **mcp**: ``python -m kenning.serve.mcp`` spawned, initialized, one ``memory_write`` and one hybrid
  ``memory_search``: seconds to the first answer and its ``degraded`` reason, then the seconds until a
  search runs the vector leg with nothing pending (polled every 0.25 s).

    mkdir -p /tmp/before && git archive 3638e8b --prefix=kenning/ | tar -x -C /tmp/before
    mkdir -p /tmp/after && git archive HEAD --prefix=kenning/ | tar -x -C /tmp/after
    python bench/first_use.py --tree before=/tmp/before --tree after=/tmp/after --runs 2

A tree is a folder holding ``kenning`` (put on PYTHONPATH for the child processes); copy the compiled
``retrieval/_postings*.so`` into an archived tree, or its lexical legs take numpy's path.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

LIBRARY = r"""
import json, resource, sys, tempfile, time
t = time.monotonic()
import kenning
s = kenning.open_store(tempfile.mkdtemp() + "/s")
for i in range(50):
    s.write(f"memory number {i} about the auth service on port {8000 + i}", scopes=["x"])
r = s.search("auth port", mode="hybrid")
print(json.dumps({"legs": r.legs_run, "torch": "torch" in sys.modules, "seconds": time.monotonic() - t,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

MCP = r"""
import json, os, sys, tempfile, time
import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

env = {k: os.environ[k] for k in ("PATH", "HOME", "PYTHONPATH", "KENNING_CACHE_DIR", "HF_HUB_OFFLINE")}
params = StdioServerParameters(command=sys.executable, args=["-m", "kenning.serve.mcp", "--store", tempfile.mkdtemp()],
                               cwd=tempfile.gettempdir(), env=env)
QUERY = {"query": "payment webhook retry", "mode": "hybrid", "auto_scope": False}

async def once():
    t0 = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("memory_write", {"content": "the payments service retries failed webhooks with backoff",
                                                 "scopes": ["ops"]})
        found = (await session.call_tool("memory_search", QUERY)).structured_content
        out = {"first_answer_s": time.perf_counter() - t0, "degraded": (found["degraded"] or {}).get("reason"),
               "first_legs": found["legs_run"]}
        while "vector" not in found["legs_run"] or found["pending_embeddings"]:
            await anyio.sleep(0.25)
            found = (await session.call_tool("memory_search", QUERY)).structured_content
        out["vector_ready_s"] = time.perf_counter() - t0
        print(json.dumps(out))

anyio.run(once)
"""


def child(code: str, tree: str, cache: str) -> dict:
    env = {**os.environ, "PYTHONPATH": tree, "KENNING_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="label=folder holding kenning/ (repeat)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    samples: dict[str, list] = {label: [] for label in trees}
    for run in range(args.runs):
        for label, tree in (trees.items() if run % 2 == 0 else reversed(list(trees.items()))):
            row = {}
            for name, code in (("library", LIBRARY), ("mcp", MCP)):
                cache = tempfile.mkdtemp(prefix="first-use-cache-")
                try:
                    started = time.perf_counter()
                    row[name] = child(code, tree, cache)
                    row[name]["process_s"] = time.perf_counter() - started
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
            samples[label].append(row)
            print(label, json.dumps(row), flush=True)
    summary = {}
    for label, rows in samples.items():
        summary[label] = {
            "library_peak_rss_mb": statistics.median(r["library"]["peak_rss_mb"] for r in rows),
            "library_torch_loaded": [r["library"]["torch"] for r in rows],
            "library_seconds": statistics.median(r["library"]["seconds"] for r in rows),
            "mcp_first_answer_s": statistics.median(r["mcp"]["first_answer_s"] for r in rows),
            "mcp_first_degraded": [r["mcp"]["degraded"] for r in rows],
            "mcp_vector_ready_s": statistics.median(r["mcp"]["vector_ready_s"] for r in rows),
        }
    print(json.dumps(summary, indent=2))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({"runs": samples, "medians": summary}, handle, indent=2)


if __name__ == "__main__":
    main()
