"""A search keeps the records (and supersedes links) of its hits in a memo until the store changes:
it must never serve what the store no longer holds, and its own event batches must not empty it."""

from __future__ import annotations

import pytest

import kenning
from kenning.store.memo import memo


def _hit(store, query):
    [hit] = [h for h in store.search(query, mode="bm25", limit=10).hits]
    return hit


def test_a_change_by_this_store_or_another_is_seen_at_the_next_search(tmp_path):
    home = tmp_path / "s"
    with kenning.open_store(home) as a, kenning.open_store(home) as b:
        [first] = a.import_records([{"content": "the billing service bills monthly", "scopes": ["billing"]}])
        before = _hit(a, "billing monthly")
        assert before.scopes == ["billing"]
        a.update(first, scopes=["billing", "finance"])  # this store object
        assert _hit(a, "billing monthly").scopes == ["billing", "finance"]
        b.update(first, confidence="high")  # another connection
        hit = _hit(a, "billing monthly")
        assert hit.confidence == "high" and hit.version != before.version
        a.verify(first, note="checked")  # a record change the lexical index does not see
        assert _hit(a, "billing monthly").version == a.show(first)["version"]


def test_a_new_supersedes_link_shows_at_the_next_search(tmp_path):
    with kenning.open_store(tmp_path / "s") as store:
        [old] = store.import_records([{"content": "deploys run from jenkins", "scopes": ["ops"]}])
        assert "superseded_by" not in _hit(store, "jenkins").trust
        newer = store.write("deploys run from github actions, not the old server", scopes=["ops"],
                            links=[{"kind": "supersedes", "target": old}])
        assert _hit(store, "jenkins").trust["superseded_by"] == [newer.id]


@pytest.mark.sqlite_only  # the memos stay off on PostgreSQL (store/memo.py)
def test_the_searches_own_event_batches_leave_the_memo_alone(tmp_path):
    with kenning.open_store(tmp_path / "s") as store:
        store.import_records([{"content": "the billing service bills monthly", "scopes": ["billing"]}])
        session = store._s
        store.search("billing", mode="bm25")
        held = memo(session.db, "records")
        assert held
        for _ in range(3):  # each batch commits the search events and settles older ones
            store.search("billing", mode="bm25")
            session.deferred.flush()
        assert store.events(kinds=["search"])  # the batches did commit
        assert memo(session.db, "records") is held
        store.write("an unrelated note about lunch", scopes=["misc"])  # a write empties it
        assert memo(session.db, "records") is not held
