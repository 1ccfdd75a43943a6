"""Which of a gate's regular expressions can possibly match a text, found without running them.

The content gates run about 130 patterns over every body, and nearly all of them find nothing in
an ordinary memory. Each pattern's parse tree says which literal strings a match must contain:
``\\bfor now\\b`` needs "for now"; ``\\b(?:is|are)\\s+(?:still\\s+)?blocked`` needs one of "is" /
"are" and "blocked". Those requirements (clauses: every clause needs one of its strings present)
are derived once, at import; per text, one substring test per distinct literal decides which
patterns run. The requirement is necessary for a match, never sufficient, so a screened scan
finds exactly what the full scan finds (tests/test_gate_prefilter.py compares them over the
gate corpora). Literals are compared lower-cased, which is sound with or without IGNORECASE;
a text that is not ASCII skips the screen, since case-insensitive matching of non-ASCII letters
(the Kelvin sign matches "k") is not plain lower-casing.
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
        """
        if self._needs is None:
            if self._seen < DERIVE_AFTER_CHARS:
                self._seen += len(text)
                return None
            self.derive()
        if not text.isascii():
            return None
        low = text.lower()
        satisfies = self._satisfies
        satisfied = frozenset().union(*[satisfies[s] for s in self.literals if s in low])
        return [needs <= satisfied for needs in self._needs]


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
