"""The keyword leg called directly: exact scores (1 + ln count a term, the recency nudge at known ages),
a filter, a one-word query earning no phrase bonus, and the phrase check reaching the best candidates
when more than PHRASE_CHECK_LIMIT hold every term."""

import math

import pytest

from kenning.retrieval import keyword
from kenning.retrieval.text import query_terms

pytestmark = pytest.mark.usefixtures("sums")  # the compiled and the numpy summing step

DAY = 86400.0


def _lexicon(store, texts):
    store.import_records([{"content": t, "scopes": ["test"]} for t in texts])
    return store.lexicon.refresh()


def test_scores_are_one_plus_log_count_per_term(store):
    lex = _lexicon(store, ["apple apple pie", "apple tart", "plum jam"])
    hits = keyword.search(lex, query_terms("apple pie"), 5)
    assert hits == [(1, pytest.approx(1 + math.log(2) + 1, rel=1e-12)), (2, pytest.approx(1.0, rel=1e-12))]


def test_recency_adds_at_most_the_nudge_and_halves_each_half_life(store):
    lex = _lexicon(store, ["apple pie"])
    ts = float(lex.doc_ts[(lex.doc_key == 1) & lex.live][0])  # when the memory was indexed (epoch seconds)
    fresh = keyword.search(lex, ["appl"], 5, now=ts)
    assert fresh == [(1, pytest.approx(1.0 + keyword.RECENCY_MAX, rel=1e-12))]
    later = keyword.search(lex, ["appl"], 5, now=ts + keyword.RECENCY_HALF_LIFE_DAYS * DAY)
    assert later == [(1, pytest.approx(1.0 + keyword.RECENCY_MAX / 2, rel=1e-12))]


def test_a_filter_keeps_only_allowed_documents(store):
    lex = _lexicon(store, ["red apple", "green apple"])
    assert [k for k, _ in keyword.search(lex, ["appl"], 5, allowed=lex.live & (lex.doc_key == 2))] == [2]


def test_a_one_word_query_earns_no_phrase_bonus(store):
    texts = ["apple pie"]
    lex = _lexicon(store, texts)
    text_of = lambda keys: {k: texts[k - 1] for k in keys}
    assert keyword.search(lex, ["appl"], 5, phrase="apple", text_of=text_of) == [(1, pytest.approx(1.0))]


def test_the_phrase_check_reaches_the_best_of_many_full_matches(store):
    texts = [f"beta {i} then alpha" for i in range(keyword.PHRASE_CHECK_LIMIT + 5)] + ["alpha beta alpha"]
    lex = _lexicon(store, texts)
    text_of = lambda keys: {k: texts[k - 1] for k in keys}
    hits = keyword.search(lex, query_terms("alpha beta"), 3, phrase="alpha beta", text_of=text_of)
    assert hits[0] == (len(texts), pytest.approx(1 + math.log(2) + 1 + keyword.PHRASE_BONUS))


def _reference(index, terms, k, allowed=None, phrase=None, text_of=None, now=None):
    """The keyword leg as it was before it learnt to skip documents that cannot reach the top k: a
    sum over every matched document (the answer the leg must keep giving)."""
    import numpy as np

    from kenning.retrieval.lexical import accumulate, best, restrict
    from kenning.retrieval.text import phrase_test, tokenize

    distinct = list(dict.fromkeys(terms))
    if not distinct or index.n_docs == 0:
        return []
    postings = index.postings(distinct)
    ids, scores = [], []
    for term in distinct:
        lexids, tfs = restrict(*postings[term], allowed)
        if lexids.size:
            ids.append(lexids)
            scores.append(1.0 + np.log(tfs.astype(np.float64)))
    if not ids:
        return []
    uniq, totals, matched = accumulate(np.concatenate(ids), np.concatenate(scores))
    if now is not None:
        age_days = np.maximum(0.0, now - index.doc_ts[uniq]) / 86400.0
        totals += keyword.RECENCY_MAX * np.power(0.5, age_days / keyword.RECENCY_HALF_LIFE_DAYS)
    if phrase and text_of and len(tokenize(phrase)) >= 2:
        full = np.flatnonzero(matched == len(distinct))
        full = full[np.argsort(-totals[full], kind="stable")][: keyword.PHRASE_CHECK_LIMIT]
        keys = index.doc_key[uniq[full]].tolist()
        texts = text_of(keys)
        holds = phrase_test(phrase)
        for i, key in zip(full.tolist(), keys):
            if holds(texts.get(key, "")):
                totals[i] += keyword.PHRASE_BONUS
    return best(index, uniq, totals, k)


class _RandomIndex:
    """Random postings over few words (so many documents hold every query word), counts whose scores
    differ by less than the recency nudge (1 + ln 3 against 1 + 1), and ages from now to a year."""

    def __init__(self, rng, n_docs, words):
        import numpy as np

        self.n_docs = n_docs
        self.doc_key = rng.permutation(n_docs).astype(np.int64) + 1
        self.doc_ts = 1e9 - rng.choice([0.0, 3600.0, 5 * DAY, 40 * DAY, 400 * DAY], n_docs)
        self.texts = {}
        counts = {w: rng.integers(0, 5, n_docs) * (rng.random(n_docs) < rng.uniform(0.05, 0.9)) for w in words}
        order = {int(key): [w for w in words for _ in range(int(counts[w][lexid]))]
                 for lexid, key in enumerate(self.doc_key)}
        for key, said in order.items():
            rng.shuffle(said)
            self.texts[key] = " ".join(said)
        self._postings = {w: (np.flatnonzero(c).astype(np.int64), c[c > 0].astype(np.int32)) for w, c in counts.items()}

    def postings(self, terms):
        import numpy as np

        empty = (np.empty(0, np.int64), np.empty(0, np.int32))
        return {t: self._postings.get(t, empty) for t in terms}


def test_the_leg_answers_what_a_sum_over_every_matched_document_answers():
    import numpy as np

    rng = np.random.default_rng(17)
    words = ["ant", "bee", "cat", "dog", "eel"]
    for trial in range(120):
        index = _RandomIndex(rng, int(rng.integers(5, 1500)), words)
        text_of = lambda keys, index=index: {k: index.texts[k] for k in keys}  # noqa: E731
        query = list(rng.choice(words + ["yak"], int(rng.integers(1, 4)), replace=False))
        allowed = None if trial % 4 else rng.random(index.n_docs) < 0.7
        phrase = " ".join(query) if trial % 2 else None
        now = None if trial % 5 == 0 else 1e9
        for k in (1, 10, 100):
            got = keyword.search(index, query, k, allowed, phrase=phrase, text_of=text_of, now=now)
            assert got == _reference(index, query, k, allowed, phrase=phrase, text_of=text_of, now=now), (trial, k)


def _aged(docs):
    """A _RandomIndex of given texts and ages in days (key = position + 1, words split on spaces)."""
    import numpy as np

    index = _RandomIndex.__new__(_RandomIndex)
    index.n_docs = len(docs)
    index.doc_key = np.arange(1, len(docs) + 1, dtype=np.int64)
    index.doc_ts = np.array([1e9 - age * DAY for _, age in docs])
    index.texts = {i + 1: text for i, (text, _) in enumerate(docs)}
    words = sorted({w for text, _ in docs for w in text.split()})
    index._postings = {}
    for w in words:
        counts = np.array([text.split().count(w) for text, _ in docs])
        index._postings[w] = (np.flatnonzero(counts).astype(np.int64), counts[counts > 0].astype(np.int32))
    return index


def test_a_fresher_text_a_nudge_below_the_best_total_still_wins():
    # 1 + ln 3 = 2.0986 (a year old) against 1 + 1 = 2.0 (today, +0.1): the second is first; the
    # shortest list ("ant": two texts) sets the cut at 2.0986, which the fresh text is under
    index = _aged([("ant ant ant", 365), ("ant bee", 0), ("bee", 0), ("bee", 0)])
    got = keyword.search(index, ["ant", "bee"], 1, now=1e9)
    assert got == _reference(index, ["ant", "bee"], 1, now=1e9) == [(2, pytest.approx(2.1))]


def test_a_fresher_phrase_a_nudge_below_the_checked_texts_is_still_checked():
    # PHRASE_CHECK_LIMIT texts holding both words (4 + 4 times: 2 + ln 16, a year old) and one with
    # the phrase (5 + 3 times: 2 + ln 15, 0.065 less, today): by total and age it is first to check
    crowd = [("bee bee bee bee ant ant ant ant", 365)] * keyword.PHRASE_CHECK_LIMIT
    index = _aged(crowd + [("ant bee ant ant ant ant bee bee", 0)])
    text_of = lambda keys: {k: index.texts[k] for k in keys}  # noqa: E731
    got = keyword.search(index, ["ant", "bee"], 1, phrase="ant bee", text_of=text_of, now=1e9)
    expected = 2 + math.log(15) + keyword.RECENCY_MAX + keyword.PHRASE_BONUS
    assert got == _reference(index, ["ant", "bee"], 1, phrase="ant bee", text_of=text_of, now=1e9)
    assert got == [(len(crowd) + 1, pytest.approx(expected))]
