"""Round trips to PostgreSQL a search makes, with its wall time and client and server CPU.

A round trip is one exchange with the server (psycopg's ``Connection.wait``: a statement, BEGIN,
COMMIT, a COPY). Run from the repository root; ``build`` starts a pgserver PostgreSQL in a folder
it keeps and makes identical stores in the databases named (so one build serves the code before a
change and after it: a store a newer schema has upgraded is refused by the older code), ``measure``
times searches on one of them with whichever kenning is on PYTHONPATH:

    python bench/pg_round_trips.py build --pgdata /tmp/kenning-bench-pg-trips --databases before,after
    PYTHONPATH=<old tree's pkg> python bench/pg_round_trips.py measure --pgdata ... --database before
    PYTHONPATH=<new tree's pkg> python bench/pg_round_trips.py measure --pgdata ... --database after
    python bench/pg_round_trips.py stop --pgdata ...     # stops the server and deletes the folder

The store: ``--memories`` corpus memories with a vector each (``--encode`` embedded for real, the
rest copies plus noise, as bench_backends.py), more than the vector leg's exact-search threshold,
and ``--messages`` transcript messages of which half have a vector (what the transcript search's
``pending_embeddings`` counts). Per mode: round trips a search (median and mean: the session's
event batch commits now and then), wall p50, client and server CPU a search; and the pending count
alone. Medians over ``--repeats`` passes. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402
from server_cpu import ServerCpu  # noqa: E402

import numpy as np  # noqa: E402

import kenning  # noqa: E402

MODES = ("bm25", "semantic", "hybrid")


class Trips:
    """Counts round trips: psycopg runs every exchange with the server as a generator through
    Connection.wait, and one that waits on the socket at least once went to the server (a commit
    on an idle autocommit connection, say when the pool takes it back, does not)."""

    def __init__(self):
        import psycopg

        self.n = 0
        original = psycopg.Connection.wait

        def watched(gen):
            try:
                state = gen.send(None)
            except StopIteration as done:
                return done.value
            self.n += 1
            while True:
                ready = yield state
                try:
                    state = gen.send(ready)
                except StopIteration as done:
                    return done.value

        def counted(conn, gen, *args, **kwargs):
            return original(conn, watched(gen), *args, **kwargs)

        psycopg.Connection.wait = counted


def _server(pgdata: Path):
    import pgserver

    return pgserver.get_server(pgdata, cleanup_mode=None)


def _url(server, database: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(server.get_uri())._replace(path="/" + database))


def build(args) -> None:
    import psycopg

    from bench_backends import build as build_store

    server = _server(args.pgdata)
    corpus = Corpus()
    for database in args.databases.split(","):
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {database}")
        url = _url(server, database)
        row = build_store(url, corpus, args.memories, True, args.encode, 50_000, ServerCpu(args.pgdata))
        _messages(url, args.messages)
        print(database, json.dumps(row), flush=True)


def _messages(url: str, n: int) -> None:
    """``n`` transcript messages in one ledger, the even ones with a (random) vector of the store's model."""
    with kenning.open_store(url) as store:
        model = store.semantic.encoder().model_id
        dim = store.semantic.encoder().dim
        rng = np.random.default_rng(0)
        with store.db.transaction() as c:
            c.execute("INSERT INTO transcript_sources(id, path, project, added) VALUES (1, '/bench', 'bench', '2026')")
            c.execute("INSERT INTO transcript_ledgers(id, source, path, format, size, mtime_ns, offset, head, tail) "
                      "VALUES (1, 1, '/bench/a.jsonl', 'claude', 0, 0, 0, '', '')")
            c.executemany("INSERT INTO transcript_messages(rowid, ledger, line, at, speaker, text) VALUES (?, 1, ?, ?, 'user', ?)",
                          [(i, i, float(i), f"message {i}") for i in range(1, n + 1)])
            vectors = rng.standard_normal((n // 2, dim)).astype(np.float32)
            c.executemany("INSERT INTO transcript_embeddings(mem, model_id, vector) VALUES (?, ?, ?)",
                          [(2 * i + 2, model, v.tobytes()) for i, v in enumerate(vectors)])


def _timed(fn, queries, trips: Trips, server_cpu: ServerCpu) -> dict:
    counts, walls = [], []
    cpu0, server0 = time.process_time(), server_cpu()
    for q in queries:
        before = trips.n
        t0 = time.perf_counter()
        fn(q)
        walls.append(time.perf_counter() - t0)
        counts.append(trips.n - before)
    return {"round_trips_median": statistics.median(counts), "round_trips_mean": round(statistics.mean(counts), 2),
            "wall_p50_ms": round(statistics.median(walls) * 1000, 2),
            "client_cpu_ms": round((time.process_time() - cpu0) / len(queries) * 1000, 2),
            "server_cpu_ms": round((server_cpu() - server0) / len(queries) * 1000, 2)}


def measure(args) -> None:
    server = _server(args.pgdata)
    url = _url(server, args.database)
    server_cpu = ServerCpu(args.pgdata)
    trips = Trips()
    queries = Corpus().queries(args.queries, corpus_size=args.memories)
    runs: dict[str, list[dict]] = {}
    with kenning.open_store(url) as store:
        from kenning.recall.transcript_vectors import TranscriptVectors

        vectors = TranscriptVectors(store.db, store.semantic)  # what a transcript search counts pending with
        for mode in MODES:
            store.search(queries[0], mode=mode)  # warm: the lexicon, the encoder
        for _ in range(args.repeats):
            for mode in MODES:
                runs.setdefault(mode, []).append(_timed(lambda q: store.search(q, mode=mode, limit=10), queries, trips, server_cpu))
            runs.setdefault("transcript_pending_count", []).append(
                _timed(lambda q: vectors.pending(), queries, trips, server_cpu))
    out = {"code": kenning.__file__, "database": args.database, "memories": args.memories, "queries": len(queries),
           "repeats": args.repeats, "load_average": round(os.getloadavg()[0], 1),
           **{k: {m: round(statistics.median(r[m] for r in v), 2) for m in v[0]} for k, v in runs.items()}}
    print(json.dumps(out, indent=1))
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(out) + "\n")


def stop(args) -> None:
    server = _server(args.pgdata)
    server.cleanup_mode = "stop"
    server.cleanup()
    shutil.rmtree(args.pgdata, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("build", "measure", "stop"))
    parser.add_argument("--pgdata", type=Path, required=True, help="the pgserver folder (kept between steps)")
    parser.add_argument("--databases", default="before,after", help="build: the databases to fill alike")
    parser.add_argument("--database", default="before", help="measure: the database to search")
    parser.add_argument("--memories", type=int, default=12_000)
    parser.add_argument("--encode", type=int, default=300)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="measure: append the figures to this JSON-lines file")
    args = parser.parse_args()
    {"build": build, "measure": measure, "stop": stop}[args.step](args)


if __name__ == "__main__":
    main()
