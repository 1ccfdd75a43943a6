"""Which of a gate's regular expressions can possibly match a text, found without running them.

The content gates run about 130 patterns over every body, and nearly all of them find nothing in
an ordinary memory. Each pattern's parse tree says which literal strings a match must contain:
``\\bfor now\\b`` needs "for now"; ``\\b(?:is|are)\\s+(?:still\\s+)?blocked`` needs one of "is" /
"are" and "blocked". Those requirements (clauses: every clause needs one of its strings present)
are derived once, at import; per text, one substring test per distinct literal decides which
patterns run. The requirement is necessary for a match, never sufficient, so a screened scan
finds exactly what the full scan finds (tests/test_gate_prefilter.py compares them over the
gate corpora). Literals are compared lower-cased, which is sound with or without IGNORECASE.
A text that is not ASCII is folded first: under IGNORECASE four non-ASCII letters match an
ASCII one (the Kelvin sign matches "k", the long s "s", the dotted and dotless I "i"), which
plain lower-casing does not give (or gives as two characters), so they are replaced by that
letter before lower-casing (the test brute-forces every code point for that list).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

try:  # the standard library's own parser; private, so a Python without it only loses the screen
    from re import _constants as _c, _parser
except ImportError:  # pragma: no cover
    _parser = _c = None

MAX_EXACT = 64  # alternatives kept while spelling out a pattern's exact strings
DERIVE_AFTER_CHARS = 1024  # text checked in full before the screen is derived (see Screen.may_match)

# The only non-ASCII characters that re's IGNORECASE matching takes for an ASCII letter.
ASCII_FOLDS = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}

Clauses = tuple[frozenset[str], ...]  # every clause needs one of its strings in the text; () = none known


def clauses(pattern: re.Pattern[str]) -> Clauses:
    """The literal requirements of any match of pattern (empty when none can be derived)."""
    if _parser is None:
        return ()
    try:
        tree = _parser.parse(pattern.pattern, pattern.flags)
    except Exception:  # pragma: no cover - a pattern compiled by re parses again
        return ()
    exact, required = _sequence(list(tree))
    if exact is not None:
        required = [*required, frozenset(exact)]
    return tuple(dict.fromkeys(c for c in required if c and "" not in c))


class Screen:
    """The clauses of a list of patterns, and the test of a text against all of them at once.

    Per text, one substring test per distinct literal (a few hundred C-level searches of a short
    text: cheaper than the patterns, and cheaper than any one scan for all literals, which Python's
    regular expressions do by trying each alternative at each position); a pattern may match when
    each of its clauses has a literal present.
    """

    def __init__(self, patterns: Sequence[re.Pattern[str]]):
        self._patterns = list(patterns)
        self._seen = 0  # characters of the texts checked in full so far
        self._needs: list[frozenset[int]] | None = None

    def derive(self) -> "Screen":
        """Parse the patterns into their clauses (once; done by the second ``may_match``)."""
        if self._needs is None:
            self.clauses = [clauses(p) for p in self._patterns]
            ids: dict[frozenset[str], int] = {}
            needs = [frozenset(ids.setdefault(c, len(ids)) for c in cs) for cs in self.clauses]
            self.literals = sorted({s for c in ids for s in c})
            self._satisfies = {s: frozenset(i for c, i in ids.items() if s in c) for s in self.literals}
            self._needs = needs  # last: another thread reads the rest once this is set
        return self

    def may_match(self, text: str) -> list[bool] | None:
        """For each pattern, False when it cannot match text; None when the text is not screened.

        Texts are checked in full until they add up to DERIVE_AFTER_CHARS: deriving the clauses
        parses every pattern again (5-20 ms a gate), the cost of hundreds of full scans of a short
        text, so a process that checks a few short texts (a CLI search masking its logged query and
        hit ids) never pays for it, and one that checks memories derives at its first or second.
        A text that alone would reach the threshold derives them at once: a full scan of a long
        body (up to 1 MiB) costs far more than the derivation.
        """
        if self._needs is None:
            if self._seen < DERIVE_AFTER_CHARS and len(text) < DERIVE_AFTER_CHARS:
                self._seen += len(text)
                return None
            self.derive()
        low = fold(text)
        satisfies = self._satisfies
        satisfied = frozenset().union(*[satisfies[s] for s in present(self.literals, low)])
        return [needs <= satisfied for needs in self._needs]


_RUN = re.compile(r"\w+|\W+")
_WORD_RUNS = re.compile(r"\w+")
LONG_TEXT = 4096  # from this length, present() looks for literals among the text's distinct runs first


def present(literals: Sequence[str], text: str) -> list[str]:
    """The literals that are substrings of text, in their order.

    One substring test per literal scans the whole text for each absent one: 1 MiB times a few
    hundred literals. A long text is first cut into its runs of word and of other characters and
    each distinct run kept once; a literal's own runs (each of one kind) must then each lie inside
    one of those, a test against a few kilobytes for prose. A literal of one run passes or fails
    on that alone; one of several runs that passes is then looked for in the text itself.
    """
    if len(text) < LONG_TEXT:
        return [s for s in literals if s in text]
    words, others = _runs(text)
    out = []
    for literal in literals:
        pieces = _PIECES.get(literal)
        if pieces is None:
            pieces = _PIECES[literal] = [(p, _WORD_RUNS.match(p) is not None) for p in _RUN.findall(literal)]
        if all(piece in (words if is_word else others) for piece, is_word in pieces) and (
                len(pieces) == 1 or literal in text):
            out.append(literal)
    return out


_LAST_RUNS: list[tuple[str, str, str]] = []  # the last long text and its runs: three gates screen one body


def _runs(text: str) -> tuple[str, str]:
    """The distinct runs of word characters of text, and of other characters, each kind joined by
    a character of the other kind (so no literal run spans two of them)."""
    last = _LAST_RUNS[0] if _LAST_RUNS else None
    if last is not None and last[0] == text:
        return last[1], last[2]
    distinct = set(_RUN.findall(text))
    words = "\x00".join(r for r in distinct if _WORD_RUNS.match(r))  # \x00 is no word character ...
    others = "a".join(r for r in distinct if not _WORD_RUNS.match(r))  # ... and "a" is one
    _LAST_RUNS[:] = [(text, words, others)]
    return words, others


_PIECES: dict[str, list[tuple[str, bool]]] = {}  # a literal's runs, each with whether it is of word characters


def fold(text: str) -> str:
    """text lower-cased, with the non-ASCII letters IGNORECASE takes for ASCII ones replaced first:
    every character a pattern's ASCII literal can match becomes that literal, one for one."""
    if not text.isascii():
        for ch, ascii_letter in ASCII_FOLDS.items():
            if ch in text:
                text = text.replace(ch, ascii_letter)
    return text.lower()


# A node's (exact, required): exact is the finite set of strings it matches (None when unknown or
# too many); required is a list of clauses any match satisfies.
_Info = tuple["set[str] | None", list[frozenset[str]]]


def _char(code: int) -> str | None:
    ch = chr(code)
    if ch.isascii():
        return ch.lower()
    return ch if ch.lower() == ch.upper() == ch else None  # a cased non-ASCII letter: leave it unknown


def _node(op, av) -> _Info:
    if op is _c.LITERAL:
        ch = _char(av)
        return ({ch} if ch is not None else None), []
    if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
        return {""}, []  # zero width: the match's text is unchanged
    if op is _c.SUBPATTERN:
        return _sequence(list(av[-1]))
    if op is _c.ATOMIC_GROUP:
        return _sequence(list(av))
    if op is _c.BRANCH:
        return _branch([_sequence(list(alt)) for alt in av[1]])
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
        low, high, body = av
        exact, required = _sequence(list(body))
        if low == 0:
            return None, []
        if exact is not None and low == high and len(exact) ** low <= MAX_EXACT:
            out = {""}
            for _ in range(low):
                out = {a + b for a in out for b in exact}
            return out, required
        return None, required or ([frozenset(exact)] if exact and "" not in exact else [])
    if op is _c.IN:
        chars = set()
        for item_op, item_av in av:
            if item_op is not _c.LITERAL:
                return None, []
            ch = _char(item_av)
            if ch is None:
                return None, []
            chars.add(ch)
        return chars, []
    return None, []  # any character, a category, a negated literal, a back-reference


def _sequence(items: list) -> _Info:
    required: list[frozenset[str]] = []
    run: set[str] | None = {""}  # the exact strings of the current stretch of known items
    broken = False
    for op, av in items:
        exact, inner = _node(op, av)
        required.extend(inner)
        if exact is not None and run is not None and len(run) * len(exact) <= MAX_EXACT:
            run = {a + b for a in run for b in exact}
            continue
        broken = True
        if run and "" not in run:
            required.append(frozenset(run))
        run = {""} if exact is None else set(exact)
    if broken:
        if run and "" not in run:
            required.append(frozenset(run))
        return None, required
    return run, required


def _branch(alternatives: list[_Info]) -> _Info:
    exact: set[str] | None = set()
    for alt_exact, _ in alternatives:
        if alt_exact is None or exact is None or len(exact) + len(alt_exact) > MAX_EXACT:
            exact = None
            break
        exact |= alt_exact
    union: set[str] = set()
    for alt_exact, alt_required in alternatives:
        options = list(alt_required)
        if alt_exact is not None and "" not in alt_exact:
            options.append(frozenset(alt_exact))
        if not options:
            return exact, []  # an alternative with no requirement: the branch requires nothing
        union |= max(options, key=lambda c: (min(map(len, c)), -len(c)))  # its most selective clause
    return exact, [frozenset(union)]
