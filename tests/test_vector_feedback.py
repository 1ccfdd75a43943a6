"""A long question's vector leg in evidence-fused hybrid ranks by the question moved toward its
nearest texts (retrieval/feedback.py, ``moved_query``); semantic mode and short questions are
searched as asked, and the labels read the question's own cosines (``Semantic.label_cosines``)."""

from __future__ import annotations

import numpy as np
import pytest

from kenning.retrieval import engine, feedback
from kenning.retrieval.text import search_tokens


def _unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_the_moved_question_is_a_unit_vector_nearer_the_texts_it_moves_toward():
    rng = np.random.default_rng(7)
    q, a, b = (_unit(rng.normal(size=16)) for _ in range(3))
    moved = feedback.moved_query(q, [a, b], 0.2)
    assert abs(float(np.linalg.norm(moved)) - 1.0) < 1e-6
    assert np.allclose(moved, _unit(q + 0.2 * (a + b) / 2), atol=1e-6)
    assert moved @ a > q @ a and moved @ b > q @ b
    assert np.array_equal(feedback.moved_query(q, [], 0.2), q)  # nothing found near: the question as asked
    assert moved.dtype == np.float32


def test_a_moved_question_shorter_than_one_is_still_made_unit_and_one_moved_to_nothing_stays():
    q, away = np.array([1.0, 0.0], np.float32), np.array([-0.6, 0.8], np.float32)
    moved = feedback.moved_query(q, [away], 0.2)  # (0.88, 0.16): shorter than one before it is scaled
    assert np.allclose(moved, np.array([0.88, 0.16]) / np.hypot(0.88, 0.16), atol=1e-6)
    assert np.array_equal(feedback.moved_query(q, [-q], 1.0), q)  # moved onto zero: no direction, the question


MEMORIES = [
    "Expense claims for work travel must be filed within 60 days of the trip, with itemised receipts.",
    "Conference hotels are booked through the travel desk, never on a personal card.",
    "Mileage for business trips is reimbursed at 45p a mile for the first 10,000 miles.",
    "The office coffee machine is descaled every Friday morning.",
    "The VPN uses WireGuard and its keys rotate on the first of each month.",
    "Per diem abroad is GBP 40 a day for meals, paid with the next salary.",
    "The user prefers aisle seats on long flights.",
    "Quarterly planning happens in the second week of January, April, July and October.",
]
LONG = "how many days do I have to hand in receipts for money spent on business trips"
SHORT = "expense claims deadline"


def _vectors(store):
    rows = store.db.read(lambda c: c.execute("SELECT m.content, m.rowid, e.vector FROM embeddings e "
                                             "JOIN memories m ON m.rowid = e.mem").fetchall())
    return {content: (key, np.frombuffer(bytes(blob), np.float32)) for content, key, blob in rows}


@pytest.fixture
def filled(store):
    for text in MEMORIES:
        store.write(text, scopes=["work"], acknowledge_transient=True)
    store.semantic.embed_pending()
    return store


def _moved(store, question):
    """The question's vector and the vector its long form is moved to, computed here from the stored
    vectors: the texts nearest to it by exact cosine, above the leg's floor."""
    q = store.semantic.encoder().encode_query(question)
    vectors = _vectors(store)
    near = sorted(vectors.values(), key=lambda kv: -float(kv[1] @ q))[: feedback.VECTOR_FEEDBACK_DOCS]
    near = [v for _, v in near if float(v @ q) >= store.semantic.floor()]
    return q, feedback.moved_query(q, near, feedback.VECTOR_FEEDBACK_WEIGHT)


def test_the_questions_here_are_long_and_short():
    assert len(set(search_tokens(LONG))) >= feedback.VECTOR_FEEDBACK_TERMS > len(set(search_tokens(SHORT)))


@pytest.mark.embeddings
def test_a_long_questions_vector_leg_ranks_by_the_moved_question_in_hybrid_only(filled):
    """Real model, real store: each hybrid hit's vector score is its cosine with the moved question;
    in semantic mode, and for a short question in hybrid, with the question itself."""
    vectors = {key: v for key, v in _vectors(filled).values()}
    keys = dict(filled.db.read(lambda c: c.execute("SELECT id, rowid FROM memories").fetchall()))
    q, moved = _moved(filled, LONG)
    assert float(np.linalg.norm(moved - q)) > 0.05

    def scores(question, mode):
        hits = filled.search(question, mode=mode, auto_scope=False, limit=10).hits
        return {keys[h.id]: h.legs["vector"].score for h in hits if "vector" in h.legs}

    hybrid = scores(LONG, "hybrid")
    assert len(hybrid) >= 3
    for key, score in hybrid.items():
        assert abs(score - float(vectors[key] @ moved)) < 1e-4
    for key, score in scores(LONG, "semantic").items():
        assert abs(score - float(vectors[key] @ q)) < 1e-4
    q_short = filled.semantic.encoder().encode_query(SHORT)
    short = scores(SHORT, "hybrid")
    assert short
    for key, score in short.items():
        assert abs(score - float(vectors[key] @ q_short)) < 1e-4


@pytest.mark.embeddings
@pytest.mark.parametrize("explained", [True, False])
def test_the_labels_of_a_moved_search_read_the_questions_own_cosines(filled, monkeypatch, explained):
    """Both paths of a hybrid search (explained hits, and the rank-only path the eval reads) hand
    the label each hit's cosine with the question as asked, and a cosine lead measured on those
    cosines; a short question's search hands none (its leg's scores are those)."""
    vectors = {key: v for key, v in _vectors(filled).values()}
    q, _ = _moved(filled, LONG)
    given: dict[int, tuple] = {}
    real = engine.explain

    def recording(candidate, *args, **kwargs):
        given[candidate.key] = (kwargs.get("label_cosine"), kwargs.get("cosine_lead"), candidate.legs)
        return real(candidate, *args, **kwargs)

    monkeypatch.setattr(engine, "explain", recording)

    def ask(question):
        given.clear()
        if explained:
            filled.search(question, mode="hybrid", auto_scope=False, limit=10)
        else:
            filled.rank(question, mode="hybrid", depth=10, explain=False)
        return dict(given)

    moved = ask(LONG)
    in_leg = {key: got for key, got in moved.items() if "vector" in got[2]}
    assert len(in_leg) >= 3
    for key, (cosine, _, legs) in in_leg.items():
        assert abs(cosine - float(vectors[key] @ q)) < 1e-4
        assert abs(cosine - legs["vector"][1]) > 1e-4  # the leg ranked by another vector
    asked = sorted(((float(v @ q), key) for key, v in vectors.items()), reverse=True)
    best = next(iter(moved))  # explain is called best first
    rival = next(c for c, key in asked if key != best)
    assert abs(moved[best][1] - (float(vectors[best] @ q) - rival)) < 1e-4
    assert all(cosine is None for cosine, _, _ in ask(SHORT).values())


class _Asked:
    """What ``_asked_cosine_lead`` reads of the semantic leg: the question's nearest texts."""

    def __init__(self, nearest):
        self.nearest = nearest

    def nearest_asked(self, query):
        return self.nearest


def test_a_moved_searchs_cosine_lead_is_measured_against_the_questions_nearest_texts():
    from kenning.store.search import _asked_cosine_lead

    best = engine.Candidate(key=1, score=1.0, legs={"vector": (1, 0.7)})  # 0.7: its cosine with the moved question
    assert _asked_cosine_lead(_Asked([(1, 0.62), (2, 0.5)]), "q", best, {1: 0.62}, 0.3) == pytest.approx(0.12)
    # outside the question's two nearest texts it leads neither, whatever its whole text's cosine
    assert _asked_cosine_lead(_Asked([(3, 0.66), (2, 0.5)]), "q", best, {1: 0.8}, 0.3) == 0.0
    assert _asked_cosine_lead(_Asked([(3, 0.66), (2, 0.5)]), "q", best, {1: 0.6}, 0.3) == pytest.approx(-0.06)
    assert _asked_cosine_lead(_Asked([(1, 0.62)]), "q", best, {1: 0.62}, 0.3) == 1.0  # no other text
    assert _asked_cosine_lead(_Asked([]), "q", best, {}, 0.3) == 0.0
    assert _asked_cosine_lead(_Asked(None), "q", best, {}, 0.3) == 0.3  # not this thread's last search: as ranked
