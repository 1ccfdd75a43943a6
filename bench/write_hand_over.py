"""`memory_write` over MCP when the server hands a write's encode to its background embedder, against
a tree that encodes inline: the write's reply, the server's CPU for it, and a write followed at once
by a search (read-your-writes: the search must find the memory with its vector in place).

    python bench/write_hand_over.py STORE --tree before=/tmp/before --tree after=/tmp/after --rounds 2 --calls 100

``--tree`` is a folder holding a ``kenning`` package, put first on PYTHONPATH of the spawned server
(and of nothing else); trees alternate round by round. STORE is copied per server (a 1k store from
``bench_encoder.build_store``). Three patterns, each ``--calls`` times, medians:

- ``burst``: writes back to back (what the issue's "memory_write" row times);
- ``paced``: a write, then 50 ms of nothing (an agent's next call comes seconds later): the write's
  reply, and the server's CPU a write, encode included;
- ``write+search``: a write, then at once a hybrid search for its text's first words: both calls,
  whether the search reported any pending embedding, and whether the new memory came first.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import Corpus  # noqa: E402
from mcp_roundtrip import cpu_of  # noqa: E402


def serve(store: Path, tree: Path | None, texts: list[list[str]]) -> dict:
    import anyio
    import psutil
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    params = StdioServerParameters(command=sys.executable, args=["-m", "kenning.serve.mcp", "--store", str(store)],
                                   cwd=tempfile.gettempdir(), env=env)
    out: dict = {}

    async def write(session, text: str) -> tuple[float, str]:
        t0 = time.perf_counter()
        result = await session.call_tool("memory_write", {"content": text, "scopes": ["bench:hand-over"],
                                                          "acknowledge_transient": True, "force": True})
        assert not result.is_error, result
        return (time.perf_counter() - t0) * 1000, result.structured_content.get("id")

    async def run():
        async with stdio_client(params) as (read, write_stream), ClientSession(read, write_stream) as session:
            await session.initialize()
            server = psutil.Process().children()[0]
            for q in ("warm up", "the encoder and the index"):
                await session.call_tool("memory_search", {"query": q, "mode": "hybrid", "auto_scope": False})
            await anyio.sleep(1.0)
            burst = [(await write(session, t))[0] for t in texts[0]]
            await anyio.sleep(3.0)  # the burst's vectors land before the next pattern
            paced, cpu = [], cpu_of(server)
            for t in texts[1]:
                paced.append((await write(session, t))[0])
                await anyio.sleep(0.05)
            paced_cpu = (cpu_of(server) - cpu) * 1000 / len(texts[1])
            pairs, pending, first = [], 0, 0
            for t in texts[2]:
                wall, memory_id = await write(session, t)
                t0 = time.perf_counter()
                found = await session.call_tool("memory_search", {"query": " ".join(t.split()[:6]), "mode": "hybrid",
                                                                  "auto_scope": False, "max_results": 5})
                assert not found.is_error, found
                pairs.append(wall + (time.perf_counter() - t0) * 1000)
                answer = found.structured_content
                pending += bool(answer.get("pending_embeddings"))
                first += bool(answer["hits"]) and answer["hits"][0]["id"] == memory_id
                await anyio.sleep(0.05)
            out.update({
                "burst_write_p50_ms": round(statistics.median(burst), 2),
                "paced_write_p50_ms": round(statistics.median(paced), 2),
                "paced_server_cpu_ms_a_write": round(paced_cpu, 2),
                "write_then_search_p50_ms": round(statistics.median(pairs), 2),
                "searches_reporting_pending": pending, "searches_with_the_write_first": first, "pairs": len(pairs),
            })

    anyio.run(run)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path)
    parser.add_argument("--tree", action="append", default=[], help="name=folder holding a kenning package")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = [(name, Path(folder)) for name, folder in (t.split("=", 1) for t in args.tree)] or [("installed", None)]
    corpus = Corpus()
    results: dict = {name: [] for name, _ in trees}
    for round_no in range(args.rounds):
        for name, tree in trees:
            base = 10**7 + (round_no * len(trees) + len(results[name])) * 10**5 + int(time.time()) % 1000 * 100
            texts = [list(corpus.memories(args.calls, offset=base + k * 10**4)) for k in range(3)]
            with tempfile.TemporaryDirectory() as tmp:
                served = Path(tmp) / "served"
                shutil.copytree(args.store, served)
                row = serve(served, tree, texts)
            row["load_average"] = round(os.getloadavg()[0], 2)
            results[name].append(row)
            print(f"round {round_no + 1} {name}: {json.dumps(row)}", flush=True)
    summary = {name: {key: statistics.median(r[key] for r in rows) for key in rows[0] if key != "load_average"}
               for name, rows in results.items()}
    for name, row in summary.items():
        print(f"{name}: {json.dumps(row)}")
    if args.out:
        args.out.write_text(json.dumps({"store": str(args.store), "calls": args.calls, "rounds": results,
                                        "medians": summary}, indent=2))


if __name__ == "__main__":
    main()
