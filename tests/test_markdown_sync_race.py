"""A markdown sync never overwrites a change another process made to a memory while the sync ran:
the block's edit is applied only to the memory it was compared with, else it is a conflict."""

from __future__ import annotations

import kenning
from kenning.recall import markdown


def test_an_update_landing_between_the_syncs_look_and_its_write_is_a_conflict_not_overwritten(store, tmp_path,
                                                                                                 monkeypatch):
    mid = store.write("The on-call rota changes every Monday at 09:00 UTC", scopes=["ops"]).id
    folder = tmp_path / "notes"
    markdown.export(store, folder)
    path = folder / "ops/MEMORY.md"
    path.write_text(path.read_text().replace("every Monday", "every Friday"))  # the person's edit

    real_get, done = store.get, []

    def get(id):
        found = real_get(id)
        if id == mid and not done:  # the sync has compared the block; an agent updates the memory now
            done.append(True)
            with kenning.open_store(store.directory) as agent:
                agent.update(mid, text="The on-call rota changes every Tuesday at 09:00 UTC")
        return found

    monkeypatch.setattr(store, "get", get)
    report = markdown.sync(store, folder)
    assert [c["id"] for c in report["conflicts"]] == [mid] and report["updated"] == []
    with kenning.open_store(store.directory) as fresh:
        assert "Tuesday" in fresh.get(mid).content  # was: Friday, the agent's update lost
