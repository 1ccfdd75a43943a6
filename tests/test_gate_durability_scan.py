"""The durability gate's scan (memory/gates/durability.py, ``_Clauses``) answers as the original did.

``find_transient_markers`` once rescanned the text from its start for every match (the clause
start, the sentence's end, the text after the match, the overlap with every span taken), which
made a 1 MiB body cost seconds to minutes. The rewrite finds the clause ends once and looks only
at a match's own clause; this file keeps the original code as the reference and compares the two
over the gate corpora, over long bodies built from them and over generated texts: the markers,
their words and their order must be identical.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings, strategies as st

from kenning.memory.gates import durability as d

TESTS = Path(__file__).parent


# ---------------------------------------------------------------- the original code (reference)
def _ref_sentence_of(text: str, pos: int) -> str:
    starts = [m.end() for m in d._CLAUSE_END.finditer(text, 0, pos)]
    start = starts[-1] if starts else 0
    end = d._CLAUSE_END.search(text, pos)
    return text[start:end.start() if end else len(text)]


def _ref_has_status(subject: str) -> bool:
    return bool(d._HAS_STATUS.search(d._PLACE.sub("", subject)))


def _ref_is_generic(text: str, marker, m: re.Match[str]) -> bool:
    if marker.kind == d.STATE:
        clause_start = max([c.end() for c in d._CLAUSE_END.finditer(text, 0, m.start())] or [0])
        if marker.subject is not None and not _ref_has_status(text[clause_start:m.start()]):
            return True
        before = text[clause_start:m.start()].split()
        return bool(d._CONDITION.search(" ".join(before[-d._LOOKBACK_WORDS:]))
                    or d._RELATIVE.search(" ".join(before[-d._RELATIVE_WORDS:]))
                    or d._CONDITIONAL_OPENING.search(text[clause_start:])
                    or d._GENERIC_AFTER.search(text[m.end():]))
    if marker.kind == d.DAY:
        return bool(d._HABITUAL.search(_ref_sentence_of(text, m.start())))
    return False


def reference_markers(text: str) -> list[str]:
    plain = d._blank_names(text)
    taken: list[tuple[int, int, str]] = []
    for marker in d._MARKERS:
        for m in marker.pattern.finditer(plain):
            if _ref_is_generic(plain, marker, m) or any(m.start() < e and s < m.end() for s, e, _ in taken):
                continue
            words = text[m.start():m.end()]
            label = marker.label if words.lower() == marker.label.lower() else f"{marker.label}: {words!r}"
            taken.append((m.start(), m.end(), label))
    return [label for _, _, label in sorted(taken)]


# ---------------------------------------------------------------- corpora
def _durability_corpus() -> list[str]:
    return [line.strip() for path in sorted((TESTS / "data" / "durability").glob("*.txt"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _same(text: str) -> None:
    expected = reference_markers(text)
    assert d.find_transient_markers(text) == expected, text[:200]
    assert d.find_transient_markers(text, screened=False) == expected, text[:200]


def test_every_corpus_text_gets_the_original_markers():
    texts = _durability_corpus()
    assert len(texts) > 300
    flagged = 0
    for text in texts:
        _same(text)
        flagged += bool(reference_markers(text))
    assert flagged > 100


def test_long_bodies_made_of_the_corpus_get_the_original_markers():
    texts = _durability_corpus()
    # one body of every text (markers interleave and overlap across texts), joined as sentences,
    # as lines, and with no clause end at all (one long clause: the subject and lookback tests
    # then see many words before each match)
    for sep in (" ", "\n", " and ", "; "):
        _same(sep.join(texts))
    _same(" ".join(t.rstrip(".!?;:") for t in texts))
    _same("".join(texts))


def test_each_clause_is_judged_on_its_own_opening_and_days_on_their_own_sentence():
    for text in ("When it rains, it pours. The migration is in progress.",
                 "If so. The build is red; when CI is red, the queue is paused. It is still running",
                 "Backups run every night. The restore failed yesterday. Each day the report is done",
                 "The report runs daily; today it failed. Today. Every week: yesterday",
                 "It broke today.Every day it runs.", "a.today every", "whenever.\nthe build is red"):
        _same(text)
        _same(text.replace(". ", ".\n"))


def test_a_subject_far_from_its_clause_start_is_judged_on_its_last_words():
    filler = " ".join(["word"] * 40)
    for long in ("y" * 300, "z" * 1100, "w" * 5000):  # words so long that a few fill the window looked at
        for subject in ("the build", "the error banners in production", "the build on " + long, long + " CI"):
            _same(f"{filler} {long} {subject} is red and {long} {long} {subject} is red")
            _same(f"{long} {long} {long} {long} {long} {long} {long} it is running and {long} we are fixing {long}")
    for subject in ("the build", "CI on main", "the tests for the auth service", "stop signs",
                    "the error banners in production", "the PR's checks", "pull requests", "x.build"):
        for gap in ("", "\n", "   ", " \t "):
            _same(f"{filler} {subject}{gap} is red. {filler}, {subject} are red")
            _same(f"If {filler} {subject} is red, {filler} when {subject} is still failing")


_PIECES = (["currently", "today", "yesterday", "every", "daily", "is", "are", "red", "still", "running", "in progress",
            "the build", "CI", "on", "main", "for", "the", "stop signs", "if", "when", "that", "which", "means",
            "is done", "not", "yet", "I'm", "we are", "fixing", "on Friday", "until", "automatically", "by default",
            "now", "the", "a", "`code now`", '"In Progress"', "x()", "--flag", "9c4e2fa", "WIP", "TODO", "keeps",
            "failing", "blocked", "paused", "sign", "banners", "in production", "whenever"]
           + [". ", "; ", ": ", "! ", "? ", ".", ",", "\n", "  ", " ", "-", "'s"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=40), st.lists(st.booleans(), min_size=40, max_size=40))
def test_generated_texts_get_the_original_markers(pieces, joins):
    text = "".join(p + (" " if j else "") for p, j in zip(pieces, joins))
    _same(text)


def test_the_sentence_of_a_position_is_the_original_one():
    texts = _durability_corpus()[:200]
    body = " ".join(texts) + " a.b. c.\n d:e; f! g? h."
    clauses = d._Clauses(body)
    for pos in range(0, len(body), 7):
        start, end = clauses.sentence(pos)
        assert body[start:end] == _ref_sentence_of(body, pos)
        assert clauses.start_before(pos) == max([c.end() for c in d._CLAUSE_END.finditer(body, 0, pos)] or [0])


_WORDS = ["on", "for", "in", "of", "at", "the", "my", "our", "this", "build", "CI", "main", "pull", "requests",
          "banners", "signs", "x.build", "a/b", "-", ",", "y" * 70, "z" * 300]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), min_size=0, max_size=60),
       st.lists(st.sampled_from([" ", "  ", "\n", "\t", " \n "]), min_size=60, max_size=60),
       st.integers(min_value=0, max_value=30), st.sampled_from([1, 2, 3, 256]))
def test_a_clause_tail_holds_the_last_words_and_the_same_subject_verdict(words, gaps, cut, width):
    # a narrow first window (1-3 characters; the gate's is 256) lands the tail on every word boundary
    text = "".join(w + g for w, g in zip(words, gaps))
    d._TAIL_WIDTH, saved = width, d._TAIL_WIDTH
    try:
        _check_tail(text, cut)
    finally:
        d._TAIL_WIDTH = saved


def _check_tail(text: str, cut: int) -> None:
    start = min(cut, len(text))
    clauses = d._Clauses(text)
    whole = text[start:]
    for n in (1, 2, d._LOOKBACK_WORDS, d._SUBJECT_WORDS):
        piece = clauses.tail(start, len(text), n)
        assert whole.endswith(piece) and (piece == whole or piece[:1].isspace())
        assert piece.split()[-n:] == whole.split()[-n:]
        assert piece == whole or len(piece.split()) >= n
    assert d._has_status(clauses.tail(start, len(text), d._SUBJECT_WORDS)) == _ref_has_status(whole)


def test_every_window_width_gives_the_subject_verdict_of_the_whole_clause():
    saved = d._TAIL_WIDTH
    try:
        for width in (1, 2, 3, 5, 8):
            d._TAIL_WIDTH = width
            for head in ("build", "signs", "CI", "pull requests", "x.build"):
                for place in ("", " on main", " on the main", " in production", " for the auth service",
                              " on the a b", " at my x.y z", " of our q"):
                    for gap in (" ", "\n ", "  "):
                        for lead in ("", "the word and ", "w " * 20):
                            text = f"{lead}{head}{place}".replace(" ", gap) + gap
                            _check_tail(text, 0)
    finally:
        d._TAIL_WIDTH = saved
