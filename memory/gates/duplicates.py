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

Two bodies that each hold a number the other lacks (``different_values``: "backup job 1 ... bucket
bk-1" against "backup job 2 ... bucket bk-2", or 毎晩三時 against 毎晩四時) state different facts however much of their wording
they share, so they are ``related``, never a duplicate: a long sentence differing in one value
reached 0.8-0.9 and the second fact was refused, where a short one (below the threshold) was kept.
Token sets miss a value that is a stopword or is repeated ("region A" against "region B": "a" is a
stopword; "item 1 ... row 1" against "item 0 ... row 0": both sets hold "0"), so a pair that reaches
the threshold is read once more as written (``same_values``, given the stored text by ``content_of``):
the values each names - words holding a digit, a capital letter standing alone, counted with
repeats - must not conflict.
A live duplicate wins over a tombstone: the fact is in the store already, whatever was removed.
The caller supplies the candidates (the store's BM25 top ~20), so this module does no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
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


def different_values(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether each token set holds a token with a number that the other lacks: a different number,
    version, id or time, so a different fact (``check_duplicate``)."""
    return any(_has_number(t) for t in a - b) and any(_has_number(t) for t in b - a)


_WORD = re.compile(r"\w+")


def values(text: str) -> list[str]:
    """The values a text names, in the order it names them: each word holding a digit or a numeral,
    and a capital letter standing alone past a sentence's start (plan B, region A; not "I", nor the
    article "A" opening a sentence), lowercased."""
    found = []
    for m in _WORD.finditer(text):
        word = m.group()
        if _has_number(word):  # a run of Chinese or Japanese holds a sentence: its numerals are the value
            found.append(word.lower() if word.isascii() else "".join(ch for ch in word if ch.isnumeric()))
        elif len(word) == 1 and word.isupper() and word != "I" \
                and text[:m.start()].rstrip()[-1:] not in ("", ".", "!", "?", ":", "-", "*"):
            found.append(word.lower())
    return found


def same_values(a: str, b: str) -> bool:
    """Whether two texts name no conflicting values (``values``, counted with repeats): conflicting
    when each names one the other lacks, as ``different_values`` reads token sets; a value only one
    names (a rewording that adds how long a job takes) is the same fact said again."""
    va, vb = Counter(values(a)), Counter(values(b))
    return not (va - vb and vb - va)


def _has_number(token: str) -> bool:
    """A digit, or a numeral written as a letter: Chinese and Japanese write "at three" as 三時,
    whose bigrams hold no digit (``str.isnumeric``; the same as ``isdigit`` for ASCII)."""
    return any(ch.isnumeric() for ch in token)


def _best_first(matches: Iterable[Match]) -> list[Match]:
    return sorted(matches, key=lambda m: (-m.overlap, m.id))


def check_duplicate(
    new_text: str,
    candidates: Iterable[tuple[str, str | frozenset[str]]],
    tombstones: Iterable[tuple[str, str | frozenset[str], str]] = (),
    new_terms: frozenset[str] | None = None,
    content_of: Callable[[str], str | None] | None = None,
) -> DuplicateCheck:
    """Compare a new body with live ``(id, text)`` candidates and ``(id, text, reason)`` tombstones;
    a text may be given as its ``token_set`` already (what the store keeps beside each memory), and
    the new body's as ``new_terms``. ``content_of(id)`` gives a candidate's text as written, read for
    a pair reaching the threshold (``same_values``); a text given as text is read as it is."""
    new = token_set(new_text) if new_terms is None else new_terms
    candidates, tombstones = list(candidates), list(tombstones)
    written = {id_: text for id_, text, *_ in candidates + tombstones if isinstance(text, str)}

    def says_the_same(id_: str) -> bool:
        text = written.get(id_) if id_ in written else (content_of(id_) if content_of is not None else None)
        return text is None or same_values(new_text, text)

    live, same = _matches(new, ((id_, text, None) for id_, text in candidates), says_the_same)
    if same is not None:
        return DuplicateCheck(status="duplicate", match=same, related=[m for m in live if m is not same])
    removed, same = _matches(new, tombstones, says_the_same)
    if same is not None:
        return DuplicateCheck(status="previously_removed", match=same, related=live, removed=removed)
    return DuplicateCheck(related=live, removed=removed)


def _matches(new: frozenset[str], texts: Iterable[tuple[str, str | frozenset[str], str | None]],
             says_the_same: Callable[[str], bool]) -> tuple[list[Match], Match | None]:
    """The texts at ``RELATED_THRESHOLD`` or more, best first, and the best of them that says the same
    (``DUPLICATE_THRESHOLD`` or more, and no different value: ``different_values``, ``same_values``), if any."""
    found, same = [], []
    for id_, text, reason in texts:
        terms = text if isinstance(text, frozenset) else token_set(text)
        score = overlap(new, terms)
        if score >= RELATED_THRESHOLD:
            match = Match(id=id_, overlap=score, reason=reason)
            found.append(match)
            if score >= DUPLICATE_THRESHOLD and not different_values(new, terms) and says_the_same(id_):
                same.append(match)
    return _best_first(found), (_best_first(same)[0] if same else None)
