"""Concurrent clients against one real server: no request fails and every acknowledged write is there.

A small version of bench/bench_http.py (which times it): threads mixing searches, writes and updates
on their own keep-alive connections, then a fresh process-independent read of the store.
"""

from __future__ import annotations

import random
import threading

import httpx
import pytest
from http_server import http_server

import kenning

pytestmark = pytest.mark.slow

CLIENTS, REQUESTS = 16, 40
WORDS = "auth billing cache queue gateway ledger export scheduler replica index shard token".split()


def test_concurrent_searches_and_writes_fail_nothing_and_lose_nothing(tmp_path):
    path = tmp_path / "store"
    seeded = kenning.open_store(path)
    seeded.import_records([{"content": f"The {a} service talks to the {b} service on port {8000 + i}"}
                           for i, (a, b) in enumerate(zip(WORDS * 20, WORDS[3:] * 20 + WORDS[:3] * 20))])
    seeded.configure(default_mode="bm25")
    seeded.close()
    acknowledged: dict[str, str] = {}
    failures: list[str] = []
    lock = threading.Lock()

    def client(number: int, base: str) -> None:
        rng = random.Random(number)
        mine: list[str] = []
        with httpx.Client(base_url=base, timeout=120) as http:
            for n in range(REQUESTS):
                roll = rng.random()
                text = f"Client {number} note {n}: the {rng.choice(WORDS)} service uses port {rng.randrange(10**6)}"
                if roll < 0.7:
                    response = http.get("/search", params={"q": " ".join(rng.sample(WORDS, 2)), "all": "true"})
                elif roll < 0.9 or not mine:
                    response = http.post("/memories", json={"content": text, "scopes": [f"client:{number}"]})
                    if response.status_code == 201:
                        mine.append(response.json()["id"])
                        with lock:
                            acknowledged[mine[-1]] = text
                else:
                    target = rng.choice(mine)
                    response = http.patch(f"/memories/{target}", json={"text": text})
                    if response.status_code == 200:
                        with lock:
                            acknowledged[target] = text
                if response.status_code >= 300:
                    with lock:
                        failures.append(f"{response.request.method} {response.status_code} {response.text[:200]}")

    with http_server(path) as base:
        threads = [threading.Thread(target=client, args=(i, base)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []
    assert len(acknowledged) > CLIENTS * 5
    with kenning.open_store(path) as store:
        assert {mid: store.get(mid).content for mid in acknowledged} == acknowledged


def test_the_app_lets_one_library_call_run_at_a_time():
    """Routes run on a thread pool; the Store's in-memory index caches must not change under a
    running search (bench_http.py once saw KeyError from the lexicon cache), so calls queue."""
    import time

    from kenning.serve.http.app import Serialised

    class Probe:
        running = peak = 0
        setting = "value"

        def call(self) -> None:
            Probe.running += 1
            Probe.peak = max(Probe.peak, Probe.running)
            time.sleep(0.01)
            Probe.running -= 1

    wrapped = Serialised(Probe())
    threads = [threading.Thread(target=lambda: [wrapped.call() for _ in range(5)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Probe.peak == 1 and wrapped.setting == "value"
