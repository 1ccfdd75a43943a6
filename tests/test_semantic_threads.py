"""One store shared by threads (a server's tool calls plus its background embedder): no errors, no
memory returned twice, and the vector index in step with the embeddings rows afterwards."""

from __future__ import annotations

import os
import random
import sys
import threading
from pathlib import Path

import pytest

import kenning
from kenning.retrieval.vector import VectorIndex
from kenning.store.semantic import INDEX_FILENAME

pytestmark = [pytest.mark.embeddings, pytest.mark.slow]
if not kenning.embeddings_available():
    pytest.skip("the embeddings extra is not installed", allow_module_level=True)

TOPICS = ["cat", "database", "deploy", "garden", "python", "coffee", "train", "backup", "music", "weather"]


def corpus(n: int, tag: str) -> list[dict]:
    rng = random.Random(tag)
    return [{"content": f"{tag} note {i}: the {rng.choice(TOPICS)} and the {rng.choice(TOPICS)} "
                        f"story number {i} ({rng.randint(0, 10**6)})", "scopes": ["bulk"]} for i in range(n)]


def assert_in_step(store) -> None:
    """Every live memory has one vector row, no removed one has any, and the index holds exactly the rows."""
    rows = store.db.read(lambda c: c.execute(
        "SELECT e.mem, COUNT(*), MAX(CASE WHEN m.removed_at IS NULL THEN 0 ELSE 1 END) FROM embeddings e JOIN memories m ON m.rowid = e.mem "
        "GROUP BY e.mem").fetchall())
    assert all(count == 1 and not removed for _, count, removed in rows), "a memory with two vectors, or a removed one"
    state = store.semantic.index_state()
    if state["generation"] == state["db_generation"]:  # it believes it is current: then it must be
        assert state["index_keys"] == sorted(state["db"]) and state["key_map"] == state["db"]


def test_eight_threads_searching_writing_and_embedding_through_one_store(tmp_path):
    store = kenning.open_store(tmp_path / "s")
    store.import_records(corpus(300, "seed"))  # queued: the embed calls below have work to race over
    errors, duplicates, searches = [], [], [0]
    start = threading.Barrier(8)

    def worker(n: int) -> None:
        rng = random.Random(n)
        start.wait()
        for i in range(30):
            try:
                op = rng.choice(["search", "search", "search", "write", "embed", "update", "remove"])
                if op == "search":
                    hits = store.search(f"the {rng.choice(TOPICS)} story", mode=rng.choice(["hybrid", "semantic"]),
                                        limit=20, auto_scope=False).hits
                    ids = [h.id for h in hits]
                    searches[0] += 1
                    if len(ids) != len(set(ids)):
                        duplicates.append(ids)
                elif op == "write":
                    store.write(f"thread {n} wrote note {i} about the {rng.choice(TOPICS)}", scopes=["t"])
                elif op == "embed":
                    store.semantic.embed_pending(batch=16)
                else:
                    hits = store.search(rng.choice(TOPICS), mode="bm25", limit=5, auto_scope=False).hits
                    if hits and op == "update":
                        store.update(hits[0].id, text=f"rewritten by thread {n} step {i}: {rng.choice(TOPICS)} facts")
                    elif hits:
                        store.remove(hits[-1].id, reason=f"thread {n} cleanup")
            except kenning.KenningError:
                pass  # a refusal or a memory another thread removed: answers, not failures
            except Exception as exc:  # anything else is the defect
                errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and duplicates == [] and searches[0] > 50
    assert_in_step(store)
    store.semantic.embed_pending()
    store.search("the cat story", mode="semantic", auto_scope=False)
    state = store.semantic.index_state()
    assert state["generation"] == state["db_generation"]
    assert state["index_keys"] == sorted(state["db"]) and state["key_map"] == state["db"]
    assert store.semantic.pending_count() == 0
    store.close()


def test_fifty_concurrent_mcp_calls_against_a_server_embedding_in_the_background(tmp_path):
    pytest.importorskip("mcp")
    import anyio
    from anyio.from_thread import start_blocking_portal
    from mcp import ClientSession, StdioServerParameters, stdio_client

    path = tmp_path / "served"
    with kenning.open_store(path) as seed:
        seed.import_records(corpus(400, "seed"))  # a backlog the server's background thread drains
    params = StdioServerParameters(command=sys.executable, args=["-m", "kenning.serve.mcp", "--store", str(path)],
                                   cwd=str(tmp_path), env={**os.environ, "HF_HUB_OFFLINE": "1"})
    rng = random.Random(50)
    calls = []
    for i in range(50):
        if i % 3 == 0:
            calls.append(("memory_write", {"content": f"concurrent note {i} about the {rng.choice(TOPICS)} "
                                                      f"({rng.randint(0, 10**6)})", "scopes": ["mcp"]}))
        else:
            calls.append(("memory_search", {"query": f"the {rng.choice(TOPICS)} story", "max_results": 20,
                                            "auto_scope": False, "mode": rng.choice(["hybrid", "semantic"])}))

    async def fire():
        results = [None] * len(calls)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def one(i, name, arguments):
                results[i] = await session.call_tool(name, arguments)

            async with anyio.create_task_group() as group:
                for i, (name, arguments) in enumerate(calls):
                    group.start_soon(one, i, name, arguments)
        return results

    with start_blocking_portal() as portal:
        results = portal.call(fire)
    failed = [(calls[i][0], " ".join(c.text for c in r.content)) for i, r in enumerate(results) if r.is_error]
    assert failed == []
    searched = [r.structured_content for (name, _), r in zip(calls, results) if name == "memory_search"]
    for answer in searched:
        ids = [h["id"] for h in answer["hits"]]
        assert len(ids) == len(set(ids)), ids
        assert answer["degraded"] is None and isinstance(answer["pending_embeddings"], int)
    wrote = [r.structured_content for (name, _), r in zip(calls, results) if name == "memory_write"]
    committed = sum(w["status"] == "committed" for w in wrote)
    assert committed >= len(wrote) // 2, wrote  # the gates may turn some away; most are plain facts

    # a backend with an index file (SQLite) saved it on the way out: exactly the rows, at the rows' generation
    with kenning.open_store(path) as store:
        if hasattr(store.semantic.vectors, "index_path"):
            model_id = store.db.get_meta("embedding_model")
            generation = int(store.db.get_meta("embeddings_generation"))
            keys = sorted(r[0] for r in store.db.read(lambda c: c.execute("SELECT id FROM embeddings").fetchall()))
            saved = VectorIndex.load(path / INDEX_FILENAME, 384, {"model_id": model_id, "generation": generation})
            assert saved is not None, "the saved index lags the database"
            assert sorted(saved.keys().tolist()) == keys
        assert_in_step(store)
        assert store.count() == 400 + committed
