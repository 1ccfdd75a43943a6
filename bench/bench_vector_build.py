"""What the vector leg's index costs to build, per backend: pgvector's HNSW index and its vector
column (PostgreSQL, server CPU) and hnswlib's graph (SQLite's leg, this process's CPU).

    python bench/bench_vector_build.py --vectors 100000

The PostgreSQL rows are loaded twice, both by COPY: with the bytes alone (``vec`` derived in SQL by
the schema's trigger, the reference) and through the library (``vec`` sent ready made), checked to
give the same column.

The vectors are 384-d unit vectors around 2,000 centres plus noise (bench_backends' shape), stored
as kenning stores them; m and ef_construction are the legs' own. The server's CPU is read from its
processes (parallel build workers included, through the postmaster's reaped children); another
server on the machine is not counted. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

DIM = 384


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((2000, DIM)).astype(np.float32)
    out = centres[np.arange(n) % len(centres)] + rng.standard_normal((n, DIM)).astype(np.float32) * np.float32(0.6 / DIM ** 0.5)
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def _load(db, v: np.ndarray, server_cpu, send_vec: bool) -> dict:
    """The rows in 5,000-row COPYs: through the library (``send_vec``: Connection._copy_in sends
    ``vec`` ready made) or a bare COPY of the bytes alone (the schema's trigger derives ``vec`` in SQL)."""
    t, cpu, server = time.perf_counter(), time.process_time(), server_cpu()
    for start in range(0, len(v), 5000):
        rows = [(i + 1, "bench", "h", v[i].tobytes()) for i in range(start, min(len(v), start + 5000))]
        with db.transaction() as c:
            if send_vec:
                c.executemany("INSERT INTO embeddings(mem, model_id, content_hash, vector) VALUES (?, ?, ?, ?)", rows)
            else:
                with c.raw.cursor().copy("COPY embeddings(mem, model_id, content_hash, vector) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
    return {"wall_s": round(time.perf_counter() - t, 1), "client_cpu_s": round(time.process_time() - cpu, 1),
            "server_cpu_s": round(server_cpu() - server, 1)}


def pgvector(v: np.ndarray, index: bool) -> dict:
    import pgserver

    from kenning.store.postgres.database import PostgresDatabase, scratch_schema
    from kenning.store.postgres.vectors import PgVectors
    from server_cpu import ServerCpu

    pgdata = Path(tempfile.mkdtemp(prefix="kenning-bench-pg-"))
    server = pgserver.get_server(pgdata, cleanup_mode="delete")
    server_cpu = ServerCpu(pgdata)
    out = {}
    try:
        with scratch_schema(server.get_uri(), f"kenning_vb_{uuid.uuid4().hex[:8]}") as location:
            db = PostgresDatabase(location)
            try:
                out["rows_vec_derived_in_sql"] = _load(db, v, server_cpu, send_vec=False)
                sql = db.read(lambda c: c.raw.execute("SELECT vector_send(vec) FROM embeddings ORDER BY mem").fetchall())
                with db.transaction() as c:
                    c.raw.execute("TRUNCATE embeddings")
                out["rows_vec_sent_by_copy"] = _load(db, v, server_cpu, send_vec=True)
                sent = db.read(lambda c: c.raw.execute("SELECT vector_send(vec) FROM embeddings ORDER BY mem").fetchall())
                out["same_vec_both_ways"] = sql == sent
                if index:
                    t, server = time.perf_counter(), server_cpu()
                    assert PgVectors(db)._ensure_index(DIM)
                    out["hnsw_build"] = {"wall_s": round(time.perf_counter() - t, 1),
                                         "server_cpu_s": round(server_cpu() - server, 1)}
            finally:
                db.close()
    finally:
        server.cleanup()
    return out


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
    parser.add_argument("--no-index", action="store_true", help="only load the rows (PostgreSQL): no HNSW build")
    args = parser.parse_args()
    v = vectors(args.vectors)
    report = {"vectors": args.vectors, "dim": DIM, "load_average_at_start": round(os.getloadavg()[0], 1)}
    if "postgresql" in args.backends:
        report["pgvector"] = pgvector(v, index=not args.no_index)
    if "sqlite" in args.backends:
        report["hnswlib"] = hnswlib_build(v)
    report["load_average_at_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
