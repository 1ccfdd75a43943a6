"""The logged-string screen (memory/gates/secret_marks.py) never lets a secret through unmasked.

Two checks: structurally, every credential pattern has a literal requirement (derived by
memory/gates/prefilter.py from its parse tree) that one of the screen's marks or words covers; and
empirically, every text of the credential corpora and gate tests that the credentials gate flags
passes the screen, and masking a logged payload gives the same text with or without it.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings, strategies as st

from kenning.memory import events
from kenning.memory.gates import credentials, prefilter
from kenning.memory.gates.secret_marks import MARKS, WORDS, may_hold_secret

from test_gate_prefilter import _credential_corpus, _gate_test_strings


def _covered(literal: str) -> bool:
    return any(m in literal for m in MARKS) or any(w in literal for w in WORDS)


@pytest.mark.parametrize("pattern", credentials._SCREEN._patterns, ids=lambda p: p.pattern[:40])
def test_every_credential_pattern_needs_a_mark_or_word_of_the_screen(pattern):
    clauses = prefilter.clauses(pattern)
    assert clauses, "no literal requirement derived: the screen could not rule this pattern out"
    assert any(all(_covered(literal) for literal in clause) for clause in clauses), clauses


def test_every_flagged_text_of_the_corpora_passes_the_screen():
    texts = list(dict.fromkeys(_gate_test_strings() + _credential_corpus()))
    flagged = [t for t in texts if credentials.find_credentials(t, screened=False)]
    assert len(flagged) > 200
    assert all(may_hold_secret(t) for t in flagged)


def test_ordinary_queries_and_ids_are_ruled_out_and_marked_text_is_not():
    for text in ("billing helios migration", "m0066738", "01JD3X7Q2W9E8R4T6Y0U1I2O3P", "where does the cache live"):
        assert not may_hold_secret(text), text
    for text in ("my password is hunter2", "AKIA0123456789ABCDEF", "x=1", "deploy TOKEN abc", "ﬁle ok",
                 "\u212aey is Zx9#kLm2pQ"):
        assert may_hold_secret(text), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + " ", min_size=8, max_size=120))
def test_masking_is_unchanged_by_the_screen(text):
    assert events._masked({"query": text, "hit_ids": [text]}) == {
        "query": credentials.mask(text), "hit_ids": [credentials.mask(text)]}
