"""Origin detection against real repositories made in tmp_path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kenning.memory.origin import Origin, detect_origin, run_git


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(path: Path, commit: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.invalid")
    if commit:
        (path / "README.md").write_text("hello\n")
        git(path, "add", "README.md")
        git(path, "commit", "-q", "-m", "init")
    return path


@pytest.fixture(autouse=True)
def no_enclosing_repo(tmp_path, monkeypatch):
    """Stop git's upward search at tmp_path, so 'outside a repository' really is outside one."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def test_main_checkout_from_a_subdirectory(tmp_path):
    repo = make_repo(tmp_path / "repo")
    (repo / "src" / "pkg").mkdir(parents=True)
    origin = detect_origin(repo / "src" / "pkg")
    root = os.path.realpath(repo)
    assert origin == Origin(repo=root, worktree=root, commit=git(repo, "rev-parse", "HEAD"))


def test_linked_worktree_reports_the_main_repository(tmp_path):
    repo = make_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "wt"))
    (tmp_path / "wt" / "feature.txt").write_text("x\n")
    git(tmp_path / "wt", "add", "feature.txt")
    git(tmp_path / "wt", "commit", "-q", "-m", "feature")
    origin = detect_origin(tmp_path / "wt")
    assert origin.repo == os.path.realpath(repo)
    assert origin.worktree == os.path.realpath(tmp_path / "wt")
    assert origin.commit == git(tmp_path / "wt", "rev-parse", "HEAD") != git(repo, "rev-parse", "HEAD")


def test_repository_without_commits_has_no_commit(tmp_path):
    repo = make_repo(tmp_path / "empty", commit=False)
    root = os.path.realpath(repo)
    assert detect_origin(repo) == Origin(repo=root, worktree=root, commit=None)


def test_outside_a_repository_is_none(tmp_path):
    (tmp_path / "plain").mkdir()
    assert detect_origin(tmp_path / "plain") is None


def test_inside_the_git_directory_is_none(tmp_path):
    repo = make_repo(tmp_path / "repo")
    assert detect_origin(repo / ".git") is None


def test_missing_directory_is_none(tmp_path):
    assert detect_origin(tmp_path / "does-not-exist") is None


def test_git_not_installed_is_none(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("PATH", str(tmp_path / "no-binaries-here"))
    assert run_git(["--version"], repo) is None
    assert detect_origin(repo) is None


def test_default_is_the_process_directory(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    assert detect_origin().worktree == os.path.realpath(repo)


def test_a_hook_environment_does_not_redirect_detection(tmp_path, monkeypatch):
    """Git hooks export GIT_DIR; detection must still read the directory it was given."""
    repo = make_repo(tmp_path / "repo")
    other = make_repo(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert detect_origin(repo).repo == os.path.realpath(repo)


def test_later_calls_follow_head_without_git(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "r")
    first = detect_origin(repo)
    (repo / "more.txt").write_text("x")
    git(repo, "add", "more.txt")
    git(repo, "commit", "-qm", "more")
    head = git(repo, "rev-parse", "HEAD").strip()
    import kenning.memory.origin as origin_module

    calls = []
    real = origin_module.run_git
    monkeypatch.setattr(origin_module, "run_git", lambda *a, **k: (calls.append(a), real(*a, **k))[1])
    assert detect_origin(repo).commit == head != first.commit
    git(repo, "pack-refs", "--all")
    assert detect_origin(repo).commit == head
    git(repo, "checkout", "-q", "--detach", first.commit)
    assert detect_origin(repo).commit == first.commit
    assert calls == []
    import shutil

    shutil.rmtree(repo / ".git")
    assert detect_origin(repo) is None
