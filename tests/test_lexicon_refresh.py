"""Another connection's commit reloads this process's lexical view only as far as the index changed.

Every search logs an event, so most commits a reader sees touch no index row; reloading the doc
table for each of them made concurrent readers pay a full reload per search."""

from __future__ import annotations

import pytest

import kenning
from kenning.memory.gates import pipeline


def _pair(tmp_path):
    a = kenning.open_store(tmp_path / "s", session_id="a")
    a.import_records([{"content": f"note {i} about the billing service", "scopes": ["t"]} for i in range(50)])
    b = kenning.open_store(tmp_path / "s", session_id="b")
    return a, b


def test_a_commit_that_leaves_the_index_alone_keeps_the_doc_table_and_postings(tmp_path):
    a, b = _pair(tmp_path)
    a.search("billing service", mode="bm25", record=False)
    arrays, cached = a.lexicon.doc_key, dict(a.lexicon._cache)
    assert cached
    b.log_event("probe")  # another connection commits: data_version moves
    b.configure(bm25_k1=1.3)
    a.search("billing service", mode="bm25", record=False)
    assert a.lexicon.doc_key is arrays  # not reloaded
    assert all(a.lexicon._cache[t] is cached[t] for t in cached)
    a.close(), b.close()


def test_documents_another_process_appends_are_read_without_a_reload(tmp_path):
    a, b = _pair(tmp_path)
    a.search("billing", mode="bm25", record=False)
    arrays = a.lexicon.doc_key
    new = b.write("the zebra service stores its data in postgres", scopes=["t"]).id
    batch = b.import_records([{"content": "an imported quokka fact", "scopes": ["t"]}])
    assert [h.id for h in a.search("zebra postgres", mode="bm25", record=False).hits] == [new]
    assert [h.id for h in a.search("quokka", mode="keyword", record=False).hits] == batch
    assert a.lexicon.n_docs == 52
    assert a.lexicon.doc_key is arrays or a.lexicon.doc_key.size > arrays.size  # grown, not reloaded
    a.close(), b.close()


def test_an_edit_by_another_process_reloads(tmp_path):
    a, b = _pair(tmp_path)
    hits = a.search("note 7 billing", mode="bm25", limit=50, record=False).hits
    gone = hits[0].id
    b.remove(gone, reason="test")
    b.update(hits[1].id, text="the walrus service stores its data in redis")
    after = [h.id for h in a.search("note 7 billing", mode="bm25", limit=50, record=False).hits]
    assert gone not in after and hits[1].id not in after
    assert [h.id for h in a.search("walrus", mode="bm25", record=False).hits] == [hits[1].id]
    assert a.lexicon.n_docs == 49
    a.close(), b.close()


def test_own_import_is_searchable_at_once(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        s.search("anything", mode="bm25", record=False)
        ids = s.import_records([{"content": "the capybara rota", "scopes": ["t"]}])
        assert [h.id for h in s.search("capybara", mode="bm25", record=False).hits] == ids


def _arrays(lexicon):
    live = lexicon.live.nonzero()[0]
    return (live.tolist(), lexicon.doc_key[live].tolist(), lexicon.doc_len[live].tolist(),
            lexicon.doc_ts[live].tolist(), lexicon.n_docs, lexicon.avg_len)


@pytest.mark.sqlite_only  # the snapshot is a blob in the SQLite file's meta table
def test_a_cold_process_loads_the_doc_table_from_a_snapshot_only_while_it_is_current(tmp_path, monkeypatch):
    from kenning.store import lexicon as lexicon_module

    monkeypatch.setattr(lexicon_module, "SNAPSHOT_MIN_DOCS", 1)
    home = tmp_path / "s"
    with kenning.open_store(home) as a:
        ids = a.import_records([{"content": f"note {i} about the billing service", "scopes": ["t"]}
                                for i in range(30)])
        a.search("billing", mode="bm25", record=False)  # a full load leaves the snapshot
        assert a.db.get_meta("lex_docs_snapshot") is not None
        full = _arrays(a.lexicon)

    reads = []
    real = lexicon_module.Lexicon._append_rows
    monkeypatch.setattr(lexicon_module.Lexicon, "_append_rows", lambda self, top: (reads.append(top), real(self, top)))
    with kenning.open_store(home) as b:
        b.search("billing", mode="bm25", record=False)
        assert _arrays(b.lexicon) == full and not reads  # from the snapshot alone
        new = b.write("the walrus service stores its data in redis", scopes=["t"]).id  # an append: snapshot still good
    with kenning.open_store(home) as c:
        assert [h.id for h in c.search("walrus redis", mode="bm25", record=False).hits] == [new]
        assert reads and c.lexicon.n_docs == 31  # the snapshot plus the one row appended after it
        c.remove(ids[0], reason="test")  # an edit: the snapshot no longer holds
    with kenning.open_store(home) as d:
        hits = {h.id for h in d.search("billing note", mode="bm25", limit=50, record=False).hits}
        assert ids[0] not in hits and len(hits) == 29 and d.lexicon.n_docs == 30


def test_a_document_another_process_commits_between_our_gates_and_our_write_is_read(tmp_path, monkeypatch):
    """Our write's lexid lands after theirs: the view must not take ours as the newest it has read
    (two processes writing the same facts each stored one twice: the duplicate probe never saw it)."""
    a, b = _pair(tmp_path)
    a.search("billing", mode="bm25", record=False)  # a's view is current
    gates, theirs = pipeline.run, []

    def then_the_other_writes(*args, **kwargs):
        passed = gates(*args, **kwargs)
        if not theirs:
            theirs.append("")  # b's own gates pass straight through
            theirs[0] = b.write("the zebra service stores its data in postgres", scopes=["t"]).id
        return passed

    monkeypatch.setattr(pipeline, "run", then_the_other_writes)
    a.write("the okapi service keeps its queue in kafka", scopes=["t"])  # indexed just after b's
    assert [h.id for h in a.search("zebra postgres", mode="bm25", record=False).hits] == theirs
    again = a.write("the zebra service stores its data in postgres", scopes=["t"])
    assert again.status == "duplicate" and again.id == theirs[0]
    assert a.lexicon.n_docs == 52
    a.close(), b.close()
