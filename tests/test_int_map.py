"""IntMap answers every key as the dict it mirrors does, through changes, growth and sparse keys."""

import numpy as np

from kenning.retrieval import int_map
from kenning.retrieval.int_map import IntMap


def test_lookups_agree_with_the_dict_through_random_changes():
    rng = np.random.default_rng(3)
    m, mirror = IntMap(), {}
    for step in range(3000):
        if mirror and rng.random() < 0.3:
            key = int(rng.choice(list(mirror)))
            assert m.pop(key) == mirror.pop(key)
        else:
            key, value = int(rng.integers(0, 5000)), int(rng.integers(0, 10**6))
            m[key] = mirror[key] = value
        if step % 50 == 0 and mirror:
            keys = np.array(list(mirror), np.int64)
            assert m.lookup(keys).tolist() == [mirror[k] for k in keys.tolist()]
    assert dict(m.items()) == mirror and len(m) == len(mirror) and sorted(m) == sorted(mirror)


def test_keys_too_sparse_for_an_array_are_answered_by_the_dict(monkeypatch):
    monkeypatch.setattr(int_map, "DENSE_MIN", 16)
    m = IntMap([(1, 10), (2, 20)])
    assert m.lookup(np.array([2, 1])).tolist() == [20, 10] and m._dense is not None
    m[10**9] = 5  # far beyond the array: dropped, the dict answers
    assert m._dense is None
    assert m.lookup(np.array([10**9, 1])).tolist() == [5, 10]
    assert m.pop(10**9) == 5 and m.get(10**9) is None and 10**9 not in m


def test_an_array_grows_with_keys_a_little_past_its_end():
    m = IntMap([(0, 7)])
    m.lookup(np.array([0]))
    for key in range(1, 200):
        m[key] = key * 2
    assert m.lookup(np.arange(200)).tolist() == [7] + [k * 2 for k in range(1, 200)]
