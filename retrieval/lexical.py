"""What the keyword and BM25 legs need from a lexical index, and the shared accumulation step."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Protocol

import numpy as np


def _compiled() -> Any:
    """The summing step compiled at install (retrieval/_postings.c: ``top_sums``), or None where it
    could not be built or ``KENNING_NUMPY_SUMS=1`` asks for numpy's (the same answers, slower)."""
    if os.environ.get("KENNING_NUMPY_SUMS", "").strip() not in ("", "0"):
        return None
    try:
        from . import _postings
    except ImportError:
        return None
    if not all(hasattr(_postings, name) for name in COMPILED_CALLS):
        return None  # built from an older _postings.c (an editable install not rebuilt since): numpy's path
    return _postings


COMPILED_CALLS = ("top_sums", "near_top", "join_rows")  # what the callers of ``kernel`` use


# the legs read it at call time, so a test (or a caller) can switch the numpy path on by setting it to None
kernel = _compiled()


SPARSE_SHARE = 16  # postings fewer than 1/16 of the lexid range are summed by sorting, not densely
MEMO_TERMS = 4096  # entries a per-term memo keeps per index before it starts afresh


class LexicalIndex(Protocol):
    """An inverted index addressed by dense int ``lexid``s (one per indexed text version). Its arrays
    are contiguous, lexids and keys int64 (what the compiled summing step reads).

    ``doc_key[lexid]`` is the caller's document key, ``doc_len`` its token count, ``doc_ts`` its
    last-update time (epoch seconds) and ``live`` whether that text version is current.
    """

    doc_key: np.ndarray
    doc_len: np.ndarray
    doc_ts: np.ndarray
    live: np.ndarray
    n_docs: int
    avg_len: float

    def postings(self, terms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Live (lexids ascending, term frequencies) per term; terms the index lacks map to empty arrays."""
        ...

    def lexids_of(self, keys: list[int]) -> np.ndarray:
        """The live lexid of each document key, -1 for a key the index does not hold."""
        ...


def per_term(memo: weakref.WeakKeyDictionary, index: LexicalIndex, key: Hashable, source: np.ndarray,
             params: Any, make: Callable[[], Any]) -> Any:
    """``make()`` remembered per index under ``key`` while ``source`` (a term's postings or an array
    made from them) is the same object and ``params`` are equal: a term searched again costs no pass
    over its postings. The legs' per-term arrays (saturated and weighted BM25 scores, their highest,
    the keyword leg's ``1 + ln(count)``) all keep this way."""
    held = memo.setdefault(index, {})
    known = held.get(key)
    if known is not None and known[0] is source and known[1] == params:
        return known[2]
    value = make()
    if len(held) > MEMO_TERMS:
        held.clear()
    held[key] = (source, params, value)
    return value


def unknown(index: LexicalIndex, terms: list[str]) -> list[str]:
    """The terms no live document holds (their postings are cached once a leg has read them): what
    ``labels.ceiling`` asks about."""
    postings = index.postings(terms)
    return [t for t in terms if not postings[t][0].size]


def contains(index: LexicalIndex, terms: list[str], keys: list[int]) -> np.ndarray:
    """Which documents contain which terms, from the postings alone (no text is read or tokenized):
    a boolean matrix, one row per key and one column per term. A binary search of each term's
    sorted postings per document, so the cost is the hits', not the posting lists' length."""
    out = np.zeros((len(keys), len(terms)), bool)
    if not keys or not terms:
        return out
    lexids = index.lexids_of(keys)
    known = lexids >= 0
    postings = index.postings(terms)
    for column, term in enumerate(terms):
        ids = postings[term][0]
        if ids.size:
            at = np.minimum(np.searchsorted(ids, lexids), ids.size - 1)
            out[:, column] = known & (ids[at] == lexids)
    return out


def restrict(lexids: np.ndarray, values: np.ndarray, allowed: np.ndarray | None):
    """Keep the postings whose lexid is allowed (a boolean mask over lexids), before ranking."""
    if allowed is None:
        return lexids, values
    keep = allowed[lexids]
    return lexids[keep], values[keep]


def accumulate(lexids: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(matched lexids ascending, summed scores, how many contributions each) without sorting.

    Dense bincounts over the lexid range cost O(postings + store size); ``np.unique`` sorts the
    postings, which is what dominated queries of frequent words on a large store.
    """
    counts = np.bincount(lexids)
    uniq = np.flatnonzero(counts)
    return uniq, np.bincount(lexids, weights=scores)[uniq], counts[uniq]


def top_k(index: LexicalIndex, lexids: np.ndarray, scores: np.ndarray, k: int,
          lists: int | None = None, shortest: np.ndarray | None = None,
          top: int | None = None) -> list[tuple[int, float]]:
    """Sum per-lexid contributions, then the best k as (doc key, score): score desc, key asc.

    ``lists``: how many posting lists were concatenated, so no lexid occurs more than that many
    times. Then the matched documents are never listed: every posting looks up its document's
    total, and the ``k * lists``-th largest of those is a cut no true top-k document falls below
    (at least k distinct documents reach it), so only the few postings above it are sorted.
    ``shortest``: the lexids of one of those lists (the rarest term's, best) holding at least k
    documents; the k-th best total among them is such a cut too, found without a pass over every
    posting, and the documents above it are read off the totals. ``top``: the largest lexid, when
    the caller knows it (the last of each sorted list), so it is not searched for.
    """
    if lexids.size == 0 or k <= 0:
        return []
    if lexids.size * SPARSE_SHARE < (int(lexids.max()) if top is None else top):
        # few postings in a large lexid range (a write's duplicate probe of rare terms): sum over the
        # distinct lexids (the same sums, in the same order) instead of an array as long as the store
        uniq, inverse = np.unique(lexids, return_inverse=True)
        return best(index, uniq, np.bincount(inverse, weights=scores), k)
    if lists is None:
        uniq, totals, _ = accumulate(lexids, scores)
        return best(index, uniq, totals, k)
    totals = np.bincount(lexids, weights=scores)  # the same sums, in the same order, as accumulate
    if shortest is not None and shortest.size >= k:
        reached = totals[shortest]
        cut = np.partition(reached, reached.size - k)[reached.size - k]
        if cut > 0:  # every document at or above it was matched (a match scores above 0) ...
            # ... so it is among the postings: look there, not along the whole lexid range
            uniq = distinct(lexids[totals[lexids] >= cut])
            return best(index, uniq, totals[uniq], k)
    seen = totals[lexids]
    m = k * lists
    if seen.size > m:
        cut = np.partition(seen, seen.size - m)[seen.size - m]
        lexids = lexids[seen >= cut]
    uniq = distinct(lexids)
    return best(index, uniq, totals[uniq], k)


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by sorting: numpy 2.4's default hash table took ~1 ms for the few
    thousand lexids of a write's duplicate probe, more than ten times the sort."""
    if values.size < 2:
        return values.copy()
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def best(index: LexicalIndex, uniq: np.ndarray, totals: np.ndarray, k: int,
         kth: float | None = None) -> list[tuple[int, float]]:
    """The best k of already summed (distinct lexid, total) pairs: score desc, key asc (``kth``: the
    k-th best total, when the caller found it already)."""
    if len(totals) > k:
        # everything scoring at least the k-th best survives, so ties at the cut stay decidable by key
        cut = np.partition(totals, len(totals) - k)[len(totals) - k] if kth is None else kth
        keep = totals >= cut
        totals, uniq = totals[keep], uniq[keep]
    keys = index.doc_key[uniq]
    order = np.lexsort((keys, -totals))[:k]
    return list(zip(keys[order].tolist(), totals[order].tolist()))  # Python ints and floats, as int() and float() give
