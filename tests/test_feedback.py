"""Pseudo-relevance feedback (retrieval/feedback.py) and BM25 with explicit query weights."""

import pytest

from kenning.retrieval import bm25
from kenning.retrieval.feedback import KEEP_QUERY, expanded_query
from kenning.retrieval.text import query_tokens

CORPUS = [
    "Kidney failure after heart surgery is treated with dialysis",
    "Dialysis of renal patients: catheter infections and their treatment",
    "Renal replacement therapy for acute kidney injury, a dialysis trial",
    "Heart surgery outcomes in elderly patients",
    "Garden soil drains poorly after heavy rain",
]


def test_the_expanded_query_keeps_its_share_on_the_query_and_adds_the_feedback_words():
    q = query_tokens("kidney dialysis")
    fb = [(2.0, query_tokens(CORPUS[0])), (1.0, query_tokens(CORPUS[2]))]
    w = expanded_query(q, fb, terms=5, keep=0.6)
    assert sum(w.values()) == pytest.approx(1.0)
    own = {t: w[t] for t in set(q)}
    assert all(v > 0.6 / len(own) for v in own.values())  # query share plus the model's weight on them
    added = [t for t in w if t not in own]
    assert added and len(added) <= 5
    # the better-scored text's words weigh more: "heart" (text 0 only) over "renal" (text 2 only)
    assert w.get("heart", 0.0) > w.get("renal", 0.0)


def test_without_feedback_the_query_comes_back_normalised_with_saturated_repeats():
    q = query_tokens("dialysis dialysis kidney")
    w = expanded_query(q, [])
    assert w == pytest.approx({"dialysi": bm25.query_weight(2) / (bm25.query_weight(2) + 1),
                               "kidney": 1 / (bm25.query_weight(2) + 1)})
    assert sum(w.values()) == pytest.approx(1.0)
    assert expanded_query([], [(1.0, ["x"])]) == {}
    assert expanded_query(q, [(0.0, ["renal"]), (1.0, [])]) == pytest.approx(expanded_query(q, []))


def test_keep_one_is_the_query_alone_and_ties_break_by_term():
    q = query_tokens("kidney")
    assert expanded_query(q, [(1.0, ["b", "a"])], keep=1.0) == pytest.approx({q[0]: 1.0, "a": 0.0, "b": 0.0})
    w = expanded_query(q, [(1.0, ["b", "a", "c"])], terms=2, keep=0.5)
    assert set(w) == {q[0], "a", "b"}  # equal weights: the first two terms in order
    assert KEEP_QUERY < 1


def test_the_relevance_model_by_hand():
    """RM3 worked out on paper: each text's words weigh their share of its length times its share of
    the scores; a text scoring nothing adds nothing (and the texts after it still count); the
    heaviest words are kept, equal ones by name, not by the order they were met in."""
    feedback = [(0.0, ["z"]), (2.0, ["d", "b", "b", "c"]), (1.0, ["c", "a"])]
    # model: b 2/3 * 2/4 = 1/3; c 2/3 * 1/4 + 1/3 * 1/2 = 1/3; d 2/3 * 1/4 = 1/6; a 1/3 * 1/2 = 1/6; z nothing
    # three heaviest: b, c, then a before d (equal); their mass 5/6; the query keeps 0.6
    assert expanded_query(["a"], feedback, terms=3, keep=0.6) == pytest.approx(
        {"a": 0.6 + 0.4 * (1 / 6) / (5 / 6), "b": 0.4 * (1 / 3) / (5 / 6), "c": 0.4 * (1 / 3) / (5 / 6)})
    # room for every word: z, which no scoring text holds, is still not among them
    assert expanded_query(["a"], feedback, terms=5, keep=0.6) == pytest.approx(
        {"a": 0.6 + 0.4 / 6, "b": 0.4 / 3, "c": 0.4 / 3, "d": 0.4 / 6})


def test_weighted_bm25_equals_the_plain_leg_at_the_query_own_weights(store):
    for text in CORPUS:
        store.write(text, scopes=["fb"])
    lex = store.lexicon.refresh()
    for query in ("kidney dialysis", "heart heart surgery", "garden"):
        tokens = query_tokens(query)
        plain = bm25.search(lex, tokens, k=len(CORPUS))
        counts = {t: bm25.query_weight(tokens.count(t)) for t in tokens}
        weighted = bm25.search(lex, [], k=len(CORPUS), weights=counts)
        assert [k for k, _ in weighted] == [k for k, _ in plain]
        assert [s for _, s in weighted] == pytest.approx([s for _, s in plain])
    # a feedback word finds a text the query's words do not hold, ranked under those that do
    expanded = dict(bm25.search(lex, [], k=len(CORPUS), weights={"kidney": 0.7, "renal": 0.3}))
    assert set(expanded) == {1, 3, 2} and expanded[2] < min(expanded[1], expanded[3])


@pytest.mark.embeddings
def test_evidence_hybrid_runs_its_bm25_leg_on_the_expanded_query_and_bm25_mode_does_not(store):
    for text in CORPUS:
        store.write(text, scopes=["fb"])
    lex = store.lexicon.refresh()
    query = "kidney dialysis"
    tokens = query_tokens(query)
    first = bm25.search(lex, tokens, k=10)
    weights = expanded_query(tokens, [(s, query_tokens(CORPUS[k - 1])) for k, s in first])
    expanded = bm25.search(lex, [], k=100, weights=weights)
    assert len(weights) > len(set(tokens))  # the feedback added words
    hybrid = store.search(query, mode="hybrid", auto_scope=False).hits
    by_key = {CORPUS.index(h.snippet) + 1 if h.snippet in CORPUS else None: h for h in hybrid}
    scored = {k: round(s, 6) for k, s in expanded}
    legs = {k: h.legs["bm25"] for k, h in by_key.items() if k is not None and "bm25" in h.legs}
    assert legs and all(leg.score == pytest.approx(scored[k], abs=1e-6) for k, leg in legs.items())
    plain = {k: round(s, 6) for k, s in bm25.search(lex, tokens, k=100)}
    for hit in store.search(query, mode="bm25", auto_scope=False).hits:
        assert hit.score == pytest.approx(plain[CORPUS.index(hit.snippet) + 1], abs=1e-6)
    store.configure(fusion="rrf")  # RRF's hybrid keeps the plain leg
    for hit in store.search(query, mode="hybrid", auto_scope=False).hits:
        if "bm25" in hit.legs:
            assert hit.legs["bm25"].score == pytest.approx(plain[CORPUS.index(hit.snippet) + 1], abs=1e-6)


def test_counted_texts_expand_the_query_exactly_as_their_tokens_do():
    from kenning.retrieval.feedback import counted

    q = query_tokens("renal failure dialysis dialysis")
    texts = ["Dialysis for renal failure patients, renal units", "Kidney failure and the dialysis unit",
             "Transplant outcomes after renal replacement"]
    fb = [(3.0 - i, query_tokens(t)) for i, t in enumerate(texts)]
    plain = expanded_query(q, fb, terms=6)
    assert list(plain.items()) == list(expanded_query(q, [(s, counted(t)) for s, t in fb], terms=6).items())
    assert counted(["a", "b", "a"]) == ((("a", 2), ("b", 1)), 3)


@pytest.mark.embeddings
def test_a_hybrid_hit_found_by_feedback_words_alone_names_them_and_quotes_them(store):
    """Hybrid's BM25 leg also finds texts through the feedback words alone: such a hit holds none of
    the query's words (empty match_terms, lexical evidence nil), so it says which feedback words
    brought it in, as its text writes them, and its snippet shows them, not the text's opening."""
    filler = "The weekly sync covered hiring, the offsite agenda and the parking rota. " * 5
    store.write("The billing service uses Adyen for payments", scopes=["fb"])
    store.write("Billing retries failed payments every night", scopes=["fb"])
    store.write(filler + "Since March the Adyen account sits with finance.", scopes=["fb"])
    hits = store.search("billing payments", mode="hybrid", limit=10, auto_scope=False).hits
    [found] = [h for h in hits if "Adyen account" in h.snippet]
    assert found.match_terms == [] and "bm25" in found.legs
    assert found.feedback_terms == ["adyen"]  # the word it holds of the best matches' words, as written
    assert found.snippet.startswith("…") and found.to_dict()["feedback_terms"] == ["adyen"]
    assert all(h.feedback_terms is None and "feedback_terms" not in h.to_dict() for h in hits if h.match_terms)
    assert all(h.feedback_terms is None for h in store.search("billing payments", mode="bm25", auto_scope=False).hits)


@pytest.mark.embeddings
def test_a_hybrid_result_names_the_legs_that_ran_with_feedback(store):
    """Hybrid's bm25 leg ranks the expanded query and a long question's vector leg the question moved
    toward its nearest memories, so their ranks and scores differ from bm25 and semantic mode's for the
    same query: the result says which legs ran so (``feedback_legs``), and no other result says it."""
    for text in CORPUS:
        store.write(text, scopes=["fb"])
    short = store.search("kidney dialysis", mode="hybrid", auto_scope=False)
    assert short.feedback_legs == ["bm25"] and short.to_dict()["feedback_legs"] == ["bm25"]
    question = "which patients with failing kidneys need dialysis treatment"
    long = store.search(question, mode="hybrid", auto_scope=False)
    assert long.feedback_legs == ["bm25", "vector"]
    top = long.hits[0]
    alone = {h.id: h.legs["vector"].score for h in store.search(question, mode="semantic", auto_scope=False).hits}
    assert top.legs["vector"].score != alone[top.id]  # the moved question's cosine, as the result says
    for mode in ("keyword", "bm25", "semantic"):
        result = store.search(question, mode=mode, auto_scope=False)
        assert result.feedback_legs is None and "feedback_legs" not in result.to_dict()
    store.configure(fusion="rrf")  # RRF's hybrid runs both legs plain
    assert store.search(question, mode="hybrid", auto_scope=False).feedback_legs is None
