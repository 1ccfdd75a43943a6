"""Keyword leg: saturating term counts, a verbatim-phrase bonus and a small recency nudge.

Per distinct query term a document contains, ``1 + ln(count)``; ``+3`` when the whole query occurs
verbatim (case- and spacing-insensitive); plus at most ``RECENCY_MAX`` for a recent update, halving
every ``RECENCY_HALF_LIFE_DAYS``, so recency only breaks near-ties between equal matches.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .lexical import LexicalIndex, accumulate, best, restrict
from .text import phrase_test, tokenize

PHRASE_BONUS = 3.0
RECENCY_MAX = 0.1
RECENCY_HALF_LIFE_DAYS = 30.0
PHRASE_CHECK_LIMIT = 200


def search(
    index: LexicalIndex,
    terms: list[str],
    k: int,
    allowed: np.ndarray | None = None,
    phrase: str | None = None,
    text_of: Callable[[list[int]], dict[int, str]] | None = None,
    now: float | None = None,
) -> list[tuple[int, float]]:
    """Best ``k`` documents sharing at least one term, as (doc key, keyword score)."""
    distinct = list(dict.fromkeys(terms))
    if not distinct or index.n_docs == 0:
        return []
    postings = index.postings(distinct)
    ids, scores = [], []
    for term in distinct:
        lexids, tfs = restrict(*postings[term], allowed)
        if lexids.size:
            ids.append(lexids)
            scores.append(1.0 + np.log(tfs.astype(np.float64)))
    if not ids:
        return []
    uniq, totals, matched = accumulate(np.concatenate(ids), np.concatenate(scores))
    if now is not None:
        age_days = np.maximum(0.0, now - index.doc_ts[uniq]) / 86400.0
        totals += RECENCY_MAX * np.power(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
    if phrase and text_of and len(tokenize(phrase)) >= 2:
        # only documents holding every query term can hold the phrase; check the best of them
        full = np.flatnonzero(matched == len(distinct))
        full = full[np.argsort(-totals[full], kind="stable")][:PHRASE_CHECK_LIMIT]
        keys = index.doc_key[uniq[full]].tolist()
        texts = text_of(keys)
        holds = phrase_test(phrase)
        for i, key in zip(full.tolist(), keys):
            if holds(texts.get(key, "")):
                totals[i] += PHRASE_BONUS
    return best(index, uniq, totals, k)
