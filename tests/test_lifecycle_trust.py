"""Trust signals through the Store against a real temporary git repository with dated commits and
an injected clock: staleness on hits and show, verify, links, outcomes, expand_top, health."""

from __future__ import annotations

import os
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import kenning
from kenning.errors import InvalidInput, NotFound
from kenning.memory.trust import decisive_top
from kenning.store.models import Hit, iso
from clocks import Clock, ticking
from unprivileged import run_unprivileged

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
BODY = "The server entry point is src/app.py and its docs are docs/README.md"


def git(cwd: Path, *args: str, when: datetime | None = None) -> str:
    env = dict(os.environ)
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat()
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          env=env, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, when: datetime, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        if text is None:
            git(repo, "rm", "-q", name)
        else:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
            git(repo, "add", name)
    git(repo, "commit", "-q", "-m", "change", when=when)


@pytest.fixture(autouse=True)
def no_enclosing_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, START - timedelta(days=1),
           {"src/app.py": "def main():\n    pass\nPORT = 8443\n", "docs/README.md": "# docs\n", "other.txt": "x\n"})
    return root


@pytest.fixture
def clock():
    return ticking(START)


@pytest.fixture
def store(tmp_path, clock, repo):
    s = kenning.open_store(tmp_path / "store", clock=clock, cwd=repo)
    yield s
    s.close()


def hit_for(store, mid, query="server entry point docs"):
    [hit] = [h for h in store.search(query, mode="bm25", limit=10).to_dict()["hits"] if h["id"] == mid]
    return hit


# --- staleness ------------------------------------------------------------------------------------


def test_staleness_follows_the_repository(store, repo, clock):
    mid = store.write(BODY, scopes=["projects:repo"]).id
    hit = hit_for(store, mid)
    assert hit["staleness_verdict"] == "fresh"  # never verified, but written today: not yet due
    assert hit["verification"]["status"] == "never"
    assert (hit["path_drift_missing"], hit["commit_drift_count"]) == (0, 0)

    commit(repo, START + timedelta(days=1), {"src/app.py": "def main():\n    return 1\nPORT = 8443\n"})
    commit(repo, START + timedelta(days=1, hours=1), {"other.txt": "not cited\n"})
    clock.now = START + timedelta(days=2)
    hit = hit_for(store, mid)
    # nothing attested yet: every commit counts, and it is reported without flagging the memory
    assert (hit["commit_drift_count"], hit["staleness_verdict"]) == (2, "fresh")

    verified = store.verify(mid, note="read src/app.py", verified_paths=["src/app.py"])
    assert verified["status"] == "verified" and verified["staleness_verdict"] == "fresh"
    assert verified["verification"]["status"] == "fresh" and verified["commit_drift_count"] == 0
    assert hit_for(store, mid)["staleness_verdict"] == "fresh"

    commit(repo, START + timedelta(days=3), {"docs/README.md": None})
    clock.now = START + timedelta(days=4)
    hit = hit_for(store, mid)
    assert hit["path_drift"] == {"checked": ["src/app.py", "docs/README.md"], "missing": ["docs/README.md"],
                                 "verified": ["src/app.py"]}
    assert hit["path_drift_missing"] == 1 and hit["commit_drift_count"] == 0  # narrowed to src/app.py
    assert hit["staleness_verdict"] == "fresh"  # a path scraped from prose: evidence only

    commit(repo, START + timedelta(days=5), {"src/app.py": None})
    clock.now = START + timedelta(days=6)
    hit = hit_for(store, mid)
    assert hit["claim_anchored_missing"] == ["src/app.py"] and hit["staleness_verdict"] == "spot_check_required"

    shown = store.show(mid)
    assert shown["staleness_verdict"] == "spot_check_required" and shown["staleness_reasons"]
    assert shown["path_drift"]["missing"] == ["src/app.py", "docs/README.md"]
    assert shown["commit_drift"]["status"] == "drift" and shown["commit_drift"]["commits_since_verify"] == 1
    assert shown["verification"]["recommendation"] is None  # verified 4 days ago: the calendar is fine


def test_a_commit_in_the_same_second_before_the_verify_is_not_counted_after_it(store, repo, clock):
    mid = store.write(BODY, scopes=["projects:repo"]).id
    clock.now = START + timedelta(days=1, microseconds=600_000)
    commit(repo, START + timedelta(days=1), {"src/app.py": "def main():\n    return 1\nPORT = 8443\n"})
    verified = store.verify(mid, note="read it after the commit")  # git dates the commit 0.6 s earlier, same second
    assert verified["commit_drift_count"] == 0 and verified["staleness_verdict"] == "fresh"
    assert store.show(mid)["commit_drift"]["commits_since_verify"] == 0
    commit(repo, START + timedelta(days=1), {"other.txt": "after the verify, same second\n"})
    assert hit_for(store, mid)["commit_drift_count"] == 1  # counted from the HEAD the verify saw, not by date
    git(repo, "reset", "-q", "--hard", "HEAD~2")  # history rewritten past the verified commit: still counted,
    commit(repo, START + timedelta(days=2), {"other.txt": "rewritten history\n"})
    assert hit_for(store, mid)["commit_drift_count"] == 2  # with the verified src/app.py change it took away


def test_a_checkout_of_older_code_than_was_verified_is_drift(store, repo, clock):
    mid = store.write("The server entry point src/app.py returns 2", scopes=["x"]).id
    commit(repo, START + timedelta(hours=1), {"src/app.py": "def main():\n    return 2\nPORT = 8443\n"})
    clock.now = START + timedelta(hours=2)
    assert store.verify(mid, verified_paths=["src/app.py"])["commit_drift_count"] == 0
    git(repo, "checkout", "-q", "HEAD~1")  # src/app.py as it was before the change the verify vouched for
    hit = hit_for(store, mid, "server entry point")
    assert hit["commit_drift_count"] == 1 and hit["staleness_verdict"] == "spot_check_recommended"
    assert store.show(mid)["commit_drift"]["status"] == "drift"
    git(repo, "checkout", "-q", "-b", "side")  # another branch from there, with its own change
    commit(repo, START + timedelta(hours=3), {"src/app.py": "def main():\n    return 3\nPORT = 8443\n"})
    assert hit_for(store, mid, "server entry point")["commit_drift_count"] == 2
    never = store.write("The docs index is docs/README.md", scopes=["x"]).id  # never verified: from its write
    git(repo, "checkout", "-q", "main")
    assert hit_for(store, never, "docs index")["commit_drift_count"] == 2  # side's commit gone, main's back


def test_a_rewritten_memory_counts_commits_from_its_new_text(store, repo, clock):
    mid = store.write("The server entry point is src/app.py", scopes=["x"]).id
    for hour in (1, 2, 3):
        commit(repo, START + timedelta(hours=hour), {"other.txt": f"change {hour}\n"})
    assert hit_for(store, mid, "server entry point")["commit_drift_count"] == 3
    store.update(mid, text="The server entry point is src/app.py (main)")
    # the new text was written against the code as it is now: it read "3 commits since it was written"
    assert hit_for(store, mid, "server entry point")["commit_drift_count"] == 0
    assert store.get(mid).origin.commit == git(repo, "rev-parse", "HEAD")
    store.update(mid, scopes=["x", "y"])  # no new text: the baseline stays
    commit(repo, START + timedelta(hours=4), {"other.txt": "change 4\n"})
    store.update(mid, scopes=["x"])
    assert hit_for(store, mid, "server entry point")["commit_drift_count"] == 1


def test_a_never_verified_memory_becomes_due_after_the_window(store, clock):
    mid = store.write("Release notes are written by the on-call engineer", scopes=["x"]).id
    clock.now = START + timedelta(days=29)
    assert hit_for(store, mid, "release notes")["staleness_verdict"] == "fresh"
    clock.now = START + timedelta(days=31)
    hit = hit_for(store, mid, "release notes")
    assert hit["staleness_verdict"] == "spot_check_recommended" and hit["verification"]["status"] == "never"
    assert "never verified" in store.show(mid)["verification"]["recommendation"]
    store.configure(verification_stale_days=60)
    assert hit_for(store, mid, "release notes")["staleness_verdict"] == "fresh"


@pytest.fixture
def tokyo(monkeypatch):
    """The process's local time zone is UTC+9 for one test."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_naive_clock_means_utc_to_search_and_health_alike(tmp_path, tokyo):
    clock = Clock(datetime(2026, 3, 1, 12, 0))  # naive, as datetime.now or datetime.utcnow read
    with kenning.open_store(tmp_path / "naive", clock=clock) as store:
        mid = store.write("Release notes are written by the on-call engineer", scopes=["x"]).id
        store.verify(mid)
        assert store.get(mid).last_verified_at == datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
        clock.now = datetime(2026, 3, 31, 11, 0)  # 29 days 23 hours later
        # was spot_check_recommended here while health counted nothing stale (nine hours apart)
        assert hit_for(store, mid, "release notes")["staleness_verdict"] == "fresh"
        assert store.health()["curation_pending"]["stale"] == 0
        clock.now = datetime(2026, 3, 31, 13, 0)
        assert hit_for(store, mid, "release notes")["verification"]["status"] == "stale"
        report = store.health()  # was InvalidInput: can't subtract offset-naive and offset-aware datetimes
        assert report["curation_pending"]["stale"] == 1 and report["oldest_unverified"][0]["age_days"] == 30.0


def test_an_import_dated_in_the_future_is_refused(store, clock):
    for key in ("last_verified_at", "created"):  # read as fresh until 2099, or as never due
        with pytest.raises(InvalidInput, match=f"record 1: {key} 2099-01-01T00:00:00.000000Z is in the future"):
            store.import_records([{"content": "The billing export runs nightly", key: "2099-01-01T00:00:00Z"}])
    assert store.count() == 0
    ahead = (clock.now + timedelta(hours=2)).isoformat()  # another machine's clock a little ahead: taken
    [mid] = store.import_records([{"content": "The billing export runs nightly", "last_verified_at": ahead}])
    assert hit_for(store, mid, "billing export")["verification"]["status"] == "fresh"


def test_a_time_ahead_of_the_clock_is_no_age_not_a_negative_one(store, clock):
    """A verification or write dated ahead of this clock (an import from a machine whose clock runs ahead,
    this clock set back since) showed a negative age: show's age_days -0.8, health "-0.9 days"."""
    ahead = (clock.now + timedelta(hours=20)).isoformat()
    verified, written = store.import_records([
        {"content": "The payments API answers on port 7443 in staging", "last_verified_at": ahead},
        {"content": "The ledger job writes to the archive bucket nightly", "created": ahead, "updated": ahead}])
    clock.now -= timedelta(days=2)  # and the clock goes back two days as well
    assert store.show(verified)["verification"]["age_days"] == 0.0
    assert store.show(written)["verification"]["age_days"] == 0.0
    assert [row["age_days"] for row in store.health()["oldest_unverified"]] == [0.0]


def test_a_removal_after_the_clock_went_back_is_dated_no_earlier_than_the_memorys_last_change(store, clock):
    """With the clock set back, remove stamped removed_at hours before the memory's updated: a tombstone
    removed before its last change. An update already takes the later of the clock and updated."""
    mid = store.write("The ledger job writes to the archive bucket nightly", scopes=["p"]).id
    written = store.get(mid).updated
    clock.now -= timedelta(hours=3)
    gone = store.remove(mid, "the job was retired")
    [tombstone] = store.tombstones()
    assert tombstone.removed_at == gone.removed_at >= written
    [event] = store.events(kinds=["remove"])
    assert event["at"] == iso(gone.removed_at)


def test_a_memory_whose_repository_is_gone_is_unmeasured_not_zero(store, repo, clock):
    import shutil

    mid = store.write(BODY, scopes=["x"]).id
    shutil.rmtree(repo)
    hit = hit_for(store, mid)
    assert hit["path_drift_missing"] is None and hit["path_drift_status"] == "unmeasured"
    assert hit["commit_drift_count"] is None and hit["commit_drift_status"] == "unmeasured"


def test_a_cited_line_range_past_the_end_of_its_file_shows_as_drift(store, repo, tmp_path):
    """A memory citing src/app.py:500-510 in a file of 3 lines was fresh with nothing missing on
    search, show, verify and health alike; the range is now path drift, evidence as a missing prose
    path is (the CLI's show prints it), and a range within the file is not."""
    from typer.testing import CliRunner

    from kenning.cli import app

    mid = store.write("The server retry loop is at src/app.py:500-510", scopes=["x"]).id
    within = store.write("The server entry point is at src/app.py:1-3", scopes=["x"]).id
    drift = {"checked": ["src/app.py", "src/app.py:500-510"], "missing": ["src/app.py:500-510"], "verified": []}
    hit = hit_for(store, mid, "server retry loop")
    assert (hit["path_drift"], hit["path_drift_missing"], hit["staleness_verdict"]) == (drift, 1, "fresh")
    assert store.show(mid)["path_drift"]["missing"] == ["src/app.py:500-510"]
    assert store.verify(mid)["path_drift"] == drift
    assert [row["id"] for row in store.health(limit=10)["drifted"]] == [mid]
    assert hit_for(store, within, "server entry point")["path_drift_missing"] == 0
    shown = CliRunner().invoke(app, ["--store", str(tmp_path / "store"), "show", mid])
    assert shown.exit_code == 0 and "path_drift: src/app.py:500-510" in shown.stdout.splitlines()


def test_a_claimed_line_range_is_checked_and_escalates_once_past_the_end(store, repo, clock):
    """--claim src/app.py:1-3 was refused as 'src/app.py:1-3 does not exist' though the file had those
    lines. It is now a claim that the file has them: refused at write when it does not, and once the
    file shrinks below it, the memory needs a spot check on every surface and cannot be verified."""
    refused = store.write("The server keeps its retry loop at the end of src/app.py", scopes=["x"],
                          claims=["src/app.py:500-510"])
    assert refused.status == "claim_false" and "src/app.py has 3 lines, so no line 510" in refused.reason
    mid = store.write("The server entry point is at the top of src/app.py", scopes=["x"], claims=["src/app.py:1-3"]).id
    assert hit_for(store, mid, "server entry point")["staleness_verdict"] == "fresh"
    commit(repo, START, {"src/app.py": "def main():\n    pass\n"})
    hit = hit_for(store, mid, "server entry point")
    assert (hit["staleness_verdict"], hit["claim_anchored_missing"]) == ("spot_check_required", ["src/app.py:1-3"])
    assert store.show(mid)["claims"][0]["spec"] == "src/app.py:1-3"
    with pytest.raises(InvalidInput, match=r"src/app.py:1-3 \(src/app.py has 2 lines, so no line 3\)"):
        store.verify(mid)
    # attested as a path, a range was 'missing' though its file is there: it is named as lines
    with pytest.raises(InvalidInput, match=r"name lines, which a path cannot: src/app.py:1-2; attest the file "
                                           r"\(src/app.py\) or declare the lines as a claim"):
        store.verify(mid, verified_paths=["src/app.py:1-2"], claims=["src/app.py:1-2"])


def test_a_cited_file_that_cannot_be_read_is_unmeasured_not_an_error(store, repo, clock):
    commit(repo, START, {"secret/conf.py": "TOKEN_TTL = 30\n"})
    claimed = store.write("The token TTL is set in secret/conf.py", scopes=["x"],
                          claims=["secret/conf.py::TOKEN_TTL=30"]).id
    cited = store.write("The secret settings module is secret/conf.py", scopes=["x"]).id

    def look() -> tuple:
        with pytest.raises(InvalidInput, match="cannot be read"):
            store.verify(claimed, verified_paths=["secret/conf.py"])
        return (hit_for(store, claimed, "token TTL"), hit_for(store, cited, "secret settings module"),
                store.show(claimed), store.health()["curation_pending"]["drifted"])

    (repo / "secret" / "conf.py").chmod(0)  # searches, shows and health raised PermissionError
    try:
        hit, other, shown, drifted = run_unprivileged(look)
        (repo / "secret").chmod(0)  # nor may the folder be searched: the prose path cannot be told either
        folder = run_unprivileged(lambda: hit_for(store, cited, "secret settings module"))
    finally:
        (repo / "secret").chmod(0o755)
        (repo / "secret" / "conf.py").chmod(0o644)
    assert hit["path_drift_missing"] is None and hit["path_drift_status"] == "unmeasured"
    assert "secret/conf.py::TOKEN_TTL=30" in hit["path_drift_reason"] and "claim_anchored_missing" not in hit
    assert hit["staleness_verdict"] == "fresh"  # not shown to fail: unmeasured, not required
    assert shown["path_drift"]["claims"][0]["status"] == "unreadable" and drifted == 0
    assert other["path_drift_missing"] == 0  # it exists; only its contents may not be read
    assert folder["path_drift_missing"] is None and "secret/conf.py" in folder["path_drift_reason"]


# --- verify -------------------------------------------------------------------------------------


def test_verify_refuses_missing_paths_and_false_claims_and_changes_nothing(store):
    mid = store.write("The port is 8443", scopes=["x"], claims=["src/app.py::PORT=8443"]).id
    before = store.get(mid)
    with pytest.raises(InvalidInput, match="missing.py"):
        store.verify(mid, verified_paths=["missing.py"])
    with pytest.raises(InvalidInput, match="missing in"):  # stat raised ENAMETOOLONG (a bare OSError)
        store.verify(mid, verified_paths=["src/" + "x" * 300 + ".py"])
    with pytest.raises(InvalidInput, match="PORT=9000"):
        store.verify(mid, claims=["src/app.py::PORT=9000"])
    with pytest.raises(InvalidInput, match="500"):
        store.verify(mid, note="x" * 501)
    with pytest.raises(NotFound):
        store.verify("01NOPE")
    assert store.get(mid) == before and store.events(kinds=["verify"]) == []


def test_verify_refuses_a_path_that_leaves_the_worktree_through_a_symlink(store, repo, tmp_path):
    (tmp_path / "shared.py").write_text("TOKEN_TTL = 30\n")
    os.symlink(tmp_path / "shared.py", repo / "src" / "shared.py")
    mid = store.write("The token TTL is set in src/shared.py", scopes=["x"]).id
    # it was attested, and commit drift then watched the link, never the file it points at
    with pytest.raises(InvalidInput, match="outside .* symlink: src/shared.py"):
        store.verify(mid, verified_paths=["src/app.py", "src/shared.py"])
    assert store.get(mid).last_verified_at is None
    assert store.verify(mid, verified_paths=["src/app.py"])["status"] == "verified"


def test_verify_refuses_to_call_a_path_that_is_there_absent(store, repo):
    mid = store.write("Deploys run scripts/deploy.sh; Windows builds use win/setup.ps1", scopes=["x"]).id
    commit(repo, START, {"scripts/deploy.sh": "#!/bin/sh\n"})
    # it was taken, and drift never looked at scripts/deploy.sh again: its deletion read as fresh
    with pytest.raises(InvalidInput, match="absent path.* exist .*scripts/deploy.sh"):
        store.verify(mid, verified_absent_paths=["win/setup.ps1", "scripts/deploy.sh"])
    assert store.get(mid).verified_absent_paths == [] and store.get(mid).last_verified_at is None
    store.verify(mid, verified_paths=["scripts/deploy.sh"], verified_absent_paths=["win/setup.ps1"])
    commit(repo, START + timedelta(hours=1), {"scripts/deploy.sh": None})
    assert hit_for(store, mid, "deploys windows builds")["staleness_verdict"] == "spot_check_required"


def test_verify_replaces_attestations_and_an_update_of_the_body_clears_them(store, repo, clock):
    mid = store.write("Docs live in docs/README.md; the windows build uses win/setup.ps1", scopes=["x"]).id
    store.verify(mid, verified_paths=["docs/README.md"], verified_absent_paths=["win/setup.ps1"],
                 claims=["src/app.py::main"])
    memory = store.get(mid)
    assert memory.verified_paths == ["docs/README.md"] and memory.verified_absent_paths == ["win/setup.ps1"]
    assert [c.spec for c in memory.claims] == ["src/app.py::main"] and memory.updated == memory.created
    assert "win/setup.ps1" not in store.show(mid)["path_drift"]["missing"]

    store.verify(mid, verified_paths=[])  # [] clears, None keeps
    memory = store.get(mid)
    assert memory.verified_paths == [] and memory.verified_absent_paths == ["win/setup.ps1"]

    commit(repo, START + timedelta(days=1), {"src/app.py": "def run():\n    pass\n"})
    with pytest.raises(InvalidInput, match="src/app.py::main"):
        store.verify(mid)  # the stored claim no longer holds: no stamp

    store.update(mid, scopes=["x", "docs"])
    assert store.get(mid).last_verified_at is not None  # a scope-only edit keeps verification
    store.update(mid, text="Docs live in docs/README.md")
    memory = store.get(mid)
    assert memory.last_verified_at is None and memory.claims == [] and memory.verified_absent_paths == []
    assert store.verify(mid)["verification"]["status"] == "fresh"


# --- links --------------------------------------------------------------------------------------


def test_supersedes_shows_on_the_old_memory_and_links_resolve_both_ways(store):
    old = store.write("Staging deploys run from jenkins", scopes=["ci"]).id
    new = store.write("Staging deploys run from github actions", scopes=["ci"],
                      links=[{"kind": "supersedes", "target": old, "note": "moved off jenkins"}]).id
    hits = {h["id"]: h for h in store.search("staging deploys", mode="bm25").to_dict()["hits"]}
    assert hits[old]["superseded_by"] == [new] and "superseded_by" not in hits[new]
    # and as attributes of the Hit, as the docs name them (hit.superseded_by raised AttributeError)
    objects = {h.id: h for h in store.search("staging deploys", mode="bm25").hits}
    assert objects[old].superseded_by == [new] and objects[new].superseded_by is None
    assert objects[old].path_drift_missing == hits[old]["path_drift_missing"]
    with pytest.raises(AttributeError):
        objects[old].no_such_field
    shown_old, shown_new = store.show(old), store.show(new)
    assert shown_old["reverse_links"] == [{"kind": "supersedes", "source": new, "note": "moved off jenkins",
                                           "summary": "Staging deploys run from github actions"}]
    assert shown_new["links"][0]["summary"] == "Staging deploys run from jenkins"
    assert shown_new["links"][0]["status"] == "live"
    store.update(new, links=[])
    assert "superseded_by" not in store.search("staging deploys", mode="bm25").to_dict()["hits"][0]
    assert store.show(old)["reverse_links"] == []


@pytest.mark.parametrize("mode", ["keyword", "bm25", "hybrid"])
def test_a_superseded_hit_comes_after_what_replaced_it_and_is_never_high_or_expanded(store, mode):
    old = store.write("The production database is hosted on pg-prod-1", scopes=["p"]).id
    other = store.write("The production database backups are kept for 35 days", scopes=["p"]).id
    query = "where is the production database hosted"
    before = store.search(query, mode=mode, expand_top=True).to_dict()["hits"]
    assert before[0]["id"] == old and "content" in before[0]  # the old text is the clear answer, until replaced
    new = store.write("The production database moved to pg-prod-2 last quarter", scopes=["p"],
                      links=[{"kind": "supersedes", "target": old}]).id
    result = store.search(query, mode=mode, expand_top=True).to_dict()
    order = [h["id"] for h in result["hits"]]
    assert order.index(new) == order.index(old) - 1 and other in order  # right above it, whatever the scores
    hits = {h["id"]: h for h in result["hits"]}
    assert hits[old]["superseded_by"] == [new] and hits[old]["relevance"] != "high"
    assert "content" not in hits[old]
    store.remove(new, reason="the move was rolled back")  # a tombstone supersedes nothing
    assert store.search(query, mode=mode).to_dict()["hits"][0]["id"] == old


def test_a_chain_stays_superseded_when_its_middle_is_removed(store):
    first = store.write("The production database is hosted on pg-prod-1", scopes=["p"]).id
    second = store.write("The production database moved to pg-prod-2", scopes=["p"],
                         links=[{"kind": "supersedes", "target": first}]).id
    third = store.write("The production database moved again, to pg-prod-3", scopes=["p"],
                        links=[{"kind": "supersedes", "target": second}]).id
    query = "where is the production database hosted"
    store.remove(second, reason="merged into the pg-prod-3 note")
    hits = store.search(query, mode="bm25", expand_top=True).to_dict()["hits"]
    # pg-prod-1 read as current, high and expanded above pg-prod-3
    assert [h["id"] for h in hits] == [third, first] and hits[1]["superseded_by"] == [third]
    assert hits[1]["relevance"] != "high" and "content" not in hits[1]
    assert store.show(first)["superseded_by"] == [third]
    store.restore(second)
    assert store.show(first)["superseded_by"] == [second]
    store.remove(third, reason="rolled back")
    store.remove(second, reason="rolled back too")  # nothing live replaces any of it: current again
    assert "superseded_by" not in store.show(first)
    store.update(first, links=[{"kind": "supersedes", "target": second}])  # a cycle through tombstones ends
    store.restore(third)
    assert store.show(first)["superseded_by"] == [third] and store.show(third).get("superseded_by") is None


def test_superseders_first_moves_a_superseder_up_to_the_hit_it_replaces_and_keeps_rank_order_otherwise():
    """An unrelated hit ranked between a hit and its superseder stays below both: it was led by the
    old hit, and the new one answers in its place (it used to lead the result)."""
    from types import SimpleNamespace as H

    from kenning.memory.trust import superseders_first

    a, b, c, d, e = (H(id=x) for x in "abcde")
    assert [h.id for h in superseders_first([a, b, c, d], {"a": ["c"]})] == ["c", "a", "b", "d"]
    assert [h.id for h in superseders_first([a, b, c, d], {"a": ["c", "d"], "b": ["a"]})] == ["c", "d", "a", "b"]
    assert [h.id for h in superseders_first([a, b, c, d], {"a": ["c"], "c": ["d"]})] == ["d", "c", "a", "b"]
    assert [h.id for h in superseders_first([a, b, c], {"a": ["b"], "b": ["a"]})] == ["a", "b", "c"]  # a cycle
    assert [h.id for h in superseders_first([a, b, c, d, e], {"a": ["c"], "c": ["a"], "b": ["e"]})] == ["a", "e", "b", "c", "d"]
    assert [h.id for h in superseders_first([a, b], {"a": ["z"]})] == ["a", "b"]  # its replacement not in the result
    assert [h.id for h in superseders_first([a, b], {"a": ["a"]})] == ["a", "b"]


def test_depends_on_is_inlined_within_the_caps(store):
    nouns = ["kafka", "redis", "vault", "consul", "nomad", "envoy", "istio", "etcd", "minio", "traefik",
             "grafana", "loki", "tempo", "jaeger", "nats"]
    targets = [store.write(f"The {n} cluster is owned by the platform team", scopes=["infra"]).id for n in nouns]
    wide = store.write("zebra runbook one", scopes=["ops"],
                       links=[{"kind": "depends_on", "target": t, "note": f"needs {i}"} for i, t in enumerate(targets[:5])]).id
    hit = store.search("zebra runbook one", mode="bm25").to_dict()["hits"][0]
    assert hit["id"] == wide and len(hit["depends_on_resolved"]) == 3
    assert hit["depends_on_resolved"][0] == {"id": targets[0], "link_note": "needs 0", "scopes": ["infra"],
                                             "summary": "The kafka cluster is owned by the platform team",
                                             "status": "live"}
    for i, words in enumerate(["quokka alpha", "quokka beta", "quokka gamma"]):
        store.write(words, scopes=["ops"], links=[{"kind": "depends_on", "target": t}
                                                  for t in targets[5 + i * 3: 8 + i * 3]])
    hits = store.search("zebra quokka", mode="bm25", limit=10).to_dict()["hits"]
    assert sum(len(h.get("depends_on_resolved", [])) for h in hits) == 10  # 4 hits x 3 wanted, 10 per call
    store.remove(targets[0], reason="kafka retired")
    assert store.search("zebra runbook one", mode="bm25").to_dict()["hits"][0]["depends_on_resolved"][0]["status"] == "removed"


def test_a_superseded_dependency_says_what_replaced_it(store):
    old = store.write("The deploy key is kept in vault path ops/deploy", scopes=["ops"]).id
    runbook = store.write("zebra runbook: fetch the deploy key, then run the release", scopes=["ops"],
                          links=[{"kind": "depends_on", "target": old}]).id
    new = store.write("The deploy key moved to the secrets manager", scopes=["ops"],
                      links=[{"kind": "supersedes", "target": old}]).id
    [entry] = hit_for(store, runbook, "zebra runbook")["depends_on_resolved"]
    # it read as a live dependency, the caller sent to the old vault path
    assert entry["status"] == "live" and entry["superseded_by"] == [new]
    shown = store.show(runbook)["links"][0]  # show's links read as current too
    assert shown["status"] == "live" and shown["superseded_by"] == [new]
    assert "superseded_by" not in store.show(new)["links"][0]  # its own supersedes link says it
    store.remove(new, reason="the move was rolled back")
    assert "superseded_by" not in hit_for(store, runbook, "zebra runbook")["depends_on_resolved"][0]
    assert "superseded_by" not in store.show(runbook)["links"][0]


# --- outcomes -----------------------------------------------------------------------------------


def test_negative_outcomes_ride_on_hits_until_answered(store, clock):
    mid = store.write("Deploys run through deploy.sh at the repository root", scopes=["ops"]).id
    store.record_use([mid], "applied")
    assert "recent_negative_outcomes" not in hit_for(store, mid, "deploys")
    store.record_use([mid], "ignored")
    store.record_use(mid, "contradicted", note="user says it moved", excerpt="deploy.sh")
    store.record_use([mid], "contradicted", note="again")
    negatives = hit_for(store, mid, "deploys")["recent_negative_outcomes"]
    assert [n["outcome"] for n in negatives] == ["contradicted", "ignored"] and negatives[0]["note"] == "again"
    assert store.show(mid)["recent_negative_outcomes"] == negatives
    store.record_use([mid], "applied")  # a later use answers nothing: the complaints still ride
    assert hit_for(store, mid, "deploys")["recent_negative_outcomes"] == negatives
    assert set(negatives[0]) == {"outcome", "at", "session", "note"} and negatives[1]["outcome"] == "ignored"
    store.verify(mid)  # spot-checked: the complaint is answered
    assert "recent_negative_outcomes" not in hit_for(store, mid, "deploys")
    store.record_use([mid], "ignored")
    clock.now += timedelta(days=29)  # still recent (the clock ticks on each read: no exact edge here)
    assert [n["outcome"] for n in hit_for(store, mid, "deploys")["recent_negative_outcomes"]] == ["ignored"]
    clock.now += timedelta(days=2)
    assert "recent_negative_outcomes" not in hit_for(store, mid, "deploys")  # no longer recent


def test_only_a_new_text_or_a_verify_answers_a_negative_outcome(store):
    mid = store.write("Deploys run through deploy.sh at the repository root", scopes=["ops"]).id
    other = store.write("Deploy logs are kept for a week", scopes=["ops"]).id
    store.record_use([mid], "contradicted", note="the user says deploys moved to CI")
    # each of these hid the complaint from hits and from health's contradicted bucket
    store.update(mid, scopes=["ops", "ci"])
    store.update(mid, confidence="high")
    store.update(mid, links=[{"kind": "extends", "target": other}])
    store.rename_scope("ci", "cicd")
    assert hit_for(store, mid, "deploys")["recent_negative_outcomes"][0]["note"] == "the user says deploys moved to CI"
    assert store.health()["curation_pending"]["contradicted"] == 1
    store.update(mid, text="Deploys run in CI (the deploy workflow); deploy.sh was retired")
    assert "recent_negative_outcomes" not in hit_for(store, mid, "deploys")
    assert store.health()["curation_pending"]["contradicted"] == 0


def test_record_use_validates_its_arguments(store):
    a = store.write("Alpha service owns the queue", scopes=["x"]).id
    b = store.write("Beta service owns the cache", scopes=["x"]).id
    out = store.record_use([a, b], "corrected", excerpt=["owns the queue", None])
    assert out["status"] == "recorded" and out["memory_ids"] == [a, b]
    assert [e["payload"] for e in store.events(kinds=["outcome"])] == [
        {"outcome": "corrected", "excerpt": "owns the queue"}, {"outcome": "corrected"}]
    for bad in (lambda: store.record_use([a], "loved"), lambda: store.record_use([], "applied"),
                lambda: store.record_use([a], "ignored", excerpt=["x", "y"]),
                lambda: store.record_use([a], "ignored", excerpt="")):
        with pytest.raises(InvalidInput):
            bad()
    with pytest.raises(NotFound):
        store.record_use([a, "01NOPE"], "ignored")
    assert len(store.events(kinds=["outcome"])) == 2


def test_an_id_given_twice_is_one_use(store):
    """`record-use B B B --outcome contradicted` logged three contradictions of one memory."""
    a = store.write("Alpha service owns the queue", scopes=["x"]).id
    b = store.write("Beta service owns the cache", scopes=["x"]).id
    out = store.record_use([b, a, b, b], "contradicted", note="moved")
    assert out["memory_ids"] == [b, a]
    assert [e["memory_id"] for e in store.events(kinds=["outcome"])] == [b, a]
    # the same id with two different excerpts names two phrases that mattered: both kept
    store.record_use([a, a], "corrected", excerpt=["owns", "the queue"])
    assert [e["payload"].get("excerpt") for e in store.events(kinds=["outcome"])][2:] == ["owns", "the queue"]


# --- expand_top ---------------------------------------------------------------------------------


def test_expand_top_inlines_only_a_clear_winner(store):
    mid = store.write("Nightly backups of the billing database go to the bucket acme-backups", scopes=["x"]).id
    store.write("The staging cluster runs on three spot instances", scopes=["x"])
    top = store.search("billing database backups bucket", mode="bm25", expand_top=True).to_dict()["hits"][0]
    assert top["id"] == mid and top["content"].startswith("Nightly backups")
    assert top["path_drift"]["status"] == "measured" and top["commit_drift"]["status"] == "clean"
    plain = store.search("billing database backups bucket", mode="bm25").to_dict()["hits"][0]
    assert "content" not in plain
    store.write("Weekly backups of the billing database go to tape", scopes=["x"])
    close = store.search("billing backups archive", mode="bm25", expand_top=True).to_dict()["hits"]
    assert close[0]["relevance"] != "high" and all("content" not in h for h in close)


# --- health -------------------------------------------------------------------------------------


def test_health_counts_and_lists_the_curation_backlog(store, repo, clock):
    old_fact = store.write("The billing export runs every night", scopes=["billing"]).id
    store.write("Answers should be friendly and brief", scopes=["style"], category="ambient")
    clock.now += timedelta(days=40)
    checked = store.write("Invoices are generated by the invoicer service", scopes=["billing"]).id
    store.verify(checked)
    drifted = store.write("Templates live in templates/invoice.html", scopes=["billing"],
                          acknowledge_transient=True).id
    a = store.write("Refunds are approved by finance", scopes=["billing"]).id
    b = store.write("Refunds are approved automatically under 50 euros", scopes=["billing"],
                    links=[{"kind": "contradicts", "target": a}]).id
    store.update(a, links=[{"kind": "contradicts", "target": b}])  # both sides declare it: one pair
    store.record_use([checked], "contradicted", note="the user says invoices moved")
    store.log_event("search_miss", memory_id=old_fact)
    store.log_event("search_miss", memory_id=old_fact)

    report = store.health()
    counts = report["curation_pending"]
    assert counts["never_verified"] == 4  # the ambient memory is never dead weight
    assert counts["stale"] == 1 and report["oldest_unverified"][0]["id"] == old_fact
    assert counts["drifted"] == 1 and report["drifted"][0] == {
        "id": drifted, "scopes": ["billing"], "summary": "Templates live in templates/invoice.html",
        "missing": ["templates/invoice.html"], "claim_anchored_missing": []}
    assert counts["conflicts"] == 1 and counts["contradicted"] == 1
    assert (counts["silent_misses"], counts["unique_silent_miss_memories"]) == (2, 1)
    assert report["total"] == 6 and report["by_category"] == {"fact": 5, "ambient": 1}
    store.remove(old_fact, reason="export retired")
    assert store.health()["curation_pending"]["silent_misses"] == 0  # misses of removed memories drop out
    assert store.scope_overview()["curation_pending"] == store.health()["curation_pending"]


def _hit(score, relevance="medium"):
    return Hit(id=f"m{score}", score=score, matched_leg="lexical", relevance=relevance, match_terms=[], legs={},
               snippet="", scopes=["x"], category="fact", confidence="medium", created=START, updated=START)


def test_the_top_hit_is_decisive_when_high_or_far_ahead_of_the_next_even_past_the_page():
    assert not decisive_top([])
    assert decisive_top([_hit(1.0)])  # alone: nothing to lead
    assert decisive_top([_hit(1.0, "high"), _hit(0.99)])  # high whatever the second
    assert not decisive_top([_hit(1.0), _hit(0.99)])
    assert decisive_top([_hit(1.0), _hit(0.1)])
    assert not decisive_top([_hit(1.0)], beyond=_hit(0.99))  # a page of one still weighs the hit past it
    assert decisive_top([_hit(1.0)], beyond=_hit(0.1))
