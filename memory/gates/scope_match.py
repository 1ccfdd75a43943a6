"""Scope-mismatch gate: a memory filed under another project's scope is lost to this one.

A write names its project with a scope such as ``projects:<name>`` (also ``project:`` or
``repo:``). When the write comes from inside a git repository and every project scope it names is
a different project (not the repository or worktree directory, not a directory in it up to two
levels down), the memory would be tagged for one project while recorded as written from
another; that is almost always a slip (a copied scope list, the wrong project), so it is refused
with the current project's name. Scopes that name no project, writes from outside git, and a list
that includes the current project pass. ``acknowledge_scope_mismatch=True`` (or ``force=True``)
writes it anyway, for a fact learned here about another project.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from kenning.memory.gates import GateRefusal

GATE = "scope_match"
STATUS = "scope_mismatch"
OVERRIDE = "acknowledge_scope_mismatch"
_PROJECT_SCOPE = re.compile(r"^(?:projects?|repo|repos|repository):(.+)$", re.I)


def _norm(name: str) -> str:
    """A name's letters and digits, casefolded: punctuation and case do not matter. Of any script
    (NFKC, so a decomposed "café" is the composed one): an ASCII-only filter left nothing of
    "東京" or "проект", so a repository named so refused its own default scope."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", name).casefold() if ch.isalnum())


def project_names(scopes: Iterable[str]) -> list[str]:
    """The project names the scopes point at (``projects:kenning`` -> ``kenning``), in order."""
    return [m.group(1).strip() for s in scopes if (m := _PROJECT_SCOPE.match(s.strip()))]


def _matches(name: str, repo: str, worktree: str | None) -> bool:
    """The scope names this checkout: its repository or worktree directory ("kenning" matches
    "kenning-main"), or a directory in it up to two levels down (a monorepo's services/billing)."""
    leaf = name.split("/")[-1].strip()
    wanted = _norm(leaf)
    if not wanted:
        return False
    for root in {p for p in (repo, worktree) if p}:
        here = _norm(Path(root).name)
        if wanted == here or (min(len(wanted), len(here)) >= 3 and (wanted in here or here in wanted)):
            return True
        try:
            top = [d for d in Path(root).iterdir() if d.is_dir() and not d.name.startswith(".")]
        except OSError:
            continue
        if any(_norm(d.name) == wanted or (d / leaf).is_dir() for d in top):
            return True
    return False


def check(scopes: Iterable[str], repo: str | None, worktree: str | None,
          acknowledge: bool = False) -> GateRefusal | None:
    """Refuse project scopes that all name another project than the repository written from."""
    if acknowledge or repo is None:
        return None
    named = project_names(scopes)
    if not named:
        return None
    if any(_matches(name, repo, worktree) for name in named):
        return None
    current = Path(repo).name
    return GateRefusal(
        gate=GATE,
        status=STATUS,
        reason=f"the scopes name project(s) {', '.join(named)} but this write comes from the {current!r} repository",
        hint=(f"Use scope projects:{current} if the fact is about this project. If it really is about "
              f"{named[0]}, pass acknowledge_scope_mismatch=True (or force=True)."),
        matched=[f"projects:{n}" for n in named],
        override=OVERRIDE,
    )
