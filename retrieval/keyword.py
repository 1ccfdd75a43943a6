"""Keyword leg: saturating term counts, a verbatim-phrase bonus and a small recency nudge.

Per distinct query term a document contains, ``1 + ln(count)``; ``+3`` when the whole query occurs
verbatim (case- and spacing-insensitive); plus at most ``RECENCY_MAX`` for a recent update, halving
every ``RECENCY_HALF_LIFE_DAYS``, so recency only breaks near-ties between equal matches.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from . import lexical
from .lexical import LexicalIndex, best, per_term, restrict
from .lexical import distinct as distinct_ids
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
    """Best ``k`` documents sharing at least one term, as (doc key, keyword score).

    Only documents that can reach the top ``k`` get the recency nudge and the final sort: the nudge
    adds at most ``RECENCY_MAX``, so a document below the k-th best total by more than that, and with
    no phrase bonus, is out whatever its age (the compiled step cuts at the k-th best total itself,
    numpy's at the k-th best of the rarest term's documents, which is no higher: the same answer).
    The phrase bonus goes to the best documents holding every term, as ever; the answer is the one
    a sum over every matched document gives (tests/test_keyword_units.py keeps that reference)."""
    distinct = list(dict.fromkeys(terms))
    if not distinct or index.n_docs == 0:
        return []
    postings = index.postings(distinct)
    logged = [(postings[t][0], _logged(index, t, *postings[t])) for t in distinct]
    if lexical.kernel is not None:  # one compiled call sums and cuts: the same documents and floats
        found = lexical.kernel.near_top([(ids, values, 1.0) for ids, values in logged], index.doc_key.size, k,
                                        NEAR, allowed)
        candidates, totals, full, reached = (np.frombuffer(b, t) for b, t in zip(found, _KINDS))
    else:
        candidates, totals, full, reached = _near_top(logged, k, allowed)
    if not candidates.size:
        return []
    if phrase and text_of and len(tokenize(phrase, compounds=False)) >= 2 and full.size:
        bonus = _phrase_bonus(index, full, reached, phrase, text_of, now)
        if bonus.size:  # a phrase that earns its bonus is a candidate whatever its total
            candidates, first = np.unique(np.concatenate([candidates, full[bonus]]), return_index=True)
            totals = np.concatenate([totals, reached[bonus]])[first]
            bonus = np.searchsorted(candidates, full[bonus])
    else:
        bonus = np.empty(0, np.int64)
    final = totals + _recency(index, candidates, now) if now is not None else totals.copy()
    final[bonus] += PHRASE_BONUS
    return best(index, candidates, final, k)


_KINDS = (np.int64, np.float64, np.int64, np.float64)
NEAR = RECENCY_MAX * (1.0 + 1e-9)  # how far below the k-th best total a document can still win (rounding slack)


def _near_top(logged: list[tuple[np.ndarray, np.ndarray]], k: int, allowed: np.ndarray | None):
    """numpy's summing step (``lexical.kernel.near_top``'s, where it is not built): the documents
    within ``NEAR`` of the k-th best total (a cut read off the rarest term holding k documents, which
    every top-k document clears) and the documents holding every term, each with its total."""
    lists, ids, scores = [], [], []
    for lexids, values in logged:
        lexids, values = restrict(lexids, values, allowed)
        lists.append(lexids)
        if lexids.size:
            ids.append(lexids)
            scores.append(values)
    if not ids:
        empty = np.empty(0, np.int64)
        return empty, np.empty(0), empty, np.empty(0)
    lexids = np.concatenate(ids)
    totals = np.bincount(lexids, weights=np.concatenate(scores))  # the sums accumulate makes, dense
    shortest = min((found for found in ids if found.size >= k), key=len, default=None)
    if shortest is None:  # fewer than k documents a term: few in all, every one is a candidate
        candidates = distinct_ids(lexids)
    else:
        reached = totals[shortest]
        cut = np.partition(reached, reached.size - k)[reached.size - k] - NEAR
        candidates = distinct_ids(lexids[totals[lexids] >= cut])
    full = min(lists, key=len)  # only the documents holding every term can hold the phrase
    for other in lists:
        if other is not full and full.size:
            at = np.minimum(np.searchsorted(other, full), max(other.size - 1, 0))
            full = full[other[at] == full] if other.size else full[:0]
    return candidates, totals[candidates], full, totals[full]


def _phrase_bonus(index: LexicalIndex, full: np.ndarray, reached: np.ndarray, phrase: str,
                  text_of: Callable[[list[int]], dict[int, str]], now: float | None) -> np.ndarray:
    """Which of the documents holding every term (``full``, with their totals) earn the phrase bonus,
    as positions in ``full``: the ``PHRASE_CHECK_LIMIT`` best by total and recency whose text holds it."""
    at = np.arange(full.size)
    if full.size > PHRASE_CHECK_LIMIT:  # those below the limit's best by more than the nudge cannot be checked
        cut = np.partition(reached, full.size - PHRASE_CHECK_LIMIT)[full.size - PHRASE_CHECK_LIMIT]
        at = np.flatnonzero(reached >= cut - NEAR)
    ranked = reached[at] if now is None else reached[at] + _recency(index, full[at], now)
    at = at[np.argsort(-ranked, kind="stable")][:PHRASE_CHECK_LIMIT]
    keys = index.doc_key[full[at]].tolist()
    texts = text_of(keys)
    holds = phrase_test(phrase)
    return at[[holds(texts.get(key, "")) for key in keys]]


def _recency(index: LexicalIndex, lexids: np.ndarray, now: float) -> np.ndarray:
    """At most ``RECENCY_MAX`` for a text updated now, halving every ``RECENCY_HALF_LIFE_DAYS``."""
    age_days = np.maximum(0.0, now - index.doc_ts[lexids]) / 86400.0
    return RECENCY_MAX * np.power(0.5, age_days / RECENCY_HALF_LIFE_DAYS)


_LOGGED: "weakref.WeakKeyDictionary[Any, dict[str, tuple]]" = weakref.WeakKeyDictionary()


def _logged(index: LexicalIndex, term: str, lexids: np.ndarray, tfs: np.ndarray) -> np.ndarray:
    """``1 + ln(count)`` of each posting, remembered per index and term while its postings stay the
    same array: a term searched again costs no pass over them."""
    return per_term(_LOGGED, index, term, lexids, None, lambda: 1.0 + np.log(tfs.astype(np.float64)))
