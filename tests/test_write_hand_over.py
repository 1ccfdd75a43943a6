"""A server's write answers after its commit and hands its text to the background embedder
(Semantic.embed_soon); the server's next search waits for those few vectors, so it still finds the
write by meaning, and never for a burst. Real packaged model, real SQLite file; the encoder is held
on an event so the order of events, not a clock, decides each assertion."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

import kenning
from kenning.store import semantic

pytestmark = [pytest.mark.embeddings]
if not kenning.embeddings_available():
    pytest.skip("the embeddings extra is not installed", allow_module_level=True)

WRITTEN = "Pods restart after three failed liveness probes"
ASKED = "container health check restarts"  # no word in common: only the vector finds it
WORDS = ["billing", "ledger", "search", "upload", "gateway", "mailer", "scheduler", "thumbnail", "invoice", "audit",
         "payroll", "catalog", "checkout", "reporting", "identity", "webhook", "telemetry", "pricing", "inventory",
         "shipping", "calendar", "chat", "export", "import", "backup", "quota", "license", "feedback", "survey",
         "analytics", "routing", "storage", "alerting", "onboarding"]


@pytest.fixture
def served(store):
    """A store running the background embedder with its encoder loaded, and a gate on its encodes."""
    store.write("Nightly database backups are kept for thirty days", scopes=["x"])
    store.semantic.start_background(poll_s=0.2)
    store.semantic.warm()
    encoder = store.semantic.encoder()
    original = encoder.encode
    gate = threading.Event()
    gate.set()
    threads: list[str] = []

    def encode(texts, **kwargs):
        threads.append(threading.current_thread().name)
        gate.wait(120)
        return original(texts, **kwargs)

    encoder.encode = encode
    yield store, gate, threads
    gate.set()
    del encoder.encode


def _in_thread(call):
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", call()), daemon=True)
    thread.start()
    return thread, box


def test_the_write_answers_while_its_text_is_still_being_encoded(served):
    store, gate, threads = served
    gate.clear()  # every encode now waits
    result = store.write(WRITTEN, scopes=["x"])
    assert result.status == "committed"  # answered although its encode cannot have ended
    assert store.get(result.id).content == WRITTEN and store.semantic.pending_count() == 1
    gate.set()
    found = store.search(ASKED, mode="semantic", limit=3, auto_scope=False)
    assert found.hits[0].id == result.id and found.pending_embeddings == 0
    assert threads and set(threads) == {"kenning-embedder"}  # encoded by the background thread, never the writer's


def test_the_next_search_waits_for_the_vector_of_the_write_it_follows(served, monkeypatch):
    store, gate, _ = served
    monkeypatch.setattr(semantic, "FRESH_WAIT_S", 120.0)
    gate.clear()
    written = store.write(WRITTEN, scopes=["x"])
    search, box = _in_thread(lambda: store.search(ASKED, mode="hybrid", limit=3, auto_scope=False))
    search.join(0.5)
    assert search.is_alive()  # held until the vector exists
    gate.set()
    search.join(120)
    found = box["value"]
    assert found.hits[0].id == written.id and found.hits[0].matched_leg != "lexical" and found.pending_embeddings == 0


def test_a_burst_of_writes_is_not_waited_for(served, monkeypatch):
    store, gate, _ = served
    monkeypatch.setattr(semantic, "FRESH_WAIT_S", 120.0)
    gate.clear()
    burst = semantic.FRESH_WAIT_MAX + 1
    for i in range(burst):
        result = store.write(f"The {WORDS[i]} service stores its {WORDS[-1 - i]} settings in region {i}", scopes=["x"])
        assert result.status == "committed", result
    search, box = _in_thread(lambda: store.search("service settings region", mode="hybrid", limit=3, auto_scope=False))
    search.join(60)
    assert not search.is_alive(), "a search waited for a burst of writes' vectors"
    found = box["value"]
    assert found.pending_embeddings >= burst and found.hits  # answered lexically meanwhile, and says what is pending
    gate.set()


def test_a_library_write_still_encodes_its_text_before_it_returns(store):
    store.write("Nightly database backups are kept for thirty days", scopes=["x"])
    result = store.write(WRITTEN, scopes=["x"])
    assert store.semantic.pending_count() == 0  # no background embedder: the caller's own thread encoded it
    assert store.search(ASKED, mode="semantic", limit=3, auto_scope=False).hits[0].id == result.id


def test_a_server_killed_before_the_encode_loses_nothing(tmp_path):
    """The write's queue row commits with it: a process that dies between the answer and the encode
    leaves the memory queued, and the next drain embeds it."""
    path = tmp_path / "s"
    script = textwrap.dedent(f"""
        import os, sys, threading
        import kenning
        store = kenning.open_store({str(path)!r})
        store.write("Nightly database backups are kept for thirty days", scopes=["x"])
        store.semantic.start_background(poll_s=0.2)
        store.semantic.warm()
        encoder = store.semantic.encoder()
        encoder.encode = lambda texts, **kw: threading.Event().wait()  # never ends
        result = store.write({WRITTEN!r}, scopes=["x"])
        print(result.status, result.id, flush=True)
        os._exit(0)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    status, memory_id = out.stdout.split()
    assert status == "committed"
    with kenning.open_store(path) as store:
        assert store.get(memory_id).content == WRITTEN and store.semantic.pending_count() == 1
        assert store.semantic.embed_pending() == 1
        assert store.search(ASKED, mode="semantic", limit=3, auto_scope=False).hits[0].id == memory_id
