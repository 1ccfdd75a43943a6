"""Query words the index has never seen, respelt by a slip of the finger into words it holds.

A misspelt query word ("terrafrom", "bastoin", "pasword") matches nothing, so BM25 and coverage
lose it and the hit that answers looks like a near miss. Only two slips are undone: two adjacent
letters swapped (terrafrom -> terraform, prot -> port) and one letter left out of a word of at
least ``MIN_INSERT_LENGTH`` letters (pasword -> password, lisen -> listen). A swap is also undone in
the word as written when stemming hides it: "kilbary" stems to "kilbari", none of whose swaps is
"kilbray", and "secruity" to "secruiti". A substitution is not
tried: it turns one real word into another (find/mind, interval/internal, home/come), and in a
small store a correctly spelt word the store lacks would be "corrected" into a wrong one. A dotted
version is not spelt but written two ways, with its "v" or without (v2.3.1, 2.3.1): one the store
lacks is read the other way. Among candidates the one most documents hold wins. Only a token no
document holds is touched, so a store that has the word as written is never second-guessed.

Measured on the development collections (bench/relevance/spelling.py, eval/baselines/README.md):
13 of builtin's 80 queries change (its misspelt ones, "secruity" through the written word's swap,
plus "many" -> "main", whose stem "mani" is no word), at most 17 of the other collections' hundreds.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping

from .text import tokenize

MIN_LENGTH = 4  # shorter tokens are left alone: too many real words are one swap apart
MIN_INSERT_LENGTH = 5  # "away" is "always" less a letter; "lisen" is "listen"
# A token's slips number 27 a letter, each as long as the token: a run of letters no typist slips
# on (a pasted DNA sequence, 8,000 letters) asked 1.7 GB and 15 s, a longer one had the process
# killed; and a pasted page of unknown words asked 20 s. No development query holds a word of over
# 18 letters or over 33 words corrections looks at, so these bounds change none of their answers.
MAX_LENGTH = 40
MAX_WORDS = 64  # a query's first this many words are looked at, the rest left as written
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_VERSION = re.compile(r"v?\d+(?:\.\d+)+")  # a dotted version, as a token (casefolded): v2.3.1, 3.12


def other_writing(token: str) -> str | None:
    """The same dotted version written the other way (v2.3.1 <-> 2.3.1), None for any other token."""
    if len(token) > MAX_LENGTH or not _VERSION.fullmatch(token):
        return None
    return token[1:] if token.startswith("v") else "v" + token


def _swaps(word: str) -> set[str]:
    return {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1) if word[i] != word[i + 1]}


def slips(token: str) -> list[str]:
    """Every word ``token`` could be a slip of: adjacent letters swapped back, or a letter put back."""
    out = _swaps(token)
    if len(token) >= MIN_INSERT_LENGTH:
        out |= {token[:i] + c + token[i:] for i in range(1, len(token) + 1) for c in _LETTERS}
    out.discard(token)
    return sorted(out)


def written_swaps(word: str, token: str) -> list[str]:
    """The tokens of ``word`` (as the query writes it, casefolded) with two adjacent letters swapped
    back, when stemming made ``token`` something else: a swap near the word's end can be hidden by
    the stemmer ("kilbary" -> "kilbari", whose swaps miss "kilbray")."""
    if word == token or not word.isalpha():
        return []
    return sorted({t for swap in _swaps(word) for t in tokenize(swap, compounds=False)} - {token})


def examined(tokens: Iterable[str]) -> list[str]:
    """The tokens ``corrections`` looks at: the query's first ``MAX_WORDS`` distinct words of
    ``MIN_LENGTH`` to ``MAX_LENGTH`` ASCII letters, and dotted versions (chosen from the query alone,
    so a memo of its answers never depends on which words were asked before)."""
    return [t for t in dict.fromkeys(tokens) if (MIN_LENGTH <= len(t) <= MAX_LENGTH and t.isascii() and t.isalpha())
            or other_writing(t) is not None][:MAX_WORDS]


def corrections(tokens: Iterable[str], doc_freqs: Callable[[list[str]], dict[str, int]],
                written: Mapping[str, str]) -> dict[str, str]:
    """Token -> the word it was meant to be, for each token no document holds that has a slip some
    document does; ``doc_freqs`` counts the documents holding each term (one call for the query's
    terms, one for the candidates of those it lacks); ``written``: each token's word as the query
    writes it (``text.surface_forms``), whose swaps are tried too (``written_swaps``)."""
    terms = examined(tokens)
    if not terms:
        return {}
    unseen = [t for t, n in doc_freqs(terms).items() if n == 0]
    if not unseen:
        return {}
    candidates = {t: [version] if (version := other_writing(t)) else slips(t) + written_swaps(written.get(t, t), t)
                  for t in unseen}
    df = doc_freqs(sorted({c for cs in candidates.values() for c in cs}))
    out = {}
    for token, cs in candidates.items():  # the most common; among equals the first in order
        best = max((c for c in cs if df.get(c, 0) > 0), key=lambda c: df[c], default=None)
        if best is not None:
            out[token] = best
    return out


@functools.lru_cache(maxsize=1024)
def respelt(word: str, token: str, fixed: str) -> str:
    """The written form of a corrected token, to show in ``match_terms``: always a word whose token is
    ``fixed``, so the term shown is one the hit holds. The written word with its slip undone
    (``written_fix``: "secruity" -> "security", "notifiactions" -> "notifications"), else the
    query's word with its stem's slip undone where that keeps the stem ("relase" -> "release"), else
    the stem ("many" -> "main"). Swapping the stem alone showed "notifions" for "notifiactions", a
    word no memory holds (its stem is "notifion", not "notif"); remembered, as a search shows it
    every time it is asked."""
    meant = written_fix(word, token, fixed)
    if meant is not None:
        return meant
    kept = fixed + word[len(token):] if word.startswith(token) else fixed
    return kept if tokenize(kept, compounds=False) == [fixed] else fixed


def written_fix(word: str, token: str, fixed: str) -> str | None:
    """The word ``word`` (as the query writes it, casefolded) was meant to be, when ``corrections``
    turned its ``token`` into ``fixed``: the slip of the written word that tokenizes to ``fixed``
    ("libary" -> "library", "kenelbook" -> "kennelbook"), or None when no slip of it does ("many",
    whose stem "mani" the lexicon made "main")."""
    if word == fixed:
        return None
    return next((slip for slip in slips(word) if tokenize(slip, compounds=False) == [fixed]), None)


def for_the_model(query: str, written: Mapping[str, str], fixed: Mapping[str, str],
                  knows: Callable[[str], bool]) -> str:
    """The query as the hybrid's vector leg should read it: each word whose token ``corrections``
    fixed (``written``: each token's word as the query writes it) respelt as ``written_fix`` finds
    it, unless the model ``knows`` the word as written. An encoder reads a slip ("lantren",
    "secruity") as pieces that mean little, so the respelt word gives the answer back its cosine;
    a word the model knows whole ("many", "moon") is a real word the store happens to lack, and its
    lexical "correction" ("main", "mono") would change what the question means."""
    out = query
    for token, right in fixed.items():
        word = written.get(token, token)
        meant = None if knows(word) else written_fix(word, token, right)
        if meant is not None:
            out = re.sub(rf"(?<!\w){re.escape(word)}(?!\w)", lambda m, meant=meant: _cased_like(m.group(0), meant), out,
                         flags=re.IGNORECASE)
    return out


def _cased_like(original: str, word: str) -> str:
    return word[:1].upper() + word[1:] if original[:1].isupper() else word


def describe() -> str:
    """The rule in one line, for the eval report's "what ran"."""
    return (f"an unindexed query token of >= {MIN_LENGTH} letters becomes the most common indexed word one adjacent "
            f"swap away (in its stem or in the word as written), or (>= {MIN_INSERT_LENGTH} letters) one left-out "
            "letter away, and an unindexed dotted version the same version with or without its 'v'; the hybrid's "
            "vector leg reads the respelt word where the model does not know the word as written")


def shown(written: Mapping[str, str], fixed: dict[str, str]) -> dict[str, str]:
    """What ``match_terms`` shows for each query term: the query's word (``written``, the query's
    ``text.surface_forms``), respelt where ``fixed`` (``corrections``' answer) corrected its token."""
    out = dict(written)
    for token, right in fixed.items():
        out.setdefault(right, respelt(out.get(token, token), token, right))
    return out
