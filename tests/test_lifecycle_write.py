"""The write path through the Store: gates in order, refusals that change nothing, pending writes
with an injected clock, origin and declared claims against real temporary git repositories."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import kenning
from kenning.errors import InvalidInput, NotFound
from kenning.memory.gates import GateRefused
from clocks import ticking

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
TABLES = ("memories", "memory_scopes", "memory_links", "lex_docs", "lex_delta", "embed_queue", "pending_writes", "events")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(autouse=True)
def no_enclosing_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    pass\n\nPORT = 8443\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    return root


@pytest.fixture
def clock():
    return ticking(START)


@pytest.fixture
def store(tmp_path, clock, repo):
    s = kenning.open_store(tmp_path / "store", clock=clock, cwd=repo)
    yield s
    s.close()


def snapshot(store) -> dict[str, list]:
    return store.db.read(lambda c: {t: c.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in TABLES})


# --- gates, in order, each naming itself ---------------------------------------------------------

REFUSED = [
    ("the deploy key is AKIA" + "Q3ZR7XKD2MPLW4NB", {}, "credentials", None),
    ("We are currently migrating the billing service to postgres", {}, "durability", "acknowledge_transient"),
    ("The user prefers dark mode in every editor", {}, "user_claims", "acknowledge_user_claim"),
    ("The entry point is main in src/app.py", {"claims": ["src/app.py::start"]}, "claims", None),
]


@pytest.mark.parametrize("content,extra,gate,override", REFUSED)
def test_each_gate_refuses_with_its_name_and_writes_nothing(store, content, extra, gate, override):
    store.write("An unrelated existing memory about kites", scopes=["x"])
    before = snapshot(store)
    result = store.write(content, scopes=["projects:repo"], **extra)
    assert (result.gate, result.override) == (gate, override) and result.status == result.code and result.refused
    assert result.reason and result.hint and result.id is None
    assert snapshot(store) == before


def test_credentials_come_first_and_are_never_echoed(store):
    result = store.write("currently the token: ghp_" + "a1B2c3D4e5" * 4 + " works", scopes=["x"])
    assert result.gate == "credentials" and "a1B2c3D4e5" not in str(result.to_dict())


def test_overrides_let_a_write_through(store):
    transient = store.write("We are currently on postgres 16", scopes=["x"], acknowledge_transient=True)
    about_someone = store.write("The user prefers the legacy API, says the vendor's support page", scopes=["y"],
                                acknowledge_user_claim=True)
    assert transient.status == about_someone.status == "committed"


def test_a_true_claim_is_stored_in_canonical_form(store):
    result = store.write("The service port is 8443, set in src/app.py", scopes=["x"],
                         claims=["./src/app.py::PORT=8443", "src/app.py::main"])
    assert result.status == "committed"
    assert [c.spec for c in store.get(result.id).claims] == ["src/app.py::PORT=8443", "src/app.py::main"]
    with pytest.raises(InvalidInput, match="leaves the worktree"):
        store.write("bad claim syntax", scopes=["x"], claims=["../outside.py"])


def test_claims_from_outside_any_repository_are_refused(tmp_path, clock):
    outside = tmp_path / "plain"
    outside.mkdir()
    with kenning.open_store(tmp_path / "store2", clock=clock, cwd=outside) as s:
        result = s.write("Port is set in src/app.py", scopes=["x"], claims=["src/app.py"])
        assert (result.status, result.gate, result.code) == ("claims_uncheckable", "claims", "claims_uncheckable")
        assert s.count() == 0


def test_duplicate_returns_the_existing_id_and_writes_nothing(store):
    first = store.write("The auth service listens on port 8443", scopes=["x"]).id
    before = snapshot(store)
    dup = store.write("the auth service listens on port 8443!", scopes=["y"])
    assert (dup.status, dup.id, dup.gate, dup.override) == ("duplicate", first, "duplicates", "force")
    assert dup.match["id"] == first and dup.match["overlap"] == 1.0 and dup.corroboration_recorded is True
    after = snapshot(store)
    # the one row a duplicate adds is the spec's corroboration credit in the event log
    assert after.pop("events")[len(before["events"]):][0][3:5] == ("corroborate", first)
    assert after == {k: v for k, v in before.items() if k != "events"}
    again = store.write("The auth service listens on port 8443.", scopes=["y"])
    assert again.status == "duplicate" and again.corroboration_recorded is False  # once per session
    assert len(snapshot(store)["events"]) == len(before["events"]) + 1


def test_force_writes_through_a_duplicate_and_a_removed_match(store):
    first = store.write("The auth service listens on port 8443", scopes=["x"]).id
    forced = store.write("the auth service listens on port 8443!", scopes=["y"], force=True)
    assert forced.status == "committed" and forced.related[0] == first
    store.remove(first, "moved to 9443")
    store.remove(forced.id, "moved to 9443")
    assert store.write("The auth service listens on port 8443", scopes=["x"]).status == "previously_removed"
    again = store.write("The auth service listens on port 8443", scopes=["x"], force=True)
    assert again.status == "committed" and {m["id"] for m in again.removed_matches} == {first, forced.id}


def test_a_tombstone_below_the_duplicate_threshold_is_a_removed_match(store):
    gone = store.write("The auth service listens on port 8443 behind envoy", scopes=["x"]).id
    store.remove(gone, "envoy was dropped")
    # 4 of 8 tokens shared: related, not a duplicate
    result = store.write("The auth service listens on port 9443", scopes=["x"])
    assert result.status == "committed"
    assert result.removed_matches == [{"id": gone, "overlap": 0.5, "reason": "envoy was dropped"}]
    unrelated = store.write("Kites fly best in steady coastal wind", scopes=["x"])
    assert unrelated.status == "committed" and unrelated.removed_matches == []


def test_related_memories_are_named_on_commit(store):
    first = store.write("The auth service listens on port 8443 behind envoy", scopes=["x"]).id
    # {auth, service, listen, port, 8443, behind, envoy} vs {auth, service, listen, port, 9443}: 4 / 8
    related = store.write("The auth service listens on port 9443", scopes=["x"])
    assert related.status == "committed" and related.related == [first]


def test_a_removed_memory_written_again_is_previously_removed_with_the_reason(store):
    old = store.write("Backups go to the s3 bucket acme-backups", scopes=["x"]).id
    store.remove(old, reason="backups moved to the gcs bucket")
    before = snapshot(store)
    again = store.write("Backups go to the S3 bucket acme-backups.", scopes=["x"])
    assert again.status == "previously_removed" and again.match["id"] == old
    assert "backups moved to the gcs bucket" in again.reason and again.match["reason"] == "backups moved to the gcs bucket"
    assert snapshot(store) == before


def test_limits_are_caller_mistakes_and_change_nothing(store):
    before = snapshot(store)
    for kwargs in ({"content": "x" * (1024 * 1024 + 1), "scopes": ["x"]},
                   {"content": "ok", "scopes": [f"s{i}" for i in range(65)]},
                   {"content": "ok", "scopes": ["a\tb"]},
                   {"content": "ok", "scopes": ["x"], "metadata": {"k": "line\nbreak"}}):
        with pytest.raises(InvalidInput):
            store.write(**kwargs)
    assert snapshot(store) == before


def test_every_write_records_its_origin(store, repo, tmp_path, clock):
    memory = store.get(store.write("Builds run on the shared CI runners", scopes=["x"]).id)
    assert memory.origin.worktree == os.path.realpath(repo) and memory.origin.repo == os.path.realpath(repo)
    assert memory.origin.commit == git(repo, "rev-parse", "HEAD")
    outside = tmp_path / "plain"
    outside.mkdir()
    with kenning.open_store(tmp_path / "store", clock=clock, cwd=outside) as s:
        assert s.get(s.write("Tabs are four spaces wide everywhere", scopes=["x"]).id).origin is None


def test_ambient_long_body_is_a_warning_not_a_refusal(store):
    result = store.write(" ".join(f"word{i}" for i in range(501)), scopes=["style"], category="ambient")
    assert result.status == "committed" and result.warnings[0].startswith("ambient_body_long")


def test_update_gates_new_text_and_keeps_user_inference_for_writes(store):
    mid = store.write("Deploys go through the release pipeline", scopes=["x"]).id
    with pytest.raises(GateRefused, match="durability"):
        store.update(mid, text="Deploys are currently paused")
    assert store.update(mid, text="Deploys are currently paused", acknowledge_transient=True).content.endswith("paused")
    with pytest.raises(InvalidInput, match="user-inference"):
        store.update(mid, category="user-inference")


# --- pending writes ------------------------------------------------------------------------------


def test_user_inference_is_pending_until_confirmed(store):
    before = snapshot(store)
    pending = store.write("The user prefers short answers with code first", scopes=["user:style"],
                          category="user-inference")
    assert pending.status == "pending" and pending.pending_reason == "user_inference" and pending.id is None
    assert store.count() == 0 and snapshot(store)["memories"] == before["memories"]
    [staged] = store.pending_writes()
    assert staged["pending_id"] == pending.pending_id and staged["summary"].startswith("The user prefers")
    assert datetime.fromisoformat(staged["expires"]) - datetime.fromisoformat(staged["created"]) == timedelta(hours=1)
    confirmed = store.confirm_write(pending.pending_id)
    assert confirmed.status == "committed" and confirmed.pending_id == pending.pending_id
    assert store.get(confirmed.id).category == "user-inference"
    assert store.pending_writes() == []
    again = store.confirm_write(pending.pending_id)
    assert again.status == "not_found" and "never existed" in again.reason


def test_cancel_drops_it_and_confirm_after_cancel_is_not_found(store):
    pending = store.write("The user is learning Rust in their spare time", scopes=["user"], category="user-inference")
    assert store.cancel_write(pending.pending_id) == {"status": "cancelled", "pending_id": pending.pending_id,
                                                      "existed": True}
    assert store.confirm_write(pending.pending_id).status == "not_found"
    assert store.cancel_write(pending.pending_id)["existed"] is False
    assert store.count() == 0


def test_pending_writes_expire_after_an_hour(store, clock):
    kept = store.write("The user works at night", scopes=["user"], category="user-inference")
    dropped = store.write("The user likes vim keybindings", scopes=["user"], category="user-inference")
    clock.now += timedelta(minutes=59)
    assert len(store.pending_writes()) == 2
    clock.now += timedelta(minutes=1, seconds=1)
    assert store.pending_writes() == []
    expired = store.confirm_write(kept.pending_id)
    assert expired.status == "expired" and "expired" in expired.reason
    assert store.confirm_write(kept.pending_id).status == "expired"  # stays "expired", not "never existed"
    assert store.cancel_write(dropped.pending_id) == {"status": "expired", "pending_id": dropped.pending_id,
                                                      "existed": False}
    assert store.confirm_write("01NEVERSTAGED").status == "not_found"
    assert store.count() == 0


def test_require_write_confirmation_stages_every_write(store):
    store.configure(require_write_confirmation=True)
    pending = store.write("Releases are tagged vX.Y.Z on main", scopes=["x"])
    assert pending.status == "pending" and pending.pending_reason == "confirmation_required"
    assert store.confirm_write(pending.pending_id).status == "committed"


def test_a_pending_write_is_gated_before_staging_and_again_at_confirm(store, tmp_path, clock, repo):
    refused = store.write("The user prefers token: s3cr3tV4lu3xyz99 for logins", scopes=["u"], category="user-inference")
    assert refused.status == "credential_warning" and refused.gate == "credentials" and store.pending_writes() == []
    pending = store.write("The user prefers reviews in the morning", scopes=["u"], category="user-inference")
    with kenning.open_store(tmp_path / "store", clock=clock, cwd=repo) as other:  # another session, e.g. a CLI run
        meanwhile = other.import_records([{"text": "The user prefers reviews in the morning", "scopes": ["u"]}])
        retained = other.confirm_write(pending.pending_id)
        assert (retained.status, retained.id, retained.pending_retained) == ("duplicate", meanwhile[0], True)
        assert retained.pending_id == pending.pending_id
    assert store.cancel_write(pending.pending_id)["status"] == "cancelled"


def test_bad_links_and_unknown_targets(store):
    target = store.write("The payments service owns the ledger tables", scopes=["x"]).id
    with pytest.raises(InvalidInput):
        store.write("A link of an unknown kind", scopes=["x"], links=[{"kind": "likes", "target": target}])
    with pytest.raises(NotFound):
        store.write("A link to nothing at all", scopes=["x"], links=[{"kind": "extends", "target": "01NOPE"}])
    linked = store.write("Ledger migrations need a payments review", scopes=["x"],
                         links=[{"kind": "depends_on", "target": target}, {"kind": "depends_on", "target": target}])
    assert [link.target for link in store.get(linked.id).links] == [target]  # a repeated link is kept once


def test_a_long_near_duplicate_is_caught_among_many_similar_memories(tmp_path):
    import kenning

    store = kenning.open_store(tmp_path / "s", cwd=tmp_path)
    common = "the service team said that the deploy of the new build went through the usual checks and"
    store.import_records([{"content": f"{common} note {i} about area{i % 13}"} for i in range(300)])
    original = store.write(f"{common} the zanzibar cache needs quokka tuning before each release", scopes=["x"])
    assert original.status == "committed"
    again = store.write(f"{common} the zanzibar cache needs quokka tuning before every release", scopes=["x"])
    assert again.status == "duplicate" and again.match["id"] == original.id
