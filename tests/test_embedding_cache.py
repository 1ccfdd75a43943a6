"""The content-addressed embedding cache: its key, its file, what it returns, and that
embed_with_cache encodes each missing text once with the real encoder."""

from __future__ import annotations

import hashlib
import sqlite3

import numpy as np
import pytest

from kenning.retrieval import embedding_cache
from kenning.retrieval.embedding_cache import EmbeddingCache, default_cache_path, embed_with_cache, text_key


def test_the_key_of_a_text_is_the_sha256_of_its_utf8_bytes():
    # fixed digests: a cache written by an earlier version must still hit
    assert text_key("abc").hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert text_key("café") == hashlib.sha256("café".encode("utf-8")).digest()
    assert len(text_key("")) == 32


def test_an_empty_kenning_cache_dir_means_the_platform_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", "")
    path = default_cache_path()
    assert path.name == "embeddings.sqlite" and path.parent.name == "kenning"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    assert default_cache_path() == tmp_path / "embeddings.sqlite"


def test_without_a_path_the_cache_opens_the_default_file_and_makes_its_folders(monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "a" / "b"))
    with EmbeddingCache() as cache:
        assert cache.path == tmp_path / "a" / "b" / "embeddings.sqlite"
        cache.put_many("m", ["x"], np.ones((1, 2)))
    assert (tmp_path / "a" / "b" / "embeddings.sqlite").is_file()


def test_the_file_is_in_wal_mode_and_closing_the_cache_closes_it(tmp_path):
    """WAL lets several processes (eval runs, benchmarks) read while one writes."""
    path = tmp_path / "cache.sqlite"
    with EmbeddingCache(path) as cache:
        cache.put_many("m", ["x"], np.ones((1, 2)))
    other = sqlite3.connect(path)
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 1
    finally:
        other.close()
    with pytest.raises(sqlite3.ProgrammingError):
        cache.get_many("m", ["x"])  # closed on leaving the with block


def test_vectors_are_stored_as_float32_and_a_put_replaces_the_earlier_vector(tmp_path):
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        cache.put_many("m", ["a", "b"], np.array([[0.5, 1.5], [2.0, -1.0]]))  # float64 in
        got = cache.get_many("m", ["a", "b"])
        assert [g.dtype for g in got] == [np.float32, np.float32]
        assert [g.tolist() for g in got] == [[0.5, 1.5], [2.0, -1.0]]
        cache.put_many("m", ["a"], np.array([[9.0, 9.0]], dtype=np.float32))
        assert [g.tolist() for g in cache.get_many("m", ["a", "b"])] == [[9.0, 9.0], [2.0, -1.0]]


def test_a_count_mismatch_is_refused_with_both_counts(tmp_path):
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        with pytest.raises(ValueError, match="^2 texts but 3 vectors$"):
            cache.put_many("m", ["a", "b"], np.ones((3, 2)))
        assert cache.get_many("m", ["a", "b"]) == [None, None]


def test_get_many_answers_many_texts_across_several_queries(tmp_path):
    texts = [f"text {i}" for i in range(2 * embedding_cache._CHUNK + 7)]
    vectors = np.arange(len(texts) * 2, dtype=np.float32).reshape(-1, 2)
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        cache.put_many("m", texts[::2], vectors[::2])  # every other text is cached
        asked = texts + ["never seen"] + texts[:3]
        got = cache.get_many("m", asked)
        assert len(got) == len(asked) and got[len(texts)] is None
        for i, text in enumerate(texts):
            assert (got[i] is None) == (i % 2 == 1)
            if i % 2 == 0:
                assert got[i].tolist() == vectors[i].tolist()
        assert [g.tolist() if g is not None else None for g in got[-3:]] == [
            vectors[0].tolist(), None, vectors[2].tolist()
        ]


@pytest.fixture(scope="module")
def encoder():
    from kenning.retrieval import embeddings

    return embeddings.require()


@pytest.mark.embeddings
def test_embed_with_cache_fills_from_the_cache_and_encodes_each_missing_text_once(encoder, tmp_path):
    texts = ["the cat sat", "a dog barked", "the cat sat", "rain tomorrow"]
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        cached = np.full((1, encoder.dim), 0.25, dtype=np.float32)  # not what the encoder would give
        cache.put_many(encoder.model_id, ["a dog barked"], cached)
        cache.put_many(encoder.model_id, ["rain tomorrow"], np.ones((1, 3)))  # another dim: re-encoded
        encoded = []
        out = embed_with_cache(encoder, texts, cache, progress=encoded.append, batch_size=2)
        assert sum(encoded) == 2  # "the cat sat" once, "rain tomorrow" again
        assert out.dtype == np.float32 and out.shape == (4, encoder.dim)
        assert np.array_equal(out[1], cached[0])
        fresh = encoder.encode(["the cat sat", "rain tomorrow"])
        assert np.allclose(out[[0, 2, 3]], fresh[[0, 0, 1]], atol=1e-5)
        stored = cache.get_many(encoder.model_id, ["the cat sat", "rain tomorrow"])
        assert np.allclose(np.stack(stored), fresh, atol=1e-5)  # kept for the next run
        encoded.clear()
        again = embed_with_cache(encoder, texts, cache, progress=encoded.append)
        assert encoded == [] and np.array_equal(again, out)
        assert embed_with_cache(encoder, [], cache).shape == (0, encoder.dim)


def test_a_cache_file_that_is_not_a_database_is_moved_aside_and_a_new_one_started(tmp_path, caplog):
    path = tmp_path / "embeddings.sqlite"
    path.write_bytes(b"\x8f not sqlite at all " * 1000)
    with EmbeddingCache(path) as cache:  # was: sqlite3.DatabaseError "file is not a database"
        assert cache.get_many("m", ["a"]) == [None]
        cache.put_many("m", ["a"], np.ones((1, 4), dtype=np.float32))
        assert np.array_equal(cache.get_many("m", ["a"])[0], np.ones(4, dtype=np.float32))
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("embeddings.sqlite.damaged-")]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"\x8f not sqlite")
    assert "damaged" in caplog.text


def test_damaged_pages_in_the_cache_are_misses_not_errors(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    texts = [f"text number {i}" for i in range(3000)]
    with EmbeddingCache(path) as cache:
        cache.put_many("m", texts, np.arange(3000 * 8, dtype=np.float32).reshape(3000, 8))
    raw = bytearray(path.read_bytes())
    page = 4096
    for start in range(3 * page, len(raw), 2 * page):  # every other page past the first three
        raw[start:start + page] = b"\xa5" * min(page, len(raw) - start)
    path.write_bytes(bytes(raw))
    with EmbeddingCache(path) as cache:
        got = cache.get_many("m", texts)
        assert len(got) == len(texts)
        assert all(v is None or v.shape == (8,) for v in got)
        cache.put_many("m", ["one more"], np.ones((1, 8), dtype=np.float32))  # raises nothing
