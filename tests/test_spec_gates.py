"""The gates, statuses and overrides the spec names, each with a true positive and a near miss, against
real stores and real git repositories. Every refusal leaves every table as it was."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import kenning
from kenning.errors import InvalidInput, NotFound, Stale
from kenning.memory.episodes import Episodes
from kenning.memory.gates import GateRefused, groundedness, scope_match, truncation
from clocks import ticking

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def git(cwd: Path, *args: str, when: datetime | None = None) -> str:
    env = dict(os.environ)
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat()
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          env=env, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(path: Path, files: dict[str, str], when: datetime = START - timedelta(days=1)) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init", when=when)
    return path


def commit(repo: Path, when: datetime, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change", when=when)


@pytest.fixture(autouse=True)
def no_enclosing_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


@pytest.fixture
def clock():
    return ticking(START)


@pytest.fixture
def billing(tmp_path):
    return make_repo(tmp_path / "billing", {"src/invoice.py": "RATE = 19\n", "services/ledger/main.py": "x = 1\n"})


@pytest.fixture
def store(tmp_path, clock, billing):
    s = kenning.open_store(tmp_path / "store", clock=clock, cwd=billing)
    yield s
    s.close()


def snapshot(store) -> dict[str, list]:
    tables = [t for t in store.db.tables() if t != "kenning_generation"]  # a read bumps no generation, a refusal neither
    return store.db.read(lambda c: {t: c.execute(f"SELECT * FROM {t}").fetchall() for t in sorted(tables)})


# --- scope_mismatch ---------------------------------------------------------------------------------

def test_a_scope_naming_another_project_is_a_scope_mismatch(store):
    before = snapshot(store)
    result = store.write("Invoices are numbered per tenant", scopes=["projects:auth"])
    assert (result.status, result.gate, result.override) == ("scope_mismatch", "scope_match", "acknowledge_scope_mismatch")
    assert "projects:billing" in result.hint and result.matched == ["projects:auth"]
    assert snapshot(store) == before


@pytest.mark.parametrize("scopes", [
    ["projects:billing"], ["projects:Billing"], ["project:billing-service"], ["projects:ledger"],  # a monorepo dir
    ["projects:auth", "projects:billing"], ["tools", "infrastructure"],
])
def test_scopes_naming_this_project_or_none_pass(store, scopes):
    assert store.write(f"Invoices are numbered per tenant ({scopes[0]})", scopes=scopes).status == "committed"


def test_scope_mismatch_is_overridden_by_acknowledgement_or_force(store):
    assert store.write("The auth service signs invoices' webhooks", scopes=["projects:auth"],
                       acknowledge_scope_mismatch=True).status == "committed"
    assert store.write("The auth service rotates webhook keys monthly", scopes=["projects:auth"],
                       force=True).status == "committed"


def test_outside_git_there_is_no_project_to_mismatch(tmp_path, clock):
    with kenning.open_store(tmp_path / "elsewhere", clock=clock, cwd=tmp_path) as s:
        assert s.write("Invoices are numbered per tenant", scopes=["projects:auth"]).status == "committed"


def test_scope_match_unit():
    assert scope_match.project_names(["projects:a", "repo:b/c", "tools"]) == ["a", "b/c"]
    assert scope_match.check(["projects:x"], None, None) is None


# --- groundedness -----------------------------------------------------------------------------------

TRANSCRIPT = ("user: our invoices go out on the first of the month through the billing cron.\n"
              "assistant: noted, the billing cron sends invoices monthly.")


def test_an_unsupported_sentence_is_ungrounded(store):
    before = snapshot(store)
    result = store.write("The billing cron sends invoices on the first of the month. "
                         "Refunds are approved by the finance lead within two days.",
                         scopes=["x"], groundedness_check=True, source_transcript=TRANSCRIPT)
    assert (result.status, result.override) == ("ungrounded", "acknowledge_ungrounded")
    assert result.claims == ["Refunds are approved by the finance lead within two days."]
    assert snapshot(store) == before


def test_a_grounded_body_commits_and_the_check_is_opt_in(store):
    grounded = store.write("The billing cron sends invoices on the first of the month.", scopes=["x"],
                           groundedness_check=True, source_transcript=TRANSCRIPT)
    assert grounded.status == "committed"
    unchecked = store.write("Refunds are approved by the finance lead within two days.", scopes=["x"],
                            source_transcript=TRANSCRIPT)
    assert unchecked.status == "committed"  # groundedness_check is off by default


def test_ungrounded_is_overridden_and_needs_a_transcript(store):
    assert store.write("Refunds are approved by the finance lead within two days.", scopes=["x"],
                       groundedness_check=True, source_transcript=TRANSCRIPT,
                       acknowledge_ungrounded=True).status == "committed"
    with pytest.raises(InvalidInput, match="source_transcript"):
        store.write("Anything at all here.", scopes=["x"], groundedness_check=True)


def test_groundedness_unit():
    assert groundedness.ungrounded_sentences("Kites fly in wind. Boats need water.", "kites fly in the wind") == [
        "Boats need water."]


# --- truncation -------------------------------------------------------------------------------------

LONG = "Deploys run through Argo CD from the gitops repo, and rollbacks redeploy the previous image tag."


@pytest.mark.parametrize("cut", [
    "Deploys run through Argo CD from the gitops repo, and rollbacks redeploy the",  # prefix, mid-sentence
    "Deploys run through Argo CD from the gitops repo, and rollbacks redepl",  # mid-word
    "Deploys go through Argo CD because the",  # dangling function word
])
def test_a_shrinking_edit_that_stops_mid_sentence_is_a_truncation_warning(store, cut):
    mid = store.write(LONG, scopes=["x"]).id
    before = snapshot(store)
    with pytest.raises(GateRefused) as refused:
        store.update(mid, text=cut)
    assert (refused.value.refusal.status, refused.value.refusal.override) == ("truncation_warning", "acknowledge_truncation")
    assert snapshot(store) == before


@pytest.mark.parametrize("edit", [
    "Deploys run through Argo CD from the gitops repo.",  # shorter, ends a sentence
    LONG + " Hotfixes follow the same path and",  # longer: not a cut, however it ends
])
def test_complete_or_growing_edits_pass_the_truncation_gate(store, edit):
    mid = store.write(LONG, scopes=["x"]).id
    assert store.update(mid, text=edit).content == edit


def test_truncation_is_acknowledged_and_a_clause_boundary_is_not_a_cut(store):
    mid = store.write(LONG, scopes=["x"]).id
    cut = "Deploys run through Argo CD from the gitops repo, and"
    assert store.update(mid, text=cut, acknowledge_truncation=True).content == cut
    assert truncation.check("Docs live in docs/README.md; the build uses make", "Docs live in docs/README.md") is None


# --- optimistic concurrency -------------------------------------------------------------------------

def test_a_stale_version_writes_nothing(store):
    mid = store.write("The ledger service batches writes every second", scopes=["x"]).id
    token = store.show(mid)["version"]
    store.update(mid, text="The ledger service batches writes every two seconds")
    before = snapshot(store)
    with pytest.raises(Stale) as stale:
        store.update(mid, text="The ledger service batches writes every minute", version=token)
    assert stale.value.current == store.get(mid).version != token
    answer = store.verify(mid, version=token)
    assert (answer["status"], answer["current_version"]) == ("stale", store.get(mid).version)
    assert snapshot(store) == before
    fresh = store.show(mid)["version"]
    assert store.verify(mid, version=fresh)["status"] == "verified"
    assert store.show(mid)["version"] != fresh  # a verification is a change another reader must notice


def test_search_hits_carry_the_version(store):
    mid = store.write("The ledger service batches writes every second", scopes=["x"]).id
    hit = store.search("ledger batches", mode="bm25").hits[0]
    assert hit.id == mid and hit.version == store.get(mid).version


# --- smaller spec items -----------------------------------------------------------------------------

def test_tombstones_carry_the_removing_session(store):
    mid = store.write("The ledger keeps 7 years of entries", scopes=["x"]).id
    assert store.remove(mid, "retention changed").removed_by_session == store.session_id
    assert store.tombstones()[0].removed_by_session == store.session_id


def test_disabling_a_scope_nobody_uses_is_an_error(store):
    store.write("The ledger keeps 7 years of entries", scopes=["ledger"])
    assert store.disable_scope("ledger") == ["ledger"]
    with pytest.raises(NotFound, match="no memory, tombstone or episode has scope 'ledgr'"):
        store.disable_scope("ledgr")


def test_verified_commits_and_versions_are_an_audit_trail(store):
    mid = store.write("Invoice rates live in src/invoice.py", scopes=["x"]).id
    out = store.verify(mid, verified_commits=["abc1234"], verified_versions=["2.1.0"])
    assert (out["verified_commits"], out["verified_versions"]) == (["abc1234"], ["2.1.0"])
    event = store.events(kinds=["verify"])[-1]
    assert event["payload"]["verified_commits"] == ["abc1234"]


def test_handoff_says_when_the_prior_sessions_entries_expired(tmp_path, clock, billing):
    first = kenning.open_store(tmp_path / "store", clock=clock, cwd=billing)
    Episodes(first).write("tried the ledger batching", takeaway="batching halves write load")
    clock.now += timedelta(days=31)
    second = kenning.open_store(tmp_path / "store", clock=clock, cwd=billing)
    out = Episodes(second).handoff()
    assert out["prior_session_id"] == first.session_id and out["episodes"] == []
    assert "expired" in out["note"]
    Episodes(second).write("a new entry prunes the expired ones")  # pruning keeps the explanation
    third = kenning.open_store(tmp_path / "store", clock=clock, cwd=billing)
    notes = Episodes(third).handoff()
    assert notes["prior_session_id"] == second.session_id
    for s in (first, second, third):
        s.close()


# --- staleness per the spec -------------------------------------------------------------------------

def test_a_path_named_in_prose_does_not_flag_a_freshly_verified_memory(store, billing, clock):
    mid = store.write("The release job rsyncs build/ to the CDN bucket", scopes=["x"]).id
    verified = store.verify(mid, note="checked the job definition")
    assert verified["staleness_verdict"] == "fresh"
    shown = store.show(mid)
    assert shown["path_drift"]["missing"] == ["build"] and shown["staleness_verdict"] == "fresh"


def test_commits_elsewhere_do_not_flag_a_pathless_or_ambient_memory(store, billing, clock):
    plain = store.write("Invoices are numbered per tenant", scopes=["x"]).id
    ambient = store.write("The team prefers small reviewable pull requests", scopes=["x"], category="ambient",
                          acknowledge_user_claim=True).id
    anchored = store.write("The VAT rate lives in src/invoice.py", scopes=["x"]).id
    store.verify(anchored, verified_paths=["src/invoice.py"])
    commit(billing, clock.now + timedelta(hours=1), {"src/invoice.py": "RATE = 20\n"})
    clock.now += timedelta(days=1)
    for mid in (plain, ambient):
        shown = store.show(mid)
        assert shown["commit_drift"]["commits_since_verify"] == 1 and shown["staleness_verdict"] == "fresh"
    shown = store.show(anchored)
    assert shown["commit_drift"]["commits_since_verify"] == 1
    assert shown["staleness_verdict"] == "spot_check_recommended"
    assert store.verify(anchored, verified_paths=["src/invoice.py"])["staleness_verdict"] == "fresh"
