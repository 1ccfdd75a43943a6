"""Load on one HTTP server: concurrent clients sending a mix of searches and writes/updates.

    python bench/bench_http.py --clients 16 --requests 500 --repeats 3 --out bench/results-http.json

Starts ``kenning serve --http`` on a seeded store (``--seed-memories`` from corpus.py), then
``--clients`` threads, each with its own keep-alive connection, send ``--requests`` requests:
``--search-share`` searches (corpus queries), the rest writes (POST /memories, new text) and
updates (PATCH /memories/{id}, new text for a memory the same client wrote). Reports latency p50
and p99 (per kind and overall), throughput, errors (any transport failure or non-2xx answer) and
lost writes: after the run a separate process opens the store and checks that every acknowledged
write exists with the last acknowledged text. The reference, measured in the same run, is the same
mix through the library in this process (16 threads, one Store), so the HTTP cost shows apart.
Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from corpus import Corpus  # noqa: E402
from http_server import http_server  # noqa: E402

import kenning  # noqa: E402
from kenning.memory.gates import run_content_gates  # noqa: E402

WRITE_OFFSET = 1_000_000  # corpus indices for new writes, far from the seeded ones


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]


class Plan:
    """Each client's request sequence, fixed by the seed so HTTP and reference runs match."""

    def __init__(self, corpus: Corpus, clients: int, requests: int, search_share: float, seed: int, run: int):
        queries = corpus.queries(400)
        self.steps: list[list[tuple[str, Any]]] = []
        for client in range(clients):
            rng = random.Random(f"{seed}:{run}:{client}")
            steps = []
            for n in range(requests):
                if rng.random() < search_share:
                    steps.append(("search", rng.choice(queries)))
                else:
                    index = WRITE_OFFSET + (run * clients + client) * requests * 10 + n * 10
                    text = _durable_text(corpus, index, f"load set {run} client {client} item {n} says")
                    # a third of the non-search requests update an earlier write of this client
                    steps.append(("update" if rng.random() < 1 / 3 else "write", text))
            self.steps.append(steps)


def _durable_text(corpus: Corpus, index: int, tag: str) -> str:
    """A corpus memory the content gates accept (some templates read as run-state: 'by friday').

    The unique tag keeps two generated texts from ever being near-duplicates, so every write is
    expected to commit and anything else counts as an error."""
    for attempt in range(10):
        text = f"{tag} {corpus.memory(random.Random(f'{corpus.seed}:{index + attempt}'))}"
        if run_content_gates(text, "fact") is None:
            return text
    raise RuntimeError(f"no gate-clean text near corpus index {index}")


class Ledger:
    """What the server acknowledged: id -> last acknowledged text."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.texts: dict[str, str] = {}

    def ack(self, mid: str, text: str) -> None:
        with self.lock:
            self.texts[mid] = text


def run_http(base: str, plan: Plan, ledger: Ledger) -> dict[str, Any]:
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    errors_lock = threading.Lock()

    def client(steps: list[tuple[str, Any]]) -> None:
        mine: list[str] = []
        with httpx.Client(base_url=base, timeout=120) as http:
            for kind, payload in steps:
                if kind == "update" and not mine:
                    kind = "write"
                started = time.perf_counter()
                try:
                    if kind == "search":
                        response = http.get("/search", params={"q": payload, "limit": 5, "all": "true"})
                    elif kind == "write":
                        response = http.post("/memories", json={"content": payload, "scopes": ["bench:load"]})
                    else:
                        target = mine[len(payload) % len(mine)]
                        response = http.patch(f"/memories/{target}", json={"text": payload})
                    elapsed = time.perf_counter() - started
                except httpx.HTTPError as exc:
                    with errors_lock:
                        errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                    continue
                latencies[kind].append(elapsed)
                if response.status_code >= 300:
                    with errors_lock:
                        errors.append(f"{kind}: {response.status_code} {response.text[:200]}")
                    continue
                if kind == "write":
                    mid = response.json()["id"]
                    mine.append(mid)
                    ledger.ack(mid, payload)
                elif kind == "update":
                    ledger.ack(target, payload)

    return _drive(client, plan, latencies, errors)


def run_library(store_dir: Path, plan: Plan, ledger: Ledger) -> dict[str, Any]:
    """The reference: the same mix through one Store shared by the threads, no HTTP."""
    store = kenning.open_store(store_dir)
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []

    def client(steps: list[tuple[str, Any]]) -> None:
        mine: list[str] = []
        for kind, payload in steps:
            if kind == "update" and not mine:
                kind = "write"
            started = time.perf_counter()
            try:
                if kind == "search":
                    store.search(payload, limit=5, auto_scope=False)
                elif kind == "write":
                    result = store.write(payload, scopes=["bench:load"])
                    if result.status != "committed":
                        raise RuntimeError(f"write {result.status}: {result.reason}")
                    mine.append(result.id)
                    ledger.ack(result.id, payload)
                else:
                    target = mine[len(payload) % len(mine)]
                    store.update(target, text=payload)
                    ledger.ack(target, payload)
            except Exception as exc:  # the reference counts failures like the HTTP run does
                errors.append(f"{kind}: {exc}")
                continue
            latencies[kind].append(time.perf_counter() - started)

    try:
        return _drive(client, plan, latencies, errors)
    finally:
        store.close()


def _drive(client, plan: Plan, latencies: dict[str, list[float]], errors: list[str]) -> dict[str, Any]:
    threads = [threading.Thread(target=client, args=(steps,)) for steps in plan.steps]
    cpu0, started = time.process_time(), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    every = [x for values in latencies.values() for x in values]
    return {
        "wall_s": round(wall, 3),
        "client_process_cpu_s": round(time.process_time() - cpu0, 3),
        "requests": len(every) + len(errors),
        "throughput_rps": round(len(every) / wall, 1),
        "errors": len(errors),
        "error_samples": errors[:5],
        "latency_ms": {
            kind: {"n": len(values), "p50": round(percentile(values, 50) * 1000, 2),
                   "p99": round(percentile(values, 99) * 1000, 2)}
            for kind, values in sorted({**latencies, "all": every}.items())
        },
    }


def lost_writes(store_dir: Path, ledger: Ledger) -> int:
    """Checked by a separate process reading the store file: every acknowledged text must be there."""
    expected = json.dumps(ledger.texts)
    check = (
        "import json, sys, kenning\n"
        "expected = json.loads(sys.stdin.read())\n"
        "store = kenning.open_store(sys.argv[1])\n"
        "lost = 0\n"
        "for mid, text in expected.items():\n"
        "    try:\n"
        "        lost += store.get(mid).content != text\n"
        "    except kenning.NotFound:\n"
        "        lost += 1\n"
        "print(lost)\n"
    )
    out = subprocess.run([sys.executable, "-c", check, str(store_dir)], input=expected, capture_output=True,
                         text=True, check=True)
    return int(out.stdout.strip())


def seed_store(store_dir: Path, corpus: Corpus, n: int, mode: str) -> None:
    store = kenning.open_store(store_dir)
    store.import_records(corpus.records(n))
    store.configure(default_mode=mode)
    store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=500, help="requests per client")
    parser.add_argument("--search-share", type=float, default=0.7)
    parser.add_argument("--seed-memories", type=int, default=2000)
    parser.add_argument("--mode", default="bm25", help="the store's default_mode for searches (hybrid loads the model)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    corpus = Corpus()
    runs: list[dict[str, Any]] = []
    for run in range(args.repeats):
        plan = Plan(corpus, args.clients, args.requests, args.search_share, args.seed, run)
        with tempfile.TemporaryDirectory(prefix="kenning-bench-http-") as tmp:
            row: dict[str, Any] = {"run": run}
            http_dir = Path(tmp) / "http"
            seed_store(http_dir, corpus, args.seed_memories, args.mode)
            ledger = Ledger()
            with http_server(http_dir) as base:
                row["http"] = run_http(base, plan, ledger)
            row["http"]["acknowledged_writes"] = len(ledger.texts)
            row["http"]["lost_writes"] = lost_writes(http_dir, ledger)
            if not args.skip_reference:
                lib_dir = Path(tmp) / "library"
                seed_store(lib_dir, corpus, args.seed_memories, args.mode)
                lib_ledger = Ledger()
                row["library"] = run_library(lib_dir, plan, lib_ledger)
                row["library"]["acknowledged_writes"] = len(lib_ledger.texts)
                row["library"]["lost_writes"] = lost_writes(lib_dir, lib_ledger)
            runs.append(row)
            print(json.dumps(row, indent=1), file=sys.stderr, flush=True)

    def median(path: list[str], surface: str) -> float:
        values = []
        for row in runs:
            node = row.get(surface)
            for key in path:
                node = node[key] if node is not None else None
            if node is not None:
                values.append(node)
        return statistics.median(values) if values else float("nan")

    summary: dict[str, Any] = {}
    for surface in ("http", "library"):
        if surface == "library" and args.skip_reference:
            continue
        summary[surface] = {
            "throughput_rps_median": median(["throughput_rps"], surface),
            "latency_ms_median": {kind: {q: median(["latency_ms", kind, q], surface) for q in ("p50", "p99")}
                                  for kind in ("all", "search", "write", "update")},
            "errors_total": sum(row[surface]["errors"] for row in runs),
            "lost_writes_total": sum(row[surface]["lost_writes"] for row in runs),
            "acknowledged_writes_total": sum(row[surface]["acknowledged_writes"] for row in runs),
        }
    result = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "clients": args.clients, "requests_per_client": args.requests, "search_share": args.search_share,
        "seed_memories": args.seed_memories, "mode": args.mode, "repeats": args.repeats,
        "cpus": os.cpu_count(), "load_average_at_end": os.getloadavg(),
        "summary": summary, "runs": runs,
    }
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
