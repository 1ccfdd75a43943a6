"""The episodes journal against real stores, real git worktrees and an injected clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import typer

import kenning
from kenning.errors import InvalidInput, NotFound
from kenning.memory.episodes import EPISODE_TTL, EXPIRED_EVENT, MAX_TAKEAWAY_BYTES, Episodes
from kenning.memory.gates import GateRefused
from kenning.memory.gates.limits import MAX_CONTENT_BYTES, MAX_SCOPES
from clocks import ticking

START = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "init")
    return path


@pytest.fixture(autouse=True)
def no_enclosing_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


@pytest.fixture
def clock():
    return ticking(START)


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo")


def session(tmp_path, clock, cwd):
    """A new session (its own Store object, so its own session id) on the shared store directory."""
    store = kenning.open_store(tmp_path / "store", clock=clock, cwd=cwd)
    return store, Episodes(store)


def test_write_returns_the_entry_and_records_worktree_and_session(tmp_path, clock, repo):
    store, journal = session(tmp_path, clock, repo)
    out = journal.write("tried the BM25 sweep; k1=1.5 fell over on scifact", takeaway="k1=1.5 hurts scifact",
                        scopes=["projects:kenning"], swarm_id="coord-1")
    assert out["status"] == "committed" and out["session_id"] == store.session_id
    assert out["takeaway"] == "k1=1.5 hurts scifact" and out["scopes"] == ["projects:kenning"]
    assert out["swarm_id"] == "coord-1" and out["worktree"] == os.path.realpath(repo)
    assert out["pruned_sessions"] == [] and "body" not in out
    [episode] = journal.search()
    assert episode.id == out["id"] and episode.body.startswith("tried the BM25 sweep")
    assert episode.expires - episode.created == EPISODE_TTL


def test_transient_wording_is_welcome_in_the_journal(tmp_path, clock, repo):
    _, journal = session(tmp_path, clock, repo)
    out = journal.write("currently blocked on the flaky test; right now the next step is bisecting")
    assert out["status"] == "committed"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"body": ""}, "body is empty"),
        ({"body": "   \n"}, "body is empty"),
        ({"body": "x" * (MAX_CONTENT_BYTES + 1)}, "limit is"),
        ({"body": "ok", "takeaway": "t" * (MAX_TAKEAWAY_BYTES + 1)}, "takeaway is longer"),
        ({"body": "ok", "scopes": [f"s{i}" for i in range(MAX_SCOPES + 1)]}, "at most 64"),
        ({"body": "ok", "scopes": ["bad\nscope"]}, "control character"),
        ({"body": "ok", "swarm_id": "   "}, "swarm_id"),
    ],
)
def test_bad_writes_are_refused_and_write_nothing(tmp_path, clock, repo, kwargs, message):
    _, journal = session(tmp_path, clock, repo)
    with pytest.raises(InvalidInput, match=message):
        journal.write(**kwargs)
    assert journal.search(auto_scope=False) == []


def test_takeaway_falls_back_to_the_first_line_of_the_body(tmp_path, clock, repo):
    _, journal = session(tmp_path, clock, repo)
    journal.write("\n\n  first real line  \nsecond line")
    [row] = journal.search()
    assert row.headline == "first real line" and row.to_dict()["takeaway"] == "first real line"


def test_expired_entries_are_pruned_on_write_and_reported(tmp_path, clock, repo):
    old_store, old = session(tmp_path, clock, repo)
    old.write("an old note")
    clock.now += EPISODE_TTL + timedelta(seconds=1)
    assert old.search() == []  # expired entries are invisible before any prune
    new_store, new = session(tmp_path, clock, repo)
    out = new.write("a fresh note")
    assert out["pruned_sessions"] == [old_store.session_id]
    assert new.write("another")["pruned_sessions"] == []
    remaining = new_store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])
    assert remaining == 2


def test_prune_with_writes_off_deletes_nothing(tmp_path, clock, repo):
    # was: `kenning episodes prune` deleted expired entries while every other change refused
    old_store, old = session(tmp_path, clock, repo)
    old.write("an old note")
    clock.now += EPISODE_TTL + timedelta(seconds=1)
    store, journal = session(tmp_path, clock, repo)
    store.configure(write_enabled=False)
    with pytest.raises(GateRefused) as refused:
        journal.prune()
    assert refused.value.refusal.status == "writes_disabled"
    assert store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]) == 1
    assert store.events(kinds=[EXPIRED_EVENT]) == []
    store.configure(write_enabled=True)
    assert journal.prune() == [old_store.session_id]


def test_search_keeps_the_most_recent_n_oldest_first(tmp_path, clock, repo):
    _, journal = session(tmp_path, clock, repo)
    ids = [journal.write(f"step {i}")["id"] for i in range(5)]
    assert [e.id for e in journal.search(max_results=3)] == ids[2:]
    assert [e.id for e in journal.search()] == ids
    with pytest.raises(InvalidInput, match="between 1 and 200"):
        journal.search(max_results=201)


def test_search_filters(tmp_path, clock, repo):
    store_a, a = session(tmp_path, clock, repo)
    a1 = a.write("a one", scopes=["projects:x"], swarm_id="swarm")["id"]
    cut = clock.now + timedelta(microseconds=500)  # just after a1
    a2 = a.write("a two", scopes=["projects:y"])["id"]
    store_b, b = session(tmp_path, clock, repo)
    b1 = b.write("b one", scopes=["projects:x", "tools"], swarm_id="swarm", parent_session_id=store_a.session_id)["id"]

    def ids(**kw):
        return [e.id for e in b.search(**kw)]

    assert ids(scopes=["projects:x"]) == [a1, b1]
    assert ids(session_id=store_a.session_id) == [a1, a2]
    assert ids(parent_session_id=store_a.session_id) == [b1]
    assert ids(swarm_id="swarm") == [a1, b1]
    assert ids(since=cut.isoformat()) == [a2, b1]
    assert ids(since=cut.replace(tzinfo=None)) == [a2, b1]  # naive means UTC
    assert ids(ids=[b1, a1, "01UNKNOWN"]) == [a1, b1]
    assert ids(ids=[]) == []
    assert ids(swarm_id="swarm", scopes=["tools"]) == [b1]
    with pytest.raises(InvalidInput, match="ISO-8601"):
        b.search(since="yesterday")


def test_bare_search_is_worktree_scoped_but_permissive(tmp_path, clock, repo):
    other = make_repo(tmp_path / "other")
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "linked"))
    _, in_repo = session(tmp_path, clock, repo)
    mine = in_repo.write("main checkout note")["id"]
    _, in_other = session(tmp_path, clock, other)
    theirs = in_other.write("other repo note", swarm_id="s")["id"]
    _, outside = session(tmp_path, clock, tmp_path / "store")
    nowhere = outside.write("written outside git")["id"]
    gone = make_repo(tmp_path / "gone")
    _, in_gone = session(tmp_path, clock, gone)
    vanished = in_gone.write("its worktree was deleted")["id"]
    subprocess.run(["rm", "-rf", str(gone)], check=True)

    assert [e.id for e in in_repo.search()] == [mine, nowhere, vanished]
    _, in_linked = session(tmp_path, clock, tmp_path / "linked")  # linked worktree sees its main checkout
    assert [e.id for e in in_linked.search()] == [mine, nowhere, vanished]
    assert [e.id for e in in_repo.search(auto_scope=False)] == [mine, theirs, nowhere, vanished]
    assert [e.id for e in in_repo.search(swarm_id="s")] == [theirs]  # naming a cohort crosses worktrees
    assert [e.id for e in outside.search()] == [mine, theirs, nowhere, vanished]  # nothing to compare


def test_handoff_reads_the_previous_session_in_this_worktree(tmp_path, clock, repo):
    first_store, first = session(tmp_path, clock, repo)
    first.write("iteration 1 body", takeaway="tuned k1")
    first.write("iteration 1 second", takeaway="k1=1.2 wins")
    other = make_repo(tmp_path / "other")
    _, elsewhere = session(tmp_path, clock, other)
    elsewhere.write("another worktree's note", takeaway="not for you")  # newer, but other worktree

    second_store, second = session(tmp_path, clock, repo)
    out = second.handoff()
    assert out["prior_session_id"] == first_store.session_id
    assert [e["takeaway"] for e in out["episodes"]] == ["tuned k1", "k1=1.2 wins"]  # oldest first
    assert out["episodes"][0]["body"] == "iteration 1 body" and "note" not in out
    assert [e["takeaway"] for e in second.handoff(max_episodes=1)["episodes"]] == ["k1=1.2 wins"]

    # the resolved predecessor becomes this session's parent, and this session's own entries never hand off to itself
    assert second.write("iteration 2")["parent_session_id"] == first_store.session_id
    assert second.handoff()["prior_session_id"] == first_store.session_id


def test_the_session_that_journaled_last_is_handed_off_when_the_clock_went_back(tmp_path, clock, repo):
    # was: the second session's entries were dated before the first's, and the handoff gave the first
    first_store, first = session(tmp_path, clock, repo)
    first.write("ran the sweep", takeaway="tried A")
    clock.now -= timedelta(hours=1)  # the clock is set back (or the next host's runs behind)
    second_store, second = session(tmp_path, clock, repo)
    second.write("ran it again", takeaway="tried B")
    second.write("and once more", takeaway="then C")
    clock.now += timedelta(minutes=5)  # still behind the first entry
    _, third = session(tmp_path, clock, repo)
    handoff = third.handoff()
    assert handoff["prior_session_id"] == second_store.session_id
    assert [e["takeaway"] for e in handoff["episodes"]] == ["tried B", "then C"]
    assert [e.takeaway for e in third.search()] == ["tried A", "tried B", "then C"]  # oldest first, as written
    assert all(e.expires - e.created == EPISODE_TTL for e in third.search())


def test_an_entry_dated_far_ahead_drags_no_later_entry_along(tmp_path, clock, repo):
    _, journal = session(tmp_path, clock, repo)
    clock.now += timedelta(days=3)  # a clock wildly ahead once
    ahead = journal.write("from a clock three days ahead")["created"]
    clock.now -= timedelta(days=3)
    assert journal.write("back on time")["created"] < ahead


def test_handoff_with_no_prior_session_says_why(tmp_path, clock, repo):
    _, journal = session(tmp_path, clock, repo)
    journal.write("my own note")
    out = journal.handoff()
    assert out["prior_session_id"] is None and out["episodes"] == []
    assert "no other session has journaled in this worktree" in out["note"]


def test_handoff_worktree_equality_is_strict(tmp_path, clock, repo):
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "linked"))
    _, main = session(tmp_path, clock, repo)
    main.write("main checkout note")
    _, linked = session(tmp_path, clock, tmp_path / "linked")
    assert linked.handoff()["episodes"] == []  # a sibling worktree stays isolated
    _, outside = session(tmp_path, clock, tmp_path / "store")
    assert outside.handoff()["prior_session_id"] is None  # None matches only None


def test_explicit_prior_session_overrides_the_walk(tmp_path, clock, repo):
    parent_store, parent = session(tmp_path, clock, repo)
    parent.write("the coordinator's plan", takeaway="plan")
    _, sibling = session(tmp_path, clock, repo)
    sibling.write("sibling note")
    _, child = session(tmp_path, clock, repo)
    out = child.handoff(prior_session_id=parent_store.session_id)
    assert out["prior_session_id"] == parent_store.session_id and [e["takeaway"] for e in out["episodes"]] == ["plan"]
    empty = child.handoff(prior_session_id="no-such-session")
    assert empty["episodes"] == [] and "no live journal entries" in empty["note"]


def test_handoff_respects_disabled_scopes_and_rewinds(tmp_path, clock, repo):
    _, older = session(tmp_path, clock, repo)
    older.write("older visible", takeaway="older takeaway", scopes=["projects:kenning"])
    newer_store, newer = session(tmp_path, clock, repo)
    newer.write("secret project entry", scopes=["projects:hidden"])
    reader_store, reader = session(tmp_path, clock, repo)
    assert reader.handoff()["prior_session_id"] == newer_store.session_id
    reader_store.disable_scope("projects:hidden")
    out = reader.handoff()
    assert [e["takeaway"] for e in out["episodes"]] == ["older takeaway"]
    assert newer_store.session_id in out["note"] and "disabled" in out["note"]


def test_search_hides_episodes_in_a_disabled_scope_whatever_the_call_names(tmp_path, clock, repo):
    """memory_search hides a memory in a disabled scope and episode_handoff such an episode: so does search."""
    writer_store, writer = session(tmp_path, clock, repo)
    kept = writer.write("kenning entry", scopes=["projects:kenning"], swarm_id="swarm")["id"]
    both = writer.write("entry in both", scopes=["projects:kenning", "projects:hidden"], swarm_id="swarm")["id"]
    hidden = writer.write("secret project entry", scopes=["projects:hidden"], swarm_id="swarm")["id"]
    reader_store, reader = session(tmp_path, clock, repo)
    assert [e.id for e in reader.search()] == [kept, both, hidden]
    reader_store.disable_scope("projects:hidden")
    for filters in ({}, {"auto_scope": False}, {"scopes": ["projects:hidden", "projects:kenning"]},
                    {"swarm_id": "swarm"}, {"session_id": writer_store.session_id}, {"ids": [kept, both, hidden]}):
        assert [e.id for e in reader.search(**filters)] == [kept], filters
    assert [e.id for e in reader.search(max_results=1)] == [kept]  # the window counts visible entries only
    assert [e.id for e in writer.search()] == [kept, both, hidden]  # disabled for one session, not the store
    reader_store.enable_scope("projects:hidden")
    assert [e.id for e in reader.search()] == [kept, both, hidden]


def test_promote_commits_through_the_write_path_and_retires_the_episode(tmp_path, clock, repo):
    store, journal = session(tmp_path, clock, repo)
    ep = journal.write("long notes about the deploy", takeaway="The deploy script lives in ops/deploy.sh and needs ssh agent forwarding")["id"]
    out = journal.promote(ep, scopes=["projects:repo"])
    assert out["status"] == "committed" and out["promoted_from_episode_id"] == ep and out["episode_deleted"] is True
    memory = store.get(out["id"])
    assert memory.content.startswith("The deploy script lives") and memory.scopes == ["projects:repo"]
    assert journal.search(ids=[ep]) == []
    with pytest.raises(NotFound):
        journal.promote(ep, scopes=["projects:repo"])


def test_promote_uses_the_body_on_request_and_needs_it_without_a_takeaway(tmp_path, clock, repo):
    store, journal = session(tmp_path, clock, repo)
    ep = journal.write("Grafana dashboards are provisioned from infra/grafana/*.json")["id"]
    with pytest.raises(InvalidInput, match="use_body"):
        journal.promote(ep, scopes=["infrastructure"])
    out = journal.promote(ep, scopes=["infrastructure"], use_body=True)
    assert out["status"] == "committed" and store.get(out["id"]).content.startswith("Grafana dashboards")


def test_a_refused_promotion_keeps_the_episode(tmp_path, clock, repo):
    store, journal = session(tmp_path, clock, repo)
    first = journal.write("x", takeaway="Release builds are signed with the key in the team vault")["id"]
    assert journal.promote(first, scopes=["release"])["status"] == "committed"
    again = journal.write("y", takeaway="Release builds are signed with the key in the team vault")["id"]
    out = journal.promote(again, scopes=["release"])
    assert out["status"] == "duplicate" and out["episode_deleted"] is False
    assert [e.id for e in journal.search(ids=[again])] == [again]
    with pytest.raises(InvalidInput):
        journal.promote(again, scopes=[])  # the write path's own validation applies
    assert [e.id for e in journal.search(ids=[again])] == [again]


def test_a_promotion_cut_off_after_its_memory_committed_is_finished_by_the_next_one(tmp_path, clock, repo, monkeypatch):
    # the memory commits, then the process dies before the episode is deleted: promoting again used to
    # answer 'duplicate' and keep the episode forever (every handoff showing a takeaway already in memory)
    store, journal = session(tmp_path, clock, repo)
    ep = journal.write("x", takeaway="The billing service keeps invoices in the ledger_v2 table")["id"]

    def killed(self, episode, memory_id):
        raise KeyboardInterrupt  # stands in for the kill between the two transactions

    monkeypatch.setattr(Episodes, "_retire", killed)
    with pytest.raises(KeyboardInterrupt):
        journal.promote(ep, scopes=["projects:repo"])
    monkeypatch.undo()
    memory = store.list()[0].id
    assert [e.id for e in journal.search(ids=[ep])] == [ep]

    later_store, later = session(tmp_path, clock, repo)
    out = later.promote(ep, scopes=["projects:repo"])
    assert out["id"] == memory and out["episode_deleted"] is True and out["promoted_from_episode_id"] == ep
    assert later.search(ids=[ep]) == [] and [m.id for m in later_store.list()] == [memory]
    assert [e["payload"]["episode_id"] for e in later_store.events(kinds=["episode_promoted"])] == [ep]


def test_a_committed_promotion_says_the_episode_is_gone_when_a_concurrent_one_deleted_it_first(tmp_path, clock, repo):
    # two promotions of one episode at once: one commits the memory, the other (a duplicate of that memory)
    # deletes the episode first; the committing one used to answer episode_deleted=False for a gone episode
    store, journal = session(tmp_path, clock, repo)
    ep = journal.write("x", takeaway="The nightly backup copies the warehouse to bucket bk-main at 02:00 UTC")["id"]
    other_store, other = session(tmp_path, clock, repo)
    real_write = store.write

    def write_then_other_promotes(*args, **kwargs):
        result = real_write(*args, **kwargs)
        assert other.promote(ep, scopes=["projects:repo"])["episode_deleted"] is True
        return result

    store.write = write_then_other_promotes
    out = journal.promote(ep, scopes=["projects:repo"])
    assert out["status"] == "committed" and out["episode_deleted"] is True
    assert journal.search(ids=[ep]) == [] and len(store.list()) == 1
    assert [e["payload"]["episode_id"] for e in store.events(kinds=["episode_promoted"])] == [ep]


def test_pending_promotion_is_retired_by_confirm_and_kept_by_cancel(tmp_path, clock, repo):
    store, journal = session(tmp_path, clock, repo)
    kept = journal.write("x", takeaway="The user prefers terse answers without bullet lists")["id"]
    pending = journal.promote(kept, scopes=["user:style"], category="user-inference")
    assert pending["status"] == "pending" and pending["episode_deleted"] is False
    assert store.cancel_write(pending["pending_id"])["status"] == "cancelled"
    assert [e.id for e in journal.search(ids=[kept])] == [kept]

    again = journal.promote(kept, scopes=["user:style"], category="user-inference")
    confirmed = journal.confirm_write(again["pending_id"])
    assert confirmed["status"] == "committed" and confirmed["episode_deleted"] is True
    assert confirmed["promoted_from_episode_id"] == kept and journal.search(ids=[kept]) == []


@pytest.mark.parametrize("set_back", [timedelta(0), timedelta(hours=1)], ids=["clock", "clock_set_back"])
def test_handoff_notes_a_session_whose_journal_was_promoted_out(tmp_path, clock, repo, set_back):
    # was, with the clock set back: the promotion's event, dated by the slow clock, made the promoting
    # session older than the one before it, so the handoff gave the older takeaways as the last word, no note
    _, older = session(tmp_path, clock, repo)
    older.write("older", takeaway="older takeaway")
    clock.now -= set_back
    promoter_store, promoter = session(tmp_path, clock, repo)
    ep = promoter.write("x", takeaway="Integration tests need the docker compose stack from dev/compose.yml")["id"]
    assert promoter.promote(ep, scopes=["projects:repo"])["status"] == "committed"
    _, reader = session(tmp_path, clock, repo)
    out = reader.handoff()
    assert [e["takeaway"] for e in out["episodes"]] == ["older takeaway"]
    assert promoter_store.session_id in out.get("note", "") and "promoted" in out["note"]


def test_entries_pruned_by_a_later_session_do_not_make_theirs_the_latest(tmp_path, clock, repo):
    # was: the prune's event, dated when a later write pruned them, made a month-old session the latest one
    # in the handoff, which then said its entries had expired before falling back to yesterday's session
    old_store, old = session(tmp_path, clock, repo)
    old.write("a month ago", takeaway="old takeaway")
    clock.now += EPISODE_TTL - timedelta(days=1)
    recent_store, recent = session(tmp_path, clock, repo)
    recent.write("yesterday", takeaway="recent takeaway")
    clock.now += timedelta(days=1, seconds=1)
    _, today = session(tmp_path, clock, repo)
    assert today.prune() == [old_store.session_id]
    out = today.handoff()
    assert out["prior_session_id"] == recent_store.session_id and "note" not in out, out
    assert [e["takeaway"] for e in out["episodes"]] == ["recent takeaway"]


def test_episodes_never_reach_memory_search_or_list(tmp_path, clock, repo):
    store, journal = session(tmp_path, clock, repo)
    journal.write("zanzibar quokka migration notes", takeaway="zanzibar quokka")
    assert store.search("zanzibar quokka", mode="bm25").hits == []
    assert store.list() == []


def test_cli_list_search_and_prune(tmp_path, repo, monkeypatch):
    from typer.testing import CliRunner

    from kenning.commands.episodes import episodes_app

    store, journal = session(tmp_path, ticking(datetime.now(timezone.utc)), repo)  # the CLI reads the real clock
    journal.write("body one", takeaway="first takeaway", scopes=["projects:cli"], swarm_id="team")
    journal.write("body two", takeaway="second takeaway")
    store.close()
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "store"))
    monkeypatch.chdir(repo)
    runner = CliRunner()

    listed = runner.invoke(episodes_app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)["episodes"]
    assert [r["takeaway"] for r in rows] == ["first takeaway", "second takeaway"] and "body" not in rows[0]

    found = runner.invoke(episodes_app, ["search", "--swarm", "team", "--bodies", "--json"])
    assert [r["body"] for r in json.loads(found.output)["episodes"]] == ["body one"]
    table = runner.invoke(episodes_app, ["search", "--scope", "projects:cli"])
    assert table.exit_code == 0 and "first takeaway" in table.output and "second takeaway" not in table.output

    bad = runner.invoke(episodes_app, ["search", "--since", "soon"])
    assert bad.exit_code == 2 and "ISO-8601" in bad.output

    pruned = runner.invoke(episodes_app, ["prune", "--json"])
    assert pruned.exit_code == 0 and json.loads(pruned.output) == {"pruned_sessions": []}


def test_serve_without_the_mcp_extra_is_one_line_with_the_install_command(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from kenning.commands.episodes import serve

    app = typer.Typer()

    @app.callback()
    def root(ctx: typer.Context) -> None:
        ctx.obj = {"store_dir": str(tmp_path / "store")}

    app.command("serve")(serve)
    monkeypatch.delitem(sys.modules, "kenning.serve.mcp", raising=False)
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")] + ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)  # what an install without the extra looks like to import
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 2 and 'pip install "kenning[mcp]"' in result.output
    assert "Traceback" not in result.output


@pytest.mark.sqlite_only  # edits the SQLite file behind kenning's back
def test_a_damaged_episode_row_is_one_line_naming_it_not_a_traceback(tmp_path, clock, repo):
    import sqlite3

    store, journal = session(tmp_path, clock, repo)
    ep = journal.write("tried the sweep", takeaway="k1=1.5 hurts scifact", scopes=["projects:repo"])["id"]
    store.close()
    with sqlite3.connect(tmp_path / "store" / "kenning.sqlite3") as db:
        db.execute("UPDATE episodes SET scopes = ? WHERE id = ?", ('["projects:repo", broken', ep))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    env.pop("KENNING_HOME", None)
    done = subprocess.run([sys.executable, "-m", "kenning", "--store", str(tmp_path / "store"), "episodes", "list"],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr  # was: a JSONDecodeError traceback
    assert ep in done.stderr and "damaged" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("field", ["body", "takeaway"])
@pytest.mark.parametrize("bad, message", [
    # text decoded from bad bytes with surrogateescape: was a UnicodeEncodeError from deep inside
    ("tried \udcff the sweep", "lone surrogate"),
    # SQLite kept it and PostgreSQL refused it, so a SQLite store holding one could not be migrated
    ("tried \x00 the sweep", "NUL"),
], ids=["lone-surrogate", "nul"])
def test_text_a_store_cannot_keep_is_refused_as_invalid_input_and_nothing_is_written(tmp_path, clock, repo, field,
                                                                                     bad, message):
    store, journal = session(tmp_path, clock, repo)
    given = {"body": "tried the sweep", "takeaway": "k1 hurts"} | {field: bad}
    with pytest.raises(InvalidInput, match=message):
        journal.write(given["body"], takeaway=given["takeaway"])
    assert journal.search(auto_scope=False) == []


def test_a_single_scope_given_as_a_string_is_that_scope_not_its_letters(tmp_path, clock, repo):
    store, journal = session(tmp_path, clock, repo)
    out = journal.write("tried the sweep", scopes="projects:repo")  # was: ['p', 'r', 'o', 'j', ...]
    assert out["scopes"] == ["projects:repo"]
    assert [e.scopes for e in journal.search(scopes=["projects:repo"])] == [["projects:repo"]]
