"""A lexical view patched in place by its own process's writes (``_place``, ``_patch_add``,
``_retire``, ``touch``) holds what a view read afresh from the store holds: the doc arrays, the
counts, the key -> lexid map and the postings. The writes carry the arrays past their first
allocation (1,024 lexids) and the key map past its own, where they grow."""

from __future__ import annotations

import numpy as np

import kenning
from kenning.store.lexicon import Lexicon

WORDS = ["billing", "ledger", "queue", "cache", "relay", "cluster", "invoice", "harbor", "falcon", "quartz"]


def _text(i: int) -> str:
    return f"{WORDS[i % 10]} {WORDS[(i * 7) % 10]} service {i} handles {WORDS[(i * 3) % 10]} traffic on node n{i}"


def _same_view(patched: Lexicon, fresh: Lexicon, keys: list[int], terms: list[str]) -> None:
    size = max(patched._size, fresh._size)
    live = np.flatnonzero(fresh.live[:size])
    assert np.array_equal(np.flatnonzero(patched.live[:size]), live)
    assert np.array_equal(patched.doc_key[live], fresh.doc_key[live])
    assert np.array_equal(patched.doc_len[live], fresh.doc_len[live])
    assert np.array_equal(patched.doc_ts[live], fresh.doc_ts[live])
    assert patched.n_docs == fresh.n_docs and abs(patched.avg_len - fresh.avg_len) < 1e-9
    assert np.array_equal(patched.lexids_of(keys), fresh.lexids_of(keys))
    ours, theirs = patched.postings(terms), fresh.postings(terms)
    for term in terms:
        assert np.array_equal(ours[term][0], theirs[term][0]) and np.array_equal(ours[term][1], theirs[term][1]), term


def test_a_view_patched_by_its_own_writes_equals_one_read_afresh(tmp_path):
    with kenning.open_store(tmp_path / "s") as store:
        store.import_records([{"content": _text(i), "scopes": ["t"]} for i in range(1000)])
        s = store._s
        view = s.lexicon.refresh()
        terms = [*WORDS, "service", "traffic", "n5", "n1010"]
        view.postings(terms)  # cached, so the writes below extend them in place
        keys = list(range(0, 1200))
        view.lexids_of(keys)  # the key map built, so the writes below patch it
        ids = [m.id for m in store.list(auto_scope=False, limit=50)]
        for i in range(1000, 1060):  # past the arrays' first 1,024 slots
            assert store.write(_text(i), scopes=["t"], force=True).status == "committed"
        for mid in ids[:10]:
            store.remove(mid, reason="retired")
        for n, mid in enumerate(ids[10:20]):
            store.update(mid, text=_text(2000 + n))  # the old version retired, the new one added
        for mid in ids[20:25]:
            store.update(mid, scopes=["t", "u"])  # no new text: the recency stamp only
        patched = s.lexicon.refresh()
        assert patched is view and patched._size > 1024
        keys = list(range(0, 1200))
        _same_view(patched, Lexicon(s.db).refresh(), keys, [*terms, "n2003"])
        assert "n1042" in store.search("falcon n1042", mode="bm25", auto_scope=False).hits[0].snippet
