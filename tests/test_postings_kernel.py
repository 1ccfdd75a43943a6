"""The lexical legs' compiled summing step (retrieval/_postings.c) against numpy's: the same documents,
the same floats and the same order on random indexes full of ties, with and without a filter, for
BM25 (plain, weighted, expanded with its bound and its fallback) and the keyword leg (phrase bonus
and recency); clear errors for bad input; and the same answers from threads searching at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from kenning.retrieval import bm25, keyword, lexical

kernel = lexical.kernel
needs_kernel = pytest.mark.skipif(kernel is None, reason="the compiled summing step is not built here")
WORDS = [f"w{i}" for i in range(30)]


class Index:
    """Random postings over few words (zipf sizes, so a few are common), term counts 1-3 and few
    distinct lengths (equal scores, so ties at every cut), ages from now to a year, and texts that
    hold the words in random order (some hold a two-word phrase)."""

    def __init__(self, rng: np.random.Generator, n_docs: int):
        self.n_docs = n_docs
        self.doc_key = rng.permutation(n_docs).astype(np.int64) + 1
        self.doc_len = rng.choice([8.0, 12.0, 20.0], n_docs)
        self.doc_ts = 1e9 - rng.choice([0.0, 3600.0, 5 * 86400.0, 400 * 86400.0], n_docs)
        self.avg_len = float(self.doc_len.mean())
        self._postings, held = {}, {int(k): [] for k in self.doc_key}
        for word in WORDS:
            size = int(min(n_docs, rng.zipf(1.4) * 4))
            ids = np.sort(rng.choice(n_docs, size, replace=False)).astype(np.int64)
            tfs = rng.integers(1, 4, size).astype(np.int32)
            self._postings[word] = (ids, tfs)
            for lexid, tf in zip(ids.tolist(), tfs.tolist()):
                held[int(self.doc_key[lexid])] += [word] * tf
        self.texts = {}
        for key, said in held.items():
            rng.shuffle(said)
            self.texts[key] = " ".join(said)

    def postings(self, terms):
        empty = (np.empty(0, np.int64), np.empty(0, np.int32))
        return {t: self._postings.get(t, empty) for t in terms}

    def text_of(self, keys):
        return {k: self.texts[k] for k in keys}


def both(monkeypatch, run):
    """``run()`` on the compiled path, then on numpy's."""
    compiled = run()
    monkeypatch.setattr(lexical, "kernel", None)
    try:
        return compiled, run()
    finally:
        monkeypatch.setattr(lexical, "kernel", kernel)


def test_the_install_built_it_unless_told_not_to():
    """CI and the README's installs compile it: a build that silently failed would leave every
    search on the slower path with nothing to say so."""
    if os.environ.get("KENNING_NUMPY_SUMS", "").strip() not in ("", "0"):
        assert kernel is None
        return
    from kenning.retrieval import _postings

    assert kernel is _postings
    probe = "from kenning.retrieval import lexical; print(lexical.kernel is None)"
    told = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "KENNING_NUMPY_SUMS": "1"})
    assert told.stdout.strip() == "True", told.stderr


def test_an_extension_built_from_an_older_source_is_not_used(monkeypatch):
    """A checkout pulled into an editable install keeps the .so it last built: one without a call
    today's code makes must leave every search on numpy's path, not fail it."""
    import types

    older = types.ModuleType("kenning.retrieval._postings")
    older.top_sums = older.near_top = lambda *a, **k: None  # no join_rows
    monkeypatch.setitem(sys.modules, "kenning.retrieval._postings", older)
    monkeypatch.delenv("KENNING_NUMPY_SUMS", raising=False)
    import kenning.retrieval as package

    monkeypatch.setattr(package, "_postings", older, raising=False)
    assert lexical._compiled() is None
    older.join_rows = lambda *a: None
    assert lexical._compiled() is older


@needs_kernel
def test_bm25_gives_numpys_documents_scores_and_order(monkeypatch):
    rng = np.random.default_rng(21)
    for trial in range(150):
        index = Index(rng, int(rng.integers(1, 2500)))
        terms = list(rng.choice(WORDS + ["nowhere"], int(rng.integers(1, 8))))  # repeats too
        allowed = None if trial % 3 else rng.random(index.n_docs) < 0.5
        weights = None if trial % 2 else {t: float(rng.random()) for t in dict.fromkeys(terms)}
        for k in (1, 7, 100):
            got, expected = both(monkeypatch, lambda: bm25.search(index, terms, k, allowed, weights=weights))
            assert got == expected, (trial, k)


@needs_kernel
def test_the_probes_one_pass_gives_numpys_answer(monkeypatch):
    """``bm25.search_once`` (a write's duplicate probe) saturates the term frequencies in the call."""
    rng = np.random.default_rng(25)
    for trial in range(150):
        index = Index(rng, int(rng.integers(1, 2500)))
        index.doc_len = rng.integers(3, 60, index.n_docs).astype(np.float64)  # lengths of every size
        index.avg_len = float(index.doc_len.mean())
        terms = list(rng.choice(WORDS + ["nowhere"], int(rng.integers(1, 8))))
        k1, b = [(bm25.K1, bm25.B), (0.9, 0.4), (2.0, 0.0), (1.2, 1.0)][trial % 4]
        for k in (1, 20, 100):
            got, expected = both(monkeypatch, lambda: bm25.search_once(index, terms, k, k1=k1, b=b))
            assert got == expected, (trial, k)


@needs_kernel
def test_the_expanded_pass_gives_numpys_answer_bound_or_fallback(monkeypatch):
    rng = np.random.default_rng(22)
    fell_back, answered = 0, 0
    full = bm25.search
    for trial in range(150):
        index = Index(rng, int(rng.integers(20, 2500)))
        names = list(dict.fromkeys(rng.choice(WORDS + ["nowhere"], int(rng.integers(2, 20)))))
        essential = names[: int(rng.integers(1, 4))]
        weights = {t: float(rng.random()) * (3.0 if t in essential else 0.3) for t in names}
        allowed = None if trial % 3 else rng.random(index.n_docs) < 0.6
        for k in (1, 10, 100):
            calls = []
            monkeypatch.setattr(bm25, "search", lambda *a, **kw: calls.append(1) or full(*a, **kw))
            got = bm25.search_expanded(index, weights, k, essential, allowed)
            monkeypatch.setattr(bm25, "search", full)
            fell_back, answered = fell_back + bool(calls), answered + (not calls)
            _, expected = both(monkeypatch, lambda: bm25.search_expanded(index, weights, k, essential, allowed))
            assert got == expected == full(index, [], k, allowed, weights=weights), (trial, k)
    assert fell_back > 20 and answered > 100  # both ways out of the bound were taken


@needs_kernel
def test_the_keyword_leg_gives_numpys_answer(monkeypatch):
    rng = np.random.default_rng(23)
    for trial in range(150):
        index = Index(rng, int(rng.integers(1, 2500)))
        terms = list(dict.fromkeys(rng.choice(WORDS[:6] + ["nowhere"], int(rng.integers(1, 4)))))
        allowed = None if trial % 4 else rng.random(index.n_docs) < 0.7
        phrase = " ".join(terms) if trial % 2 else None
        now = None if trial % 5 == 0 else 1e9
        for k in (1, 10, 100):
            got, expected = both(monkeypatch, lambda: keyword.search(
                index, terms, k, allowed, phrase=phrase, text_of=index.text_of, now=now))
            assert got == expected, (trial, k)


@needs_kernel
def test_bad_input_is_an_error_not_a_crash():
    keys = np.arange(1, 11, dtype=np.int64)
    ids, values = np.array([1, 3], np.int64), np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="outside the index"):
        kernel.top_sums([(np.array([1, 10], np.int64), values, 1.0, True)], keys, 5)
    with pytest.raises(ValueError, match="outside the index"):
        kernel.top_sums([(ids, values, 1.0, True), (np.array([-1], np.int64), np.array([1.0]), 1.0, False)],
                        keys, 5)
    with pytest.raises(ValueError, match="outside the index"):
        kernel.near_top([(np.array([2, 12], np.int64), values, 1.0)], 10, 5, 0.1)
    with pytest.raises(TypeError, match="lexids"):
        kernel.top_sums([(ids.astype(np.int32), values, 1.0, True)], keys, 5)
    with pytest.raises(TypeError, match="values"):
        kernel.near_top([(ids, values.astype(np.float32), 1.0)], 10, 5, 0.1)
    with pytest.raises(ValueError, match="differ in length"):
        kernel.top_sums([(ids, values[:1], 1.0, True)], keys, 5)
    with pytest.raises(ValueError, match="shorter"):
        kernel.top_sums([(ids, values, 1.0, True)], keys, 5, np.ones(3, bool))
    with pytest.raises(TypeError):
        kernel.top_sums([(ids, values)], keys, 5)
    lens = np.full(10, 4.0)
    with pytest.raises(TypeError, match="term frequencies"):  # with a saturation the values are counts
        kernel.top_sums([(ids, values, 1.0, True)], keys, 5, saturate=(lens, 4.0, 1.2, 0.5))
    with pytest.raises(ValueError, match="no length"):
        kernel.top_sums([(ids, np.array([1, 2], np.int32), 1.0, True)], keys, 5, saturate=(lens[:2], 4.0, 1.2, 0.5))
    # tf 1 at length 4 of 4: 1 * 2.2 / (1 + 1.2) = 1.0; tf 2: 4.4 / 3.2
    assert kernel.top_sums([(ids, np.array([1, 2], np.int32), 1.0, True)], keys, 5,
                           saturate=(lens, 4.0, 1.2, 0.5)) == [(4, 4.4 / 3.2), (2, 1.0)]
    # after every refusal the kept work arrays are free again: a good call still answers
    assert kernel.top_sums([(ids, values, 2.0, True)], keys, 5) == [(4, 4.0), (2, 2.0)]
    assert kernel.top_sums([(ids, values, 2.0, True)], keys, 0) == []
    assert kernel.top_sums([], keys, 5) == [] and kernel.top_sums([], keys, 5, bound=0.0) is None


@needs_kernel
def test_threads_searching_at_once_get_the_serial_answers():
    """The sums run without the GIL on work arrays kept between calls: a call that finds them busy
    must take its own, never share them."""
    rng = np.random.default_rng(24)
    index = Index(rng, 20000)
    queries = [list(rng.choice(WORDS, 4)) for _ in range(40)]
    expected = [(bm25.search(index, q, 50), keyword.search(index, q, 50, now=1e9)) for q in queries]
    wrong, failures = [], []

    def worker(offset):
        try:
            for i in range(len(queries) * 3):
                j = (i + offset) % len(queries)
                got = (bm25.search(index, queries[j], 50), keyword.search(index, queries[j], 50, now=1e9))
                if got != expected[j]:
                    wrong.append(j)
        except Exception as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n * 7,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures and not wrong


@needs_kernel
def test_near_top_keeps_what_reaches_the_cut_ties_included_and_what_every_list_holds():
    a = (np.array([0, 2, 3, 5], np.int64), np.array([3.0, 2.0, 1.0, 2.0]), 1.0)
    b = (np.array([2, 4], np.int64), np.array([0.5, 2.5]), 2.0)  # adds 1.0 to 2 and 5.0 to 4
    decode = lambda found: [np.frombuffer(x, t).tolist() for x, t in zip(found, keyword._KINDS)]  # noqa: E731
    # totals: 0 -> 3, 2 -> 3, 3 -> 1, 4 -> 5, 5 -> 2; the 3rd best is 3
    assert decode(kernel.near_top([a, b], 6, 3, 0.0)) == [[0, 2, 4], [3.0, 3.0, 5.0], [2], [3.0]]
    assert decode(kernel.near_top([a, b], 6, 3, 1.0)) == [[0, 2, 4, 5], [3.0, 3.0, 5.0, 2.0], [2], [3.0]]
    assert decode(kernel.near_top([a, b], 6, 9, 0.0))[0] == [0, 2, 3, 4, 5]  # fewer than k: all of them
    allowed = np.array([True, True, False, True, True, True])
    assert decode(kernel.near_top([a, b], 6, 3, 0.0, allowed)) == [[0, 4, 5], [3.0, 5.0, 2.0], [], []]
