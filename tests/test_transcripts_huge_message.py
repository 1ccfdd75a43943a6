"""One huge message in a ledger (a 14 MB paste) costs a search what any hit costs.

Every query matching it took ~15 s and ~500 MB: the snippet tokenized the whole text and weighed
every window of matched words in it, and the hit's matched terms were found by tokenizing it again.
Now a snippet reads a bounded region of a long text (``SNIPPET_SCAN`` characters, from a little
before the first matched term within ``SNIPPET_REACH``), and a transcript hit's terms come from the
postings. No clock is read here: the tests show the work stops at the region.
"""

from __future__ import annotations

import json

import pytest

from kenning.recall.transcripts import index_for
from kenning.retrieval.text import SNIPPET_REACH, SNIPPET_SCAN, snippet, tokenize


def test_a_cluster_past_the_reach_of_a_long_text_is_not_read():
    """The whole-text search quoted the densest cluster wherever it was, so it read every word; the
    bounded one quotes the first matches and never reads past its region."""
    far = "gannet " * ((SNIPPET_REACH + SNIPPET_SCAN) // 7 + 1000) + "the gannet colony nests on the cliffs"
    quoted = snippet(far, tokenize("gannet colony cliffs"))
    assert quoted.startswith("gannet gannet") and quoted.endswith("…") and "colony" not in quoted


def test_a_long_text_is_quoted_the_same_whatever_follows_its_region():
    before = "filler words without the bird " * (SNIPPET_SCAN // 30)  # a stretch without a match first
    core = "the gannet colony nests on the cliffs north of the harbour"
    short = snippet(before + core + " trailing prose" * 100, tokenize("gannet colony"))
    long = snippet(before + core + " trailing prose" * 1_000_000, tokenize("gannet colony"))
    assert short == long
    assert short.startswith("…") and short.endswith("…") and "gannet colony nests" in short


def test_a_text_within_the_region_is_quoted_as_before():
    text = ("word " * 3000) + "the gannet colony nests on the cliffs " + ("word " * 3000)
    assert len(text) <= SNIPPET_SCAN
    assert snippet(text, tokenize("gannet colony")) == snippet(text + " ", tokenize("gannet colony"))
    assert "gannet colony nests" in snippet(text, tokenize("gannet colony"))


@pytest.fixture
def huge(store, tmp_path):
    store.configure(persist=False, default_mode="bm25")
    ledger = tmp_path / "huge.jsonl"
    text = "gannet " * 400_000 + "and at the very end a petrel"
    ledger.write_text(json.dumps({"session": "big", "ts": "2025-01-01T00:00:00Z", "role": "user", "text": text}) + "\n")
    ix = index_for(store)
    ix.add_source(ledger, project=tmp_path)
    return ix


def test_a_hit_on_a_huge_message_names_its_terms_and_quotes_its_start(huge):
    hit, = huge.search("gannet petrel", all_projects=True).hits
    assert hit.match_terms == ["gannet", "petrel"]  # the postings know the word at its end
    assert hit.snippet.startswith("gannet gannet") and hit.snippet.endswith("…") and len(hit.snippet) <= 240
