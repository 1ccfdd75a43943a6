"""A write encodes its text on a worker thread while its gates run (Semantic.encode_ahead), with the
real packaged model: the vector is the one encoding after the commit would give, and a failure of
either encoding never loses the write."""

import threading

import numpy as np
import pytest

import kenning
from kenning.store.semantic import Ahead, _ready_vector

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


def test_a_write_encodes_ahead_on_the_worker_and_stores_exactly_that_vector(loaded):
    store, encoder, threads, _ = loaded
    result = store.write(TEXT, scopes=["x"])
    assert result.status == "committed" and store.semantic.pending_count() == 0
    assert len(threads) == 1 and threads[0].startswith("kenning-encode-ahead")  # encoded once, on the worker
    assert np.array_equal(stored_vector(store, result.id), encoder.encode([TEXT])[0])
    assert store.search("which port does authentication use", mode="semantic").hits[0].id == result.id


def test_an_ahead_encoding_that_fails_is_done_again_after_the_commit(loaded):
    store, encoder, threads, fail_on = loaded
    fail_on.add("kenning-encode-ahead")
    result = store.write(TEXT, scopes=["x"])
    assert result.status == "committed" and store.semantic.pending_count() == 0
    assert [t.startswith("kenning-encode-ahead") for t in threads] == [True, False]
    fail_on.clear()
    assert np.array_equal(stored_vector(store, result.id), encoder.encode([TEXT])[0])


def test_when_every_encoding_fails_the_write_stays_committed_and_queued(loaded):
    store, encoder, threads, fail_on = loaded
    fail_on.update({"kenning-encode-ahead", threading.current_thread().name})
    result = store.write(TEXT, scopes=["x"])
    assert result.status == "committed" and store.get(result.id).content == TEXT
    assert stored_vector(store, result.id) is None and store.semantic.pending_count() == 1
    fail_on.clear()
    assert store.semantic.embed_pending() == 1 and store.semantic.pending_count() == 0
    assert np.array_equal(stored_vector(store, result.id), encoder.encode([TEXT])[0])


def test_a_refused_write_stores_nothing_though_its_text_was_encoded_ahead(loaded):
    store, _, threads, _ = loaded
    before = store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
    refused = store.write("Nightly database backups are kept for thirty days", scopes=["x"])
    assert refused.status == "duplicate"
    assert store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]) == before


def test_nothing_is_encoded_ahead_before_the_encoder_is_loaded_or_with_an_embedding_cache(store, tmp_path):
    assert store.semantic.encode_ahead(TEXT) is None  # a write never loads the model before its gates pass
    store.semantic.encoder()
    ahead = store.semantic.encode_ahead(TEXT)
    assert isinstance(ahead, Ahead) and ahead.text == TEXT and ahead.future.result().shape == (1, 384)
    from kenning.retrieval.embedding_cache import EmbeddingCache

    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        store.semantic.cache = cache  # the eval harness: vectors come through the cache
        try:
            assert store.semantic.encode_ahead(TEXT) is None
        finally:
            store.semantic.cache = None


def test_an_ahead_vector_is_used_only_for_its_own_text_and_encoder(store):
    encoder = store.semantic.encoder()
    ahead = store.semantic.encode_ahead(TEXT)
    rows = [(1, TEXT, "h")]
    assert np.array_equal(_ready_vector(ahead, encoder, rows)[TEXT], ahead.future.result()[0])
    assert _ready_vector(ahead, encoder, [(1, TEXT + " (edited)", "h")]) is None  # the committed text differs
    assert _ready_vector(ahead, object(), rows) is None  # the store switched encoder meanwhile
    assert _ready_vector(None, encoder, rows) is None
