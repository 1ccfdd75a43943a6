"""Pseudo-relevance feedback for the legs of evidence-fused hybrid: RM3 on the BM25 leg (Lavrenko &
Croft's relevance model, mixed back into the query as in Abdul-Jaleel et al., TREC 2004), Rocchio on
the vector leg of a long question. Pure functions, no I/O.

The BM25 leg's best ``FEEDBACK_DOCS`` texts say which words the answers to this query use: each
text's word distribution, weighted by its share of those texts' BM25 scores, summed; the
``FEEDBACK_TERMS`` heaviest words become a second query, mixed with the original (``KEEP_QUERY``
of the weight stays on the query's own terms), and BM25 runs again with those weights. Long
technical questions gain most (med's BM25 leg alone .714 -> .753 nDCG@10): their answers share a
vocabulary the question only half states. It runs inside evidence-fused hybrid only, whose
lexical evidence still counts the query's own terms (coverage), so an expansion word can reorder
texts that hold the query but never make one that lacks it look like a match; bm25 mode stays
plain BM25. Chosen leave-one-collection-out (bench/relevance/rm3.py, eval/baselines/README.md).

The vector leg of a question of ``VECTOR_FEEDBACK_TERMS`` distinct terms or more ranks by the
question's vector moved toward its ``VECTOR_FEEDBACK_DOCS`` nearest texts (``moved_query``, Rocchio,
SIGIR 1971): a long question states its topic in words of its own, and the texts nearest to it say
how the store states it. A short question's nearest texts are other facts, not more of its topic,
so it is searched as asked; semantic mode stays plain MiniLM. Chosen leave-one-collection-out
(bench/relevance/vector_feedback.py, eval/baselines/README.md, "Twenty-third pass").
"""

from __future__ import annotations

import heapq
from collections import Counter
from typing import NamedTuple

import numpy as np

from .bm25 import query_weight

FEEDBACK_DOCS = 10
FEEDBACK_TERMS = 20
KEEP_QUERY = 0.6
VECTOR_FEEDBACK_DOCS = 2
VECTOR_FEEDBACK_WEIGHT = 0.2
VECTOR_FEEDBACK_TERMS = 5


class Counted(NamedTuple):
    """A feedback text's words as ``expanded_query`` reads them: each distinct word with its count,
    in first-seen order, and how many words the text has (worth keeping per text: a search's
    feedback texts recur, and counting their words was half of building the expanded query)."""

    counts: tuple[tuple[str, int], ...]
    length: int


def counted(tokens: list[str]) -> Counted:
    return Counted(tuple(Counter(tokens).items()), len(tokens))


def expanded_query(
    query_tokens: list[str],
    feedback: list[tuple[float, list[str] | Counted]],
    terms: int = FEEDBACK_TERMS,
    keep: float = KEEP_QUERY,
) -> dict[str, float]:
    """Term -> query weight (summing to 1) of the query mixed with the relevance model of ``feedback``.

    ``query_tokens`` with repeats (a repeated term weighs ``bm25.query_weight``); ``feedback`` holds
    (BM25 score, content tokens or their ``counted``) of the first pass's best texts. Without usable
    feedback the query's own weights come back, normalised, so the second pass ranks as the first did.
    """
    counts = Counter(query_tokens)
    own = {t: query_weight(c) for t, c in counts.items()}
    own_total = sum(own.values())
    if not own_total:
        return {}
    weights = {t: w / own_total for t, w in own.items()}
    texts = [(score, words if isinstance(words, Counted) else counted(words)) for score, words in feedback]
    total_score = sum(score for score, words in texts if words.length and score > 0)
    if not total_score:
        return weights
    model: dict[str, float] = {}
    for score, words in texts:
        if not words.length or score <= 0:
            continue
        share = score / total_score / words.length
        for term, tf in words.counts:
            model[term] = model.get(term, 0.0) + share * tf
    heavy = heapq.nsmallest(terms, model.items(), key=lambda tw: (-tw[1], tw[0]))  # sorted(...)[:terms]
    mass = sum(w for _, w in heavy)
    out = {t: keep * w for t, w in weights.items()}
    for term, w in heavy:
        out[term] = out.get(term, 0.0) + (1.0 - keep) * w / mass
    return out


def moved_query(query: np.ndarray, nearest: list[np.ndarray], weight: float) -> np.ndarray:
    """The unit vector of ``query + weight * mean(nearest)``: the question's vector moved toward the
    texts the vector leg found nearest to it (unit vectors, best first); the query itself when there
    are none. ``weight`` has no default: callers pass ``VECTOR_FEEDBACK_WEIGHT`` when they call, so a
    sweep that sets it is obeyed (a default would be bound when this module loads)."""
    if not nearest:
        return query
    moved = np.asarray(query, dtype=np.float32) + weight * np.mean(np.asarray(nearest, dtype=np.float32), axis=0)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else query
