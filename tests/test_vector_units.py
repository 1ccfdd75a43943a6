"""The vector leg in detail: inner-product space, error texts, key range, growth, the file header,
which path (exact or graph) answers, the graph's slots after updates, and damaged files.

Some checks need to know which path answered a search whose answer is identical on both by design.
``hide_in_graph`` marks a key deleted in the real hnswlib graph only (white-box): a hit for it can
then only come from exact search, and a graph search that must return it fails and falls back.
"""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest

from kenning.retrieval.vector import VectorIndex, read_header

DIM = 16


def unit_rows(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def graph_index(n: int = 200, threshold: int = 10) -> tuple[VectorIndex, np.ndarray]:
    """Keys 0..n-1 in an index whose whole-index searches go through hnswlib."""
    pytest.importorskip("hnswlib")
    index = VectorIndex(DIM, exact_threshold=threshold)
    vectors = unit_rows(n)
    index.add(np.arange(n), vectors)
    assert index.uses_hnsw
    return index, vectors


def hide_in_graph(index: VectorIndex, *keys: int) -> None:
    """White-box: the graph stops returning these keys; the exact path still sees them."""
    for key in keys:
        index._hnsw.mark_deleted(key)


def keys_of(hits) -> list[int]:
    return [key for key, _ in hits]


def exact_answer(index: VectorIndex, query: np.ndarray, k: int, **kw) -> list:
    """The same search forced through the exact path."""
    threshold, index.exact_threshold = index.exact_threshold, 10**9
    try:
        return index.search(query, k, **kw)
    finally:
        index.exact_threshold = threshold


# -- spaces, inputs, errors ---------------------------------------------------------------------


def test_ip_space_keeps_raw_inner_products_unnormalised_and_unclipped():
    index = VectorIndex(2, space="ip")
    index.add([1, 2], np.array([[2.0, 0.0], [0.0, 3.0]]))
    assert index.search(np.array([3.0, 0.0]), 2) == [(1, 6.0), (2, 0.0)]
    assert index.search(np.array([0.0, -1.0]), 2) == [(1, 0.0), (2, -3.0)]


def test_errors_say_what_is_wrong_and_one_dimension_is_allowed():
    with pytest.raises(ValueError, match=r"space must be 'cosine' or 'ip', not 'l2'"):
        VectorIndex(DIM, space="l2")
    for dim in (0, -1):
        with pytest.raises(ValueError, match="^dim must be positive$"):
            VectorIndex(dim)
    index = VectorIndex(DIM)
    with pytest.raises(ValueError, match=rf"expected vectors of shape \(2, {DIM}\), got \(1, {DIM}\)"):
        index.add([1, 2], unit_rows(1))
    with pytest.raises(ValueError, match=f"query has dimension {DIM + 1}, index has {DIM}"):
        index.search(np.ones(DIM + 1), 1)
    line = VectorIndex(1)
    line.add([1, 2], np.array([[2.0], [-0.5]]))
    assert line.search(np.array([5.0]), 2) == [(1, 1.0), (2, -1.0)]


def test_a_fresh_index_is_empty_with_int64_keys_and_no_meta():
    index = VectorIndex(DIM)
    assert len(index) == 0 and index.keys().dtype == np.int64 and index.meta == {}


def test_keys_may_be_any_iterable_of_ints_including_a_generator():
    index = VectorIndex(DIM)
    vectors = unit_rows(3)
    index.add((key for key in (5, 6, 7)), vectors)
    index.add(range(8, 11), vectors)
    assert sorted(index.keys().tolist()) == [5, 6, 7, 8, 9, 10]


def test_keys_keep_their_full_int64_value():
    big = [2**62 + 1, 2**62 + 2, -(2**62) - 3]  # not representable as float64
    index = VectorIndex(DIM)
    vectors = unit_rows(3)
    index.add(big, vectors)
    assert index.keys().dtype == np.int64 and index.keys().tolist() == big
    for key, vector in zip(big, vectors):
        assert index.search(vector, 1)[0][0] == key
        assert index.search(vector, 1, allowed=np.array(big))[0][0] == key  # the sorted-key lookup


def test_a_query_may_be_a_row_and_float64_gives_the_same_answer_as_float32():
    index = VectorIndex(DIM)
    vectors = unit_rows(50, seed=4)
    index.add(np.arange(50), vectors)
    for query in unit_rows(20, seed=5) * 3:
        expected = index.search(query, 5)
        assert index.search(query[None, :], 5) == expected  # one row, as an encoder returns it
        assert index.search(query.astype(np.float64), 5) == expected


def test_vectors_given_as_float64_are_stored_as_their_float32_rounding():
    """The stored vector is the float32 input normalised in float32, whatever precision came in."""
    raw = np.random.default_rng(8).standard_normal((200, DIM)) * 7
    as64, as32 = VectorIndex(DIM), VectorIndex(DIM)
    as64.add(np.arange(200), raw)
    as32.add(np.arange(200), raw.astype(np.float32))
    for query in unit_rows(10, seed=9):
        assert as64.search(query, 20) == as32.search(query, 20)


def test_scores_are_clipped_to_the_cosine_range():
    """Rounding makes a unit vector's dot product with itself exceed 1 (and with its negation go
    below -1) for some vectors; the index reports exactly 1 and -1 for those."""
    vectors = unit_rows(40)
    raw = np.array([np.einsum("ij,j->i", v[None, :], v)[0] for v in vectors])
    over = np.flatnonzero(raw > 1.0)
    assert len(over) > 0  # the data exercises the clip
    index = VectorIndex(DIM)
    index.add(np.arange(40), vectors)
    for row in over:
        assert index.search(vectors[row], 1) == [(int(row), 1.0)]
        assert index.search(-vectors[row], 40)[-1] == (int(row), -1.0)


def test_the_floor_keeps_a_score_equal_to_it_and_drops_one_just_below():
    index = VectorIndex(DIM)
    vectors = unit_rows(30)
    index.add(np.arange(30), vectors)
    query = unit_rows(1, seed=3)[0]
    hits = index.search(query, 30)
    key, score = hits[4]
    assert keys_of(index.search(query, 30, floor=score)) == keys_of(hits[:5])
    # within the exact path's tie slack (1e-5) of the cut, yet below the floor
    assert keys_of(index.search(query, 30, floor=score + 5e-6)) == keys_of(hits[:4])
    assert keys_of(index.search(query, 2, floor=score + 5e-6)) == keys_of(hits[:2])


def test_k_zero_or_negative_finds_nothing():
    index = VectorIndex(DIM)
    index.add([1, 2], unit_rows(2))
    assert index.search(unit_rows(1)[0], 0) == [] and index.search(unit_rows(1)[0], -3) == []


def test_an_allowed_set_with_one_known_key_finds_it():
    index = VectorIndex(DIM)
    vectors = unit_rows(20)
    index.add(np.arange(20), vectors)
    assert keys_of(index.search(vectors[0], 5, allowed=[13, 999])) == [13]


# -- add, remove, growth ------------------------------------------------------------------------


def test_the_last_duplicate_wins_when_the_repeated_key_comes_first():
    index = VectorIndex(DIM)
    a, b, c = np.eye(DIM, dtype=np.float32)[:3]
    index.add([1, 1, 2], np.stack([a, b, c]))
    assert index.search(b, 1) == [(1, 1.0)] and index.search(c, 1) == [(2, 1.0)]
    assert index.search(a, 2)[0][1] == 0.0


def test_growing_keeps_the_vectors_added_before():
    index = VectorIndex(DIM)
    first, second = unit_rows(50), unit_rows(100, seed=1)
    index.add(np.arange(50), first)
    index.add(np.arange(50, 150), second)  # beyond the first allocation (64 rows)
    for row in (0, 25, 49):
        assert index.search(first[row], 1) == [(row, pytest.approx(1.0, abs=1e-6))]


def test_remove_counts_every_present_key_whatever_comes_first_and_keeps_moved_rows_addressable():
    index = VectorIndex(DIM)
    vectors = unit_rows(6)
    index.add([10, 20, 30, 40, 50, 60], vectors)
    assert index.remove([99, 20, 30]) == 2  # an unknown key first does not stop the rest
    assert sorted(index.keys().tolist()) == [10, 40, 50, 60]
    # 60 and 50 were moved into the holes: filters and later removals still find them
    assert keys_of(index.search(vectors[5], 2, allowed={60, 50})) == [60, 50]
    assert index.remove([60]) == 1 and index.remove([50]) == 1
    assert sorted(index.keys().tolist()) == [10, 40] and len(index) == 2


# -- which path answers ---------------------------------------------------------------------------


def test_whole_index_searches_above_the_threshold_go_through_the_graph():
    index, vectors = graph_index()
    hide_in_graph(index, 7)
    assert 7 not in keys_of(index.search(vectors[7], 5))
    assert keys_of(exact_answer(index, vectors[7], 5))[0] == 7


def test_a_graph_is_built_only_above_the_threshold(tmp_path):
    pytest.importorskip("hnswlib")
    index = VectorIndex(DIM, exact_threshold=10)
    vectors = unit_rows(11)
    index.add(np.arange(10), vectors[:10])
    index.save(tmp_path / "ten.idx", {})
    assert not index.uses_hnsw and read_header(tmp_path / "ten.idx")["hnsw"] is None
    index.add([10], vectors[10:])
    index.save(tmp_path / "eleven.idx", {})
    assert index.uses_hnsw and read_header(tmp_path / "eleven.idx")["hnsw"] is not None


@pytest.mark.parametrize("size", [1, 9, 10])  # up to the threshold (10) candidates
def test_a_filter_with_few_candidates_is_answered_exactly(size):
    index, vectors = graph_index()
    hide_in_graph(index, 7)
    allowed = {7, *range(100, 100 + size - 1)}
    assert keys_of(index.search(vectors[7], 3, allowed=allowed))[0] == 7


@pytest.mark.parametrize("kind", [list, np.array, frozenset])
def test_a_filter_above_the_threshold_goes_through_the_graph_and_keeps_to_it(kind):
    index, vectors = graph_index()
    hide_in_graph(index, 7)
    allowed = [7, *range(100, 140)]
    hits = index.search(vectors[7], 10, allowed=kind(allowed))
    assert len(hits) == 10 and 7 not in keys_of(hits) and set(keys_of(hits)) <= set(allowed)
    assert hits == exact_answer(index, vectors[7], 11, allowed=set(allowed))[1:]


def test_the_graph_path_applies_the_floor():
    index, vectors = graph_index()
    query = vectors[3]
    everything = index.search(query, 50)
    floor = everything[5][1]
    assert index.search(query, 50, floor=floor) == everything[:6]
    assert index.search(query, 50, allowed=set(range(200)), floor=floor) == everything[:6]


def test_when_the_graph_cannot_fill_k_the_answer_is_exact_with_the_floor():
    index, vectors = graph_index()
    allowed = set(range(100, 112))  # 12 candidates, above the threshold
    hide_in_graph(index, 100, 101)  # the graph can return only 10 of them: hnswlib fails
    query = vectors[100]
    everything = exact_answer(index, query, 12, allowed=allowed)
    assert keys_of(everything)[0] == 100 and len(everything) == 12
    assert index.search(query, 12, allowed=allowed) == everything
    floor = everything[6][1]
    assert index.search(query, 12, allowed=allowed, floor=floor) == everything[:7]


# -- the graph's slots after updates --------------------------------------------------------------


def test_an_updated_key_keeps_one_slot_in_the_graph():
    """With removed keys' slots free, hnswlib's replace_deleted once gave an updated key a second
    slot: its stale copy was found next to the new one (the key twice), and after the key was
    removed the stale copy still answered (KeyError in search)."""
    index, vectors = graph_index()
    index.remove([0, 1, 2])  # three free slots
    index.add([5], vectors[100][None, :])  # a live key takes another vector
    between = vectors[5] + vectors[100]
    hits = index.search(between, 4)
    assert len(set(keys_of(hits))) == 4 and hits == exact_answer(index, between, 4)
    assert index.search(vectors[5], 3) == exact_answer(index, vectors[5], 3)
    index.remove([5])
    assert 5 not in keys_of(index.search(vectors[5], 10))


def test_a_removed_key_revives_in_its_own_slot_and_leaves_the_removed_list(tmp_path):
    index, vectors = graph_index()
    index.remove([0, 1, 2])
    index.save(tmp_path / "removed.idx", {})
    assert read_header(tmp_path / "removed.idx")["hnsw_removed"] == [0, 1, 2]
    index.add([1], vectors[150][None, :])  # comes back with another vector while 0 and 2 stay free
    index.save(tmp_path / "revived.idx", {})
    assert read_header(tmp_path / "revived.idx")["hnsw_removed"] == [0, 2]
    hits = index.search(vectors[150], 3)
    assert keys_of(hits)[:2] == [1, 150] and len(set(keys_of(hits))) == 3
    index.remove([1])
    assert 1 not in keys_of(index.search(vectors[1], 10)) and 1 not in keys_of(index.search(vectors[150], 10))
    index.add([1], vectors[1][None, :])  # and again, with its first vector
    assert index.search(vectors[1], 1) == [(1, pytest.approx(1.0, abs=1e-6))]


def test_new_keys_take_the_slots_of_removed_ones():
    index, vectors = graph_index()
    slots = index._hnsw.get_current_count()
    index.remove([0, 1, 2])
    index.add([500, 501], unit_rows(2, seed=7))
    assert index._hnsw.get_current_count() == slots  # white-box: no new slot while free ones exist
    assert 0 not in keys_of(index.search(vectors[0], 10))
    assert keys_of(index.search(unit_rows(2, seed=7)[1], 1)) == [501]


# -- the file -------------------------------------------------------------------------------------


def split_file(path: Path) -> tuple[dict, bytes]:
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[8:16])
    return json.loads(data[16 : 16 + length]), data[16 + length :]


def write_file(path: Path, header, payload: bytes) -> None:
    text = json.dumps(header).encode()
    path.write_bytes(b"KNVECT\x00\x01" + struct.pack("<Q", len(text)) + text + payload)


@pytest.fixture
def saved(tmp_path) -> tuple[Path, dict]:
    index = VectorIndex(DIM)
    index.add([3, 1, 2], unit_rows(3))
    path = tmp_path / "vectors.idx"
    meta = {"model_id": "m:1", "count": 3}
    index.save(path, meta)
    return path, meta


def test_the_file_holds_int64_keys_and_float32_vectors_and_an_empty_index_round_trips(tmp_path):
    for n in (0, 3):
        index = VectorIndex(DIM)
        if n:
            index.add([3, 1, 2], unit_rows(3))
        path = tmp_path / f"{n}.idx"
        index.save(path, {"n": n})
        header = read_header(path)
        assert header["meta"] == {"n": n} and header["count"] == n and header["dim"] == DIM
        assert [(a["name"], a["dtype"], a["shape"]) for a in header["arrays"]] == [
            ("keys", "<i8", [n]),
            ("vectors", "<f4", [n, DIM]),
        ]
        loaded = VectorIndex.load(path, DIM, {"n": n})
        assert loaded is not None and loaded.keys().tolist() == [3, 1, 2][:n]


def test_read_header_answers_none_for_a_missing_or_foreign_file(tmp_path):
    assert read_header(tmp_path / "absent.idx") is None
    (tmp_path / "other.idx").write_bytes(b"not an index at all")
    assert read_header(tmp_path / "other.idx") is None


def test_load_keeps_the_saved_meta_and_the_given_thresholds(saved):
    path, meta = saved
    loaded = VectorIndex.load(path, DIM, {"model_id": "m:1"}, exact_threshold=77, ef_search=33)
    assert loaded.meta == meta and loaded.exact_threshold == 77 and loaded.ef_search == 33


def test_an_expected_none_does_not_match_a_missing_meta_key(saved):
    path, meta = saved
    assert VectorIndex.load(path, DIM, {**meta, "generation": None}) is None


def test_a_loaded_index_answers_a_large_filter():
    index = VectorIndex(DIM)
    vectors = unit_rows(10)
    index.add(np.arange(10), vectors)
    with tempfile.TemporaryDirectory() as folder:
        index.save(Path(folder) / "v.idx", {})
        loaded = VectorIndex.load(Path(folder) / "v.idx", DIM, {})
    assert loaded.search(vectors[4], 1, allowed=np.arange(5000))[0][0] == 4


def test_load_answers_none_when_the_arrays_disagree_with_the_header(saved):
    path, meta = saved
    header, payload = split_file(path)
    header["arrays"][1]["shape"] = [6, DIM // 2]  # the same bytes, another shape
    write_file(path, header, payload)
    assert VectorIndex.load(path, DIM, meta) is None


@pytest.mark.parametrize(
    "change",
    [{"format": 2}, {"payload_bytes": -1}, {"payload_bytes": "x"}, {"payload_bytes": None}],
)
def test_load_answers_none_for_a_header_it_does_not_know(saved, change):
    path, meta = saved
    header, payload = split_file(path)
    write_file(path, {**header, **change}, payload)
    assert VectorIndex.load(path, DIM, meta) is None and read_header(path) is None


def test_load_answers_none_for_a_header_that_is_not_an_object_or_a_file_cut_in_its_prefix(saved):
    path, meta = saved
    header, payload = split_file(path)
    write_file(path, [header], payload)
    assert VectorIndex.load(path, DIM, meta) is None
    path.write_bytes(b"KNVECT\x00\x01\x10\x00")  # the magic, then half the header length
    assert VectorIndex.load(path, DIM, meta) is None


def test_save_creates_missing_folders_and_its_temporary_file_beside_the_target(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))  # the system temp is unusable
    index = VectorIndex(DIM)
    index.add([1], unit_rows(1))
    path = tmp_path / "a" / "b" / "vectors.idx"
    index.save(path, {})
    assert [p.name for p in path.parent.iterdir()] == ["vectors.idx"]
    assert len(VectorIndex.load(path, DIM, {})) == 1


def test_a_failed_save_raises_its_error_and_leaves_no_temporary_file(tmp_path):
    index = VectorIndex(DIM)
    index.add([1], unit_rows(1))
    (tmp_path / "vectors.idx").mkdir()  # os.replace cannot put a file over a folder
    with pytest.raises(OSError):
        index.save(tmp_path / "vectors.idx", {})
    assert [p.name for p in tmp_path.iterdir()] == ["vectors.idx"]
