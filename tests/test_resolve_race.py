"""Two resolutions of one contradiction at once (one keeps A, the other keeps B): one is made, the
other is refused. Each used to read the pair, then write the two memories' links in transactions of
their own, so both answered "resolved" and the later one's links silently replaced the earlier's."""

from __future__ import annotations

import pytest

import kenning
from kenning.errors import InvalidInput
from kenning.memory import conflicts


@pytest.fixture
def pair(tmp_path):
    home = tmp_path / "s"
    with kenning.open_store(home) as s:
        a = s.write("The ingest service listens on port 7000 in the blue zone", scopes=["ops"]).id
        b = s.write("Contrary to earlier notes the ingest daemon binds port 9100 on the red segment",
                    scopes=["ops"], links=[{"type": "contradicts", "target_id": a}], force=True).id
    return home, a, b


def kinds(store, id):
    return [(link.kind, link.target) for link in store.get(id).links]


def test_a_resolution_made_meanwhile_by_another_process_refuses_this_one(pair, monkeypatch):
    home, a, b = pair
    real_get, done = conflicts.reads.get, []

    def get(s, id):
        found = real_get(s, id)
        if not done and id == b:  # after this resolve read the pair: another process keeps B
            done.append(True)
            with kenning.open_store(home) as other:
                assert other.resolve_conflict(a, b, "supersede", keep_id=b)["status"] == "resolved"
        return found

    monkeypatch.setattr(conflicts.reads, "get", get)
    with kenning.open_store(home) as s:
        with pytest.raises(InvalidInput, match="not in conflict any more"):  # was: "resolved"
            s.resolve_conflict(a, b, "supersede", keep_id=a)
        assert kinds(s, b) == [("supersedes", a)] and kinds(s, a) == []  # the other's, whole


def test_a_resolution_still_links_the_pair_in_one_step(pair):
    home, a, b = pair
    with kenning.open_store(home) as s:
        done = s.resolve_conflict(a, b, "supersede", keep_id=a, note="the blue zone moved")
        assert done["status"] == "resolved" and done["id"] == a
        assert kinds(s, a) == [("supersedes", b)] and kinds(s, b) == []
        assert s.conflicts(auto_scope=False) == []
        assert [e["kind"] for e in s.events(kinds=["conflict_resolved"])] == ["conflict_resolved"]
