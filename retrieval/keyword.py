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

    Only documents that can reach the top ``k`` get the recency nudge and the final sort: a term
    adds at least 1, the nudge at most ``RECENCY_MAX``, so a document below the k-th best total of
    one term's documents by more than the nudge, and with no phrase bonus, is out whatever its age.
    The phrase bonus goes to the best documents holding every term, as ever; the answer is the one
    a sum over every matched document gives (tests/test_keyword_units.py keeps that reference)."""
    distinct = list(dict.fromkeys(terms))
    if not distinct or index.n_docs == 0:
        return []
    postings = index.postings(distinct)
    lists, ids, scores = [], [], []
    for term in distinct:
        lexids, tfs = postings[term]
        lexids, logged = restrict(lexids, _logged(index, term, lexids, tfs), allowed)
        lists.append(lexids)
        if lexids.size:
            ids.append(lexids)
            scores.append(logged)
    if not ids:
        return []
    lexids = np.concatenate(ids)
    totals = np.bincount(lexids, weights=np.concatenate(scores))  # the sums accumulate makes, dense
    shortest = min((found for found in ids if found.size >= k), key=len, default=None)
    if shortest is None:  # fewer than k documents a term: few in all, every one is a candidate
        candidates = distinct_ids(lexids)
    else:
        reached = totals[shortest]
        cut = np.partition(reached, reached.size - k)[reached.size - k] - RECENCY_MAX * (1.0 + 1e-9)
        candidates = distinct_ids(lexids[totals[lexids] >= cut])
    bonus = np.empty(0, np.int64)
    if phrase and text_of and len(tokenize(phrase)) >= 2:
        bonus = _phrase_bonus(index, lists, totals, phrase, text_of, now)
        if bonus.size:
            candidates = distinct_ids(np.concatenate([candidates, bonus]))
    final = totals[candidates]
    if now is not None:
        final += _recency(index, candidates, now)
    if bonus.size:
        final[np.searchsorted(candidates, bonus)] += PHRASE_BONUS
    return best(index, candidates, final, k)


def _phrase_bonus(index: LexicalIndex, lists: list[np.ndarray], totals: np.ndarray, phrase: str,
                  text_of: Callable[[list[int]], dict[int, str]], now: float | None) -> np.ndarray:
    """The lexids that earn the phrase bonus: of the documents holding every term (only they can
    hold the phrase), the ``PHRASE_CHECK_LIMIT`` best by total and recency whose text holds it."""
    full = min(lists, key=len)
    for other in lists:
        if other is not full and full.size:
            at = np.minimum(np.searchsorted(other, full), max(other.size - 1, 0))
            full = full[other[at] == full] if other.size else full[:0]
    if not full.size:
        return full
    reached = totals[full]
    if full.size > PHRASE_CHECK_LIMIT:  # those below the limit's best by more than the nudge cannot be checked
        cut = np.partition(reached, full.size - PHRASE_CHECK_LIMIT)[full.size - PHRASE_CHECK_LIMIT]
        near = reached >= cut - RECENCY_MAX * (1.0 + 1e-9)
        full, reached = full[near], reached[near]
    if now is not None:
        reached = reached + _recency(index, full, now)
    full = full[np.argsort(-reached, kind="stable")][:PHRASE_CHECK_LIMIT]
    keys = index.doc_key[full].tolist()
    texts = text_of(keys)
    holds = phrase_test(phrase)
    return full[[holds(texts.get(key, "")) for key in keys]]


def _recency(index: LexicalIndex, lexids: np.ndarray, now: float) -> np.ndarray:
    """At most ``RECENCY_MAX`` for a text updated now, halving every ``RECENCY_HALF_LIFE_DAYS``."""
    age_days = np.maximum(0.0, now - index.doc_ts[lexids]) / 86400.0
    return RECENCY_MAX * np.power(0.5, age_days / RECENCY_HALF_LIFE_DAYS)


_LOGGED: "weakref.WeakKeyDictionary[Any, dict[str, tuple]]" = weakref.WeakKeyDictionary()


def _logged(index: LexicalIndex, term: str, lexids: np.ndarray, tfs: np.ndarray) -> np.ndarray:
    """``1 + ln(count)`` of each posting, remembered per index and term while its postings stay the
    same array: a term searched again costs no pass over them."""
    return per_term(_LOGGED, index, term, lexids, None, lambda: 1.0 + np.log(tfs.astype(np.float64)))
