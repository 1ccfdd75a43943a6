"""A query read once for every leg and every label: its tokens, its words as written, and the
respelling of those no stored text holds.

Memory search (store/search.py) and transcript search (recall/transcripts.py) read a query the same
way; each gives its own lexicon's respelling (memory search remembers its answers until the store
changes), and both take what the legs, ``match_terms`` and the labels read from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import spelling
from .text import query_words, search_tokens, surface_forms

# (the query's tokens, each token's word as written, casefolded) -> token: the indexed word it was meant as
Respell = Callable[[list[str], dict[str, str]], dict[str, str]]


@dataclass(frozen=True)
class QueryReading:
    query: str
    as_written: list[str]  # the query's tokens with repeats (BM25 weighs a term the query says twice more)
    shown_as: dict[str, str]  # each token's word as the query writes it, in lower case: an "ß" stays
    written: dict[str, str]  # the same words casefolded, as spelling compares them
    fixed: dict[str, str]  # a token no text holds -> the indexed word it was respelt as
    tokens: list[str]  # ``as_written`` respelt
    terms: list[str]  # the distinct ``tokens``, in the query's order

    def for_the_model(self, mode: str, knows_word: Callable[[str], bool]) -> str:
        """The text the vector leg embeds: in hybrid, the words the lexicon respelt written as meant
        (``spelling.for_the_model``); semantic mode reads the query as written."""
        if self.fixed and mode == "hybrid":
            return spelling.for_the_model(self.query, self.written, self.fixed, knows_word)
        return self.query

    def shown(self) -> dict[str, str]:
        """What ``match_terms`` shows for each term (``spelling.shown``)."""
        return spelling.shown(self.shown_as, self.fixed)


def read(query: str, respell: Respell) -> QueryReading:
    """``query`` read with ``respell`` (``spelling.corrections`` over a lexicon, or a memo of it)."""
    as_written = query_words(search_tokens(query))
    shown_as = surface_forms(query, str.lower)
    written = {token: word.casefold() for token, word in shown_as.items()}
    fixed = respell(as_written, written)
    tokens = [fixed.get(t, t) for t in as_written]
    return QueryReading(query, as_written, shown_as, written, fixed, tokens, list(dict.fromkeys(tokens)))
