"""Hybrid search with evidence fusion (the default) over several candidates whose order is known by
construction (tests/hybrid_order.py): through the library on a real SQLite store, then through a
real CLI subprocess on the same store."""

import json
import os
import subprocess
import sys

import pytest

import kenning
from hybrid_order import MEMORIES, QUERY, check

pytestmark = pytest.mark.embeddings  # the vector leg is one of the fused legs


def test_hybrid_evidence_orders_several_candidates_as_constructed(tmp_path):
    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        assert s.config.fusion == "evidence"
        names = {s.write(text, scopes=["ops"]).id: name for name, text in MEMORIES.items()}
        result = s.search(QUERY, mode="hybrid", limit=10).to_dict()
        alpha = s.config.evidence_alpha
        # a lexical mode never asks the vector leg, so it reports nothing about pending vectors
        assert s.search(QUERY, mode="bm25").pending_embeddings is None and result["pending_embeddings"] == 0
    assert result["legs_run"] == ["keyword", "bm25", "vector"] and result["degraded"] is None
    check(result["hits"], names, alpha)

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(path), "search", QUERY,
                           "--mode", "hybrid", "--limit", "10", "--no-auto-scope", "--json"],
                          env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    check(json.loads(done.stdout)["hits"], names, alpha)


PARAPHRASED = [
    "The user wants proposed changes shown as unified diffs rather than whole files.",
    "Ayesha presents the load-test results at the monthly all-hands.",
    "The search service matches terms with an edit distance of 1 for short words.",
    "Deploys to production happen on Tuesdays and Thursdays only.",
    "The billing service stores prices as integer cents.",
    "The user's laptop is a 14-inch MacBook Pro.",
]


def test_a_paraphrased_question_finds_its_answer_over_texts_sharing_one_word(tmp_path, monkeypatch):
    """The answer shares no word with the question; two other memories share one word each
    ("presents", "edit"). With each such text's lexical evidence weighed down
    (fusion.LONE_TERM_WEIGHT) the answer comes first; weighed in full, both outrank it."""
    from kenning.retrieval import bm25

    query = "How should edits be presented to me?"
    with kenning.open_store(tmp_path / "s") as s:
        answer = s.write(PARAPHRASED[0], scopes=["team"]).id
        for text in PARAPHRASED[1:]:
            s.write(text, scopes=["team"])
        assert [h.id for h in s.search(query, mode="hybrid", limit=3).hits][0] == answer
        full = bm25.fusion_coverage
        monkeypatch.setattr(bm25, "fusion_coverage", lambda *args: (full(*args)[0], frozenset()))
        assert [h.id for h in s.search(query, mode="hybrid", limit=3).hits][2] == answer


FAR_IN_MEANING = [
    "Disabled passengers can book assistance in TideDesk up to 24 hours before sailing.",
    "The user takes a week off in late July every year to help Rob's band at the Kilbray Music Festival.",
    "The user wants the assistant to flag any sailing with less than 80% crew availability.",
    "MV Corran: gross tonnage 4,120; built 2009 in Gdansk.",
    "Deck crew on the island run work two weeks on, two weeks off.",
    "Boarding for the 07:10 Kilbray sailing closes 20 minutes before departure.",
    "Freight boarding at Rossness starts at 05:30 on weekdays.",
    "Timetable change requests go to Fiona by the 10th of the month.",
    "Refund requests for cancelled sailings are handled by the Port Ailish desk.",
]


def test_a_paraphrased_question_finds_its_answer_over_a_text_sharing_words_but_not_meaning(tmp_path, monkeypatch):
    """memval3's "How late can a wheelchair user request help boarding?": the answer shares no word
    with it (cosine .48); the holiday memory shares "late", "user" and "help" (most of the weight the
    store gives the question's words, with "request" and "boarding" common here) at cosine .29. Its
    lexical evidence discounted as far in meaning (fusion.FAR_COSINE) the answer comes first; counted
    in full (``far_cosine=0``), the holiday memory outranks it."""
    import functools

    from kenning.retrieval import fusion

    query = "How late can a wheelchair user request help boarding?"
    with kenning.open_store(tmp_path / "s") as s:
        ids = [s.write(text, scopes=["ops"]).id for text in FAR_IN_MEANING]
        assert [h.id for h in s.search(query, mode="hybrid", limit=3).hits][:2] == [ids[0], ids[1]]
        monkeypatch.setattr(fusion, "evidence", functools.partial(fusion.evidence, far_cosine=0.0))
        assert [h.id for h in s.search(query, mode="hybrid", limit=3).hits][:2] == [ids[1], ids[0]]
