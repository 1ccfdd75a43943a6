"""The read path: auto_scope across two real git repositories, session-disabled scopes, renames,
the scope overview, the event log and since_prior_session."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import kenning
from kenning.errors import InvalidInput
from clocks import Clock, ticking

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    return path


@pytest.fixture(autouse=True)
def no_enclosing_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


@pytest.fixture
def clock():
    return ticking(START)


@pytest.fixture
def places(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    return {"alpha": make_repo(tmp_path / "alpha"), "beta": make_repo(tmp_path / "beta"), "outside": outside}


def open_at(tmp_path, clock, cwd):
    return kenning.open_store(tmp_path / "store", clock=clock, cwd=cwd)


@pytest.fixture
def seeded(tmp_path, clock, places):
    """One store, written from repository alpha, repository beta and from outside any repository."""
    ids = {}
    for place, text in (("alpha", "alpha deploys use the blue green rollout"),
                        ("beta", "beta deploys use the canary rollout"),
                        ("outside", "deploys should never happen on a friday")):
        with open_at(tmp_path, clock, places[place]) as s:
            ids[place] = s.write(text, scopes=[f"projects:{place}", "deploys"]).id
    return ids


def found(store, query="deploys rollout", mode="bm25", **kw) -> set[str]:
    return {h.id for h in store.search(query, mode=mode, limit=10, **kw).hits}


def test_auto_scope_sees_its_own_repository_plus_global_memories(tmp_path, clock, places, seeded):
    with open_at(tmp_path, clock, places["alpha"]) as alpha:
        assert found(alpha, "deploys") == {seeded["alpha"], seeded["outside"]}
        assert {m.id for m in alpha.list()} == {seeded["alpha"], seeded["outside"]}
        assert found(alpha, "deploys", auto_scope=False) == set(seeded.values())
        assert {m.id for m in alpha.list(auto_scope=False)} == set(seeded.values())
        assert found(alpha, "deploys", scopes=["projects:beta"]) == set()  # explicit scopes filter on top
        assert found(alpha, "deploys", scopes=["projects:beta"], auto_scope=False) == {seeded["beta"]}
    with open_at(tmp_path, clock, places["beta"]) as beta:
        assert found(beta, "deploys") == {seeded["beta"], seeded["outside"]}
    with open_at(tmp_path, clock, places["outside"]) as nowhere:  # nothing to scope to: everything
        assert found(nowhere, "deploys") == set(seeded.values())


def test_a_linked_worktree_is_its_own_scope(tmp_path, clock, places, seeded):
    repo = places["alpha"]
    subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-q",
                    "--allow-empty", "-m", "init"], cwd=repo, check=True)
    linked = tmp_path / "alpha-feature"
    subprocess.run(["git", "worktree", "add", "-q", str(linked)], cwd=repo, check=True)
    with open_at(tmp_path, clock, linked) as s:
        assert found(s, "deploys") == {seeded["outside"]}


def test_disabled_scopes_hide_memories_for_this_session_only(tmp_path, clock, places, seeded):
    with open_at(tmp_path, clock, places["outside"]) as s:
        assert s.disable_scope("projects:beta") == ["projects:beta"]
        assert s.disable_scope("projects:beta") == ["projects:beta"]
        assert found(s, "deploys") == {seeded["alpha"], seeded["outside"]}
        assert seeded["beta"] not in {m.id for m in s.list(auto_scope=False)}
        assert s.scope_overview()["scopes"].get("projects:beta") is None
        with open_at(tmp_path, clock, places["outside"]) as other:
            assert found(other, "deploys") == set(seeded.values())
        assert s.enable_scope("projects:beta") == []
        assert found(s, "deploys") == set(seeded.values())


def test_rename_scope_relabels_memories_and_tombstones(tmp_path, clock, places, seeded):
    with open_at(tmp_path, clock, places["outside"]) as s:
        s.remove(seeded["beta"], reason="beta was shut down")
        before = s.get(seeded["alpha"])
        assert s.rename_scope("deploys", "releases") == 3
        after = s.get(seeded["alpha"])
        assert after.scopes == ["projects:alpha", "releases"] and after.updated == before.updated
        assert found(s, "deploys", scopes=["releases"]) == {seeded["alpha"], seeded["outside"]}
        assert found(s, "deploys", scopes=["deploys"]) == set()
        assert s.tombstones(scopes=["releases"])[0].memory.scopes == ["projects:beta", "releases"]
        assert s.rename_scope("projects:alpha", "releases") == 1  # already carries it: merged
        assert s.get(seeded["alpha"]).scopes == ["releases"]
        assert s.rename_scope("nothing-here", "x") == 0
        with pytest.raises(InvalidInput):
            s.rename_scope("releases", "releases")


def test_scope_overview_counts_without_content(tmp_path, clock, places, seeded):
    with open_at(tmp_path, clock, places["alpha"]) as s:
        s.write("The user prefers rebases over merges", scopes=["user"], category="user-inference")
        overview = s.scope_overview()
        assert overview["current_worktree"] == str(places["alpha"].resolve())
        assert overview["scopes"] == {"deploys": 2, "projects:alpha": 1, "projects:outside": 1}
        assert overview["total"] == 2 and overview["auto_scope"] is True
        assert [p["pending_reason"] for p in overview["pending_writes"]] == ["user_inference"]
        assert set(overview["curation_pending"]) >= {"stale", "never_verified", "drifted", "conflicts", "silent_misses"}
        assert overview["curation_pending"]["never_verified"] == 2
        assert overview["curation_pending_new_since_last_session"]["never_verified"] == 0
        s.write("alpha builds are cached on the shared runner", scopes=["projects:alpha"])
        assert s.scope_overview()["curation_pending_new_since_last_session"]["never_verified"] == 1
        assert s.scope_overview(auto_scope=False)["total"] == 4
        s.remove(seeded["alpha"], reason="replaced")
        s.remove(seeded["outside"], reason="no longer true")
        assert s.scope_overview()["recently_removed_in_worktree"] == 1  # the global one has no worktree
        assert s.scope_overview(auto_scope=False)["recently_removed_in_worktree"] == 2
        s.remove(seeded["beta"], reason="beta moved to blue green")
        assert s.scope_overview()["recently_removed_in_worktree"] == 1  # beta's worktree is not this one
    with open_at(tmp_path, clock, places["outside"]) as s:  # no worktree here: none of the three is this one's
        assert s.scope_overview()["recently_removed_in_worktree"] == 0
        assert s.scope_overview(auto_scope=False)["recently_removed_in_worktree"] == 3


def test_an_empty_auto_scoped_search_says_when_other_repositories_hold_matches(tmp_path, clock, places, seeded):
    with open_at(tmp_path, clock, places["alpha"]) as alpha:
        result = alpha.search("canary", mode="bm25")  # only beta's memory says it
        assert result.hits == [] and "other repositories" in result.note and "auto_scope" in result.note
        assert alpha.search("canary", mode="bm25", auto_scope=False).hits[0].id == seeded["beta"]
        assert alpha.search("zebra crossings", mode="bm25").note is None  # nothing anywhere: no such note
        plain = alpha.search("canary", mode="hybrid", scopes=["projects:beta"])
        assert plain.hits == [] and "other repositories" in plain.note


def test_the_first_session_has_no_baseline(tmp_path, clock, places):
    with open_at(tmp_path, clock, places["alpha"]) as s:
        assert s.scope_overview()["curation_pending_new_since_last_session"] is None


def test_searches_shows_lists_writes_and_outcomes_are_logged_with_the_session(tmp_path, clock, places, seeded):
    with open_at(tmp_path, clock, places["alpha"]) as s:
        s.search("deploys", mode="bm25")
        s.search("deploys", mode="bm25", record=False)
        s.show(seeded["alpha"])
        s.list()
        s.record_use([seeded["alpha"]], "applied")
        mine = s.events(session=s.session_id)
        assert [e["kind"] for e in mine] == ["search", "show", "list", "outcome"]
        assert mine[0]["payload"]["query"] == "deploys" and mine[0]["payload"]["hit_ids"]
        assert mine[1]["memory_id"] == seeded["alpha"]
        writes = s.events(kinds=["write"])
        assert [e["memory_id"] for e in writes] == list(seeded.values()) and len({e["session"] for e in writes}) == 3
        assert s.events(since=clock.now + timedelta(seconds=1)) == []


def test_since_prior_session_keeps_what_this_session_changed(tmp_path, clock, places):
    with open_at(tmp_path, clock, places["alpha"]) as first:
        assert first.search("rollout", mode="bm25", since_prior_session=True).note  # no prior session yet
        old = first.write("the rollout uses feature flags", scopes=["x"]).id
    with open_at(tmp_path, clock, places["alpha"]) as second:
        result = second.search("rollout", mode="bm25", since_prior_session=True)
        assert result.hits == [] and result.note is None  # nothing changed since: a baseline, empty
        new = second.write("the rollout dashboard lives in grafana", scopes=["x"]).id
        second.update(old, scopes=["x", "flags"])
        assert found(second, "rollout", since_prior_session=True) == {new, old}
        assert found(second, "dashboard", since_prior_session=True) == {new}


@pytest.mark.embeddings
@pytest.mark.slow  # loads the model
def test_auto_scope_also_filters_the_vector_leg(tmp_path, clock, places, seeded):
    if not kenning.embeddings_available():
        pytest.skip("the embeddings extra is not installed")
    with open_at(tmp_path, clock, places["alpha"]) as s:
        result = s.search("shipping a new release gradually", mode="semantic", limit=10)
        assert result.legs_run == ["vector"]
        assert {h.id for h in result.hits} <= {seeded["alpha"], seeded["outside"]}
        assert seeded["beta"] in found(s, "shipping a new release gradually", mode="semantic", auto_scope=False)


@pytest.mark.parametrize("tick", [timedelta(0), timedelta(milliseconds=1)])  # one instant for all: ids decide
def test_paging_with_after_skips_and_repeats_nothing_while_the_store_changes(tmp_path, tick):
    """Paging by position shifts when a memory is removed (the next one is skipped) or written or
    changed (one is listed twice); ``after=`` the last one's ``cursor`` goes on from it."""
    with kenning.open_store(tmp_path / "s", clock=Clock(START, tick)) as s:
        ids = [s.write(f"Service {word} listens on its own port", scopes=["ops"]).id
               for word in ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron")]
        page = s.list(limit=2)
        seen = [m.id for m in page]
        s.remove(seen[0], "retired service")
        gone = s.remove(next(i for i in ids if i not in seen), "retired service").memory.id  # not listed yet
        s.write("Service ivory listens on its own port", scopes=["ops"])
        s.update(seen[1], text="Service birch listens on port 7000")
        while len(page) == 2:
            page = s.list(limit=2, after=page[-1].cursor)
            seen += [m.id for m in page]
        assert len(seen) == len(set(seen)) and set(ids) - {gone} <= set(seen)
        with pytest.raises(InvalidInput, match="cursor"):
            s.list(after="page 2")
        with pytest.raises(InvalidInput, match="cursor"):
            s.list(after=ids[0])


def test_tombstones_page_with_after_while_memories_are_removed_and_restored(tmp_path):
    """Tombstones were capped per call (50 through MCP, 500 over HTTP) with no way past the cap;
    ``after=`` the last one's ``cursor`` lists those removed before it."""
    with kenning.open_store(tmp_path / "s", clock=ticking(START)) as s:
        ids = [s.write(f"Service {word} listens on its own port", scopes=["ops"]).id
               for word in ("amber", "birch", "cedar", "delta", "ember")]
        for memory_id in ids:
            s.remove(memory_id, "retired service")
        page = s.tombstones(limit=2)
        seen = [t.memory.id for t in page]
        s.restore(ids[0])  # not listed yet: it leaves the tombstones
        s.remove(s.write("Service fjord listens on its own port", scopes=["ops"]).id, "retired service")
        while len(page) == 2:
            page = s.tombstones(limit=2, after=page[-1].cursor)
            seen += [t.memory.id for t in page]
        assert seen == ids[:0:-1]  # most recently removed first, each once; the new one came after the start
        with pytest.raises(InvalidInput, match="cursor"):
            s.tombstones(after="2")
