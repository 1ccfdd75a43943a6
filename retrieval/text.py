"""The one token stream: every lexical leg, the persistent index, relevance and snippets use it.

Normalisation is NFKC + casefold. Technical tokens (``3.12.1``, ``c++``, ``node.js``, ``c#``,
``snake_case``) stay whole, and a document also indexes the names a compound identifier joins
(``pieces``: ``KESTREL_DB_POOL`` holds "pool", ``getUserById`` "user"); alphabetic words are reduced to their Snowball English stem
(PyStemmer, the C Snowball bm25s uses); runs of CJK, Thai, Lao, Myanmar and Khmer (written without
spaces) become overlapping bigrams, and in a document each letter too (a query's run of two letters
or more is its bigrams); a combining mark or a format character stays inside its word
(Hindi), Arabic and Hebrew vowel points are dropped from it, a digit of any script is its ASCII
digit, and a Turkish i is folded whatever its dot; stopwords are dropped
from queries only (judged on the word before stemming), and only when something else is left. A
search writes out a stopword's contraction first (``search_tokens``: "what's" -> "what"), so the
piece the apostrophe splits off is no query term.

Stemming was chosen by measurement over the light plural folding it replaced (``eval/`` figures in
the README's relevance section): BM25 nDCG@10 rose on every development collection.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from itertools import chain

import Stemmer

TOKENIZER_VERSION = "8"
TOKENIZER_NAME = ("nfkc-casefold, technical tokens whole (and in documents the names a compound joins),"
                  " snowball-english stems, unspaced-script bigrams"
                  " (and letters, in documents), marks inside words, query stopwords"
                  " (a stopword's contraction written out: what's, can't)")

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# scripts written without spaces between words, cut into bigrams like CJK: Thai, Lao, Myanmar, Khmer
_UNSPACED = _CJK + "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
# A character that belongs to the word beside it (UAX #29's Extend, Format and ZWJ: a combining mark -
# a Devanagari vowel sign, an Arabic or Hebrew vowel point, a Thai vowel, a mark NFKC found nothing
# to compose with - or a format character: soft hyphen, ZWJ/ZWNJ, word joiner, a bidi mark, BOM)
# is seen by the pattern as _JOIN, which it takes inside a word or run; without that a word of
# Hindi fell apart into its consonants. U+200B (zero-width space) stays a break, as in UAX #29.
_JOIN = "\ue000"
# A run of unspaced script, or a word made of word characters (those scripts excluded) joined by dots,
# with an optional ``++`` / ``#`` tail: keeps 3.12.1, node.js, c++, c# whole while "end." loses its full stop.
_WORD_CHAR = rf"[^\W{_UNSPACED}]"
_WORD_PART = rf"{_WORD_CHAR}(?:{_WORD_CHAR}|{_JOIN})*"
_TOKEN_PATTERN = (rf"(?P<cjk>[{_UNSPACED}](?:[{_UNSPACED}]|{_JOIN})*)"
                  rf"|(?P<word>{_WORD_PART}(?:\.{_WORD_PART})*(?:\+\+|#)?)")


@functools.cache
def _token_re() -> re.Pattern[str]:
    """The pattern for text that is not ASCII, compiled on first use: its class (word characters
    minus CJK) takes ~10 ms to compile, and a process that sees only ASCII never needs it."""
    return re.compile(_TOKEN_PATTERN)


_TABLE_BOUND = 1 << 16  # characters a translate table remembers: random text could hold 1.1 million


class _Joiners(dict):
    """``str.translate`` table: a mark or format character -> _JOIN (U+E000 itself, a private-use
    character no word holds, -> a space), every other character kept; each looked up once."""

    def __missing__(self, cp: int) -> int | str:
        if len(self) >= _TABLE_BOUND:
            self.clear()
        kind = unicodedata.category(chr(cp))
        value: int | str = _JOIN if (kind[0] == "M" or kind == "Cf") and cp != 0x200B else cp
        self[cp] = value = " " if cp == 0xE000 else value
        return value


# Arabic and Hebrew vowel points and cantillation (most text leaves them out, so "الخَادِمُ" must
# meet "الخادم") and the Arabic tatweel that stretches a word: (first, last) code points
_OPTIONAL_MARKS = ((0x0591, 0x05BD), (0x05BF, 0x05BF), (0x05C1, 0x05C2), (0x05C4, 0x05C5), (0x05C7, 0x05C7),
                   (0x0610, 0x061A), (0x0640, 0x0640), (0x064B, 0x065F), (0x0670, 0x0670), (0x06D6, 0x06ED))


class _Spelling(dict):
    """``str.translate`` table: a word's characters as its token spells them. What only shapes its
    look is dropped - format characters (soft hyphen, ZWJ, bidi marks), variation selectors and
    ``_OPTIONAL_MARKS`` - and a digit of another script is its ASCII digit (NFKC leaves "٥٤٣٢"
    alone, which "5432" must find); each character looked up once."""

    def __missing__(self, cp: int) -> int | str | None:
        if len(self) >= _TABLE_BOUND:
            self.clear()
        kind = unicodedata.category(chr(cp))
        value: int | str | None = cp
        if kind == "Cf" or 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF or any(
                first <= cp <= last for first, last in _OPTIONAL_MARKS):
            value = None
        elif kind == "Nd" and cp > 127:
            value = str(unicodedata.decimal(chr(cp)))
        self[cp] = value
        return value


_JOINING = _Joiners()
_SPELLING = _Spelling()


STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves
    """.split()
)


_local = threading.local()


# A word token is at most this long: a pasted hex dump or base64 blob is one "word", and a token of a
# megabyte was a megabyte-long index key that every later lookup compared against (a 110,000-word
# write after one took 37 s, not 4). No eval-data text holds a token over 40 characters.
MAX_TOKEN_CHARS = 128


def stem(word: str) -> str:
    """The Snowball English stem of an alphabetic, casefolded word; anything else unchanged. Every
    word token ends here, so here a word longer than ``MAX_TOKEN_CHARS`` is cut to that many
    characters (unstemmed): documents and queries cut it alike, so it still finds itself."""
    if len(word) > MAX_TOKEN_CHARS:
        return word[:MAX_TOKEN_CHARS]
    if not word.isalpha():
        return word
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:  # a PyStemmer object is not safe to share between threads
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer.stemWord(word)


def token_spans(text: str, document: bool = True) -> list[tuple[str, int, int]]:
    """Tokens with their character spans in ``normalize(text)`` (NFKC, case kept). ``document``:
    the document stream's extras too (an unspaced run's letters, a compound's ``pieces``); without
    them, the words a query is read by."""
    if text.isascii():  # NFKC leaves ASCII alone and it holds no CJK: the same tokens, found faster
        folded = _FOLDED
        spans = [(folded.get(w) or _fold_new(w), m.start(), m.end())
                 for m in _ASCII_WORD_RE.finditer(text) for w in (m.group().lower(),)]
        if document and _COMPOUND_HINT.search(text):
            spans = [piece for (token, s, e) in spans for piece in _with_pieces(token, text[s:e], s)]
        return spans
    return list(_general_spans(unicodedata.normalize("NFKC", text), letters=document, compounds=document))


def _with_pieces(token: str, word: str, start: int) -> list[tuple[str, int, int]]:
    """A word's span followed by its ``pieces``' spans (offsets from ``start``)."""
    return [(token, start, start + len(word)), *((t, start + s, start + e) for t, s, e in pieces(word))]


def _general_spans(norm: str, marked: str | None = None, letters: bool = True,
                   compounds: bool = True) -> Iterator[tuple[str, int, int]]:
    """``token_spans`` of NFKC text that is not ASCII: the pattern runs over ``marked``, the text
    with its joining characters made ``_JOIN`` (one for one, so its spans are the text's), the
    tokens are cut from the text itself. ``letters``: each letter of an unspaced run too, beside
    its bigrams (``_paired``); ``compounds``: a compound word's ``pieces`` after it."""
    compounds = compounds and _COMPOUND_HINT.search(norm) is not None
    for m in _token_re().finditer(norm.translate(_JOINING) if marked is None else marked):
        start, end = m.span()
        if m.lastgroup == "word":
            yield _word(norm[start:end]), start, end
            if compounds and _COMPOUND_HINT.search(norm, start, end):
                yield from ((t, start + s, start + e) for t, s, e in pieces(norm[start:end]))
        elif _JOIN not in m.group():  # letters alone: the characters are the units
            yield from _paired([(ch, i, i + 1) for i, ch in enumerate(norm[start:end].casefold(), start)], letters)
        else:
            yield from _paired(_units(norm, start, end), letters)


def _paired(units: list[tuple[str, int, int]], letters: bool) -> Iterator[tuple[str, int, int]]:
    """An unspaced run's tokens: its overlapping bigrams and, with ``letters`` (a document's
    stream), each letter too, so a one-letter word (猫, 药, 밤) finds the texts that hold it inside a
    run. A query's run of two or more letters is its bigrams alone: a letter it holds adds nothing
    its bigrams do not say, and the duplicates gate compares bigrams, not shared letters."""
    if len(units) == 1:
        yield units[0]
        return
    for (first, s, end), (second, _, e) in zip(units, units[1:]):
        if letters:
            yield first, s, end
        yield first + second, s, e
    if letters:
        yield units[-1]


def _units(norm: str, start: int, end: int) -> list[tuple[str, int, int]]:
    """The letters of an unspaced run, casefolded, each with the marks that follow it (a Thai vowel
    sign) and spelt by ``_SPELLING`` (a variation selector dropped): what its bigrams pair up."""
    units: list[tuple[str, int, int]] = []
    for i in range(start, end):
        if _JOINING[ord(norm[i])] == _JOIN:  # never the run's first character (the pattern's rule)
            token, s, _ = units[-1]
            units[-1] = (token + norm[i].translate(_SPELLING), s, i + 1)
        else:
            units.append((norm[i].casefold(), i, i + 1))
    return units


def clear_word_caches() -> None:
    """Forget every cached word -> token mapping (after swapping ``stem``, as measurements do)."""
    _word.cache_clear()
    pieces.cache_clear()
    _EXPANDED.clear()
    _FOLDED.clear()
    _CONTENT.clear()


@functools.lru_cache(maxsize=1 << 17)
def _word(raw: str) -> str:
    """casefold + stem of one word token; cached, as a store repeats a small vocabulary.

    Its characters are spelt by ``_SPELLING`` ("con\u00adnection" is "connection", "٥٤٣٢" is
    "5432"), and a Turkish i is folded as its capital is: casefold makes "İstanbul" "i̇stanbul" (an i
    with a combining dot) and "IŞIK" "işik", so both dotted and dotless i become i, or neither would
    meet the word typed in lower case ("istanbul", "ışık")."""
    word = raw.translate(_SPELLING).casefold()
    if "\u0307" in word or "ı" in word:
        word = word.replace("i\u0307", "i").replace("ı", "i")
    return stem(word)


# Where a text may hold a compound identifier: three lower-case letters before a capital
# (getUserById) or an underscore beside a letter or digit (user_id). A text with neither (most prose) has no
# ``pieces`` and takes the roads that never look for them.
# (The pattern starts at the capital or the underscore, rare in prose, and looks around it from there:
# a scan of every letter for "three lower-case letters" made tokenizing prose a third slower.)
_COMPOUND_HINT = re.compile(r"[A-Z](?<=[a-z]{3}[A-Z])|_(?:(?<=[^\W_]_)|(?=[^\W_]))")
_SEGMENTS = re.compile(r"[^_+#.](?:[^_+#]*[^_+#.])?")  # between underscores, dots kept inside
_LOWER_CAMEL = re.compile(r"[a-z]{3,}[A-Z][a-zA-Z0-9]*\Z")
_HUMPS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@functools.lru_cache(maxsize=1 << 16)
def pieces(word: str) -> tuple[tuple[str, int, int], ...]:
    """The names a compound identifier joins, as tokens with their spans in ``word`` (a word token as
    written, case kept): the parts of ``tenant_id``, ``KESTREL_DB_POOL`` and ``__init__.py`` between
    their underscores, and the humps of a lowerCamelCase part (``getUserById``: get, user, by, id).
    A document indexes them after the word itself, so "db pool" finds ``KESTREL_DB_POOL``; a query
    is read as written, so ``tenant_id`` still asks for that identifier. A part needs two letters
    (``x86_64`` and ``t_0007`` join none); a capitalised word is a name, not a compound (PostgreSQL,
    TideDesk: "desk" must not find it); camel humps need a lower-case head of three letters or more,
    as code's verbs and nouns have (scientific names such as "mmHg", "dsDNA" or "kDa" stay whole);
    a dotted name (``node.js``, ``app.py``, a host name) stays whole, as hosts and e-mail addresses
    are most of them in memories and their parts matched too much (measured: memval2's keyword
    nDCG@10 .485 -> .477 with them). A word longer than ``MAX_TOKEN_CHARS`` is a pasted dump, not an
    identifier (a base64url blob holds underscores): it has none, or a megabyte of it indexed
    thousands of random "words"."""
    if len(word) > MAX_TOKEN_CHARS:
        return ()
    found: dict[str, tuple[int, int]] = {}
    spans = [m.span() for m in _SEGMENTS.finditer(word)]
    for start, end in spans:
        part = word[start:end]
        humps = [m.span() for m in _HUMPS.finditer(part) if _letters(m.group()) >= 2] if (
            part.isascii() and _LOWER_CAMEL.match(part)) else []
        if len(humps) < 2:
            humps = []
        whole = len(spans) > 1 or part != word.rstrip("+#")  # a part of the word, not all of it
        for s, e in ([(0, end - start)] if whole and _letters(part) >= 2 else []) + humps:
            found.setdefault(_word(part[s:e]), (start + s, start + e))
    found.pop(_word(word), None)
    return tuple((token, s, e) for token, (s, e) in found.items())


def _letters(part: str) -> int:
    return sum(ch.isalpha() for ch in part)


# ASCII text needs no NFKC and holds no CJK: its words are plain ``\w`` runs (the same tokens)
_ASCII_WORD_RE = re.compile(r"\w+(?:\.\w+)*(?:\+\+|#)?")
# ... and once lower-cased, the same words through possessive quantifiers (never backtracking,
# which the pattern never needs): about a third faster on a memory, the bulk of an import's tokenizing
_LOWER_ASCII_WORD_RE = re.compile(r"[a-z0-9_]++(?:\.[a-z0-9_]++)*+(?:\+\+|#)?")
_FOLDED: dict[str, str] = {}  # lower-cased word -> its token; bounded below
_CONTENT: dict[str, str] = {}  # the same words -> their token, or "" for a stopword (kept in step with _FOLDED)


def tokenize(text: str, compounds: bool = True) -> list[str]:
    """The document token stream (nothing dropped): ``token_spans`` without the spans, faster.
    ``compounds=False``: without a compound word's ``pieces`` (its words as written).

    ASCII text (most memories) takes a shorter road with the same result: one regex over the
    lower-cased text and a dictionary lookup per word, which is what makes bulk imports cheap.
    """
    if text.isascii():
        if compounds and _COMPOUND_HINT.search(text):
            return pieced(text)
        words = _LOWER_ASCII_WORD_RE.findall(text.lower())
        out = list(map(_FOLDED.get, words))  # one C-level lookup a word; new words filled in below
        if None in out:
            out = [t or _fold_new(w) for t, w in zip(out, words)]
        return out
    norm = unicodedata.normalize("NFKC", text)
    marked = norm.translate(_JOINING)
    if marked != norm:  # a mark or a format character somewhere: the road that cuts tokens from the text
        return [token for token, _, _ in _general_spans(norm, marked, compounds=compounds)]
    out: list[str] = []
    compounds = compounds and _COMPOUND_HINT.search(norm) is not None
    for run, word in _token_re().findall(norm):
        if word:
            out.append(_word(word))
            if compounds and _COMPOUND_HINT.search(word):
                out += [token for token, _, _ in pieces(word)]
        elif len(run) == 1:
            out.append(run.casefold())
        else:  # each letter and the bigram it starts, as _paired gives them
            run = run.casefold()
            for i in range(len(run) - 1):
                out += (run[i], run[i : i + 2])
            out.append(run[-1])
    return out


_EXPANDED: dict[str, tuple[str, ...]] = {}  # an ASCII word as written -> its token and its pieces'; bounded


def pieced(text: str) -> list[str]:
    """``tokenize`` of an ASCII text that may hold a compound: each word as written (case tells a
    compound) looked up once for its token and its ``pieces``' tokens."""
    words = _ASCII_WORD_RE.findall(text)
    try:  # every word known: one C-level lookup each
        return list(chain.from_iterable(map(_EXPANDED.__getitem__, words)))
    except KeyError:
        if len(_EXPANDED) >= 1 << 18:
            _EXPANDED.clear()
        for word in set(words).difference(_EXPANDED):  # sorted out in C: most words are known
            low = word.lower()
            token = _FOLDED.get(low) or _fold_new(low)
            _EXPANDED[word] = (token, *(p for p, _, _ in pieces(word))) if _COMPOUND_HINT.search(word) else (token,)
        return list(chain.from_iterable(map(_EXPANDED.__getitem__, words)))


def _fold_new(word: str) -> str:
    if len(_FOLDED) >= 1 << 18:
        _FOLDED.clear()
        _CONTENT.clear()
    token = _FOLDED[word] = stem(word)
    _CONTENT[word] = "" if word in STOPWORDS else token
    return token


def query_tokens(query: str) -> list[str]:
    """Query tokens with repeats (BM25 counts them): the document stream minus stopwords, unless
    that would leave nothing. A stopword is judged on the casefolded word, before stemming."""
    if query.isascii():
        words = _LOWER_ASCII_WORD_RE.findall(query.lower())
        folded = _FOLDED
        tokens = [folded.get(w) or _fold_new(w) for w in words]
        return [t for w, t in zip(words, tokens) if w not in STOPWORDS] or tokens
    raw = [(word.casefold(), token) for word, token in _word_tokens(query)]
    content = [token for word, token in raw if word not in STOPWORDS]
    return content or [token for _, token in raw]


# a word and the piece an apostrophe joins to it: "what's", "can't", "doesn't", "I'm", "we've"
_CONTRACTION_RE = re.compile(r"\b([^\W\d_]+)['\u2019](s|t|d|ll|m|re|ve)\b", re.IGNORECASE)
_NOT_STEMS = {"ca": "can", "wo": "will", "sha": "shall"}  # can't, won't, shan't


def _uncontracted(match: re.Match[str]) -> str:
    word, piece = match.group(1), match.group(2).lower()
    if piece == "t" and word[-1:].lower() == "n":  # n't: "doesn't" -> "does not"
        base = word[:-1]
        base = _NOT_STEMS.get(base.lower(), base)
        return f"{base} not" if base.lower() in STOPWORDS else match.group()
    return word if word.lower() in STOPWORDS else match.group()  # "what's" -> "what"; "Nate's" stays


def uncontract(query: str) -> str:
    """The query with each contraction of a stopword written out, so its piece is no query term:
    "What's my usual coffee?" -> "What my usual coffee?", "Who can't drink ..." -> "Who can not
    drink ...". The apostrophe splits "what's" into "what" and "s"; the stopword goes, but the piece
    stayed as a term that any "it's" or "doesn't" of a text matches, and in a short question one
    such term is half the evidence that a text holds more than one of its words
    (``fusion.LONE_TERM_WEIGHT``). A possessive ("Nate's") keeps its piece: measured, LoCoMo's
    questions about someone's things rank better with it (eval/baselines/README.md, "Thirteenth
    pass")."""
    if "'" not in query and "\u2019" not in query:
        return query
    return _CONTRACTION_RE.sub(_uncontracted, query)


def search_tokens(query: str) -> list[str]:
    """A search's query tokens: ``query_tokens`` of the query with its contractions written out
    (``uncontract``). Stored texts keep ``query_tokens`` as their content terms."""
    return query_tokens(uncontract(query))


MAX_QUERY_TERMS = 4096


def query_words(tokens: list[str]) -> list[str]:
    """A search's tokens (``search_tokens``) of its first ``MAX_QUERY_TERMS`` distinct words: a
    pasted document as a query is still searched, by its opening, and the legs' summing step, which
    counts a query's posting lists in 16 bits, never gets more than it can count."""
    if len(tokens) <= MAX_QUERY_TERMS:
        return tokens
    kept = set(list(dict.fromkeys(tokens))[:MAX_QUERY_TERMS])
    return [t for t in tokens if t in kept]


def only_stopwords(query: str) -> bool:
    """Whether every word of the query is a stopword ("the", "what is it", "what's that"):
    ``query_tokens`` then searches them all, as it has nothing else, but they name nothing."""
    query = uncontract(query)
    if query.isascii():
        words = _LOWER_ASCII_WORD_RE.findall(query.lower())
    else:
        words = [word.casefold() for word, _ in _word_tokens(query)]
    return bool(words) and all(word in STOPWORDS for word in words)


def written_as_names(query: str, tokens: Iterable[str]) -> list[str]:
    """Those of ``tokens`` the query writes as a name or an identifier somewhere: with a capital
    letter or a digit ("Tanaka", "Quokka", "us7"), or joined to another word by ``- / @ :``
    ("bramble-infra"). A hyphenated phrase joined through a stopword ("speech-to-text",
    "end-of-day", "up-to-date") is English, not an identifier: identifiers join names."""
    wanted = set(tokens)
    if not wanted:
        return []
    norm = query if query.isascii() else unicodedata.normalize("NFKC", query)
    found: dict[str, None] = {}
    phrases = None  # read once, when a joined word first needs them
    for token, start, end in token_spans(norm, document=False):
        if token not in wanted or token in found:
            continue
        word = norm[start:end]
        joined = (start > 1 and norm[start - 1] in _JOINERS and norm[start - 2].isalnum()) or (
            end + 1 < len(norm) and norm[end] in _JOINERS and norm[end + 1].isalnum())
        if joined and phrases is None:
            phrases = _hyphenated_phrases(norm)
        if joined and _through_a_stopword(phrases, start, end):
            joined = False
        if joined or any(ch.isupper() or ch.isdigit() for ch in word):
            found[token] = None
    return list(found)


_JOINERS = "-/@:"
_HYPHENATED = re.compile(r"\w+(?:-\w+)+")


def _hyphenated_phrases(text: str) -> tuple[list[int], list[tuple[int, bool]]]:
    """The starts of the text's hyphenated phrases, and for each its end and whether it is joined by
    hyphens alone through a stopword ("speech-to-text"). Read once per query: read again for each
    joined word, a pasted 100 KB query of 14,000 "w1-x" words took 50 s to label."""
    starts, rest = [], []
    for m in _HYPHENATED.finditer(text):
        whole = (m.start() == 0 or text[m.start() - 1] not in _JOINERS) and (
            m.end() == len(text) or text[m.end()] not in _JOINERS)
        starts.append(m.start())
        rest.append((m.end(), whole and any(part.lower() in STOPWORDS for part in m.group().split("-"))))
    return starts, rest


def _through_a_stopword(phrases: tuple[list[int], list[tuple[int, bool]]], start: int, end: int) -> bool:
    """Whether the word at ``start:end`` belongs to a phrase joined by hyphens alone, one of whose
    words is a stopword (``_hyphenated_phrases``; the phrases do not overlap)."""
    starts, rest = phrases
    at = bisect.bisect_right(starts, start) - 1
    return at >= 0 and end <= rest[at][0] and rest[at][1]


def content_terms(text: str) -> frozenset[str]:
    """The distinct query tokens of a text: what the duplicates gate compares (and the store keeps
    beside each memory, so a write's candidates need no tokenizing)."""
    return frozenset(query_tokens(text))


def tokens_and_terms(text: str) -> tuple[list[str], list[str]]:
    """``tokenize(text)`` and ``query_terms(text)`` from one pass over the words (an import needs
    both of every record)."""
    if not text.isascii():
        return tokenize(text), query_terms(text)
    words = _LOWER_ASCII_WORD_RE.findall(text.lower())
    tokens = list(map(_FOLDED.get, words))
    if None in tokens:
        tokens = [t or _fold_new(w) for t, w in zip(tokens, words)]
    terms = dict.fromkeys(map(_CONTENT.get, words))  # every word was folded just now, so each is known
    if None in terms:  # a word folded before _CONTENT knew it (not expected): judged one by one
        terms = dict.fromkeys(t if w not in STOPWORDS else "" for w, t in zip(words, tokens))
    terms.pop("", None)
    listed = list(terms) if terms else list(dict.fromkeys(tokens))
    return (pieced(text) if _COMPOUND_HINT.search(text) else tokens), listed


def query_terms(query: str) -> list[str]:
    """Distinct query tokens in first-seen order (what relevance and match_terms count)."""
    return list(dict.fromkeys(query_tokens(query)))


def _word_tokens(text: str) -> list[tuple[str, str]]:
    """(surface text, token) pairs of the query stream: the document stream without its extras (an
    unspaced run's letters, a compound's pieces)."""
    norm = unicodedata.normalize("NFKC", text)
    return [(norm[s:e], token) for token, s, e in token_spans(norm, document=False)]


def surface_forms(query: str, fold: Callable[[str], str] = str.casefold) -> dict[str, str]:
    """Each query token's first written form in the query, ``fold``ed: casefolded, as the spelling step
    compares words; ``str.lower`` for what a hit shows (``match_terms``), which keeps an "ß" the
    casefold writes "ss" ("Fußgänger" is shown "fußgänger", a word the query and the text write)."""
    out: dict[str, str] = {}
    for word, token in _word_tokens(query):
        out.setdefault(token, fold(word))
    return out


def normalize(text: str) -> str:
    """NFKC + casefold with whitespace collapsed: the form phrase matching compares."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def contains_phrase(text: str, phrase: str) -> bool:
    """True when the whole phrase occurs verbatim in text, ignoring case and spacing and the quotes
    a query wraps a phrase in."""
    p = _phrase(phrase)
    return bool(p) and p in normalize(text)


def phrase_test(phrase: str) -> Callable[[str], bool]:
    """``contains_phrase(text, phrase)`` as a test of texts: the phrase normalized once, and each
    text's normal form remembered (the keyword leg checks the same candidates search after search)."""
    p = _phrase(phrase)
    return lambda text: bool(p) and p in _normalized(text)


# the quote marks a phrase is written between, opening -> the closing marks that end it
_QUOTES = {'"': '"\u201d', "'": "'\u2019", "\u201c": "\u201d\"", "\u201e": "\u201c\u201d", "\u2018": "\u2019'",
           "\u00ab": "\u00bb", "\u00bb": "\u00ab", "\u300c": "\u300d", "\u300e": "\u300f"}


def _phrase(phrase: str) -> str:
    """The normal form of a phrase without the quotes around it: a user who quotes the phrase asks
    for exactly it, and '"auth service listens"' never occurred in a text with its quotes."""
    p = normalize(phrase)
    if len(p) > 2 and p[-1] in _QUOTES.get(p[0], ""):
        p = p[1:-1].strip()
    return p


@functools.lru_cache(maxsize=8192)
def _normalized(text: str) -> str:
    return normalize(text)


def match_terms(terms: Iterable[str], text: str) -> list[str]:
    """The query terms (in query order) that the text literally contains as tokens."""
    present = set(tokenize(text))
    return [t for t in terms if t in present]


SNIPPET_CHARS = 240
SNIPPET_SCAN = 1 << 15   # characters of a text one snippet reads: a longer one is read in a region this long
SNIPPET_REACH = 1 << 18  # how far into a longer text the region's first matched term is looked for
_SCAN_STEP = 1 << 12     # ... a stretch this long at a time
_SPACE = re.compile(r"\s")


def snippet(text: str, terms: Iterable[str], width: int = SNIPPET_CHARS) -> str:
    """At most ``width`` characters around the densest cluster of matched terms, as the text writes
    them (its whitespace collapsed): a full-width "ＡＢＣ" or a Chinese "，" is quoted, not its NFKC form.

    A text longer than ``SNIPPET_SCAN`` characters (a 14 MB paste in a session) is quoted from a region
    that long, from a little before the first stretch holding a matched term within its first
    ``SNIPPET_REACH`` characters (else from its start): a snippet costs the same whatever the length of
    its text, and a denser cluster further on is not looked for."""
    wanted = set(terms)
    cut = (False, False)  # whether text was left out before and after the region read
    if len(text) > SNIPPET_SCAN:
        start, stop = _region(text, wanted, width)
        text, cut = text[start:stop], (start > 0, stop < len(text))
    flat, spans, written = _spanned(text, width)
    body = width - 2  # room for the two ellipses
    if spans is None:
        return _trim(flat, 0, body, width, cut) if any(cut) else flat
    hits = [(t, s, e) for t, s, e in spans if t in wanted]
    if not hits:
        return _trim(flat, 0, body, width, cut)
    best_key, span = (-1, -1), (0, 0)
    j = 0
    for i in range(len(hits)):
        # grow the window [i, j) while it still fits in ``body`` characters; a single token
        # longer than ``body`` is a window of its own (cut by _trim)
        j = max(j, i + 1)
        while j < len(hits) and hits[j][2] - hits[i][1] <= body:
            j += 1
        window = hits[i:j]
        key = (len({t for t, _, _ in window}), len(window))
        if key > best_key:
            best_key, span = key, (hits[i][1], window[-1][2])
    if written is not None:
        span = (written.at(span[0], end=False), written.at(span[1], end=True))
    start = max(0, (span[0] + span[1]) // 2 - body // 2)
    start = min(start, max(0, len(flat) - body))
    return _trim(flat, start, start + body, width, cut)


def _region(text: str, wanted: set[str], width: int) -> tuple[int, int]:
    """Where a snippet of a long text reads it: ``SNIPPET_SCAN`` characters from ``width`` before the
    first stretch of ``_SCAN_STEP`` holding a ``wanted`` token (its start when none does within
    ``SNIPPET_REACH``), cut where a word ends."""
    at = 0
    while at < min(len(text), SNIPPET_REACH):
        stop = _word_end(text, at + _SCAN_STEP)
        piece = text[at:stop]
        if any(t in wanted for t, _, _ in token_spans(piece if piece.isascii() else unicodedata.normalize("NFKC", piece))):
            break
        at = stop
    else:
        at = 0
    start = _word_end(text, at - width) if at > width else 0
    return start, _word_end(text, start + SNIPPET_SCAN)


def _word_end(text: str, at: int) -> int:
    """``at`` moved on to the next whitespace, so no word is cut in two (unless none comes soon)."""
    found = _SPACE.search(text, at, at + 64)
    return found.start() if found else min(at, len(text))


@functools.lru_cache(maxsize=2048)
def _spanned(text: str, width: int) -> tuple[str, tuple[tuple[str, int, int], ...] | None, _Written | None]:
    """The text with its whitespace collapsed, and when it is longer than ``width`` its token spans
    (in its NFKC form) and, where that form differs, the map back to it: what every snippet of it
    starts from, worked out once per text (hits recur across searches)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat, None, None
    norm = flat if flat.isascii() else unicodedata.normalize("NFKC", flat)
    return flat, tuple(token_spans(norm)), (None if norm == flat else _Written(flat))


class _Written:
    """Offsets in a text's NFKC form mapped back to the text as written, where a ligature, a
    half-width kana or a decomposed accent changed a word's length. Each word is normalised on its
    own (NFKC never joins across a space); a long one whose length changed (an unspaced paragraph),
    a letter and its marks at a time."""

    def __init__(self, flat: str) -> None:
        self.pieces: list[tuple[int, int, str]] = []  # (written start, written end, NFKC form)
        at = 0
        for word in flat.split(" "):
            norm = unicodedata.normalize("NFKC", word)
            whole = len(norm) == len(word) or len(word) <= 64
            self.pieces.extend([(at, at + len(word), norm)] if whole else _letter_pieces(word, norm, at))
            self.pieces.append((at + len(word), at + len(word) + 1, " "))
            at += len(word) + 1
        self.starts, at = [], 0  # each piece's start in the normalised text
        for _, _, norm in self.pieces:
            self.starts.append(at)
            at += len(norm)

    def at(self, offset: int, end: bool) -> int:
        """Where ``offset`` of the NFKC form falls as written: the same place in its piece when
        normalising kept the piece's length, else the piece's start (or its end, for a span's end)."""
        k = bisect.bisect_right(self.starts, offset - 1 if end else offset) - 1
        start, stop, norm = self.pieces[k]
        return start + offset - self.starts[k] if stop - start == len(norm) else (stop if end else start)


def _letter_pieces(word: str, norm: str, at: int) -> list[tuple[int, int, str]]:
    """A word's pieces a letter and its marks at a time, or the word whole when normalising it so
    would not give its NFKC form (a composition this split misses)."""
    cuts = [i for i, ch in enumerate(word) if i == 0 or not (unicodedata.category(ch)[0] == "M" or
                                                             "\u1160" <= ch <= "\u11ff")]  # a Hangul vowel or final
    pieces = [(at + a, at + b, unicodedata.normalize("NFKC", word[a:b])) for a, b in zip(cuts, [*cuts[1:], len(word)])]
    return pieces if "".join(p for _, _, p in pieces) == norm else [(at, at + len(word), norm)]


def _trim(text: str, start: int, end: int, width: int, cut: tuple[bool, bool] = (False, False)) -> str:
    """Cut ``text[start:end]`` at word boundaries and mark the cut ends with an ellipsis (also an end
    of ``text`` where ``cut`` says it is a region of a longer text).

    An end that already falls on a boundary (a space beside it) stays, so a window that starts or
    ends exactly at a matched word keeps that word."""
    if start > 0 and text[start - 1] != " ":
        space = text.find(" ", start, start + 20)
        start = space + 1 if space != -1 else start
    if end < len(text) and text[end] != " ":
        space = text.rfind(" ", end - 20, end)
        end = space if space > start else end
    piece = text[start:end].strip()
    out = ("…" if start > 0 or cut[0] else "") + piece + ("…" if end < len(text) or cut[1] else "")
    return out[:width]


def fingerprint() -> str:
    """Changes whenever the token stream would change, so the stored index can be rebuilt."""
    probe = ("Queries indexes class news C++ node.js 3.12.1 東京都 Ｆｕｌｌ-width ﬁle caches matches "
             "running generously connection connected getUserById KESTREL_DB_POOL हिन्दी กรุงเทพ İstanbul con\u00adnection الخَادِمُ ٥٤٣٢")
    raw = TOKENIZER_VERSION + "|" + " ".join(tokenize(probe)) + "|" + ",".join(sorted(STOPWORDS))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]
