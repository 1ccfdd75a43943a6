"""The outcome loop (use_token, automatic applied), the curation buckets and hint, conflicts, and
optimistic concurrency across two real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone

import pytest

import kenning
from kenning.errors import InvalidInput, Stale
from kenning.memory.audit import audit_turn
from kenning.memory.health import COLD_ENDORSEMENT_RETRIEVALS, CURATION_HINT_THRESHOLD
from clocks import ticking

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def clock():
    return ticking(START)


@pytest.fixture
def store(tmp_path, clock):
    s = kenning.open_store(tmp_path / "store", clock=clock)
    yield s
    s.close()


def outcomes(store, mid):
    return [e["payload"] for e in store.events(kinds=["outcome"]) if e["memory_id"] == mid]


# --- use_token and automatic applied ----------------------------------------------------------------

def test_search_hits_settle_as_applied_at_the_end_of_the_turn(store):
    used = store.write("The auth service listens on port 8443", scopes=["x"]).id
    rejected = store.write("The auth service keeps sessions in redis", scopes=["x"]).id
    result = store.search("auth service", mode="bm25")
    assert result.use_token and {h.id for h in result.hits} == {used, rejected}
    store.record_use([rejected], "ignored")
    report = audit_turn(store, "which port does auth listen on", mode="bm25")
    assert report["auto_applied"] == 1
    assert outcomes(store, used) == [{"outcome": "applied", "auto": True, "use_token": result.use_token}]
    assert [o["outcome"] for o in outcomes(store, rejected)] == ["ignored"]  # the explicit outcome wins
    assert audit_turn(store, "anything else", mode="bm25")["auto_applied"] == 0  # a token settles once


def test_without_an_audit_hook_a_token_settles_two_searches_later(store):
    mid = store.write("The auth service listens on port 8443", scopes=["x"]).id
    store.search("auth port", mode="bm25")
    store.search("something unrelated", mode="bm25")
    assert outcomes(store, mid) == []  # still within ~2 turns
    store.search("another unrelated query", mode="bm25")
    assert [o["outcome"] for o in outcomes(store, mid)] == ["applied"]


def test_auto_applies_do_not_answer_a_contradiction(store):
    mid = store.write("The auth service listens on port 8443", scopes=["x"]).id
    store.record_use([mid], "contradicted", excerpt=["port 8443"])
    store.search("auth port", mode="bm25")
    audit_turn(store, "auth port", mode="bm25")
    hit = store.search("auth port", mode="bm25").hits[0]
    assert hit.trust["recent_negative_outcomes"][0]["outcome"] == "contradicted"


# --- curation buckets -------------------------------------------------------------------------------

def test_cold_dead_and_cold_endorsement_buckets(store, clock):
    dead = store.write("The fax gateway converts PDFs to TIFF", scopes=["x"]).id
    cold = store.write("The print queue is drained nightly", scopes=["x"]).id
    endorsed = store.write("The auth service listens on port 8443", scopes=["x"]).id
    store.write("Ambient: the team writes British English", scopes=["x"], category="ambient")
    store.show(cold)
    for _ in range(COLD_ENDORSEMENT_RETRIEVALS):
        store.search("auth service port", mode="bm25")
    clock.now += timedelta(days=91)
    store.search("auth service port", mode="bm25")
    health = store.health(auto_scope=False)
    counts = health["curation_pending"]
    assert (counts["dead"], counts["cold"], counts["cold_endorsement_memories"]) == (1, 1, 1)
    assert health["dead"] == [dead] and health["cold"][0]["id"] == cold
    assert health["cold_endorsement_memories"][0]["id"] == endorsed
    store.record_use([endorsed], "applied")  # an explicit apply endorses it; the automatic ones did not
    assert store.health(auto_scope=False)["curation_pending"]["cold_endorsement_memories"] == 0
    overview = store.scope_overview(auto_scope=False)
    assert overview["proposals_pending"] == 0 and overview["curation_pending"]["dead"] == 1


def test_a_commit_carries_the_curation_hint_once_per_session(store, clock, tmp_path):
    for n in range(CURATION_HINT_THRESHOLD):
        store.write(f"Legacy subsystem number {n} used codename {'qxz'[n % 3]}{n}vault", scopes=["x"])
    first = store.write("A fresh fact about kites and wind", scopes=["x"])
    assert first.curation_hint is None  # nothing is dead yet
    clock.now += timedelta(days=91)
    hinted = store.write("The kite festival is held on the coast", scopes=["x"])
    assert hinted.curation_hint["counts"]["dead_weight"] >= CURATION_HINT_THRESHOLD
    assert hinted.curation_hint["pressure"] >= hinted.curation_hint["threshold"] == CURATION_HINT_THRESHOLD
    assert store.write("Kites need steady wind above 10 knots", scopes=["x"]).curation_hint is None
    with kenning.open_store(tmp_path / "store", clock=clock) as next_session:
        assert next_session.write("Kite lines are rated in kilograms", scopes=["x"]).curation_hint is not None


# --- conflicts --------------------------------------------------------------------------------------

def test_conflicts_are_listed_and_resolved_by_supersede(store):
    old = store.write("Deploys are approved by the release manager", scopes=["x"]).id
    new = store.write("Deploys are approved by the on-call engineer", scopes=["x"],
                      links=[{"type": "contradicts", "target_id": old}]).id
    pairs = store.conflicts(auto_scope=False)
    assert [(p["id"], p["other_id"]) for p in pairs] == [(new, old)]
    with pytest.raises(InvalidInput, match="keep_id"):
        store.resolve_conflict(new, old, "supersede")
    out = store.resolve_conflict(old, new, "supersede", keep_id=new)
    assert out["link"] == {"type": "supersedes", "source": new, "target_id": old, "note": None}
    assert store.conflicts(auto_scope=False) == []
    assert store.show(old)["superseded_by"] == [new]
    assert store.scope_overview(auto_scope=False)["curation_pending"]["conflicts"] == 0


def test_keep_both_needs_a_note_and_leaves_an_extends_link(store):
    a = store.write("Staging deploys need one approval", scopes=["x"]).id
    b = store.write("Production deploys need two approvals", scopes=["x"],
                    links=[{"kind": "contradicts", "target": a}]).id
    with pytest.raises(InvalidInput, match="note"):
        store.resolve_conflict(a, b, "keep_both")
    store.resolve_conflict(a, b, "keep_both", note="different environments")
    assert [(link.kind, link.target, link.note) for link in store.get(a).links] == [("extends", b, "different environments")]
    assert store.get(b).links == [] and store.conflicts(auto_scope=False) == []
    with pytest.raises(InvalidInput, match="not in conflict"):
        store.resolve_conflict(a, b, "keep_both", note="again")


def test_conflicts_are_read_from_the_links_without_the_health_scan(store, monkeypatch):
    """Listing the pairs reads the contradicts links and their targets, not every memory (the health
    scan, O(store)); the pairs are still the visible live ones, once a pair, as health counts them."""
    from kenning.memory import health

    a = store.write("The staging database host is pg-stage-2", scopes=["projects:db"]).id
    b = store.write("The staging database host is pg-stage-9 since the move", scopes=["projects:db"],
                    links=[{"kind": "contradicts", "target": a}]).id
    store.update(a, links=[{"kind": "contradicts", "target": b}])  # linked both ways: still one pair
    c = store.write("Deploys are approved by the release manager", scopes=["projects:ops"]).id
    store.write("Deploys are approved by the on-call engineer", scopes=["projects:ops"],
                links=[{"kind": "contradicts", "target": c}])
    store.remove(c, reason="gone")  # its pair is no conflict any more
    assert store.scope_overview(auto_scope=False)["curation_pending"]["conflicts"] == 1
    monkeypatch.setattr(health, "_scan", lambda *a, **k: pytest.fail("conflicts ran the whole health scan"))
    assert [{p["id"], p["other_id"]} for p in store.conflicts(auto_scope=False)] == [{a, b}]


def test_a_contradiction_its_newer_side_supersedes_is_no_conflict(store):
    """supersedes says which to prefer; a pair linked by both was listed as a conflict to resolve."""
    old = store.write("The staging database host is pg-stage-2", scopes=["projects:db"]).id
    new = store.write("The staging database host is pg-stage-9 since the move", scopes=["projects:db"],
                      links=[{"kind": "contradicts", "target": old}, {"kind": "supersedes", "target": old}]).id
    other = store.write("The staging cache host is redis-stage-1", scopes=["projects:db"]).id
    store.write("The staging cache host is redis-stage-4", scopes=["projects:db"],
                links=[{"kind": "contradicts", "target": other}])
    assert [p["other_id"] for p in store.conflicts(auto_scope=False)] == [other]
    assert store.scope_overview(auto_scope=False)["curation_pending"]["conflicts"] == 1
    store.remove(new, reason="wrong after all")  # no live superseder: nothing is preferred, and no conflict either
    assert [p["other_id"] for p in store.conflicts(auto_scope=False)] == [other]


# --- optimistic concurrency, two processes ----------------------------------------------------------

CHILD = textwrap.dedent("""
    import json, sys
    import kenning
    store = kenning.open_store(sys.argv[1])
    mid = sys.argv[2]
    store.update(mid, text="The ledger batches writes every five seconds")
    print(json.dumps({"version": store.show(mid)["version"]}))
""")


def test_a_concurrent_update_in_another_process_makes_this_one_stale(tmp_path):
    here = kenning.open_store(tmp_path / "store")
    mid = here.write("The ledger batches writes every second", scopes=["x"]).id
    token = here.show(mid)["version"]
    other = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "store"), mid],
                           capture_output=True, text=True, check=True)
    their_version = json.loads(other.stdout)["version"]
    with pytest.raises(Stale) as stale:
        here.update(mid, text="The ledger batches writes every ten seconds", version=token)
    assert stale.value.current == their_version
    assert here.verify(mid, version=token)["status"] == "stale"
    memory = here.get(mid)
    assert memory.content == "The ledger batches writes every five seconds" and memory.last_verified_at is None
    assert here.update(mid, text="The ledger batches writes every ten seconds",
                       version=their_version).content.endswith("ten seconds")
    here.close()


def test_a_session_with_low_curation_pressure_does_not_rescan_the_store_on_every_commit(store, clock, monkeypatch):
    from kenning.memory import health

    scans = []
    real = health.pressure_counts
    monkeypatch.setattr(health, "pressure_counts", lambda *a, **k: scans.append(1) or real(*a, **k))
    for n in range(3):
        assert store.write(f"Kite fact number {n} about line {n}x strength", scopes=["x"]).status == "committed"
    assert len(scans) == 1  # measured low once
    clock.now += timedelta(minutes=11)
    store.write("Kites fly best in laminar wind", scopes=["x"])
    assert len(scans) == 2


@pytest.mark.parametrize("limit", [0, -1, 1.5, True])
def test_conflicts_refuses_a_limit_that_would_hide_them(store, limit):
    a = store.write("The staging database host is pg-stage-2", scopes=["projects:db"]).id
    store.write("The staging database host is pg-stage-9 since the move", scopes=["projects:db"],
                links=[{"kind": "contradicts", "target": a}])
    assert len(store.conflicts(auto_scope=False, limit=1)) == 1
    with pytest.raises(InvalidInput, match="limit must be a whole number"):
        store.conflicts(auto_scope=False, limit=limit)
