"""A hybrid query encoded, and the vector index ranked with it, on a worker thread while its lexical
legs run (Semantic.search_ahead) when a core is free for it or the legs' work hides it, and a write's text encoded after its commit,
with the real packaged model: the vectors are the ones encoding inline gives, and a failed encoding
never loses a write or a search."""

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


@pytest.fixture
def no_spare_core(loaded, monkeypatch):
    """A machine whose cores the encoder's intra-op threads fill (two cores, two threads)."""
    monkeypatch.setattr(semantic, "available_cores", lambda: loaded[1].threads)


@pytest.fixture
def query_threads(loaded):
    """The threads ``encode_query`` ran on, in order; it raises on a thread whose name starts with a
    prefix put in the returned set."""
    _, encoder, _, _ = loaded
    original = encoder.encode_query
    threads: list[str] = []
    fail_on: set[str] = set()

    def encode_query(text):
        name = threading.current_thread().name
        threads.append(name)
        if any(name.startswith(prefix) for prefix in fail_on):
            raise RuntimeError(f"encoding failed on {name}")
        return original(text)

    encoder.encode_query = encode_query
    yield threads, fail_on
    del encoder.encode_query


def ranked(result):
    return [(h.id, h.score, h.legs) for h in result.hits]


def test_a_hybrid_search_encodes_its_query_on_the_worker_and_ranks_as_inline(loaded, spare_core, query_threads):
    store, _, _, _ = loaded
    threads, _ = query_threads
    store.write(TEXT, scopes=["x"])
    ahead = store.search("which port does authentication use", mode="hybrid")
    assert len(threads) == 1 and threads[0].startswith("kenning-encode-ahead")
    store.semantic.search_ahead = lambda query, k, mems=None, work=0, moved=False: semantic.Ahead(
        lambda: store.semantic.search(query, k, mems, moved=moved))
    inline = store.search("which port does authentication use", mode="hybrid")
    assert threads[1] == threading.current_thread().name
    assert ranked(ahead) == ranked(inline)
    del store.semantic.search_ahead
    store.search("which port does authentication use", mode="semantic")  # one leg: nothing to overlap
    assert threads[2] == threading.current_thread().name


def test_with_no_core_beside_the_encoders_threads_a_hybrid_query_is_encoded_on_the_search_thread(
        loaded, monkeypatch, query_threads):
    store, encoder, _, _ = loaded
    threads, _ = query_threads
    store.write(TEXT, scopes=["x"])
    monkeypatch.setattr(semantic, "available_cores", lambda: encoder.threads)
    inline = store.search("which port does authentication use", mode="hybrid")
    assert threads == [threading.current_thread().name]
    monkeypatch.setattr(semantic, "available_cores", lambda: encoder.threads + 1)
    ahead = store.search("which port does authentication use", mode="hybrid")
    assert threads[1].startswith("kenning-encode-ahead")
    assert ranked(ahead) == ranked(inline)


SERVICES = ["billing", "search", "mail", "payments", "reports", "uploads", "login", "metrics", "chat", "exports",
            "invoices", "profiles"]


def test_with_no_core_free_a_query_whose_legs_walk_many_postings_is_encoded_beside_them(
        loaded, no_spare_core, query_threads, monkeypatch):
    """The same store, no core free: a query of a word most memories hold is encoded on the worker
    (its legs take long enough to hide the encode), one of a rare word inline; both rank as inline."""
    store, _, _, _ = loaded
    threads, _ = query_threads
    for n, service in enumerate(SERVICES):
        store.write(f"The {service} service restarts its workers every {n + 2} hours on the cluster", scopes=["x"])
    lexicon = store.lexicon.refresh()
    common, rare = (sum(ids.size for ids, _ in lexicon.postings([t]).values()) for t in ("cluster", "invoic"))
    assert common == len(SERVICES) and rare == 1  # the rare term is the stemmed "invoices"
    # the line between them: the rare query's work is under it, the common query's reaches it
    monkeypatch.setattr(semantic, "OVERLAP_MIN_WORK", semantic.lexical_work(lexicon.n_docs, common))
    on_worker = store.search("cluster", mode="hybrid")
    assert len(threads) == 1 and threads[0].startswith("kenning-encode-ahead")
    store.search("invoices", mode="hybrid")
    assert threads[1] == threading.current_thread().name
    monkeypatch.setattr(semantic, "OVERLAP_MIN_WORK", semantic.lexical_work(lexicon.n_docs, common) + 1)
    inline = store.search("cluster", mode="hybrid")
    assert threads[2] == threading.current_thread().name
    assert ranked(on_worker) == ranked(inline) and on_worker.hits


def test_the_stores_size_counts_toward_the_legs_work(loaded, no_spare_core, query_threads, monkeypatch):
    """Memories that do not hold the query's words still lengthen the legs (arrays over the store)."""
    store, _, _, _ = loaded
    threads, _ = query_threads
    store.write(TEXT, scopes=["x"])
    before = store.lexicon.refresh().n_docs
    monkeypatch.setattr(semantic, "OVERLAP_MIN_WORK", semantic.lexical_work(before + 3, 1))
    store.search("gateway", mode="hybrid")
    assert threads == [threading.current_thread().name]
    for service in SERVICES[:3]:
        store.write(f"The {service} team reviews its alerts each morning", scopes=["x"])
    assert store.lexicon.refresh().n_docs == before + 3
    store.search("gateway", mode="hybrid")
    assert threads[1].startswith("kenning-encode-ahead")


def test_overlap_pays_with_a_free_core_or_enough_lexical_work(monkeypatch):
    monkeypatch.setattr(semantic, "available_cores", lambda: 2)
    assert not semantic.overlap_pays(2, semantic.OVERLAP_MIN_WORK - 1)
    assert semantic.overlap_pays(2, semantic.OVERLAP_MIN_WORK)
    assert semantic.overlap_pays(1, 0)  # a one-thread encoder leaves a core free
    assert semantic.lexical_work(10_000, 0) == 10_000
    assert semantic.lexical_work(10_000, 100) == 10_000 + semantic.POSTING_WORK * 100


def test_a_query_encoding_that_fails_ahead_is_done_again_on_the_search_thread(loaded, spare_core, query_threads):
    store, _, _, _ = loaded
    threads, fail_on = query_threads
    written = store.write(TEXT, scopes=["x"]).id
    fail_on.add("kenning-encode-ahead")
    result = store.search("which port does authentication use", mode="hybrid")
    assert result.hits[0].id == written and "vector" in result.hits[0].legs
    assert threads[0].startswith("kenning-encode-ahead") and threads[1] == threading.current_thread().name


def test_a_query_encoded_ahead_is_shared_within_one_encoding_per_query(loaded, spare_core):
    store, encoder, _, _ = loaded
    sem = store.semantic
    with sem.one_encoding_per_query():
        first = sem.query_vector_ahead("backups")()
        assert sem.query_vector("backups") is first  # kept for the recall's other tiers
        assert sem.query_vector_ahead("backups")() is first  # not encoded again
    assert np.array_equal(first, encoder.encode_query("backups"))


@pytest.fixture
def index_threads(monkeypatch):
    """The threads the vector index was walked on, in order."""
    from kenning.retrieval.vector import VectorIndex

    original = VectorIndex.search_in_steps
    threads: list[str] = []

    def walk(self, *args, **kwargs):
        threads.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "search_in_steps", walk)
    return threads


@pytest.mark.sqlite_only  # PostgreSQL's index lives in the database (pgvector): only the encoding goes ahead
def test_the_worker_walks_the_index_too_and_only_for_a_caller_holding_the_stores_lock(
        loaded, spare_core, query_threads, index_threads):
    store, _, _, _ = loaded
    store.write(TEXT, scopes=["x"])
    ahead = store.search("which port does authentication use", mode="hybrid")
    assert len(index_threads) == 1 and index_threads[0].startswith("kenning-encode-ahead")
    sem = store.semantic
    with store.db.lock:
        on_worker = sem.search_ahead("which port does authentication use", 20)
        assert on_worker() == sem.search("which port does authentication use", 20)
    assert index_threads[1].startswith("kenning-encode-ahead") and index_threads[2] == threading.current_thread().name
    unlocked = sem.search_ahead("which port does authentication use", 20)  # only the encoding goes ahead
    assert unlocked() == sem.search("which port does authentication use", 20)
    assert query_threads[0][-2].startswith("kenning-encode-ahead")
    assert index_threads[3] == index_threads[4] == threading.current_thread().name
    assert ahead.hits[0].legs["vector"].rank == 1


@pytest.mark.sqlite_only  # the in-process index the worker walks is SQLite's
def test_a_ranking_that_fails_lets_the_worker_finish_before_it_unlocks_the_store(
        loaded, spare_core, monkeypatch, index_threads):
    """The worker reads the vector index unlocked; a lexical leg that raises must not hand the
    store's lock to a writer while it still does."""
    import time

    from kenning.retrieval import keyword
    from kenning.retrieval.vector import VectorIndex

    store, _, _, _ = loaded
    store.write(TEXT, scopes=["x"])
    slow, done = VectorIndex.search_in_steps, []

    def walk(self, *args, **kwargs):
        time.sleep(0.3)
        found = slow(self, *args, **kwargs)
        done.append(time.monotonic())
        return found

    def broken(*args, **kwargs):
        raise RuntimeError("a lexical leg failed")

    monkeypatch.setattr(VectorIndex, "search_in_steps", walk)
    monkeypatch.setattr(keyword, "search", broken)
    with pytest.raises(RuntimeError, match="a lexical leg failed"):
        store.search("which port does authentication use", mode="hybrid")
    raised = time.monotonic()
    assert done and done[0] <= raised
