"""Without the vector leg, hybrid and semantic answer with the BM25 leg alone: fused with the keyword
leg by rank they ranked worse than bm25 mode on every gate collection (retrieval/engine.py
``legs_for_mode``), so a base install's default mode must give exactly bm25 mode's answer."""

import json
from pathlib import Path

import pytest

import kenning
from kenning.eval.gate import embeddings_absent

MEMVAL = Path(kenning.__file__).parent / "eval" / "memval"
# questions whose keyword + BM25 fusion ordered the top five unlike BM25 on these memories
QUESTIONS = [
    "user's shell: how to set environment variables in fish",
    "Tally metrcs port",
    "why did we get rid of that global store library in the dashboard",
    "Which person is responsible for our cloud provisioning code?",
    "Halvard Utilities rate limit on kestrel-api",
    "which tool migrates the kestrel-api database",
]


@pytest.fixture(scope="module")
def lexical_store(tmp_path_factory):
    texts = [json.loads(line)["text"] for line in (MEMVAL / "corpus.jsonl").read_text().splitlines()[:120]]
    with embeddings_absent():
        store = kenning.open_store(tmp_path_factory.mktemp("degraded"))
        store.import_records([{"text": text} for text in texts])
        yield store
        store.close()


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
@pytest.mark.parametrize("question", QUESTIONS)
def test_a_degraded_search_answers_as_bm25_mode_does(lexical_store, mode, question):
    found = lexical_store.search(question, mode=mode, limit=5, auto_scope=False)
    plain = lexical_store.search(question, mode="bm25", limit=5, auto_scope=False)
    assert found.degraded is not None and found.degraded.reason == "embeddings_absent"
    assert found.legs_run == ["bm25"] and len(found.hits) == 5
    assert [(h.id, h.score, h.relevance) for h in found.hits] == [(h.id, h.score, h.relevance) for h in plain.hits]
    assert all(h.matched_leg == "lexical" and list(h.legs) == ["bm25"] for h in found.hits)
