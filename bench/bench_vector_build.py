"""What the vector leg's index costs to build, per backend: pgvector's HNSW index and its vector
column (PostgreSQL, server CPU) and hnswlib's graph (SQLite's leg, this process's CPU).

    python bench/bench_vector_build.py --vectors 100000

The vectors are 384-d unit vectors around 2,000 centres plus noise (bench_backends' shape), stored
as kenning stores them; m and ef_construction are the legs' own. The server's CPU is read from its
processes (parallel build workers included, through the postmaster's reaped children). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
import uuid

import numpy as np

DIM = 384


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((2000, DIM)).astype(np.float32)
    out = centres[np.arange(n) % len(centres)] + rng.standard_normal((n, DIM)).astype(np.float32) * np.float32(0.6 / DIM ** 0.5)
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def server_cpu() -> float:
    import psutil

    total = 0.0
    for p in psutil.process_iter(["username"]):
        try:
            if p.info["username"] == "pgserver":
                t = p.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def pgvector(v: np.ndarray) -> dict:
    import pgserver

    from kenning.store.postgres.database import PostgresDatabase, scratch_schema
    from kenning.store.postgres.vectors import PgVectors

    server = pgserver.get_server(tempfile.mkdtemp(prefix="kenning-bench-pg-"), cleanup_mode="delete")
    try:
        with scratch_schema(server.get_uri(), f"kenning_vb_{uuid.uuid4().hex[:8]}") as location:
            db = PostgresDatabase(location)
            try:
                t, cpu = time.perf_counter(), server_cpu()
                for start in range(0, len(v), 5000):
                    with db.transaction() as c:
                        c.executemany("INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (?, ?, ?, ?)",
                                      [(i + 1, "bench", "h", v[i].tobytes()) for i in range(start, min(len(v), start + 5000))])
                load = {"wall_s": round(time.perf_counter() - t, 1), "server_cpu_s": round(server_cpu() - cpu, 1)}
                t, cpu = time.perf_counter(), server_cpu()
                assert PgVectors(db)._ensure_index(DIM)
                build = {"wall_s": round(time.perf_counter() - t, 1), "server_cpu_s": round(server_cpu() - cpu, 1)}
            finally:
                db.close()
    finally:
        server.cleanup()
    return {"rows_with_vector_column": load, "hnsw_build": build}


def hnswlib_build(v: np.ndarray) -> dict:
    import hnswlib

    from kenning.retrieval.vector import HNSW_EF_CONSTRUCTION, HNSW_M

    graph = hnswlib.Index(space="cosine", dim=DIM)
    graph.init_index(max_elements=len(v), M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION)
    before = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    graph.add_items(v, np.arange(len(v)))
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"wall_s": round(time.perf_counter() - t, 1),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=int, default=20_000)
    parser.add_argument("--backends", default="postgresql,sqlite")
    args = parser.parse_args()
    v = vectors(args.vectors)
    report = {"vectors": args.vectors, "dim": DIM, "load_average_at_start": round(os.getloadavg()[0], 1)}
    if "postgresql" in args.backends:
        report["pgvector"] = pgvector(v)
    if "sqlite" in args.backends:
        report["hnswlib"] = hnswlib_build(v)
    report["load_average_at_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
