"""Staleness against real temporary git repositories, with commit dates and `now` injected."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from kenning.memory.origin import Origin
from kenning.memory.staleness import (
    DriftCache,
    assess_commit_drift,
    assess_path_drift,
    assess_staleness,
    assess_verification,
    extract_paths,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
BODY = "The auth server entry point is src/app.py; its docs are in docs/README.md."


def git(cwd: Path, *args: str, when: datetime | None = None) -> str:
    env = dict(os.environ)
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat()
    done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def commit(repo: Path, when: datetime, files: dict[str, str | None], message: str = "change") -> str:
    """Write (or, for None, delete) files and commit them at a fixed date."""
    for name, text in files.items():
        path = repo / name
        if text is None:
            git(repo, "rm", "-q", name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message, when=when)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.invalid")
    commit(
        root,
        T0,
        {"src/app.py": "def main():\n    pass\nPORT = 8443\n", "docs/README.md": "# docs\n", "other.txt": "x\n"},
        "init",
    )
    return root


def origin_of(repo: Path) -> Origin:
    return Origin(repo=str(repo), worktree=str(repo), commit=git(repo, "rev-parse", "HEAD"))


def assess(repo_origin, now, **kw):
    return assess_staleness(body=kw.pop("body", BODY), origin=repo_origin, now=now, **kw)


# --- paths in prose -----------------------------------------------------------------------------


def test_extract_paths_keeps_file_and_directory_citations():
    text = (
        "Entry point src/app.py (see docs/README.md), run ./scripts/run.sh. Gates live in store/gates/ "
        "and CI in .github/workflows/ci.yml; build with docker/Dockerfile or ./Makefile. "
        "Error at src/app.py:42, symbol `retrieval/text.py::tokenize`, **kenning/cli.py**."
    )
    assert extract_paths(text) == [
        "src/app.py",
        "docs/README.md",
        "scripts/run.sh",
        "store/gates",
        ".github/workflows/ci.yml",
        "docker/Dockerfile",
        "Makefile",
        "retrieval/text.py",
        "kenning/cli.py",
    ]


def test_a_path_cited_in_a_chinese_or_japanese_sentence_is_found():
    """CJK punctuation is full-width and no space surrounds the path: it still ends the path."""
    assert extract_paths("路径：src/app.py，然后运行 scripts/run.sh。") == ["src/app.py", "scripts/run.sh"]
    assert extract_paths("設定は「config/app.toml」にあります（docs/README.md）。") == ["config/app.toml", "docs/README.md"]


@pytest.mark.parametrize("cited", ["./run.sh", "./deploy.sh:10-12", "./setup.io", "./main.py", "./Makefile"])
def test_a_top_level_file_cited_with_a_leading_dot_slash_is_a_path(cited, tmp_path):
    """A leading ./ makes a path of a top-level file, as extract_paths says: ./run.sh named none, its
    name ending in a top-level domain (.sh) read as a host, so deleting run.sh left the memory fresh."""
    path = cited[2:].partition(":")[0]
    assert extract_paths(f"deploy with {cited}, then check") == [path]
    assert assess_path_drift(f"deploy with {cited}", [], str(tmp_path)).missing == [path]


@pytest.mark.parametrize("cited", ["src/app.py:10-20", "src/app.py:L10", "src/app.py:L10-L20", "src/app.py:10:5-12:3",
                                   "src/app.py:10\u201320", "(src/app.py:10-20)", "src/app.py#L10-L20"])
def test_a_path_cited_with_a_line_range_is_checked(cited, tmp_path):
    # "the bug is at src/app.py:10-20" named no path: its file deleted, the memory still read as fresh
    assert extract_paths(f"the retry bug is at {cited}, see there") == ["src/app.py"]
    assert assess_path_drift(f"the retry bug is at {cited}", [], str(tmp_path)).missing == ["src/app.py"]


@pytest.mark.parametrize("cited,gone", [
    ("src/app.py:500-510", True), ("src/app.py:L101", True), ("src/app.py#L95-L120", True), ("src/app.py:90:1-101:3", True),
    ("src/app.py:100", False), ("src/app.py:90-100", False), ("src/app.py:L1-L100", False), ("src/app.py", False),
])
def test_a_line_range_past_the_end_of_its_file_is_missing(cited, gone, tmp_path):
    """src/app.py:500-510 in a file of 100 lines read as fresh with nothing missing: the file existed.
    The range is a citation of its own, missing when it reaches past the last line (CR, LF or CRLF)."""
    (tmp_path / "src").mkdir()
    for ending in ("\n", "\r\n", "\r"):
        (tmp_path / "src" / "app.py").write_bytes(ending.join(f"x = {i}" for i in range(100)).encode())  # no final break
        drift = assess_path_drift(f"the retry loop is at {cited}, see there", [], str(tmp_path))
        assert (drift.status, drift.missing) == ("measured", [cited] if gone else []), ending
        assert drift.checked == ["src/app.py", *([cited] if ":" in cited or "#" in cited else [])]


@pytest.mark.parametrize(
    "text",
    [
        "https://github.com/org/repo/blob/main/src/app.py",
        "github.com/org/repo/blob/main/src/app.py",
        "www.example.com/docs/index.html",
        "mail dev@example.com/ops",
        "Python 3.12.1 and numpy 2.0",
        "and/or, TCP/IP, I/O, client/server, 24/7, 1/2",
        "push to origin/main; content type application/json",
        "config.py and README.md",  # bare names: no place to check them
        "../sibling/app.py, /etc/hosts, ~/notes.md",
        "src/*.py and tests/**/test_*.py",
        "$HOME/bin/tool.sh and %APPDATA%/x.ini",
        "Node.js, socket.io, e.g. i.e.",
        "the image org/app:12 and 24/7:1",
    ],
)
def test_extract_paths_skips_urls_versions_and_look_alikes(text):
    assert extract_paths(text) == []


# --- verification ------------------------------------------------------------------------------


def test_verification_status_never_stale_fresh():
    assert assess_verification(None, T0).status == "never"
    assert assess_verification(T0, T0 + timedelta(days=30)).status == "fresh"
    stale = assess_verification(T0, T0 + timedelta(days=31))
    assert (stale.status, stale.age_days) == ("stale", 31.0)
    assert "verify" in stale.recommendation
    assert assess_verification(T0, T0 + timedelta(days=8), stale_days=7).status == "stale"
    assert assess_verification("2026-01-01T12:00:00.000000Z", T0).status == "fresh"  # the store's ISO text


def test_verification_ages_are_tenths_of_days_and_the_window_is_inclusive():
    later = timedelta(days=31, hours=3)  # 31.125 days
    assert assess_verification(T0, T0 + later).age_days == 31.1
    assert assess_verification(T0, T0 + timedelta(days=2, hours=3)).age_days == 2.1
    assert assess_verification(None, T0 + later, written_at=T0).age_days == 31.1
    fresh = assess_verification(T0, T0 + timedelta(days=30))
    assert (fresh.status, fresh.stale_after_days, fresh.overdue) == ("fresh", 30, False)
    never = assess_verification(None, T0 + timedelta(days=30), written_at=T0)  # exactly the window: not yet due
    assert (never.overdue, never.stale_after_days) == (False, 30)
    assert never.recommendation.startswith("never verified (written 30 days ago, due within 30): spot-check one claim")
    due = assess_verification(None, T0 + timedelta(days=31), written_at=T0)
    assert due.overdue and due.recommendation.startswith("never verified and written 31 days ago: spot-check")
    unknown = assess_verification(None, T0)
    assert unknown.overdue and unknown.recommendation.startswith("never verified: spot-check")
    window = [assess_verification(when, T0 + timedelta(days=d), stale_days=7, written_at=T0).stale_after_days
              for when, d in ((T0, 2), (T0, 9), (None, 9))]
    assert window == [7, 7, 7]  # fresh, stale and never verified all say which window they were judged by


# --- the whole assessment against a real repository --------------------------------------------


def test_verified_and_untouched_is_fresh(repo):
    s = assess(origin_of(repo), T0 + timedelta(days=2), last_verified_at=T0 + timedelta(days=1))
    assert s.verdict == "fresh" and s.reasons == []
    assert s.to_hit_fields() == {
        "staleness_verdict": "fresh",
        "verification": {"status": "fresh", "last_verified_at": "2026-01-02T12:00:00.000000Z"},
        "path_drift_missing": 0,
        "commit_drift_count": 0,
    }


def test_deleted_file_is_path_drift(repo):
    origin = origin_of(repo)
    verified = T0 + timedelta(days=1)
    commit(repo, T0 + timedelta(days=2), {"src/app.py": None}, "remove app")
    s = assess(origin, T0 + timedelta(days=3), last_verified_at=verified)
    assert s.path_drift.missing == ["src/app.py"]
    fields = s.to_hit_fields()
    assert fields["path_drift_missing"] == 1
    assert fields["path_drift"] == {
        "checked": ["src/app.py", "docs/README.md"],
        "missing": ["src/app.py"],
        "verified": [],
    }
    assert fields["commit_drift_count"] == 1 and fields["commit_drift_scope"] == "repository"
    assert "claim_anchored_missing" not in fields  # scraped from prose: evidence, not an escalation
    assert s.verdict == "fresh"  # the spec: prose-scraped missing rides fresh
    attested = assess(origin, T0 + timedelta(days=3), last_verified_at=verified, verified_paths=["src/app.py"])
    assert attested.path_drift.claim_anchored_missing == ["src/app.py"]
    assert attested.verdict == "spot_check_required"


def test_commit_drift_is_narrowed_to_attested_paths_and_only_then_escalates(repo):
    origin = origin_of(repo)
    verified = T0 + timedelta(days=1)
    commit(repo, T0 + timedelta(days=2), {"src/app.py": "def main():\n    return 1\nPORT = 8443\n"})
    commit(repo, T0 + timedelta(days=3), {"docs/README.md": "# docs v2\n"})
    commit(repo, T0 + timedelta(days=4), {"other.txt": "not cited\n"})
    s = assess(origin, T0 + timedelta(days=5), last_verified_at=verified,
               verified_paths=["src/app.py", "docs/README.md"])
    assert s.commit_drift.count == 2  # other.txt is not attested
    assert s.commit_drift.paths == ["src/app.py", "docs/README.md"]
    assert s.commit_drift.status == "drift"
    assert s.to_hit_fields()["commit_drift_count"] == 2
    assert s.verdict == "spot_check_recommended"
    # the same memory without attested paths: every commit counts, reported but not escalated
    bare = assess(origin, T0 + timedelta(days=5), last_verified_at=verified)
    assert (bare.commit_drift.count, bare.commit_drift.paths, bare.verdict) == (3, [], "fresh")
    assert bare.to_hit_fields()["commit_drift_scope"] == "repository"


def test_without_cited_paths_every_commit_counts(repo):
    origin = origin_of(repo)
    commit(repo, T0 + timedelta(days=2), {"other.txt": "y\n"})
    s = assess(origin, T0 + timedelta(days=3), body="Deploys go out weekly.", last_verified_at=T0 + timedelta(days=1))
    assert (s.commit_drift.count, s.commit_drift.paths) == (1, [])


def test_never_verified_counts_from_the_write_commit(repo):
    origin = origin_of(repo)  # written at the initial commit
    commit(repo, T0 + timedelta(days=1), {"src/app.py": "changed\n"})
    s = assess(origin, T0 + timedelta(days=2))
    assert s.verification.status == "never"
    assert s.commit_drift.since == f"commit {origin.commit}"
    assert s.commit_drift.count == 1
    assert s.verdict == "spot_check_recommended"


def test_verifying_after_the_commits_makes_it_fresh(repo):
    origin = origin_of(repo)
    commit(repo, T0 + timedelta(days=1), {"src/app.py": "def main():\n    return 2\nPORT = 8443\n"})
    commit(repo, T0 + timedelta(days=2), {"docs/README.md": "# docs v3\n"})
    assert assess(origin, T0 + timedelta(days=3)).verdict == "spot_check_recommended"
    s = assess(origin, T0 + timedelta(days=4), last_verified_at=T0 + timedelta(days=3))
    assert (s.verdict, s.commit_drift.count) == ("fresh", 0)


def test_stale_and_drifted_requires_a_check(repo):
    origin = origin_of(repo)
    verified = T0 + timedelta(days=1)
    commit(repo, T0 + timedelta(days=10), {"src/app.py": "def main():\n    return 3\nPORT = 8443\n"})
    s = assess(origin, T0 + timedelta(days=45), last_verified_at=verified, verified_paths=["src/app.py"])
    assert s.verification.status == "stale"
    assert s.verdict == "spot_check_required"
    assert s.reasons == ["verification is stale (44.0 days) and the project moved since", "verified 44.0 days ago",
                         f"1 commit(s) since verified {verified.isoformat()} touching the attested paths"]


def test_the_reasons_name_a_never_verified_memory_its_attested_paths_gone_and_every_broken_claim(repo):
    origin = origin_of(repo)
    commit(repo, T0 + timedelta(days=2), {"docs/README.md": None, "src/app.py": "def run():\n    pass\n"})
    never = assess(origin, T0 + timedelta(days=45), written_at=T0, claims=["src/app.py::main", "src/app.py::PORT"])
    assert never.verdict == "spot_check_required"
    assert never.reasons == [
        "a declared claim or attested path no longer holds: src/app.py::main, src/app.py::PORT",
        "never verified (written 45.0 days ago)",
        f"1 commit(s) since commit {origin.commit} touching the attested paths"]
    # attested after it was already gone: no commit since touches it, yet a stale check of a path
    # that is missing is the project having moved
    late = assess(origin, T0 + timedelta(days=45), body="Docs live in docs/README.md.",
                  verified_paths=["docs/README.md"], last_verified_at=T0 + timedelta(days=3))
    assert (late.commit_drift.count, late.verification.status) == (0, "stale")
    assert late.reasons == ["a declared claim or attested path no longer holds: docs/README.md",
                            "verification is stale (42.0 days) and the project moved since",
                            "verified 42.0 days ago", "attested path(s) missing: docs/README.md"]


def test_stale_with_commits_only_outside_the_attested_paths_is_recommended_not_required(repo):
    """Commits elsewhere in the repository (no attested path) are reported, never escalated: even a
    stale verification only recommends a check."""
    origin = origin_of(repo)
    commit(repo, T0 + timedelta(days=10), {"other.txt": "moved on\n"})
    s = assess(origin, T0 + timedelta(days=45), last_verified_at=T0 + timedelta(days=1))
    assert (s.verification.status, s.commit_drift.count, s.commit_drift.anchored) == ("stale", 1, False)
    assert (s.verdict, s.reasons) == ("spot_check_recommended", ["verified 44.0 days ago"])


def test_stale_without_drift_is_only_recommended(repo):
    s = assess(origin_of(repo), T0 + timedelta(days=45), last_verified_at=T0 + timedelta(days=1))
    assert (s.verification.status, s.commit_drift.count, s.verdict) == ("stale", 0, "spot_check_recommended")


def test_a_broken_claim_is_claim_anchored_and_required(repo):
    origin = origin_of(repo)
    commit(repo, T0 + timedelta(days=2), {"src/app.py": "def run():\n    pass\nPORT = 9000\n"})
    s = assess(
        origin,
        T0 + timedelta(days=3),
        body="Start the server with main().",
        claims=["src/app.py::main", "src/app.py::PORT=8443", "docs/README.md"],
        last_verified_at=T0 + timedelta(days=1),
    )
    fields = s.to_hit_fields()
    assert fields["claim_anchored_missing"] == ["src/app.py::main", "src/app.py::PORT=8443"]
    assert fields["path_drift_missing"] == 0  # the file is still there; its bindings are not
    assert [r.status for r in s.path_drift.claims] == ["missing_symbol", "wrong_value", "ok"]
    assert s.verdict == "spot_check_required"


def test_stored_claims_and_paths_that_no_longer_parse_are_skipped_not_raised(repo):
    s = assess(
        origin_of(repo),
        T0 + timedelta(days=2),
        claims=["../escape.py", "src/app.py::main"],
        verified_paths=["/abs/path.py", "src/app.py"],
        last_verified_at=T0 + timedelta(days=1),
    )
    assert [r.claim for r in s.path_drift.claims] == ["src/app.py::main"]
    assert s.path_drift.verified == ["src/app.py"] and s.verdict == "fresh"  # the ones after it still count


def test_missing_attested_path_is_required_and_expected_absent_is_not_missing(repo):
    origin = origin_of(repo)
    commit(repo, T0 + timedelta(days=2), {"docs/README.md": None})
    s = assess(
        origin,
        T0 + timedelta(days=3),
        body="Docs live in docs/README.md; the Windows build uses win/setup.ps1.",
        verified_paths=["docs/README.md"],
        verified_absent_paths=["win/setup.ps1"],
        last_verified_at=T0 + timedelta(days=1),
    )
    assert s.path_drift.missing == ["docs/README.md"]
    assert s.path_drift.expected_absent == ["win/setup.ps1"]
    assert s.to_hit_fields()["claim_anchored_missing"] == ["docs/README.md"]
    assert s.verdict == "spot_check_required"
    assert s.reasons == ["a declared claim or attested path no longer holds: docs/README.md",
                         "1 commit(s) since verified 2026-01-02T12:00:00+00:00 touching the attested paths",
                         "attested path(s) missing: docs/README.md"]
    stale = assess(origin, T0 + timedelta(days=45), body="Docs live in docs/README.md.",
                   verified_paths=["docs/README.md"], last_verified_at=T0 + timedelta(days=1))
    assert stale.reasons[:2] == ["a declared claim or attested path no longer holds: docs/README.md",
                                 "verification is stale (44.0 days) and the project moved since"]


def test_deleted_repository_is_unmeasured_not_zero(repo):
    origin = origin_of(repo)
    shutil.rmtree(repo)
    s = assess(origin, T0 + timedelta(days=2), last_verified_at=T0 + timedelta(days=1))
    fields = s.to_hit_fields()
    assert fields["path_drift_missing"] is None and fields["path_drift_status"] == "unmeasured"
    assert "no longer exists" in fields["path_drift_reason"]
    assert fields["commit_drift_count"] is None and fields["commit_drift_status"] == "unmeasured"
    assert "no longer exists" in fields["commit_drift_reason"]
    assert s.verdict == "fresh"  # what could not be measured does not escalate


def test_a_directory_that_stopped_being_a_repository_is_unmeasured(repo):
    origin = origin_of(repo)
    shutil.rmtree(repo / ".git")
    s = assess(origin, T0 + timedelta(days=2), last_verified_at=T0 + timedelta(days=1))
    assert (s.commit_drift.status, s.commit_drift.count) == ("unmeasured", None)
    assert "no longer a git repository" in s.commit_drift.reason
    assert s.path_drift.status == "measured"  # the files are still there to check


def test_git_missing_is_unmeasured(repo, tmp_path, monkeypatch):
    origin = origin_of(repo)
    monkeypatch.setenv("PATH", str(tmp_path / "no-binaries-here"))
    s = assess(origin, T0 + timedelta(days=2), last_verified_at=T0 + timedelta(days=1))
    assert (s.commit_drift.status, s.commit_drift.reason) == ("unmeasured", "git is not installed")
    assert s.path_drift.missing_count == 0


def test_no_origin_has_no_commit_drift_and_cannot_check_paths():
    s = assess_staleness(body=BODY, origin=None, now=T0, last_verified_at=T0)
    fields = s.to_hit_fields()
    assert s.commit_drift.status == "not_applicable" and "commit_drift_count" not in fields
    assert fields["path_drift_status"] == "unmeasured"
    plain = assess_staleness(body="Tabs are four spaces wide.", origin=None, now=T0, last_verified_at=T0)
    assert plain.to_hit_fields() == {
        "staleness_verdict": "fresh",
        "verification": {"status": "fresh", "last_verified_at": "2026-01-01T12:00:00.000000Z"},
        "path_drift_missing": 0,
    }


def test_a_rebased_away_write_commit_falls_back_to_the_write_time(repo):
    gone = Origin(repo=str(repo), worktree=str(repo), commit="0" * 40)
    commit(repo, T0 + timedelta(days=2), {"src/app.py": "changed\n"})
    s = assess(gone, T0 + timedelta(days=3), written_at=T0 + timedelta(days=1))
    assert s.commit_drift.count == 1 and s.commit_drift.since.startswith("written ")
    assert assess(gone, T0 + timedelta(days=3)).commit_drift.status == "unmeasured"


def test_a_removed_linked_worktree_still_measures_commits_in_the_main_repository(repo, tmp_path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt))
    origin = Origin(repo=str(repo), worktree=str(wt), commit=git(repo, "rev-parse", "HEAD"))
    commit(repo, T0 + timedelta(days=2), {"src/app.py": "changed\n"})
    shutil.rmtree(wt)
    s = assess(origin, T0 + timedelta(days=3), last_verified_at=T0 + timedelta(days=1))
    assert s.path_drift.status == "unmeasured"
    assert s.commit_drift.count == 1


def test_repository_without_commits_has_zero_drift(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    s = assess_commit_drift(Origin(repo=str(empty), worktree=str(empty)), [], None, written_at=T0)
    assert (s.status, s.count) == ("clean", 0)


def test_the_cache_answers_repeated_questions_within_one_call(repo):
    """One search shares a cache, so a second hit from the same repository costs no git call:
    proven by a commit made in between that the cached answer does not see."""
    origin = origin_of(repo)
    cache = DriftCache()
    verified = T0 + timedelta(days=1)
    first = assess(origin, T0 + timedelta(days=3), last_verified_at=verified, cache=cache)
    commit(repo, T0 + timedelta(days=2), {"src/app.py": "changed\n"})
    cached = assess(origin, T0 + timedelta(days=3), last_verified_at=verified, cache=cache)
    fresh_call = assess(origin, T0 + timedelta(days=3), last_verified_at=verified)
    assert (first.commit_drift.count, cached.commit_drift.count, fresh_call.commit_drift.count) == (0, 0, 1)
