"""A batch of texts tokenized at once, as integer codes: what a bulk import indexes and stores.

``tokenize`` and ``query_terms`` of each text (retrieval/text.py) give the same tokens; here a whole
batch of ASCII texts is lower-cased and scanned by one regex call, each distinct word is folded and
stemmed once for the whole import, and the per-text work (lengths, the distinct content terms in
first-seen order) is done by numpy on word codes instead of Python lists of strings a text.
A text that is not ASCII (or holds the separator) is tokenized on its own by ``text.py``; an ASCII
text that may hold a compound identifier gets its stream from ``text.pieced`` (case tells a compound,
and the batch is lower-cased), its content terms from the batch (a compound's pieces are none).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from .text import _ASCII_WORD_RE, _COMPOUND_HINT, _LOWER_ASCII_WORD_RE, STOPWORDS, pieced, query_terms, stem, tokenize

# joins the batch's texts: a word of its own between two texts, so the scan keeps them apart (one
# regex call for the batch; an alternation for a separator character made the scan twice as slow).
# A text that holds it is tokenized alone.
_SEP = "zqkenningbatchsepqz"
_JOIN = f" {_SEP} "
_WORD = _LOWER_ASCII_WORD_RE
# every ASCII character a word of ``_WORD`` may hold; the others become spaces, so each word lies
# inside one piece of ``str.split`` (a match never reaches past such a character)
_SPACED = str.maketrans({chr(c): " " for c in range(128) if chr(c) not in "abcdefghijklmnopqrstuvwxyz0123456789_.+#"})


@dataclass
class CodedBatch:
    """The batch's token stream as codes: ``codes`` (int64, every text's tokens one after another),
    ``lengths`` (tokens a text), ``names`` (code -> token; shared, it only grows) and ``terms``
    (each text's distinct content terms in first-seen order, space-separated: the ``terms`` column)."""

    codes: np.ndarray
    lengths: np.ndarray
    names: list[str]
    terms: list[str]


def _joined(texts: list[str], alone: set[int]) -> str:
    """The texts lower-cased and joined by the separator word, those tokenized alone left empty."""
    return _JOIN.join([("" if i in alone else t) for i, t in enumerate(texts)] if alone else texts).lower()


class BatchTokenizer:
    """Tokenizes the batches of one import, remembering each word it has folded (per import: the
    vocabulary of a store's import is small next to its texts)."""

    def __init__(self) -> None:
        # lower-cased word, or a piece holding one word (``end.``) -> word code (0: the separator)
        self._word: dict[str, int] = {_SEP: 0}
        self._words = 1  # word codes given
        self._spelt: dict[str, str] = {}  # a piece holding no word or several -> its words, space-separated
        self._token_of = np.full(1024, -1, np.int64)  # word code -> token code
        self._content_of = np.full(1024, -1, np.int64)  # word code -> token code, -1 for a stopword
        self._code: dict[str, int] = {}  # token -> token code
        self._expanded: dict[str, tuple[int, ...]] = {}  # a word as written in a compound's text -> its codes
        self.names: list[str] = []  # token code -> token

    def encode(self, texts: list[str]) -> CodedBatch:
        """Every text's ``tokenize`` (as codes) and ``query_terms`` (as the terms column)."""
        if not texts:
            return CodedBatch(np.empty(0, np.int64), np.empty(0, np.int64), self.names, [])
        alone = {i for i, t in enumerate(texts) if not t.isascii()}
        joined = _joined(texts, alone)
        if joined.count(_SEP) != len(texts) - 1:
            alone |= {i for i, t in enumerate(texts) if _SEP in t.lower()}
            joined = _joined(texts, alone)
        # ``_WORD.findall(joined)`` as pieces (split at the characters no word holds: a third of the
        # regex's cost), each piece looked up as the one word it holds ("end." as "end"; _pieces)
        pieces = joined.translate(_SPACED).split()
        try:  # every piece known: one C-level lookup each (a scan for None would compare every code with None)
            wcodes = list(map(self._word.__getitem__, pieces))
        except KeyError:
            wcodes = self._pieces(pieces)
        wc = np.fromiter(wcodes, np.int64, len(wcodes))
        lengths = np.diff(np.concatenate(([-1], np.flatnonzero(wc == 0), [wc.size]))) - 1
        wc = wc[wc != 0]
        codes = self._token_of[wc]
        terms = self._terms(wc, codes, np.repeat(np.arange(len(texts)), lengths), len(texts))
        compound = [i for i, t in enumerate(texts) if i not in alone and _COMPOUND_HINT.search(t)]
        if alone or compound:  # each stream put in at the text's place
            pieces = np.split(codes, np.cumsum(lengths)[:-1])
            for i in compound:
                pieces[i] = self._pieced(texts[i])
                lengths[i] = pieces[i].size
            for i in sorted(alone):  # tokenized on its own
                stream = tokenize(texts[i])
                pieces[i] = np.fromiter(map(self._token_code, stream), np.int64, len(stream))
                lengths[i] = len(stream)
                terms[i] = " ".join(query_terms(texts[i]))
            codes = np.concatenate(pieces)
        return CodedBatch(codes, lengths, self.names, terms)

    def _pieced(self, text: str) -> np.ndarray:
        """``text.pieced`` of an ASCII text as codes: each word as written looked up once for the
        codes of its token and its pieces'."""
        words = _ASCII_WORD_RE.findall(text)
        expanded = self._expanded
        for word in set(words).difference(expanded):  # sorted out in C: most words are known
            expanded[word] = tuple(map(self._token_code, pieced(word)))
        return np.fromiter(chain.from_iterable(map(expanded.__getitem__, words)), np.int64)

    def _terms(self, wc: np.ndarray, codes: np.ndarray, doc: np.ndarray, n: int) -> list[str]:
        """Each text's distinct content tokens in first-seen order, joined by spaces; a text of
        stopwords alone keeps its distinct tokens (``query_tokens``' rule)."""
        content = self._content_of[wc]
        kept = content >= 0
        content, owner = content[kept], doc[kept]
        _, first = np.unique(owner * max(len(self.names), 1) + content, return_index=True)  # first of each (text, term)
        first.sort()  # back in stream order: texts in turn, each one's terms as first seen
        names = self.names
        strings = list(map(names.__getitem__, content[first].tolist()))
        counts = np.bincount(owner[first], minlength=n)
        ends = np.cumsum(counts).tolist()
        out = [" ".join(strings[a:b]) for a, b in zip([0, *ends[:-1]], ends)]
        for i in np.flatnonzero(counts == 0).tolist():  # stopwords only (or no word): every distinct token
            out[i] = " ".join(dict.fromkeys(map(names.__getitem__, codes[doc == i].tolist())))
        return out

    def _pieces(self, pieces: list[str]) -> list[int]:
        """The word codes of a batch's pieces when some are new to the import: a new piece is learnt
        in first-seen order (a loop over the batch's distinct pieces, not over every piece) with
        the code of the one word ``_WORD`` finds in it; a piece holding no word or several (``..``,
        ``a+b``) is replaced by its words. The matches in each piece, piece after piece, are the
        matches in the whole text: the pattern looks at nothing beyond the characters it takes."""
        known, spelt = self._word, self._spelt
        for piece in dict.fromkeys(pieces):
            if piece not in known and piece not in spelt:
                found = [piece] if piece.isalnum() else _WORD.findall(piece)
                if len(found) == 1:
                    known[piece] = self._learn(found[0])
                else:
                    spelt[piece] = " ".join(found)
                    for word in found:
                        self._learn(word)
        if not spelt.keys().isdisjoint(pieces):
            pieces = " ".join(map(spelt.get, pieces, pieces)).split()
        return list(map(known.__getitem__, pieces))

    def _learn(self, word: str) -> int:
        """A new word: its code, with its token (folded and stemmed as ``tokenize`` does) and
        whether it counts as a content term (a word new to the import may come twice in a batch)."""
        code = self._word.get(word)
        if code is not None:
            return code
        code = self._word[word] = self._words
        self._words += 1
        if code >= self._token_of.size:
            self._token_of = np.concatenate((self._token_of, np.full(self._token_of.size, -1, np.int64)))
            self._content_of = np.concatenate((self._content_of, np.full(self._content_of.size, -1, np.int64)))
        token = self._token_code(stem(word))
        self._token_of[code] = token
        self._content_of[code] = -1 if word in STOPWORDS else token
        return code

    def _token_code(self, token: str) -> int:
        code = self._code.get(token)
        if code is None:
            code = self._code[token] = len(self.names)
            self.names.append(token)
        return code
