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
import time

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


def test_a_search_waits_only_for_the_writes_answered_before_it(served, monkeypatch):
    """Under a steady stream of writes the hand-over list is never empty; a search waits for the
    writes answered before it began, not for the ones that keep arriving."""
    store, _, _ = served
    monkeypatch.setattr(semantic, "FRESH_WAIT_S", 120.0)
    encoder = store.semantic.encoder()
    inner = encoder.encode
    turns, entered = threading.Semaphore(0), threading.Event()

    def encode(texts, **kwargs):  # one encode per turn given
        entered.set()
        turns.acquire(timeout=120)
        return inner(texts, **kwargs)

    encoder.encode = encode
    try:
        written = store.write(WRITTEN, scopes=["x"])
        assert entered.wait(60)  # the background thread holds the first write's text
        search, box = _in_thread(lambda: store.search(ASKED, mode="semantic", limit=3, auto_scope=False))
        search.join(0.5)
        assert search.is_alive()
        later = store.write("Grafana dashboards are provisioned from the ops repository", scopes=["x"])
        assert later.status == "committed"
        turns.release()  # the first write's vector only; the later one's encode stays held
        search.join(60)
        assert not search.is_alive(), "the search waited for a write answered after it began"
        assert box["value"].hits[0].id == written.id
    finally:
        for _ in range(4):
            turns.release()


def test_the_http_server_waits_outside_its_lock_so_other_requests_go_on(served, monkeypatch):
    """The HTTP server runs every Store call under one lock; a search waiting for a write's vector
    must wait before taking it, or every other request would wait too."""
    pytest.importorskip("fastapi")
    from kenning.serve.http.app import Serialised

    store, gate, _ = served
    monkeypatch.setattr(semantic, "FRESH_WAIT_S", 120.0)
    server = Serialised(store)
    gate.clear()
    written = server.write(WRITTEN, scopes=["x"])
    search, box = _in_thread(lambda: server.search(ASKED, mode="semantic", limit=3, auto_scope=False))
    search.join(0.5)
    assert search.is_alive()  # waiting for the vector
    listed, other = _in_thread(lambda: server.get(written.id))
    listed.join(60)
    assert not listed.is_alive() and other["value"].id == written.id  # another request was served meanwhile
    gate.set()
    search.join(120)
    assert box["value"].hits[0].id == written.id and box["value"].pending_embeddings == 0


def _after_a_pass(store) -> None:
    """Wait until the queue is empty and the background thread has finished the pass that emptied it."""
    deadline = time.monotonic() + 120
    while store.semantic.pending_count() and time.monotonic() < deadline:
        time.sleep(0.02)
    background = store.semantic._background
    seen = background.passes
    store.semantic.wake_background()
    while background.passes == seen and time.monotonic() < deadline:
        time.sleep(0.02)
    assert store.semantic.pending_count() == 0 and background.passes > seen


@pytest.mark.sqlite_only  # about the index file, which PostgreSQL does not have
def test_handed_over_writes_do_not_rewrite_the_index_file_a_backlog_does(served):
    """The whole vector index file is rewritten by a save (324 MB at 100k): the background thread
    saves after draining a backlog (an import), not after a few writes; close saves those."""
    store, gate, _ = served
    saves: list[str] = []
    real = store.semantic.save

    def save(force: bool = True) -> None:
        saves.append(threading.current_thread().name)
        real(force)

    store.semantic.save = save
    gate.clear()  # the later writes queue up behind the first one's encode
    for i in range(5):
        assert store.write(f"The {WORDS[i]} service stores its {WORDS[-1 - i]} settings in region {i}",
                           scopes=["x"]).status == "committed"
    gate.set()
    _after_a_pass(store)
    assert "kenning-embedder" not in saves
    store.import_records([{"content": f"Imported note {i}: the {WORDS[i % len(WORDS)]} runbook, revision {i * 7}",
                           "scopes": ["bulk"]} for i in range(semantic.SAVE_AFTER + 50)])
    _after_a_pass(store)
    assert saves.count("kenning-embedder") == 1
