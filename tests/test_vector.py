"""The vector leg: contract (empty, one, k > size, floor, ties, filters), both search paths, persistence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kenning.retrieval.vector import VectorIndex

DIM = 16


def unit_rows(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def graph_index(n: int, seed: int = 0) -> tuple[VectorIndex, np.ndarray]:
    """An index whose searches go through hnswlib (threshold far below its size)."""
    pytest.importorskip("hnswlib")
    index = VectorIndex(DIM, exact_threshold=10)
    vectors = unit_rows(n, seed)
    index.add(np.arange(n) * 3, vectors)
    assert index.uses_hnsw
    return index, vectors


def test_empty_index_finds_nothing():
    assert VectorIndex(DIM).search(unit_rows(1)[0], 5) == []


def test_one_vector_is_found_with_its_cosine():
    index = VectorIndex(DIM)
    vector = unit_rows(1)[0]
    index.add([42], vector[None, :])
    [(key, score)] = index.search(vector, 10)
    assert key == 42 and score == pytest.approx(1.0, abs=1e-6) and score <= 1.0


def test_k_larger_than_the_index_returns_everything_best_first():
    index = VectorIndex(DIM)
    vectors = unit_rows(5)
    index.add([1, 2, 3, 4, 5], vectors)
    hits = index.search(vectors[2], 50)
    assert [key for key, _ in hits][0] == 3
    assert sorted(key for key, _ in hits) == [1, 2, 3, 4, 5]
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)


def test_ties_are_broken_by_key_even_at_the_cut():
    index = VectorIndex(DIM)
    same = np.repeat(unit_rows(1), 6, axis=0)
    index.add([50, 7, 31, 9, 12, 40], same)
    assert [key for key, _ in index.search(same[0], 3)] == [7, 9, 12]


def test_floor_drops_weak_matches_and_can_empty_the_answer():
    index = VectorIndex(DIM)
    x, y = np.eye(DIM, dtype=np.float32)[:2]
    index.add([1, 2, 3], np.stack([x, y, (x + y) / np.sqrt(2)]))
    assert [key for key, _ in index.search(x, 10, floor=0.5)] == [1, 3]
    assert index.search(-x, 10, floor=0.1) == []


def test_allowed_filters_before_ranking_so_the_answer_still_fills_k():
    index = VectorIndex(DIM)
    vectors = unit_rows(200)
    index.add(np.arange(200), vectors)
    allowed = set(range(100, 200, 2))
    hits = index.search(vectors[0], 10, allowed=allowed)
    assert len(hits) == 10 and all(key in allowed for key, _ in hits)
    exact_scores = vectors[sorted(allowed)] @ vectors[0]
    assert hits[0][1] == pytest.approx(float(exact_scores.max()), abs=1e-6)


@pytest.mark.parametrize("size", [50, 3000])  # key-by-key lookup, and the sorted-key search
@pytest.mark.parametrize("kind", [set, list, np.array])
def test_allowed_may_be_any_collection_and_may_name_unknown_keys(size, kind):
    index = VectorIndex(DIM)
    vectors = unit_rows(6000)
    index.add(np.arange(6000) * 2, vectors)
    wanted = np.random.default_rng(5).choice(12_000, size=size, replace=False)  # odd keys are unknown
    hits = index.search(vectors[0], 10, allowed=kind(wanted.tolist()))
    known = sorted(int(key) for key in wanted if key % 2 == 0)
    scores = vectors[np.asarray(known) // 2] @ vectors[0]
    expected = [known[i] for i in np.lexsort((known, -scores))[:10]]
    assert [key for key, _ in hits] == expected


def test_a_large_filter_sees_removals_and_additions():
    index = VectorIndex(DIM)
    vectors = unit_rows(4000)
    index.add(np.arange(4000), vectors)
    everything = np.arange(10_000)
    assert index.search(vectors[7], 1, allowed=everything)[0][0] == 7
    index.remove([7])
    assert 7 not in [key for key, _ in index.search(vectors[7], 5, allowed=everything)]
    index.add([9_999], vectors[7][None, :])
    assert index.search(vectors[7], 1, allowed=everything)[0][0] == 9_999


def test_allowed_with_no_known_key_finds_nothing():
    index = VectorIndex(DIM)
    index.add([1], unit_rows(1))
    assert index.search(unit_rows(1)[0], 5, allowed=[999]) == []
    assert index.search(unit_rows(1)[0], 5, allowed=[]) == []


def test_add_replaces_a_key_and_the_last_duplicate_in_a_batch_wins():
    index = VectorIndex(DIM)
    a, b, c = np.eye(DIM, dtype=np.float32)[:3]
    index.add([1, 1], np.stack([a, b]))
    assert len(index) == 1 and index.search(b, 1)[0] == (1, pytest.approx(1.0))
    index.add([1], c[None, :])
    assert len(index) == 1 and index.search(c, 1)[0] == (1, pytest.approx(1.0))


def test_vectors_are_normalised_so_scores_are_cosines():
    index = VectorIndex(DIM)
    index.add([1], np.full((1, DIM), 5.0, dtype=np.float32))
    assert index.search(np.ones(DIM), 1)[0][1] == pytest.approx(1.0, abs=1e-6)


def test_remove_forgets_keys_and_ignores_unknown_ones():
    index = VectorIndex(DIM)
    vectors = unit_rows(4)
    index.add([10, 20, 30, 40], vectors)
    assert index.remove([20, 99]) == 1
    assert len(index) == 3 and 20 not in index and 40 in index
    assert 20 not in [key for key, _ in index.search(vectors[1], 10)]
    assert index.search(vectors[3], 1)[0][0] == 40  # the row moved into the hole is still right


def test_bad_shapes_are_refused():
    index = VectorIndex(DIM)
    with pytest.raises(ValueError):
        index.add([1, 2], unit_rows(1))
    with pytest.raises(ValueError):
        index.add([1], unit_rows(1, dim=DIM + 1))
    with pytest.raises(ValueError):
        index.search(np.ones(DIM + 1), 1)
    with pytest.raises(ValueError):
        VectorIndex(DIM, space="l2")


def test_graph_and_exact_search_agree_on_easy_data():
    index, vectors = graph_index(2000)
    for row in (0, 17, 1999):
        graph_hits = index.search(vectors[row], 5)
        index.exact_threshold = 10**9
        exact_hits = index.search(vectors[row], 5)
        index.exact_threshold = 10
        assert graph_hits[0] == exact_hits[0] == (row * 3, pytest.approx(1.0, abs=1e-6))
        assert [k for k, _ in graph_hits] == [k for k, _ in exact_hits]


def test_graph_search_with_a_filter_returns_only_allowed_keys_and_fills_k():
    index, vectors = graph_index(2000)
    allowed = set(range(3, 6000, 9))  # every third key: 667 candidates, above the threshold
    hits = index.search(vectors[0], 10, allowed=allowed)
    assert len(hits) == 10 and all(key in allowed for key, _ in hits)


def test_graph_is_updated_incrementally_removed_keys_revive_and_it_grows_when_full():
    index, vectors = graph_index(1100)
    index.remove([0, 3, 6])
    assert all(key not in (0, 3, 6) for key, _ in index.search(vectors[0], 20))
    index.add([9], vectors[5][None, :])  # a live key takes another vector
    assert [key for key, _ in index.search(vectors[5], 2)] == [9, 15]
    index.add([3], vectors[1][None, :])  # a removed key comes back with another vector
    assert index.search(vectors[1], 2)[0][1] == pytest.approx(1.0, abs=1e-6)
    assert 3 in [key for key, _ in index.search(vectors[1], 2)]
    more = unit_rows(3000, seed=1)
    index.add(np.arange(10_000, 13_000), more)  # beyond the initial capacity
    assert len(index) == 1100 - 3 + 1 + 3000
    for row in (0, 1500, 2999):
        assert index.search(more[row], 1)[0][0] == 10_000 + row


def test_save_and_load_round_trip_in_both_modes(tmp_path):
    for name, (index, vectors) in {"exact": (VectorIndex(DIM), unit_rows(300)), "graph": graph_index(1500)}.items():
        if name == "exact":
            index.add(np.arange(300), vectors)
        path = tmp_path / f"{name}.idx"
        meta = {"model_id": "m:1", "count": len(index), "generation": 7}
        index.save(path, meta)
        loaded = VectorIndex.load(path, DIM, meta, exact_threshold=index.exact_threshold)
        assert loaded is not None and len(loaded) == len(index) and loaded.uses_hnsw == index.uses_hnsw
        for query in unit_rows(5, seed=9):
            assert loaded.search(query, 10) == index.search(query, 10)
        # the loaded index stays usable: update, remove, add
        loaded.remove(loaded.keys()[:5].tolist())
        loaded.add([10**9], vectors[:1])
        assert loaded.search(vectors[0], 1)[0][1] == pytest.approx(1.0, abs=1e-6)
        assert len(loaded) == len(index) - 4


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path):
    index = VectorIndex(DIM)
    index.add([1], unit_rows(1))
    path = tmp_path / "vectors.idx"
    index.save(path, {})
    index.add([2], unit_rows(1, seed=3))
    index.save(path, {})  # replaces the previous file in one step
    assert [p.name for p in tmp_path.iterdir()] == ["vectors.idx"]
    assert len(VectorIndex.load(path, DIM, {})) == 2


@pytest.fixture
def saved_graph(tmp_path) -> tuple[Path, dict]:
    index, _ = graph_index(1500)
    path = tmp_path / "vectors.idx"
    meta = {"model_id": "m:1", "count": len(index), "generation": 3}
    index.save(path, meta)
    return path, meta


def test_load_answers_none_for_a_missing_file(tmp_path):
    assert VectorIndex.load(tmp_path / "absent.idx", DIM, {}) is None


@pytest.mark.parametrize("keep", [0, 5, 20, 200, 10_000, -1])
def test_load_answers_none_for_a_truncated_file(saved_graph, keep):
    path, meta = saved_graph
    data = path.read_bytes()
    path.write_bytes(data[:keep] if keep >= 0 else data[:-1])
    assert VectorIndex.load(path, DIM, meta) is None


def test_load_answers_none_for_a_corrupted_or_extended_file(saved_graph):
    path, meta = saved_graph
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert VectorIndex.load(path, DIM, meta) is None
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data) + b"\0")
    assert VectorIndex.load(path, DIM, meta) is None


@pytest.mark.parametrize("damage", ["payload_bytes", "shape"])
def test_load_answers_none_for_a_header_that_asks_for_more_than_the_file_holds(saved_graph, damage):
    """The header is not under the checksum: a damaged size is refused before any buffer is allocated
    for it (a payload_bytes of 2**60 raised MemoryError out of the search)."""
    from kenning.retrieval.vector import _HEADER_LEN, _MAGIC

    path, meta = saved_graph
    data = path.read_bytes()
    start = len(_MAGIC) + _HEADER_LEN.size
    (length,) = _HEADER_LEN.unpack(data[len(_MAGIC):start])
    header = json.loads(data[start:start + length])
    if damage == "payload_bytes":
        header["payload_bytes"] = 2**60
    else:
        header["arrays"][1]["shape"] = [2**40, DIM]
    text = json.dumps(header).encode()
    path.write_bytes(_MAGIC + _HEADER_LEN.pack(len(text)) + text + data[start + length:])
    assert VectorIndex.load(path, DIM, meta) is None


def test_load_answers_none_for_something_that_is_not_an_index(tmp_path):
    path = tmp_path / "vectors.idx"
    path.write_text(json.dumps({"format": 1}))
    assert VectorIndex.load(path, DIM, {}) is None


@pytest.mark.parametrize(
    "change", [{"model_id": "m:2"}, {"count": 1499}, {"generation": 4}, {"tokenizer": "new"}]
)
def test_load_answers_none_when_the_meta_differs(saved_graph, change):
    path, meta = saved_graph
    assert VectorIndex.load(path, DIM, {**meta, **change}) is None
    assert VectorIndex.load(path, DIM, meta) is not None


def test_load_answers_none_for_another_dimension(saved_graph):
    path, meta = saved_graph
    assert VectorIndex.load(path, DIM * 2, meta) is None


@pytest.mark.embeddings
@pytest.mark.slow
def test_graph_recall_at_10_against_exact_search_on_real_embeddings(request, tmp_path):
    """hnswlib must find >= 95% of the exact top 10 on real MiniLM vectors (scifact-train)."""
    pytest.importorskip("sentence_transformers")
    from kenning.retrieval.embedding_cache import EmbeddingCache, embed_with_cache
    from kenning.retrieval.embeddings import require

    folder = Path(__file__).resolve().parent.parent.parent / "shared" / "eval-data" / "scifact-train"
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip("../shared/eval-data/scifact-train is not present")
    with (folder / "corpus.jsonl").open() as lines:
        # Titles and first sentences: real scientific text, short enough to encode quickly.
        docs = [json.loads(line) for line in lines]
    texts = list(dict.fromkeys(t for d in docs for t in (d["title"], d["text"].split(". ")[0]) if t))[:3000]
    with (folder / "queries.jsonl").open() as lines:
        queries = [json.loads(line)["text"] for line in lines][:200]

    encoder = require()
    # pytest's cache survives between runs; without it (-p no:cacheprovider) the vectors are encoded here
    cache = getattr(request.config, "cache", None)
    cache_dir = Path(cache.mkdir("kenning-embeddings")) if cache is not None else tmp_path
    with EmbeddingCache(cache_dir / "embeddings.sqlite") as cache:
        vectors = embed_with_cache(encoder, texts, cache)
        query_vectors = embed_with_cache(encoder, queries, cache)

    index = VectorIndex(encoder.dim, exact_threshold=100)
    index.add(np.arange(len(texts)), vectors)
    assert index.uses_hnsw
    approximate = [[key for key, _ in index.search(q, 10)] for q in query_vectors]
    index.exact_threshold = 10**9
    exact = [[key for key, _ in index.search(q, 10)] for q in query_vectors]
    recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approximate, exact)])
    assert recall >= 0.95, recall


def test_cosine_space_normalises_stored_and_query_vectors_and_a_zero_vector_scores_zero():
    """Non-unit inputs: the score is the plain cosine (dot over both norms), worked out by hand, and a
    zero vector (norm 0) neither divides by zero nor matches anything."""
    index = VectorIndex(2)
    index.add([1, 2, 3], np.array([[3.0, 4.0], [0.0, 2.0], [0.0, 0.0]]))
    hits = index.search(np.array([6.0, 0.0]), 3)
    assert [key for key, _ in hits[:2]] == [1, 2]
    assert hits[0][1] == pytest.approx(3 / 5) and hits[1][1] == pytest.approx(0.0, abs=1e-6)
    assert all(np.isfinite(score) for _, score in hits)
    assert index.search(np.zeros(2), 3) == [(1, 0.0), (2, 0.0), (3, 0.0)]  # a zero query: no NaN, ties by key


def test_the_same_vectors_build_the_same_graph():
    """A graph built on several threads depended on their interleaving (npl's hybrid nDCG moved
    between two runs of the same tree); built on one it is a function of the vectors and their order,
    for the first build and for later additions alike."""
    pytest.importorskip("hnswlib")
    import pickle

    first, second = unit_rows(3000, seed=4, dim=64), unit_rows(400, seed=5, dim=64)
    graphs = []
    for _ in range(2):
        index = VectorIndex(64, exact_threshold=1000)
        index.add(np.arange(3000), first)
        built = pickle.dumps(index._hnsw)
        index.add(np.arange(3000, 3400), second)
        graphs.append((built, pickle.dumps(index._hnsw)))
    assert graphs[0][0] == graphs[1][0]
    assert graphs[0][1] == graphs[1][1]
