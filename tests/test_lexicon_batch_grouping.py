"""An import's postings are counted over the batch's whole token stream (store/lexicon.py
``_group_tokens``); they must be exactly what a Counter per document grouped by ``_group`` gives."""

from __future__ import annotations

import random
from collections import Counter
from itertools import repeat

import numpy as np

from kenning.store.lexicon import SEGMENT_DOCS, _group, _group_tokens


def _per_document(docs: list[list[str]], start: int) -> dict:
    terms, lexids, tfs = [], [], []
    for offset, stream in enumerate(docs):
        counts = Counter(stream)
        terms.extend(counts)
        tfs.extend(counts.values())
        lexids.extend(repeat(start + offset, len(counts)))
    return _group(terms, lexids, tfs)


def test_batch_counting_equals_counting_per_document():
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(300)]
    for start in (1, SEGMENT_DOCS - 40, 3 * SEGMENT_DOCS + 5):  # batches inside one segment and across two
        docs = [[rng.choice(vocabulary[: rng.randint(1, 300)]) for _ in range(rng.randint(0, 30))] for _ in range(120)]
        tokens = [t for d in docs for t in d]
        owners = np.repeat(np.arange(start, start + len(docs), dtype=np.int64), [len(d) for d in docs])
        got = _group_tokens(tokens, owners)
        want = _per_document(docs, start)
        assert list(got) == list(want)  # the same groups in the same order
        assert got == want
        assert list(got) == sorted(got)  # (term, segment) order: the rows reach the segments' B-tree in key order
    assert _group_tokens([], np.empty(0, np.int64)) == {}


def test_groups_come_in_the_byte_order_sqlite_keeps_terms_in():
    """Python's str order is the UTF-8 byte order SQLite's BINARY collation sorts the segments by."""
    terms = ["zeta", "Über", "über", "東京都", "a", "ab", "a_b", "x86", "c++", "naïve", "nai"]
    lexids = list(range(1, len(terms) + 1))
    got = [term for term, _ in _group(terms, lexids, [1] * len(terms))]
    assert got == sorted(terms, key=lambda t: t.encode("utf-8"))
