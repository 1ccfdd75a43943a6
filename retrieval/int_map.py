"""A map of non-negative ints to ints that answers many keys in one numpy gather.

The vector leg maps each hit's key twice (graph label -> row, embedding -> memory). One dict look-up
a hit is ~0.1 us on warm caches, but a search thread's caches are cold for a 100k-entry dict, and
100 hits cost ~0.07 ms a map (bench/README.md). Beside the dict this keeps a dense array (key ->
value, -1 where absent) while the keys stay dense enough for it, built on the first bulk look-up
and kept in step by every change after.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

DENSE_SLACK = 4  # the array may be this many times larger than the map ...
DENSE_MIN = 65_536  # ... or this many slots, whichever is more; sparser keys use the dict


class IntMap:
    """``dict[int, int]`` for keys >= 0, plus ``lookup(keys)`` answering an array of keys at once."""

    def __init__(self, items: Iterable[tuple[int, int]] = ()):
        self._dict: dict[int, int] = dict(items)
        self._dense: np.ndarray | None = None  # made by the first lookup
        self._sparse_at = 0  # the size at which the keys were last found too sparse for it

    def __len__(self) -> int:
        return len(self._dict)

    def __contains__(self, key: object) -> bool:
        return key in self._dict

    def __getitem__(self, key: int) -> int:
        return self._dict[key]

    def __iter__(self) -> Iterator[int]:
        return iter(self._dict)

    def get(self, key: int, default: int | None = None) -> int | None:
        return self._dict.get(key, default)

    def keys(self):
        return self._dict.keys()

    def items(self):
        return self._dict.items()

    def __setitem__(self, key: int, value: int) -> None:
        self._dict[key] = value
        dense = self._dense
        if dense is not None:
            if key >= dense.size:
                self._dense = dense = self._grown(key)
            if dense is not None:
                dense[key] = value

    def pop(self, key: int, default: int | None = None) -> int | None:
        value = self._dict.pop(key, default)
        if self._dense is not None and 0 <= key < self._dense.size:
            self._dense[key] = -1
        return value

    def update(self, items: Iterable[tuple[int, int]]) -> None:
        for key, value in items:
            self[key] = value

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The values of ``keys`` (all present) as an int64 array."""
        if self._dense is None and len(self._dict) >= 2 * self._sparse_at:
            self._dense = self._built()
            self._sparse_at = 0 if self._dense is not None else max(1, len(self._dict))
        if self._dense is None:
            return np.fromiter((self._dict[k] for k in keys.tolist()), np.int64, len(keys))
        return self._dense[keys]

    def _limit(self) -> int:
        return max(DENSE_MIN, DENSE_SLACK * len(self._dict))

    def _built(self) -> np.ndarray | None:
        if not self._dict:
            return np.full(0, -1, np.int64)
        keys = np.fromiter(self._dict.keys(), np.int64, len(self._dict))
        top = int(keys.max()) + 1
        if keys.min() < 0 or top > self._limit():
            return None
        dense = np.full(top, -1, np.int64)
        dense[keys] = np.fromiter(self._dict.values(), np.int64, len(self._dict))
        return dense

    def _grown(self, key: int) -> np.ndarray | None:
        """The array grown to hold ``key`` (by half again at least), or None when that would be too
        sparse (the dict answers from then on, until the next lookup rebuilds it if it can)."""
        if key < 0 or key >= self._limit():
            return None
        size = min(self._limit(), max(key + 1, int(self._dense.size * 1.5) + 1))
        return np.concatenate([self._dense, np.full(size - self._dense.size, -1, np.int64)])
