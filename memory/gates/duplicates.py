"""Duplicates gate: the same fact written twice splits its trust signals, and a removed fact
written again loses the lesson of its removal.

Overlap is the **Jaccard index** of the two bodies' token sets, ``|A ∩ B| / |A ∪ B|``, over
``kenning.retrieval.text.query_tokens`` (the stemmed stream, stopwords left out unless a body is
nothing but stopwords), so "the", "is" and "of" do not make unrelated sentences look alike. Jaccard rather
than the overlap coefficient (``|A ∩ B| / min(|A|, |B|)``) because the latter scores a short body
contained in a long one as 1.0: "use pytest" would be a "duplicate" of every memory mentioning
pytest, and a longer rewrite that adds detail would be refused. Jaccard is symmetric and falls as
the new text adds or drops material, which is what "the same fact" means.

- overlap >= ``DUPLICATE_THRESHOLD`` (0.75) with a live memory: ``duplicate`` of it, nothing written;
- overlap >= ``DUPLICATE_THRESHOLD`` with a tombstone: ``previously_removed`` with its removal reason;
- overlap >= ``RELATED_THRESHOLD`` (0.40) with live memories: the write proceeds, ``related`` lists them;
- overlap >= ``RELATED_THRESHOLD`` with tombstones, below the duplicate threshold: the write proceeds
  and ``removed`` lists them (the spec's ``removed_matches``) so the removal reason is not lost.

A live duplicate wins over a tombstone: the fact is in the store already, whatever was removed.
The caller supplies the candidates (the store's BM25 top ~20), so this module does no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kenning.retrieval.text import content_terms

DUPLICATE_THRESHOLD = 0.75
RELATED_THRESHOLD = 0.40


class Match(BaseModel):
    """An existing memory (or tombstone) and how much of its token set the new text shares."""

    model_config = ConfigDict(frozen=True)

    id: str
    overlap: float
    reason: str | None = None  # the removal reason, for a tombstone


class DuplicateCheck(BaseModel):
    """The verdict on a new body: ``status`` is None when the write may proceed."""

    model_config = ConfigDict(frozen=True)

    status: Literal["duplicate", "previously_removed"] | None = None
    match: Match | None = None  # the live duplicate or the removed memory, when status is set
    related: list[Match] = []  # live memories at or above RELATED_THRESHOLD, best first
    removed: list[Match] = []  # tombstones at or above RELATED_THRESHOLD (below DUPLICATE_THRESHOLD unless forced)

    @property
    def related_ids(self) -> list[str]:
        return [m.id for m in self.related]


def token_set(text: str) -> frozenset[str]:
    """The distinct content tokens of text (all tokens when it has nothing but stopwords)."""
    return content_terms(text)  # stopwords judged before stemming, as for queries


def overlap(a: str | frozenset[str], b: str | frozenset[str]) -> float:
    """Jaccard index of two texts' token sets; 0.0 when both are empty."""
    sa = a if isinstance(a, frozenset) else token_set(a)
    sb = b if isinstance(b, frozenset) else token_set(b)
    shared = len(sa & sb)
    union = len(sa) + len(sb) - shared  # |A ∪ B| without building it
    return shared / union if union else 0.0


def _best_first(matches: Iterable[Match]) -> list[Match]:
    return sorted(matches, key=lambda m: (-m.overlap, m.id))


def check_duplicate(
    new_text: str,
    candidates: Iterable[tuple[str, str | frozenset[str]]],
    tombstones: Iterable[tuple[str, str | frozenset[str], str]] = (),
    new_terms: frozenset[str] | None = None,
) -> DuplicateCheck:
    """Compare a new body with live ``(id, text)`` candidates and ``(id, text, reason)`` tombstones;
    a text may be given as its ``token_set`` already (what the store keeps beside each memory), and
    the new body's as ``new_terms``."""
    new = token_set(new_text) if new_terms is None else new_terms
    live = _best_first(
        Match(id=id_, overlap=score)
        for id_, text in candidates
        if (score := overlap(new, text)) >= RELATED_THRESHOLD
    )
    if live and live[0].overlap >= DUPLICATE_THRESHOLD:
        return DuplicateCheck(status="duplicate", match=live[0], related=live[1:])
    removed = _best_first(
        Match(id=id_, overlap=score, reason=reason)
        for id_, text, reason in tombstones
        if (score := overlap(new, text)) >= RELATED_THRESHOLD
    )
    if removed and removed[0].overlap >= DUPLICATE_THRESHOLD:
        return DuplicateCheck(status="previously_removed", match=removed[0], related=live, removed=removed)
    return DuplicateCheck(related=live, removed=removed)
