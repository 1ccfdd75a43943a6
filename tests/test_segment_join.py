"""Reading a term's stored segments (store/lexicon.py ``_read_terms``): the compiled join
(retrieval/_postings.c ``join_rows``) gives numpy's arrays and the same damaged terms, on real
SQLite rows that are sound, and on rows damaged every way a check looks for."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from kenning.retrieval import lexical
from kenning.store import lexicon
from kenning.store.lexicon import MEMORY_TABLES, SEGMENT_DOCS, _read_terms

kernel = lexical.kernel
needs_kernel = pytest.mark.skipif(kernel is None, reason="the compiled summing step is not built here")
TERMS = [f"t{i}" for i in range(40)]


def _blob(ids: np.ndarray, tfs: np.ndarray) -> bytes:
    return ids.astype(np.int32).tobytes() + tfs.astype(np.int32).tobytes()


def _damage(rng: np.random.Generator, seg: int, ids: np.ndarray, tfs: np.ndarray) -> tuple[object, object]:
    """One row spoiled one of the ways ``_read_terms`` and ``_checked_postings`` check for."""
    kind = rng.integers(9)
    if kind == 0:
        return seg, "not a blob"
    if kind == 1:
        return seg, b""
    if kind == 2:
        return seg, _blob(ids, tfs) + b"\x00\x01\x02"  # not whole postings
    if kind == 3:
        return str(seg), _blob(ids, tfs)  # the segment stored as text
    if kind == 4:
        return seg + 1, _blob(ids, tfs)  # its lexids lie in another segment
    if kind == 5:
        return seg, _blob(ids[::-1].copy(), tfs)  # first after last
    if kind == 6:
        spoiled = tfs.copy()
        spoiled[rng.integers(spoiled.size)] = 0  # a frequency below 1
        return seg, _blob(ids, spoiled)
    if kind == 7 and ids.size > 2:
        shuffled = ids.copy()
        shuffled[1], shuffled[-2] = shuffled[-2], shuffled[1]  # out of order inside the row
        return seg, _blob(shuffled, tfs)
    return 2**62, _blob(ids, tfs)  # a segment no lexid can lie in


def _store(rng: np.random.Generator, damaged_share: float) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE lex_segments (term TEXT NOT NULL, seg INTEGER NOT NULL, postings BLOB NOT NULL, "
                 "PRIMARY KEY (term, seg)) WITHOUT ROWID")
    conn.execute("CREATE TABLE lex_delta (term TEXT NOT NULL, lexid INTEGER NOT NULL, tf INTEGER NOT NULL)")
    rows = []
    for term in TERMS:
        for seg in sorted(rng.choice(6, size=rng.integers(1, 5), replace=False).tolist()):
            size = int(rng.integers(1, 60))
            ids = np.sort(rng.choice(SEGMENT_DOCS, size=size, replace=False)) + seg * SEGMENT_DOCS
            tfs = rng.integers(1, 5, size)
            stored_seg, blob = (_damage(rng, seg, ids, tfs) if rng.random() < damaged_share
                                else (seg, _blob(ids, tfs)))
            rows.append((term, stored_seg, blob))
    conn.executemany("INSERT OR REPLACE INTO lex_segments VALUES (?, ?, ?)", rows)
    return conn


def _both(conn: sqlite3.Connection, terms: list[str], monkeypatch) -> tuple[tuple, tuple]:
    compiled = _read_terms(conn, MEMORY_TABLES, terms)
    monkeypatch.setattr(lexical, "kernel", None)
    plain = _read_terms(conn, MEMORY_TABLES, terms)
    monkeypatch.setattr(lexical, "kernel", kernel)
    return compiled, plain


def _same(compiled: tuple, plain: tuple) -> None:
    arrays, delta, damaged = compiled
    want_arrays, want_delta, want_damaged = plain
    assert damaged == want_damaged
    assert delta == want_delta
    assert arrays.keys() == want_arrays.keys()
    for term, (ids, tfs) in want_arrays.items():
        assert arrays[term][0].dtype == np.int64 and arrays[term][1].dtype == np.int32
        assert np.array_equal(arrays[term][0], ids) and np.array_equal(arrays[term][1], tfs)


@needs_kernel
@pytest.mark.parametrize("damaged_share", [0.0, 0.1, 0.5])
def test_the_compiled_join_reads_what_numpy_reads(monkeypatch, damaged_share):
    rng = np.random.default_rng(int(damaged_share * 100) + 7)
    for _ in range(25):
        conn = _store(rng, damaged_share)
        terms = rng.choice(TERMS, size=int(rng.integers(1, 12)), replace=False).tolist() + ["absent"]
        compiled, plain = _both(conn, terms, monkeypatch)
        _same(compiled, plain)
        if damaged_share == 0.0:  # sound rows: every term joined, in order, nothing damaged
            assert not compiled[2] and set(compiled[0]) == set(terms) - {"absent"}
            assert all(np.all(np.diff(ids) > 0) for ids, _ in compiled[0].values())


@needs_kernel
def test_a_damaged_row_costs_only_its_own_postings_and_disorder_costs_the_term():
    good = _blob(np.array([1, 5, 9]), np.array([1, 2, 1]))
    later = _blob(np.array([SEGMENT_DOCS + 2]), np.array([3]))
    rows = [("a", 0, good), ("a", 1, b"\x01\x02\x03"), ("a", 2, later),  # a's middle row is not whole postings
            ("b", 0, good), ("b", 0, good),  # b repeats its lexids: not ascending, left out whole
            ("c", 1, good)]  # c's only row lies outside its segment
    ids, tfs, spans, damaged = kernel.join_rows(rows, SEGMENT_DOCS)
    ids, tfs = np.frombuffer(ids, np.int64), np.frombuffer(tfs, np.int32)
    assert [s[0] for s in spans] == ["a"] and sorted(damaged) == ["a", "b", "c"]
    _, start, end = spans[0]
    assert ids[start:end].tolist() == [1, 5, 9] and tfs[start:end].tolist() == [1, 2, 1]


@needs_kernel
def test_bad_arguments_are_errors_not_crashes():
    with pytest.raises(TypeError):
        kernel.join_rows([("a", 0)], SEGMENT_DOCS)
    with pytest.raises(TypeError):
        kernel.join_rows(5, SEGMENT_DOCS)
    with pytest.raises(ValueError):
        kernel.join_rows([], 0)
    assert kernel.join_rows([], SEGMENT_DOCS) == (bytearray(), bytearray(), [], [])


def test_the_numpy_path_stays_the_reference(monkeypatch):
    """Without the compiled step ``_read_terms`` takes numpy's path, which the tests above compare with."""
    monkeypatch.setattr(lexical, "kernel", None)
    called = []
    real = lexicon._checked_postings
    monkeypatch.setattr(lexicon, "_checked_postings", lambda *a: (called.append(1), real(*a))[1])
    conn = _store(np.random.default_rng(3), 0.0)
    arrays, _, damaged = _read_terms(conn, MEMORY_TABLES, TERMS[:5])
    assert called and set(arrays) == set(TERMS[:5]) and not damaged
