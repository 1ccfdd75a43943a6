"""Where a write comes from: the git repository, worktree and commit of the caller's directory.

Origin is what auto-scoping and drift checks key on, so it must be cheap and must never fail a
write: outside a repository, without git, or on any git error it is simply None. One
``git rev-parse`` answers everything in the common case; a second runs only to tell an unborn
HEAD (a repository without commits) from no repository at all.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_SECONDS = 5.0
# Set by git hooks and some tools; they would point every call at *their* repository.
_GIT_LOCATION_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_PREFIX")


@dataclass(frozen=True)
class Origin:
    """repo: the main repository's root (shared by its linked worktrees); worktree: this checkout's
    top level; commit: HEAD at detection time, None in a repository without commits."""

    repo: str
    worktree: str
    commit: str | None = None


def run_git(args: list[str], cwd: str | os.PathLike[str]) -> subprocess.CompletedProcess[str] | None:
    """Run ``git args`` in cwd; None when git could not run at all (not installed, cwd gone, timeout)."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # read-only callers must not take the index lock
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def detect_origin(cwd: str | os.PathLike[str] | None = None) -> Origin | None:
    """The origin of cwd (default: the process's directory), or None outside a repository. Never raises."""
    base = Path(cwd if cwd is not None else os.getcwd())
    layout = ["rev-parse", "--show-toplevel", "--git-dir", "--git-common-dir"]
    done = run_git([*layout, "HEAD"], base)
    if done is None:
        return None
    if done.returncode == 0:
        lines = done.stdout.splitlines()
        commit = lines[3] if len(lines) >= 4 else None
    else:
        done = run_git(layout, base)  # unborn HEAD, or not a repository / not a work tree?
        if done is None or done.returncode != 0:
            return None
        lines, commit = done.stdout.splitlines(), None
    if len(lines) < 3:
        return None
    worktree, git_dir, common_dir = (os.path.realpath(base / line) for line in lines[:3])
    return Origin(repo=_repo_root(worktree, git_dir, common_dir), worktree=worktree, commit=commit)


def _repo_root(worktree: str, git_dir: str, common_dir: str) -> str:
    """The main checkout of a linked worktree; the worktree itself otherwise.

    In the main checkout (and in a submodule) the git dir *is* the common dir, so the worktree is
    the repository. A linked worktree's common dir is ``<main>/.git``; a bare repository's linked
    worktrees share the bare directory itself.
    """
    if git_dir == common_dir:
        return worktree
    common = Path(common_dir)
    return str(common.parent) if common.name == ".git" else str(common)
