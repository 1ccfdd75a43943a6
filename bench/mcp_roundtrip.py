"""A warm MCP tool call against the same call made in-process: what the protocol adds.

Spawns `python -m kenning.serve.mcp` on a copy of STORE, warms it, then times N `memory_search`
calls (each mode given) and N `memory_write` calls over stdio with the SDK's client, reading the
server's and this client's CPU (psutil) around them; the same searches run in-process on another
copy as the reference. Medians, one JSON line.

    python bench/bench_encoder.py ...   # or bench_encoder.build_store(path, 1000, "onnx")
    python bench/mcp_roundtrip.py /tmp/kenning-bench-encoder/onnx-1000 --calls 200 --modes bm25,hybrid
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


def cpu_of(process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def over_mcp(store: Path, queries: list[str], texts: list[str], modes: list[str]) -> dict:
    import anyio
    import psutil
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "kenning.serve.mcp", "--store", str(store)],
                                   cwd=tempfile.gettempdir(), env=env)
    out: dict = {}

    async def timed(session, server, me, name, calls):
        wall = []
        server_cpu, client_cpu = cpu_of(server), cpu_of(me)
        for arguments in calls:
            t0 = time.perf_counter()
            result = await session.call_tool(name, arguments)
            wall.append((time.perf_counter() - t0) * 1000)
            assert not result.is_error, result
        n = len(calls)
        return {"p50_ms": round(statistics.median(wall), 3), "server_cpu_ms": round((cpu_of(server) - server_cpu) * 1000 / n, 3),
                "client_cpu_ms": round((cpu_of(me) - client_cpu) * 1000 / n, 3)}

    async def run():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            server, me = psutil.Process().children()[0], psutil.Process()
            for mode in modes:
                search = [{"query": q, "mode": mode, "auto_scope": False} for q in queries]
                await timed(session, server, me, "memory_search", search[:10])  # warm: encoder, index, caches
                out[f"memory_search {mode}"] = await timed(session, server, me, "memory_search", search)
            writes = [{"content": t, "scopes": ["bench:mcp"], "acknowledge_transient": True} for t in texts]
            out["memory_write"] = await timed(session, server, me, "memory_write", writes)

    anyio.run(run)
    return out


def in_process(store: Path, queries: list[str], modes: list[str]) -> dict:
    import kenning

    out = {}
    with kenning.open_store(str(store)) as s:
        for mode in modes:
            for q in queries[:10]:
                s.search(q, mode=mode, limit=5, auto_scope=False)
            wall = []
            for q in queries:
                t0 = time.perf_counter()
                s.search(q, mode=mode, limit=5, auto_scope=False)
                wall.append((time.perf_counter() - t0) * 1000)
            out[f"search {mode}"] = {"p50_ms": round(statistics.median(wall), 3)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", type=Path)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--modes", default="bm25,hybrid")
    args = parser.parse_args()
    modes = args.modes.split(",")
    queries = Corpus().queries(args.calls, corpus_size=1000)
    texts = list(Corpus().memories(args.calls, offset=10**7 + int(time.time()) % 10**5 * 1000))
    with tempfile.TemporaryDirectory() as tmp:
        served, local = Path(tmp) / "served", Path(tmp) / "local"
        shutil.copytree(args.store, served)
        shutil.copytree(args.store, local)
        report = {"store": str(args.store), "calls": args.calls, "load_average": list(os.getloadavg()),
                  "mcp": over_mcp(served, queries, texts, modes), "in_process": in_process(local, queries, modes)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
