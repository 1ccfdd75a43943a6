"""BM25 leg: Okapi BM25 with the Lucene IDF and saturating query-term frequency, from the postings.

IDF is ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene, BM25+ style): it never goes negative, so a
term that half of a small store contains still counts for something, and it needs no corpus-wide
average (rank_bm25's BM25Okapi floors negative IDFs at 0.25 x the mean IDF, which an incremental
index cannot keep exact). Measured against log(N / df) (ATIRE) and a floored Robertson-Sparck
Jones IDF on the development sets, the three differ by under 0.002 nDCG@10 on the mean, so the
never-negative one stays. The term-frequency and length normalisation are textbook Okapi.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from . import lexical
from .lexical import LexicalIndex, best, contains, per_term, restrict, top_k

K1 = 1.2
B = 0.5  # chosen with k1 by leave-one-collection-out on the development sets (eval/baselines/README.md)
# Query-term saturation (Robertson's k3): a term said n times weighs (K3 + 1) n / (K3 + n), so 1, 1.33,
# 1.5 ... Chosen on the development sets (leave-one-collection-out; see eval/baselines/README.md):
# k3 = 1 is at least as good as counting each term once on every set (med +0.002, scifact +0.001),
# while raw counts (k3 unbounded, rank_bm25's choice) cost med 0.019 nDCG@10.
K3 = 1.0


FEW_KEYS = 64  # idf_coverage sums in Python floats up to this many documents (the same sums)

IDF_NAME = "lucene: ln(1 + (N - df + 0.5) / (df + 0.5))"


def idf(n_docs: int, df: int | np.ndarray) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def query_weight(count: int, k3: float = K3) -> float:
    """Okapi's saturating query-term frequency: 1 for a term said once, approaching k3 + 1."""
    return (k3 + 1.0) * count / (k3 + count)


def search(
    index: LexicalIndex,
    terms: list[str],
    k: int,
    allowed: np.ndarray | None = None,
    k1: float = K1,
    b: float = B,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[int, float]]:
    """Best ``k`` documents sharing at least one term, as (doc key, BM25 score).

    ``terms`` are the query tokens with repeats: a term the query says n times weighs
    ``query_weight(n)``, which long, verbose queries need. ``weights`` (term -> query weight)
    replaces them when given: a query expanded by feedback (``feedback.expanded_query``).
    """
    counts = Counter(terms)
    distinct = list(weights) if weights is not None else list(counts)
    if not distinct or index.n_docs == 0:
        return []
    postings = index.postings(distinct)
    avg_len = index.avg_len or 1.0
    if lexical.kernel is not None:  # one compiled call sums and ranks: the same floats as below
        lists = []
        for term in distinct:
            lexids, tfs = postings[term]
            if lexids.size:
                said = query_weight(counts[term]) if weights is None else weights[term]
                lists.append((lexids, _saturated(index, term, lexids, tfs, k1, b, avg_len),
                              said * idf(index.n_docs, lexids.size), True))
        return lexical.kernel.top_sums(lists, index.doc_key, k, allowed)
    all_ids, all_scores = [], []
    for term in distinct:
        lexids, tfs = postings[term]
        if lexids.size == 0:
            continue
        said = query_weight(counts[term]) if weights is None else weights[term]
        weight = said * idf(index.n_docs, lexids.size)  # df over the whole live store, not the filter
        saturated = _saturated(index, term, lexids, tfs, k1, b, avg_len)
        if allowed is None:
            all_ids.append(lexids)
            all_scores.append(_weighted(index, term, counts[term], weight, saturated) if weights is None
                              else weight * saturated)
            continue
        lexids, saturated = restrict(lexids, saturated, allowed)
        all_ids.append(lexids)
        all_scores.append(weight * saturated)
    if not all_ids:
        return []
    shortest = min((ids for ids in all_ids if ids.size >= k), key=len, default=None)
    top = max(int(ids[-1]) for ids in all_ids if ids.size) if any(ids.size for ids in all_ids) else None
    return top_k(index, np.concatenate(all_ids), np.concatenate(all_scores), k, lists=len(all_ids),
                 shortest=shortest, top=top)


def search_expanded(
    index: LexicalIndex,
    weights: Mapping[str, float],
    k: int,
    essential: list[str],
    allowed: np.ndarray | None = None,
    k1: float = K1,
    b: float = B,
) -> list[tuple[int, float]]:
    """``search(index, [], k, allowed, k1, b, weights=weights)``: the same documents and scores, found
    without summing every posting of every term when a bound shows it needless (MaxScore, Turtle &
    Flood 1995).

    A feedback query (``feedback.expanded_query``) adds a score of common words to the query's own
    ``essential`` terms. The documents holding an essential term are scored in full (the other
    terms' postings are read only where they meet those documents); if no document outside them
    can reach their k-th best, since it holds at most every other term at its highest saturated
    score, their best k is the answer. Otherwise (fewer than k of them, or the bound fails) the full
    pass runs. Each document's terms are summed in the same order as ``search`` sums them, so the
    scores are the same floats. On bench_encoder's 100k store the bound held for 47 of 50 queries,
    and the pass took 0.73 ms a query against 1.35 for the full one (bench/README.md)."""
    distinct = list(weights)
    if not distinct or index.n_docs == 0:
        return []
    postings = index.postings(distinct)
    avg_len = index.avg_len or 1.0
    essential = set(essential)
    if lexical.kernel is not None:  # one compiled call: the same bound, documents and floats as below
        lists, outside_bound = [], 0.0
        for term in distinct:
            lexids, tfs = postings[term]
            if lexids.size:
                weight = weights[term] * idf(index.n_docs, lexids.size)
                saturated = _saturated(index, term, lexids, tfs, k1, b, avg_len)
                if term not in essential:
                    outside_bound += weight * _highest(index, term, saturated)
                lists.append((lexids, saturated, weight, term in essential))
        found = lexical.kernel.top_sums(lists, index.doc_key, k, allowed, outside_bound)
        return found if found is not None else search(index, [], k, allowed, k1=k1, b=b, weights=weights)
    inside = np.zeros(index.doc_len.size, bool)
    parts, outside_bound = [], 0.0
    for term in distinct:
        lexids, tfs = postings[term]
        if lexids.size == 0:
            continue
        weight = weights[term] * idf(index.n_docs, lexids.size)
        saturated = _saturated(index, term, lexids, tfs, k1, b, avg_len)
        if term in essential:
            lexids, saturated = restrict(lexids, saturated, allowed)
            inside[lexids] = True
        else:
            outside_bound += weight * _highest(index, term, saturated)
        parts.append((term in essential, lexids, saturated, weight))
    candidates = np.flatnonzero(inside)
    if candidates.size < k:
        return search(index, [], k, allowed, k1=k1, b=b, weights=weights)
    all_ids, all_scores = [], []
    for is_essential, lexids, saturated, weight in parts:
        if not is_essential:  # only where it meets a candidate (which the filter allowed already)
            at = np.flatnonzero(inside[lexids])
            lexids, saturated = lexids[at], saturated[at]
        all_ids.append(lexids)
        all_scores.append(weight * saturated)
    # each document's terms in the order ``search`` adds them (a document is once in a list): its floats
    totals = np.bincount(np.concatenate(all_ids), weights=np.concatenate(all_scores))[candidates]
    kth = np.partition(totals, totals.size - k)[totals.size - k]
    # rounding slack: a sum of floats may exceed the sum of its terms' bounds by a few ulps
    if outside_bound * (1.0 + 1e-9) + 1e-12 >= kth:
        return search(index, [], k, allowed, k1=k1, b=b, weights=weights)
    return best(index, candidates, totals, k, kth)


_HIGHEST: "weakref.WeakKeyDictionary[Any, dict[str, tuple]]" = weakref.WeakKeyDictionary()


def _highest(index: LexicalIndex, term: str, saturated: np.ndarray) -> float:
    """The largest saturated score of a term's postings, remembered while they stay the same array."""
    return per_term(_HIGHEST, index, term, saturated, None,
                    lambda: float(saturated.max()) if saturated.size else 0.0)


def search_once(index: LexicalIndex, terms: list[str], k: int, k1: float = K1, b: float = B) -> list[tuple[int, float]]:
    """``search(index, terms, k, k1=k1, b=b)`` (no filter, no feedback weights), the same documents
    and scores, computed in one pass over all the terms' postings and remembering nothing.

    For a caller that changes the index between calls (a write's duplicate probe): each write
    moves the document count and the average length, so the per-term memos ``search`` keeps would
    be stale by the next call anyway, and the per-term array operations cost more than the
    arithmetic on a few thousand postings."""
    counts = Counter(terms)
    distinct = list(counts)
    if not distinct or index.n_docs == 0:
        return []
    postings = index.postings(distinct)
    held = [(term, postings[term]) for term in distinct if postings[term][0].size]
    if not held:
        return []
    avg_len = index.avg_len or 1.0
    if lexical.kernel is not None:  # one compiled call saturates, sums and ranks: the same floats as below
        return lexical.kernel.top_sums(
            [(ids, tfs, query_weight(counts[term]) * idf(index.n_docs, ids.size), True) for term, (ids, tfs) in held],
            index.doc_key, k, saturate=(index.doc_len, avg_len, k1, b))
    weights = np.array([query_weight(counts[term]) * idf(index.n_docs, ids.size) for term, (ids, _) in held])
    sizes = [ids.size for _, (ids, _) in held]
    lexids = np.concatenate([ids for _, (ids, _) in held])
    tf = np.concatenate([tfs for _, (_, tfs) in held]).astype(np.float64)
    # element by element the arithmetic of _saturated and _weighted, so every score is the same float
    norm = k1 * (1.0 - b + b * index.doc_len[lexids] / avg_len)
    scores = np.repeat(weights, sizes) * (tf * (k1 + 1.0) / (tf + norm))
    shortest = min((ids for _, (ids, _) in held if ids.size >= k), key=len, default=None)
    top = max(int(ids[-1]) for _, (ids, _) in held)
    return top_k(index, lexids, scores, k, lists=len(held), shortest=shortest, top=top)


_WEIGHTED: "weakref.WeakKeyDictionary[Any, dict[tuple[str, int], tuple]]" = weakref.WeakKeyDictionary()


def _weighted(index: LexicalIndex, term: str, count: int, weight: float, saturated: np.ndarray) -> np.ndarray:
    """``weight * saturated``, remembered while the saturated array (same object) and the weight stay:
    a term searched again costs no pass over its postings."""
    return per_term(_WEIGHTED, index, (term, count), saturated, weight, lambda: weight * saturated)


_SATURATED: "weakref.WeakKeyDictionary[Any, dict[str, tuple]]" = weakref.WeakKeyDictionary()


def _saturated(index: LexicalIndex, term: str, lexids: np.ndarray, tfs: np.ndarray, k1: float, b: float,
               avg_len: float) -> np.ndarray:
    """Each posting's ``tf (k1 + 1) / (tf + k1 (1 - b + b len / avg_len))``: the query-independent
    part of its score, remembered per index and term while the postings (the same array object),
    k1, b and the average length stay as they were, so a repeated term costs one multiplication."""
    def make() -> np.ndarray:
        tf = tfs.astype(np.float64)
        norm = k1 * (1.0 - b + b * index.doc_len[lexids] / avg_len)
        return tf * (k1 + 1.0) / (tf + norm)

    return per_term(_SATURATED, index, term, lexids, (k1, b, avg_len), make)


def coverages(index: LexicalIndex, terms: list[str], keys: list[int],
              matched: np.ndarray, asking: Collection[str] = ()) -> tuple[dict[int, float], dict[int, float]]:
    """``idf_coverage`` of the distinct ``terms``, and of those some live text holds or that are
    ``asking`` (empty when that is all of them), from one look at the postings and one pass over
    ``matched`` (``lexical.contains`` of these terms and keys): the same floats as two
    ``idf_coverage`` calls, as a term no text holds is matched by none and adds nothing to a sum."""
    postings = index.postings(terms)
    sizes = [postings[t][0].size for t in terms]
    known = [i for i, size in enumerate(sizes) if size or terms[i] in asking]
    if len(keys) > FEW_KEYS or not terms or not keys or index.n_docs == 0:
        coverage = idf_coverage(index, terms, keys, matched=matched)
        return coverage, {} if len(known) == len(terms) else idf_coverage(
            index, [terms[i] for i in known], keys, matched=matched[:, known])
    weights = [float(idf(index.n_docs, size)) for size in sizes]
    total = sum(weights)
    every = len(known) == len(terms)
    known_total = total if every else sum([weights[i] for i in known])
    coverage: dict[int, float] = {}
    known_coverage: dict[int, float] = {}
    for key, got in zip(keys, _few_sums(weights, matched)):  # idf_coverage's sums, divided twice
        coverage[int(key)] = got / total if total else 0.0
        if not every:
            known_coverage[int(key)] = got / known_total if known_total else 0.0
    return coverage, known_coverage


def _few_sums(weights: list[float], matched: np.ndarray) -> list[float]:
    """Each row's IDF weight of the terms it holds, in plain floats (a page of hits: faster than a
    dozen small array operations), term by term in query order: the same sums as the array path."""
    sums = []
    for row in matched.tolist():
        got = 0.0
        for weight, hit in zip(weights, row):
            got += weight * hit
        sums.append(got)
    return sums


def fusion_coverage(index: LexicalIndex, terms: list[str], keys: list[int]) -> tuple[dict[int, float], frozenset[int]]:
    """What evidence fusion reads of the lexical side: ``idf_coverage`` of each key, and the keys that
    hold exactly one of the query's distinct terms when it has two or more (``fusion.evidence``'s
    ``lone``), from one ``contains`` pass."""
    distinct = list(dict.fromkeys(terms))
    if not distinct or not keys or index.n_docs == 0:
        return {k: 0.0 for k in keys}, frozenset()
    matched = contains(index, distinct, keys)
    coverage = idf_coverage(index, distinct, keys, matched=matched)
    if len(distinct) < 2:
        return coverage, frozenset()
    held = matched.sum(axis=1).tolist()
    return coverage, frozenset(int(key) for key, n in zip(keys, held) if n == 1)


def idf_coverage(index: LexicalIndex, terms: list[str], keys: list[int],
                 matched: np.ndarray | None = None) -> dict[int, float]:
    """Each document's IDF-weighted share of the distinct query terms it contains (0-1).

    ``matched`` is ``lexical.contains(index, distinct terms, keys)`` when the caller has it already."""
    distinct = list(dict.fromkeys(terms))
    if not distinct or not keys or index.n_docs == 0:
        return {k: 0.0 for k in keys}
    postings = index.postings(distinct)
    weights = [float(idf(index.n_docs, postings[t][0].size)) for t in distinct]
    total = sum(weights)
    if not total:
        return {k: 0.0 for k in keys}
    if matched is None:
        matched = contains(index, distinct, keys)
    if len(keys) <= FEW_KEYS:
        return {int(key): got / total for key, got in zip(keys, _few_sums(weights, matched))}
    got = np.zeros(len(keys))
    for column, weight in enumerate(weights):  # term by term, in query order: the same sums as ever
        got += weight * matched[:, column]
    return dict(zip(map(int, keys), (got / total).tolist()))
