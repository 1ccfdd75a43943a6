"""The vector leg: cosine search over int64 keys, exact below a size threshold, hnswlib above it.

The index always keeps the unit vectors in a numpy matrix: exact search needs them, a filtered
query over a small allowed set is answered exactly from them, hnswlib candidates are re-scored
from them (so both paths report identical cosines and honour the floor the same way), and the
graph can be rebuilt from them. Above ``EXACT_THRESHOLD`` live vectors an HNSW graph is kept
alongside and updated incrementally (add, mark_deleted, resize when full).

The persisted file is a derived cache: one file, written atomically, with a JSON header
(format, dim, caller's meta such as model id / count / db generation, payload length and CRC)
followed by the raw arrays. ``load`` answers None for anything it cannot trust, and the caller
rebuilds from its stored embeddings.

hnswlib is imported lazily, only when the graph is first needed, so that importing this
module stays cheap and works without the embeddings extra. It is optional even then: without it
the index stays exact at every size (correct, slower above the threshold), and a saved graph is
ignored on load.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import struct
import tempfile
import zlib
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

import numpy as np

from .int_map import IntMap

# Chosen with bench/bench_vector.py on real MiniLM vectors (2 shared cores, median ms, k=10):
#   live vectors    1k    5k    10k   20k   50k   100k
#   exact          0.16  0.54  1.0   1.8   9.7   11-30
#   hnswlib ef=64  0.14  0.19  0.19  0.21  0.25  0.26-0.32  (recall@10 1.00 .. 0.98)
# hnswlib is faster from ~1k on, but below 10k exact search stays under ~1 ms, is exact, and
# needs no graph to build (10k adds take ~3 s) or persist. With a filter at 100k, exact over
# the allowed rows beats hnswlib's filter callback up to ~10k allowed keys (5.3 vs 6.1 ms;
# 1k allowed: 0.7 vs 12 ms), so the same threshold applies to the number of candidates.
EXACT_THRESHOLD = 10_000
# HNSW parameters; ef_search 64 keeps recall@10 >= 0.98 up to 100k (32 falls to 0.95 there).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
EF_SEARCH = 64
_HNSW_SEED = 100
# Graphs are built on one thread: with several, the links depend on the threads' interleaving, so the
# same vectors gave a different graph (and npl's hybrid nDCG moved .5008/.5009 between runs); one
# thread makes it a function of the vectors and their order, at ~1.4x the build time (12k: 3.7 -> 5.1 s).
_BUILD_THREADS = 1
_GROWTH = 1.5
# Rows per BLAS call in exact search; OpenBLAS threads sgemv above roughly 1500 x 384 (measured).
_SCORE_BLOCK = 1024
# Allowed sets up to this size are mapped to rows key by key; larger ones by a sorted-key search.
_DICT_LOOKUP_MAX = 2048
# float32 dot products of unit vectors agree to ~1e-6; candidates this close to the cut are re-ranked.
_TIE_SLACK = 1e-5

_MAGIC = b"KNVECT\x00\x01"
_FORMAT = 1
_HEADER_LEN = struct.Struct("<Q")

Hit = tuple[int, float]


class VectorIndex:
    """Cosine (or inner-product) nearest neighbours over int64 keys; not thread-safe for writes."""

    def __init__(
        self,
        dim: int,
        space: str = "cosine",
        exact_threshold: int = EXACT_THRESHOLD,
        ef_search: int = EF_SEARCH,
    ):
        if space not in ("cosine", "ip"):
            raise ValueError(f"space must be 'cosine' or 'ip', not {space!r}")
        if dim <= 0:
            raise ValueError("dim must be positive")
        self.dim = dim
        self.space = space
        self.exact_threshold = exact_threshold
        self.ef_search = ef_search
        self._keys = np.empty(0, dtype=np.int64)
        self._vectors = np.empty((0, dim), dtype=np.float32)
        self._count = 0
        self._row = IntMap()  # key -> row
        self._by_key: tuple[np.ndarray, np.ndarray] | None = None
        self._hnsw = None
        # Keys marked deleted in the graph; re-adding one must unmark it first.
        self._hnsw_removed: set[int] = set()
        self.meta: dict = {}  # what a loaded file was saved with

    # -- contents ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: object) -> bool:
        return key in self._row

    def keys(self) -> np.ndarray:
        """The live keys, in storage order (a copy)."""
        return self._keys[: self._count].copy()

    @property
    def uses_hnsw(self) -> bool:
        """True when searches over the whole index go through the HNSW graph."""
        return self._hnsw is not None and self._count > self.exact_threshold

    def add(self, keys: Iterable[int], vectors: np.ndarray) -> None:
        """Insert or replace vectors; a key given twice keeps its last vector."""
        keys = np.asarray(keys if isinstance(keys, np.ndarray) else list(keys), dtype=np.int64)
        vectors = np.asarray(vectors, dtype=np.float32)
        if keys.ndim != 1 or vectors.shape != (len(keys), self.dim):
            raise ValueError(f"expected vectors of shape ({len(keys)}, {self.dim}), got {vectors.shape}")
        if len(keys) == 0:
            return
        if self.space == "cosine":
            vectors = _unit(vectors)
        # Last occurrence wins: keep the final index of each distinct key.
        _, last_from_end = np.unique(keys[::-1], return_index=True)
        keep = np.sort(len(keys) - 1 - last_from_end)
        keys, vectors = keys[keep], vectors[keep]

        fresh = np.fromiter((key not in self._row for key in keys.tolist()), dtype=bool, count=len(keys))
        self._reserve(self._count + int(fresh.sum()))
        self._by_key = None
        for i, key in enumerate(keys.tolist()):
            row = self._row.get(key)
            if row is None:
                row = self._count
                self._row[key] = row
                self._keys[row] = key
                self._count += 1
            self._vectors[row] = vectors[i]

        if self._hnsw is not None:
            self._hnsw_add(keys, vectors, fresh)
        elif self._count > self.exact_threshold and hnswlib_installed():
            self._build_hnsw()

    def remove(self, keys: Iterable[int]) -> int:
        """Drop keys (unknown ones are ignored); returns how many were present."""
        removed = 0
        self._by_key = None
        for key in (int(k) for k in keys):
            row = self._row.pop(key, None)
            if row is None:
                continue
            last = self._count - 1
            if row != last:  # move the last row into the hole
                moved = int(self._keys[last])
                self._keys[row] = moved
                self._vectors[row] = self._vectors[last]
                self._row[moved] = row
            self._count -= 1
            removed += 1
            if self._hnsw is not None:
                self._hnsw.mark_deleted(key)
                self._hnsw_removed.add(key)
        return removed

    # -- search -----------------------------------------------------------------------------

    def search(
        self,
        query_vec: np.ndarray,
        k: int,
        allowed: Collection[int] | np.ndarray | None = None,
        floor: float | None = None,
    ) -> list[Hit]:
        """The k best ``(key, cosine)`` pairs, best first, ties by key, only cosine >= floor.

        ``allowed`` restricts the candidates before ranking, so a filtered query still
        returns k hits when k allowed keys clear the floor.
        """
        return self.search_in_steps(query_vec, k, allowed, floor)()

    def search_in_steps(
        self,
        query_vec: np.ndarray,
        k: int,
        allowed: Collection[int] | np.ndarray | None = None,
        floor: float | None = None,
    ) -> Callable[[], list[Hit]]:
        """``search`` in two steps: this call walks the graph (which releases the GIL) or scans
        exactly, and scores what it found while those rows are in cache; the returned call ranks
        them, in Python. A worker thread can take the first step beside a thread running Python and
        leave the second to that thread, so the GIL changes hands as few times as it can (bench/
        README.md, "The 100k hybrid with its vector leg, minus the query's encoding")."""
        query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise ValueError(f"query has dimension {query.shape[0]}, index has {self.dim}")
        if k <= 0 or self._count == 0:
            return lambda: []
        if self.space == "cosine":
            query = _unit(query[None, :])[0]
        rows = None
        if allowed is not None:
            rows = self._rows_of(allowed)
            if len(rows) == 0:
                return lambda: []
        candidates = self._count if rows is None else len(rows)
        if self._hnsw is None or candidates <= self.exact_threshold:
            hits = self._exact(query, k, rows, floor)
            return lambda: hits
        if rows is not None and not isinstance(allowed, (set, frozenset)):
            allowed = set(self._keys[rows].tolist())  # hnswlib's filter asks key by key
        labels = self._approximate(query, min(k, candidates), allowed)
        if labels is None:  # the graph could not produce k results (heavy filtering): be exact
            return lambda: self._exact(query, k, rows, floor)
        found = self._row.lookup(labels)
        scores = self._scores_of(found, query)  # the rows the walk just read, while they are in cache
        return lambda: self._ranked(found, scores, min(k, candidates), floor)

    def _rows_of(self, allowed: Collection[int] | np.ndarray) -> np.ndarray:
        """Sorted rows of the allowed keys that are in the index (unknown keys are ignored)."""
        if not isinstance(allowed, np.ndarray) and len(allowed) <= _DICT_LOOKUP_MAX:
            get = self._row.get
            rows = [row for row in map(get, map(int, allowed)) if row is not None]
            return np.unique(np.asarray(rows, dtype=np.int64))
        wanted = np.asarray(allowed if isinstance(allowed, np.ndarray) else list(allowed), dtype=np.int64).ravel()
        if self._by_key is None:  # sorted keys and their rows, rebuilt after a change
            order = np.argsort(self._keys[: self._count], kind="stable")
            self._by_key = (self._keys[: self._count][order], order)
        sorted_keys, rows = self._by_key
        at = np.minimum(np.searchsorted(sorted_keys, wanted), len(sorted_keys) - 1)
        return np.unique(rows[at[sorted_keys[at] == wanted]])

    def _exact(self, query: np.ndarray, k: int, rows: np.ndarray | None, floor: float | None) -> list[Hit]:
        if rows is None:
            rows = np.arange(self._count)
        scores = self._scores(rows, query)
        cut = -np.inf if floor is None else floor
        if len(scores) > k:
            cut = max(cut, np.partition(scores, len(scores) - k)[len(scores) - k])
        # BLAS may round identical rows differently; keep near-ties and let _rank decide.
        return self._rank(rows[scores >= cut - _TIE_SLACK], query, k, floor)

    def _scores(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Dot products in row blocks small enough that BLAS stays single-threaded: a threaded
        gemv waits for a second core, which on a busy machine costs a scheduler tick (~16 ms)."""
        out = np.empty(len(rows), dtype=np.float32)
        contiguous = len(rows) == self._count and (len(rows) == 0 or rows[-1] == len(rows) - 1)
        for start in range(0, len(rows), _SCORE_BLOCK):
            stop = min(start + _SCORE_BLOCK, len(rows))
            block = self._vectors[start:stop] if contiguous else self._vectors[rows[start:stop]]
            np.matmul(block, query, out=out[start:stop])
        return out

    def _approximate(self, query: np.ndarray, k: int, allowed: set | frozenset | None) -> np.ndarray | None:
        """The graph's k nearest keys (None: it could not find k)."""
        self._hnsw.set_ef(max(self.ef_search, k))
        try:
            labels, _ = self._hnsw.knn_query(
                query[None, :], k=k, filter=None if allowed is None else allowed.__contains__
            )
        except RuntimeError:
            return None
        return labels[0]

    def _rank(self, rows: np.ndarray, query: np.ndarray, k: int, floor: float | None) -> list[Hit]:
        """Score candidate rows row by row (einsum, not BLAS), so equal vectors get equal scores
        and ties fall to the smaller key on every path; then apply the floor and cut at k."""
        return self._ranked(rows, self._scores_of(rows, query), k, floor)

    def _scores_of(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        scores = np.einsum("ij,j->i", self._vectors[rows], query)
        if self.space == "cosine":  # rounding can push a self-match just past 1
            np.clip(scores, -1.0, 1.0, out=scores)
        return scores

    def _ranked(self, rows: np.ndarray, scores: np.ndarray, k: int, floor: float | None) -> list[Hit]:
        keys = self._keys[rows]
        if floor is not None:
            keep = scores >= floor
            keys, scores = keys[keep], scores[keep]
        order = np.lexsort((keys, -scores))[:k]
        return list(zip(keys[order].tolist(), scores[order].tolist()))

    # -- the HNSW graph ---------------------------------------------------------------------

    def _build_hnsw(self) -> None:
        import hnswlib

        graph = hnswlib.Index(space=self.space, dim=self.dim)
        graph.init_index(
            max_elements=max(int(self._count * _GROWTH), 1024),
            M=HNSW_M,
            ef_construction=HNSW_EF_CONSTRUCTION,
            random_seed=_HNSW_SEED,
            allow_replace_deleted=True,
        )
        graph.add_items(self._vectors[: self._count], self._keys[: self._count], num_threads=_BUILD_THREADS)
        self._hnsw = graph
        self._hnsw_removed = set()

    def _hnsw_add(self, keys: np.ndarray, vectors: np.ndarray, fresh: np.ndarray) -> None:
        """Keys the graph holds (live, or removed and revived) are updated in their own slot; only
        new keys may take a removed key's slot. hnswlib's ``replace_deleted`` would put a label it
        already holds into a second slot, whose stale copy is then found twice, or after removal."""
        in_place = ~fresh
        for i, key in enumerate(keys.tolist()):
            if fresh[i] and key in self._hnsw_removed:
                self._hnsw_removed.discard(key)
                try:
                    self._hnsw.unmark_deleted(key)
                    in_place[i] = True
                except RuntimeError:
                    pass  # its slot was reused by another key; it is added afresh below
        needed = self._hnsw.get_current_count() + int(np.count_nonzero(~in_place))
        if needed > self._hnsw.get_max_elements():
            self._hnsw.resize_index(max(needed, int(self._hnsw.get_max_elements() * _GROWTH)))
        if in_place.any():
            self._hnsw.add_items(vectors[in_place], keys[in_place], num_threads=_BUILD_THREADS)
        if not in_place.all():
            self._hnsw.add_items(vectors[~in_place], keys[~in_place], num_threads=_BUILD_THREADS, replace_deleted=True)

    def _reserve(self, capacity: int) -> None:
        if capacity <= len(self._keys):
            return
        size = max(capacity, int(len(self._keys) * _GROWTH), 64)
        keys = np.empty(size, dtype=np.int64)
        vectors = np.empty((size, self.dim), dtype=np.float32)
        keys[: self._count] = self._keys[: self._count]
        vectors[: self._count] = self._vectors[: self._count]
        self._keys, self._vectors = keys, vectors

    # -- persistence ------------------------------------------------------------------------

    def save(self, path: str | Path, meta: dict) -> None:
        """Write the index atomically (temp file + os.replace) with the caller's meta."""
        path = Path(path)
        arrays = {"keys": self._keys[: self._count], "vectors": self._vectors[: self._count]}
        graph_params = {}
        if self._hnsw is not None:
            state = self._hnsw.__getstate__()[0]
            for name, value in state.items():
                if isinstance(value, np.ndarray):
                    arrays[f"hnsw.{name}"] = value
                else:
                    graph_params[name] = value
        layout, offset, crc = [], 0, 0
        for name, array in arrays.items():
            array = np.ascontiguousarray(array)
            layout.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape), "offset": offset})
            arrays[name] = array.reshape(-1).view(np.uint8)  # its bytes (a memoryview refuses an empty array)
            offset += array.nbytes
            crc = zlib.crc32(arrays[name], crc)
        header = json.dumps(
            {
                "format": _FORMAT,
                "dim": self.dim,
                "space": self.space,
                "count": self._count,
                "meta": meta,
                "hnsw": graph_params or None,
                "hnsw_removed": sorted(self._hnsw_removed),
                "arrays": layout,
                "payload_bytes": offset,
                "crc32": crc,
            }
        ).encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(_MAGIC + _HEADER_LEN.pack(len(header)) + header)
                for array in arrays.values():
                    out.write(array)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(
        cls,
        path: str | Path,
        dim: int,
        expected_meta: dict,
        exact_threshold: int = EXACT_THRESHOLD,
        ef_search: int = EF_SEARCH,
    ) -> VectorIndex | None:
        """The saved index, or None when it is missing, damaged, of another dim, or its meta differs.

        Every key of ``expected_meta`` (e.g. model id, count, db generation) must equal the
        saved value; the caller rebuilds from its stored embeddings on None.
        """
        try:
            data = _read(Path(path))
        except OSError:
            return None
        if data is None:
            return None
        header, arrays = data
        wanted = json.loads(json.dumps(expected_meta))
        saved = header.get("meta") or {}
        if header.get("dim") != dim or any(saved.get(key, _MISSING) != value for key, value in wanted.items()):
            return None
        try:
            index = cls(dim, header["space"], exact_threshold, ef_search)
            keys, vectors = arrays["keys"], arrays["vectors"]
            if keys.shape != (header["count"],) or vectors.shape != (header["count"], dim):
                return None
            # each array was read into its own buffer: no copy (the graph's are freed once hnswlib has its own)
            index._keys, index._vectors, index._count = keys, vectors, len(keys)
            index._row = IntMap((key, row) for row, key in enumerate(keys.tolist()))
            index.meta = saved  # the caller's provenance, for checks beyond expected_meta
            if len(index._row) != len(keys):
                return None
            if header["hnsw"] is not None and hnswlib_installed():
                import hnswlib

                params = dict(header["hnsw"])
                params.update({name[5:]: array for name, array in arrays.items() if name.startswith("hnsw.")})
                index._hnsw = hnswlib.Index(params)
                index._hnsw_removed = set(header["hnsw_removed"])
        except (KeyError, TypeError, ValueError, RuntimeError):
            return None
        return index


_MISSING = object()


def read_header(path: str | Path) -> dict | None:
    """The header of a saved index (its meta included) if the file is one we wrote intact, else None."""
    try:
        data = _read(Path(path))
    except OSError:
        return None
    return None if data is None else data[0]


def hnswlib_installed() -> bool:
    """Whether the graph can be built; without hnswlib every search is exact."""
    return importlib.util.find_spec("hnswlib") is not None


def _read(path: Path) -> tuple[dict, dict[str, np.ndarray]] | None:
    """Header and arrays of a saved index, or None if the file is not one we wrote intact (nor a
    regular file: a FIFO in its place would block the read forever, so it is opened non-blocking
    and refused by its type). Each array is read into a buffer of its own, checksummed as it comes:
    one whole-payload buffer and a copy out of it doubled the peak memory of a load (~324 MB more
    for a 100k-vector file with its graph)."""
    with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            return None
        prefix = handle.read(len(_MAGIC) + _HEADER_LEN.size)
        if len(prefix) != len(_MAGIC) + _HEADER_LEN.size or not prefix.startswith(_MAGIC):
            return None
        (header_len,) = _HEADER_LEN.unpack(prefix[len(_MAGIC) :])
        try:
            header = json.loads(handle.read(header_len))
        except ValueError:
            return None
        if not isinstance(header, dict) or header.get("format") != _FORMAT:
            return None
        size = header.get("payload_bytes")
        if not isinstance(size, int) or size < 0 or len(prefix) + header_len + size != status.st_size:
            return None
        arrays: dict[str, np.ndarray] = {}
        crc = offset = 0
        try:
            for entry in header["arrays"]:
                shape, dtype = [int(n) for n in entry["shape"]], np.dtype(entry["dtype"])
                count = int(np.prod(shape, dtype=np.int64))
                if entry["offset"] != offset or count < 0 or offset + count * dtype.itemsize > size:
                    return None  # checked before allocating: a damaged header never asks for more than the file
                raw = (array := np.empty(count, dtype)).view(np.uint8)
                if handle.readinto(raw) != raw.size:
                    return None
                crc = zlib.crc32(raw, crc)
                offset += raw.size
                arrays[entry["name"]] = array.reshape(shape)
        except (KeyError, TypeError, ValueError):
            return None
        if offset != size or handle.read(1):
            return None
    if crc != header.get("crc32"):
        return None
    return header, arrays


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)
