"""BM25 leg: Okapi BM25 with the Lucene IDF, scored from the persistent postings.

IDF is ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene, BM25+ style): it never goes negative, so a
term that half of a small store contains still counts for something, and it needs no corpus-wide
average (rank_bm25's BM25Okapi floors negative IDFs at 0.25 x the mean IDF, which an incremental
index cannot keep exact). The term-frequency and length normalisation are textbook Okapi.
"""

from __future__ import annotations

import numpy as np

from .lexical import LexicalIndex, restrict, top_k

K1 = 1.2
B = 0.75


def idf(n_docs: int, df: int | np.ndarray) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def search(
    index: LexicalIndex,
    terms: list[str],
    k: int,
    allowed: np.ndarray | None = None,
    k1: float = K1,
    b: float = B,
) -> list[tuple[int, float]]:
    """Best ``k`` documents sharing at least one term, as (doc key, BM25 score)."""
    distinct = list(dict.fromkeys(terms))
    if not distinct or index.n_docs == 0:
        return []
    postings = index.postings(distinct)
    avg_len = index.avg_len or 1.0
    all_ids, all_scores = [], []
    for term in distinct:
        lexids, tfs = postings[term]
        if lexids.size == 0:
            continue
        weight = idf(index.n_docs, lexids.size)  # df over the whole live store, not the filter
        lexids, tfs = restrict(lexids, tfs, allowed)
        tf = tfs.astype(np.float64)
        norm = k1 * (1.0 - b + b * index.doc_len[lexids] / avg_len)
        all_ids.append(lexids)
        all_scores.append(weight * tf * (k1 + 1.0) / (tf + norm))
    if not all_ids:
        return []
    return top_k(index, np.concatenate(all_ids), np.concatenate(all_scores), k)


def idf_coverage(index: LexicalIndex, terms: list[str], keys: list[int]) -> dict[int, float]:
    """Each document's IDF-weighted share of the distinct query terms it contains (0-1)."""
    distinct = list(dict.fromkeys(terms))
    if not distinct or not keys or index.n_docs == 0:
        return {k: 0.0 for k in keys}
    postings = index.postings(distinct)
    wanted = np.asarray(keys, dtype=np.int64)
    got = np.zeros(len(wanted))
    total = 0.0
    for term in distinct:
        lexids, _ = postings[term]
        weight = float(idf(index.n_docs, lexids.size)) if lexids.size else float(idf(index.n_docs, 0))
        total += weight
        if lexids.size:
            got += weight * np.isin(wanted, index.doc_key[lexids])
    return {int(k): float(g / total) for k, g in zip(wanted, got)} if total else {k: 0.0 for k in keys}
