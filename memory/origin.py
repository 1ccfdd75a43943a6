"""Where a write comes from: the git repository, worktree and commit of the caller's directory.

Origin is what auto-scoping and drift checks key on, so it must be cheap and must never fail a
write: outside a repository, without git, or on any git error it is simply None. One
``git rev-parse`` answers everything in the common case; a second runs only to tell an unborn
HEAD (a repository without commits) from no repository at all. Outside any repository (no
``.git`` and no git directory in the directory or above it) git is not asked: a search from such a
directory forked two git processes for nothing.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kenning.store.location import current_folder

if TYPE_CHECKING:
    import subprocess

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
    import subprocess  # here: a process that never runs git (a search outside a repository) skips its import

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


# cwd -> (worktree, git dir, common dir) of repositories seen by this process: the layout of a
# checkout does not change under a running process, so only HEAD is read again on later writes.
_layouts: dict[str, tuple[str, str, str]] = {}
# cwd -> when it was last found outside any repository; asked again after NEGATIVE_TTL_SECONDS
_outside: dict[str, float] = {}
NEGATIVE_TTL_SECONDS = 2.0
_SHA_CHARS = frozenset("0123456789abcdef")


def detect_origin(cwd: str | os.PathLike[str] | None = None) -> Origin | None:
    """The origin of cwd (default: the process's directory), or None outside a repository. Never raises,
    but for a process's directory that was deleted under it (KenningError, store.location.current_folder).

    The first call for a directory asks git; later calls read HEAD from the git directory's files
    (microseconds instead of a ~7 ms subprocess per write), falling back to git when the refs are
    in a form they cannot read (a reftable, a ref that is neither loose nor packed).
    """
    base = Path(cwd) if cwd is not None else current_folder()
    layout = _layouts.get(str(base))
    if layout is not None:
        worktree, git_dir, common_dir = layout
        commit = _read_head(git_dir, common_dir)
        if commit is not None:
            return Origin(repo=_repo_root(worktree, git_dir, common_dir), worktree=worktree, commit=commit)
    elif time.monotonic() - _outside.get(str(base), -NEGATIVE_TTL_SECONDS) < NEGATIVE_TTL_SECONDS:
        return None
    found = _detect_with_git(base)
    if found is not None:
        origin, layout = found
        _layouts[str(base)] = layout
        _outside.pop(str(base), None)
        return origin
    _layouts.pop(str(base), None)
    _outside[str(base)] = time.monotonic()
    return None


def _read_head(git_dir: str, common_dir: str) -> str | None:
    """HEAD's commit from the ref files, or None when that cannot be read without git.

    Plain ``os`` calls on path strings: a write reads HEAD every time, and pathlib's objects cost
    several times the few system calls this needs."""
    try:
        if os.path.exists(os.path.join(common_dir, "reftable")):
            return None
        head = _read_text(os.path.join(git_dir, "HEAD"))
        if not head.startswith("ref: "):
            return head if len(head) == 40 and set(head) <= _SHA_CHARS else None
        ref = head[5:]
        for root in (git_dir, common_dir):
            try:
                sha = _read_text(os.path.join(root, ref))
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                continue  # not a loose ref here (a directory is not one either)
            return sha if len(sha) == 40 and set(sha) <= _SHA_CHARS else None
        packed = os.path.join(common_dir, "packed-refs")
        if os.path.isfile(packed):
            for line in _read_text(packed).splitlines():
                sha, _, name = line.partition(" ")
                if name == ref and len(sha) == 40:
                    return sha
    except (OSError, ValueError):  # unreadable, or not UTF-8: git answers instead
        return None
    return None


def _read_text(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode().strip()


def _may_be_in_repository(base: Path) -> bool:
    """False only when git's own discovery cannot find a repository from base: neither base nor a
    parent holds a ``.git`` entry (directory or gitfile) or is itself a git directory (HEAD and
    objects/, a bare repository or a separate git dir). run_git hides GIT_DIR and its kin, so
    nothing else can point git elsewhere."""
    for folder in (base, *base.parents):
        if os.path.lexists(folder / ".git") or (
                os.path.isfile(folder / "HEAD") and os.path.isdir(folder / "objects")):
            return True
    return False


def _detect_with_git(base: Path) -> tuple[Origin, tuple[str, str, str]] | None:
    if not _may_be_in_repository(base):
        return None
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
    origin = Origin(repo=_repo_root(worktree, git_dir, common_dir), worktree=worktree, commit=commit)
    return origin, (worktree, git_dir, common_dir)


@functools.lru_cache(maxsize=64)  # a pure function of the layout, asked on every write
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


def holds_any_commit(worktree: str, commits: list[str]) -> bool:
    """Whether the checkout at worktree has at least one of these commits: the test that a folder a
    moved checkout's memories are given (``scoping.rehome``) is the same repository. One ``git
    rev-parse`` per commit, stopping at the first found; False when git cannot run there."""
    for commit in commits:
        done = run_git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], worktree)
        if done is None:
            return False
        if done.returncode == 0:
            return True
    return False
