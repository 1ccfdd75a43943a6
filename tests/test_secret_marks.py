"""The logged-string screen (memory/gates/secret_marks.py) never lets a secret through unmasked.

Two checks: structurally, its precomputed shapes are what memory/gates/prefilter.py derives from
the credential patterns now (and the fewest characters a match has); and empirically, every text of
the credential corpora and gate tests that the credentials gate flags passes the screen, and
masking a logged payload gives the same text with or without it.
"""

from __future__ import annotations

import string
from re import _parser

import pytest
from hypothesis import given, settings, strategies as st

from kenning.memory import events
from kenning.memory.gates import credentials, prefilter
from kenning.memory.gates.secret_marks import SHAPES, may_hold_secret

from test_gate_prefilter import _credential_corpus, _gate_test_strings


def test_the_precomputed_shapes_are_what_the_credential_patterns_give_now():
    """If this fails, a credential pattern changed: regenerate SHAPES from the patterns."""
    patterns = credentials._SCREEN._patterns
    derived = tuple((_parser.parse(p.pattern, p.flags).getwidth()[0], tuple(tuple(sorted(c)) for c in prefilter.clauses(p)))
                    for p in patterns)
    assert SHAPES == derived
    assert all(clauses for _, clauses in SHAPES)  # each pattern can be ruled out by some literal


def test_every_flagged_text_of_the_corpora_passes_the_screen():
    texts = list(dict.fromkeys(_gate_test_strings() + _credential_corpus()))
    flagged = [t for t in texts if credentials.find_credentials(t, screened=False)]
    assert len(flagged) > 200
    assert all(may_hold_secret(t) for t in flagged)


def test_ordinary_queries_and_ids_are_ruled_out_and_marked_text_is_not():
    for text in ("billing helios migration", "m0066738", "01JD3X7Q2W9E8R4T6Y0V1Z2S3K", "use_01JD3X7Q2W9E8R4T6Y0V1Z2S3K",
                 "where does the cache live"):
        assert not may_hold_secret(text), text
    for text in ("my password is hunter2", "AKIA0123456789ABCDEF", "api_key=Zx9kLm2pQ", "deploy TOKEN abc", "ﬁle ok",
                 "\u212aey is Zx9#kLm2pQ"):
        assert may_hold_secret(text), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + " ", min_size=8, max_size=120))
def test_masking_is_unchanged_by_the_screen(text):
    assert events._masked({"query": text, "hit_ids": [text]}) == {
        "query": credentials.mask(text), "hit_ids": [credentials.mask(text)]}
