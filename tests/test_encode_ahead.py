"""A hybrid query encoded on a worker thread while its lexical legs run (Semantic.query_vector_ahead)
when a core is free for it, and a write's text encoded after its commit, with the real packaged
model: the vectors are the ones encoding inline gives, and a failed encoding never loses a write or
a search."""

import threading

import numpy as np
import pytest

import kenning
from kenning.store import semantic

pytestmark = [pytest.mark.embeddings]
if not kenning.embeddings_available():
    pytest.skip("the embeddings extra is not installed", allow_module_level=True)

TEXT = "The auth service listens on port 8443 behind the gateway"


@pytest.fixture
def loaded(store):
    """A store whose encoder is loaded (a first write loads it after its gates, never ahead of them)."""
    store.write("Nightly database backups are kept for thirty days", scopes=["x"])
    encoder = store.semantic.encoder()
    original = encoder.encode
    threads: list[str] = []
    fail_on: set[str] = set()

    def encode(texts, **kwargs):
        name = threading.current_thread().name
        threads.append(name)
        if any(name.startswith(prefix) for prefix in fail_on):
            raise RuntimeError(f"encoding failed on {name}")
        return original(texts, **kwargs)

    encoder.encode = encode
    yield store, encoder, threads, fail_on
    del encoder.encode


def stored_vector(store, memory_id):
    row = store.db.read(lambda c: c.execute(
        "SELECT e.vector FROM embeddings e JOIN memories m ON m.rowid = e.mem WHERE m.id = ?", (memory_id,)).fetchone())
    return None if row is None else np.frombuffer(row[0], np.float32)


def test_a_write_encodes_its_text_once_on_its_own_thread_after_the_gates(loaded):
    store, encoder, threads, _ = loaded
    result = store.write(TEXT, scopes=["x"])
    assert result.status == "committed" and store.semantic.pending_count() == 0
    assert threads == [threading.current_thread().name]  # encoded once, inline
    assert np.array_equal(stored_vector(store, result.id), encoder.encode([TEXT])[0])
    assert store.search("which port does authentication use", mode="semantic").hits[0].id == result.id


def test_when_the_encoding_fails_the_write_stays_committed_and_queued(loaded):
    store, encoder, threads, fail_on = loaded
    fail_on.add(threading.current_thread().name)
    result = store.write(TEXT, scopes=["x"])
    assert result.status == "committed" and store.get(result.id).content == TEXT
    assert stored_vector(store, result.id) is None and store.semantic.pending_count() == 1
    fail_on.clear()
    assert store.semantic.embed_pending() == 1 and store.semantic.pending_count() == 0
    assert np.array_equal(stored_vector(store, result.id), encoder.encode([TEXT])[0])


def test_a_refused_write_encodes_and_stores_nothing(loaded):
    store, _, threads, _ = loaded
    before = store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
    refused = store.write("Nightly database backups are kept for thirty days", scopes=["x"])
    assert refused.status == "duplicate" and threads == []
    assert store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]) == before


@pytest.fixture
def spare_core(monkeypatch):
    """A machine with a core beside the encoder's intra-op threads (where the overlap pays)."""
    monkeypatch.setattr(semantic, "available_cores", lambda: 64)


def test_a_hybrid_search_encodes_its_query_on_the_worker_and_ranks_as_inline(loaded, spare_core):
    store, encoder, threads, _ = loaded
    store.write(TEXT, scopes=["x"])
    original = encoder.encode_query
    query_threads: list[str] = []
    encoder.encode_query = lambda text: (query_threads.append(threading.current_thread().name), original(text))[1]
    try:
        ahead = store.search("which port does authentication use", mode="hybrid")
        assert len(query_threads) == 1 and query_threads[0].startswith("kenning-encode-ahead")
        store.semantic.query_vector_ahead = lambda query: (lambda: store.semantic.query_vector(query))
        inline = store.search("which port does authentication use", mode="hybrid")
        assert query_threads[1] == threading.current_thread().name
        assert [(h.id, h.score, h.legs) for h in ahead.hits] == [(h.id, h.score, h.legs) for h in inline.hits]
        del store.semantic.query_vector_ahead
        store.search("which port does authentication use", mode="semantic")  # one leg: nothing to overlap
        assert query_threads[2] == threading.current_thread().name
    finally:
        del encoder.encode_query


def test_with_no_core_beside_the_encoders_threads_a_hybrid_query_is_encoded_on_the_search_thread(loaded, monkeypatch):
    store, encoder, _, _ = loaded
    store.write(TEXT, scopes=["x"])
    original = encoder.encode_query
    query_threads: list[str] = []
    encoder.encode_query = lambda text: (query_threads.append(threading.current_thread().name), original(text))[1]
    try:
        monkeypatch.setattr(semantic, "available_cores", lambda: encoder.threads)
        inline = store.search("which port does authentication use", mode="hybrid")
        assert query_threads == [threading.current_thread().name]
        monkeypatch.setattr(semantic, "available_cores", lambda: encoder.threads + 1)
        ahead = store.search("which port does authentication use", mode="hybrid")
        assert query_threads[1].startswith("kenning-encode-ahead")
        assert [(h.id, h.score, h.legs) for h in ahead.hits] == [(h.id, h.score, h.legs) for h in inline.hits]
    finally:
        del encoder.encode_query


def test_a_query_encoding_that_fails_ahead_is_done_again_on_the_search_thread(loaded, spare_core):
    store, encoder, _, _ = loaded
    written = store.write(TEXT, scopes=["x"]).id
    original = encoder.encode_query

    def encode_query(text):
        if threading.current_thread().name.startswith("kenning-encode-ahead"):
            raise RuntimeError("encoding failed on the worker")
        return original(text)

    encoder.encode_query = encode_query
    try:
        result = store.search("which port does authentication use", mode="hybrid")
        assert result.hits[0].id == written and "vector" in result.hits[0].legs
    finally:
        del encoder.encode_query


def test_a_query_encoded_ahead_is_shared_within_one_encoding_per_query(loaded, spare_core):
    store, encoder, _, _ = loaded
    sem = store.semantic
    with sem.one_encoding_per_query():
        first = sem.query_vector_ahead("backups")()
        assert sem.query_vector("backups") is first  # kept for the recall's other tiers
        assert sem.query_vector_ahead("backups")() is first  # not encoded again
    assert np.array_equal(first, encoder.encode_query("backups"))
