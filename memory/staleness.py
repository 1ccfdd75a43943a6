"""Staleness: may this memory still be trusted? Three measurements and one verdict per hit.

- **verification**: ``never`` verified, ``stale`` (verified longer ago than the window, default
  30 days) or ``fresh``. The calendar treats a never-verified memory by its age: younger than the
  window it is not yet due (a memory is not suspect the day it is written), older it is
  ``overdue`` like a stale one (recommended, but it has no past check that drift could void);
- **path drift**: the paths the memory cites (scraped from the body, declared in claims, attested
  by verify) that no longer exist in the memory's worktree, and the line ranges it cites
  (``src/app.py:500-510``) that reach past the end of their file; declared claims are re-checked
  whole (a renamed symbol or a changed value is drift too);
- **commit drift** (``commits_since_verify``): commits in the origin repository since the last
  verification (never verified: since the commit the memory was written at), restricted to the
  memory's anchored paths (attested by verify, declared in claims) when it has any. Paths scraped
  from the prose do not narrow it: scraping misfires, and verified_paths is the attestation.
  Counted both ways from that commit: a checkout of an older commit or of another branch takes
  away commits the verified code had, which moves it as much as new ones do.

A measurement that cannot be made (no origin, worktree or repository gone, git missing, a cited
file kenning may not read, a claim not in the first 4 MiB of a larger file) is ``unmeasured`` with
a reason and a ``None`` count, never a zero.

Verdict rule (``staleness_verdict``):

- ``spot_check_required`` when a declared claim no longer holds or an attested (verified) path
  is gone, or when a past verification is stale *and* something drifted (a commit or a missing
  path): what was checked then has demonstrably moved since;
- ``spot_check_recommended`` when verification is overdue (stale, or never verified and older
  than the window) or commits touched the memory's anchored paths since;
- ``fresh`` otherwise. Reported without escalating: a path scraped from the prose that is missing
  or whose cited lines are past its end (evidence, not a tier: scraping misfires, "rsyncs build/"
  names a directory that may never exist here), commits elsewhere in the repository for a memory
  with no anchored path (any commit would otherwise flag every path-less memory, ambient ones
  included), and unmeasured signals.
"""

from __future__ import annotations

import functools

import os
import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from kenning.errors import InvalidInput
from kenning.memory.claims import (
    UNCHECKED, ClaimResult, ParsedClaim, check_claims, exists, has_lines, inside, normalize_claim_path, parse_claim,
)
from kenning.memory.origin import run_git

# the calendar and the paths cited in prose (no git, no models) live in citations.py
from .citations import (  # noqa: F401
    DEFAULT_STALE_DAYS, _iso, _utc, extract_line_citations, extract_paths, verification_state,
)

Verdict = Literal["fresh", "spot_check_recommended", "spot_check_required"]


class OriginLike(Protocol):
    """Anything with the origin fields (``store.origin.Origin``, ``store.models.Origin``)."""

    repo: str
    worktree: str
    commit: str | None


# ---------------------------------------------------------------------------------------------
# Result models


class Verification(BaseModel):
    """age_days counts from the last verification, or from the write when never verified;
    overdue: the calendar says a spot-check is due (stale, or never verified and older than the window)."""

    status: Literal["never", "stale", "fresh"]
    last_verified_at: datetime | None = None
    age_days: float | None = None
    stale_after_days: int = DEFAULT_STALE_DAYS
    overdue: bool = False
    recommendation: str | None = None


class PathDrift(BaseModel):
    """checked: every cited path looked at; missing: those gone; verified: the attested paths;
    claim_anchored_missing: declared claims that no longer hold and attested paths that are gone."""

    status: Literal["measured", "unmeasured"]
    reason: str | None = None
    worktree: str | None = None
    checked: list[str] = []
    missing: list[str] = []
    verified: list[str] = []
    expected_absent: list[str] = []
    claims: list[ClaimResult] = []
    claim_anchored_missing: list[str] = []
    anchored: list[str] = []  # attested and claim-declared paths: the ones commit drift is narrowed to

    @property
    def missing_count(self) -> int | None:
        return len(self.missing) if self.status == "measured" else None


class CommitDrift(BaseModel):
    """count: commits since the baseline (``since``) touching ``paths`` (all paths when empty)."""

    status: Literal["clean", "drift", "unmeasured", "not_applicable"]
    count: int | None = None
    since: str | None = None
    anchored: bool = False  # narrowed to attested/claimed paths: only then does drift escalate the verdict
    paths: list[str] = []
    reason: str | None = None


class Staleness(BaseModel):
    verdict: Verdict
    reasons: list[str] = []
    verification: Verification
    path_drift: PathDrift
    commit_drift: CommitDrift

    def to_hit_fields(self) -> dict[str, Any]:
        """The trust fields a search hit carries; the full model is what ``show`` returns."""
        v = self.verification
        out: dict[str, Any] = {
            "staleness_verdict": self.verdict,
            "verification": {
                "status": v.status,
                "last_verified_at": _iso(v.last_verified_at),
            },
            "path_drift_missing": self.path_drift.missing_count,
        }
        pd = self.path_drift
        if pd.status == "unmeasured":
            out["path_drift_status"] = "unmeasured"
            out["path_drift_reason"] = pd.reason
        elif pd.missing:
            out["path_drift"] = {"checked": pd.checked, "missing": pd.missing, "verified": pd.verified}
        if pd.claim_anchored_missing:
            out["claim_anchored_missing"] = pd.claim_anchored_missing
        cd = self.commit_drift
        if cd.status in ("clean", "drift"):
            out["commit_drift_count"] = cd.count
            if cd.count and not cd.anchored:
                out["commit_drift_scope"] = "repository"  # no anchored path: reported, not escalated
        elif cd.status == "unmeasured":
            out["commit_drift_count"] = None
            out["commit_drift_status"] = "unmeasured"
            out["commit_drift_reason"] = cd.reason
        return out


# ---------------------------------------------------------------------------------------------
# Git, cached for one call


class DriftCache:
    """Memoised git answers for ONE call: a search annotating up to 50 hits, or a show.

    HEAD is resolved once per directory and commit counts are keyed by (directory, HEAD,
    baseline, paths), so hits from one repository cost one ``rev-parse`` plus one ``rev-list``
    per distinct baseline. Create a new cache per call: HEAD moves between calls.
    """

    def __init__(self) -> None:
        self._heads: dict[str, tuple[str | None, str | None]] = {}
        self._counts: dict[tuple[str, str, str, tuple[str, ...]], tuple[int | None, str | None]] = {}

    @functools.cached_property
    def git_available(self) -> bool:
        """Looked up on first need: a search whose hits carry no origin never walks PATH for git
        (nor imports shutil)."""
        import shutil

        return shutil.which("git") is not None

    def head(self, directory: str) -> tuple[str | None, str | None]:
        """(HEAD sha or None when unborn, None) or (None, why git could not answer)."""
        if directory not in self._heads:
            done = run_git(["rev-parse", "--verify", "-q", "HEAD"], directory)
            if done is None:
                self._heads[directory] = (None, "git could not run")
            elif done.returncode == 0:
                self._heads[directory] = (done.stdout.strip(), None)
            elif done.returncode == 1:
                self._heads[directory] = (None, None)  # repository without commits
            else:
                self._heads[directory] = (None, f"{directory} is no longer a git repository")
        return self._heads[directory]

    def count(
        self, directory: str, head: str, baseline: list[str], paths: tuple[str, ...]
    ) -> tuple[int | None, str | None]:
        """Commits selected by ``git rev-list --count <baseline> -- paths``: (count, None) or (None, why)."""
        key = (directory, head, " ".join(baseline), paths)
        if key not in self._counts:
            args = ["--literal-pathspecs", "rev-list", "--count", *baseline]
            done = run_git([*args, "--", *paths] if paths else args, directory)
            if done is None:
                self._counts[key] = (None, "git could not run")
            elif done.returncode != 0:
                self._counts[key] = (None, done.stderr.strip().splitlines()[0] if done.stderr.strip() else "git failed")
            else:
                self._counts[key] = (int(done.stdout.strip() or 0), None)
        return self._counts[key]


# ---------------------------------------------------------------------------------------------
# Assessment


def _git_date(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S +0000")


def assess_verification(
    last_verified_at: datetime | str | None,
    now: datetime,
    stale_days: int = DEFAULT_STALE_DAYS,
    written_at: datetime | str | None = None,
) -> Verification:
    """never / stale (older than stale_days) / fresh, with what to do when not fresh.

    A never-verified memory is overdue once it is older than stale_days (by written_at); without
    a write time its age is unknown, so it is taken as overdue.
    """
    verified = _utc(last_verified_at)
    if verified is None:
        written = _utc(written_at)
        age = None if written is None else max(0.0, (_utc(now) - written) / timedelta(days=1))
        overdue = age is None or age > stale_days
        advice = "spot-check one claim (a path, a value) and call verify if it holds"
        return Verification(
            status="never",
            age_days=None if age is None else round(age, 1),
            stale_after_days=stale_days,
            overdue=overdue,
            recommendation=(f"never verified and written {age:.0f} days ago: {advice}" if overdue and age is not None
                            else f"never verified: {advice}" if overdue
                            else f"never verified (written {age:.0f} days ago, due within {stale_days}): {advice}"),
        )
    # a verification dated ahead of this clock (an import from a machine whose clock runs ahead, a clock set
    # back since) is as fresh as one made now, not -0.8 days old
    age = max(0.0, (_utc(now) - verified) / timedelta(days=1))
    if age > stale_days:
        return Verification(
            status="stale",
            last_verified_at=verified,
            age_days=round(age, 1),
            stale_after_days=stale_days,
            overdue=True,
            recommendation=f"last verified {age:.0f} days ago (window {stale_days}): spot-check, then verify or update",
        )
    return Verification(status="fresh", last_verified_at=verified, age_days=round(age, 1), stale_after_days=stale_days)


def _clean_paths(paths: Iterable[str]) -> list[str]:
    out = []
    for p in paths:
        try:
            out.append(normalize_claim_path(p))
        except InvalidInput:
            continue  # stored before validation existed; nothing checkable
    return list(dict.fromkeys(out))


def _clean_claims(claims: Iterable[ParsedClaim | str]) -> list[ParsedClaim]:
    """Stored claims, parsed; one that no longer parses is skipped so a search never fails on it."""
    out = []
    for c in claims:
        try:
            out.append(parse_claim(c) if isinstance(c, str) else c)
        except InvalidInput:
            continue
    return out


def assess_path_drift(
    body: str,
    claims: Iterable[ParsedClaim | str],
    worktree: str | None,
    verified_paths: Iterable[str] = (),
    verified_absent_paths: Iterable[str] = (),
) -> PathDrift:
    """Which cited paths are gone from worktree, and which declared claims no longer hold."""
    parsed = _clean_claims(claims)
    verified = _clean_paths(verified_paths)
    absent = set(_clean_paths(verified_absent_paths))
    cited = [p for p in dict.fromkeys([*extract_paths(body), *(c.path for c in parsed), *verified]) if p not in absent]
    anchored_paths = [p for p in dict.fromkeys([*(c.path for c in parsed), *verified]) if p not in absent]
    spans = [(cite, path, last) for cite, path, last in extract_line_citations(body) if path not in absent]
    base: dict[str, Any] = {"checked": [*cited, *(cite for cite, _, _ in spans)], "verified": verified,
                            "expected_absent": sorted(absent), "anchored": anchored_paths}
    if not cited:
        return PathDrift(status="measured", worktree=worktree, **base)
    if worktree is None:
        return PathDrift(status="unmeasured", reason="no origin recorded: written outside a git repository", **base)
    root = Path(worktree)
    if exists(root) is None:
        return PathDrift(status="unmeasured", reason=f"worktree {worktree} cannot be read", worktree=worktree, **base)
    if not root.is_dir():
        return PathDrift(status="unmeasured", reason=f"worktree {worktree} no longer exists", worktree=worktree, **base)
    found = {p: exists(root / p) for p in cited}
    missing = [p for p in cited if found[p] is False]
    # a line range past the end of its file points at code that is no longer there: missing as a path is
    lines = {cite: has_lines(root / path, last) for cite, path, last in spans
             if found[path] and inside(root, root / path) and (root / path).is_file()}
    missing += [cite for cite, there in lines.items() if there is False]
    results = check_claims(parsed, root)
    anchored = [r.claim for r in results if not r.ok and r.status not in UNCHECKED] + [p for p in verified if p in missing]
    # what may not be read is neither there nor gone: unmeasured, while what was measured still counts
    unreadable = ([p for p in cited if found[p] is None] + [cite for cite, there in lines.items() if there is None]
                  + [r.claim for r in results if r.status in UNCHECKED])
    return PathDrift(
        status="unmeasured" if unreadable else "measured",
        reason=f"cannot check {', '.join(dict.fromkeys(unreadable))} in {worktree}" if unreadable else None,
        worktree=worktree,
        missing=missing,
        claims=results,
        claim_anchored_missing=list(dict.fromkeys(anchored)),
        **base,
    )


def assess_commit_drift(
    origin: OriginLike | None,
    paths: Iterable[str],
    last_verified_at: datetime | str | None,
    written_at: datetime | str | None = None,
    cache: DriftCache | None = None,
    verified_head: str | None = None,
) -> CommitDrift:
    """Commits in the origin repository since the last verification (else since the write's commit,
    else since written_at), touching paths when there are any. ``verified_head``: the repository's
    HEAD when it was verified (``head_of``): git's dates have whole seconds, so a commit made just
    before the verify, in the same second, would count as after it by date. A baseline commit is
    compared with HEAD both ways (``base...HEAD``): HEAD checked out back to an ancestor, or to
    another branch, lacks commits the verified code had, and ``base..HEAD`` counted none of them."""
    if origin is None:
        return CommitDrift(status="not_applicable", reason="no origin recorded")
    cache = cache or DriftCache()
    pathspec = tuple(paths)

    def unmeasured(reason: str | None) -> CommitDrift:
        return CommitDrift(status="unmeasured", paths=list(pathspec), reason=reason)

    if not cache.git_available:
        return unmeasured("git is not installed")
    directory = _drift_directory(origin)
    if directory is None:
        return unmeasured(f"repository {origin.repo} no longer exists")
    head, why = cache.head(directory)
    if why:
        return unmeasured(why)

    verified, written = _utc(last_verified_at), _utc(written_at)
    attempts: list[tuple[str, list[str]]] = []
    if verified is not None:
        if verified_head and _is_sha(verified_head):
            attempts.append((f"verified {verified.isoformat()}", [f"{verified_head}...HEAD"]))
        attempts.append((f"verified {verified.isoformat()}", [f"--since={_git_date(verified)}", "HEAD"]))
    else:
        if origin.commit and _is_sha(origin.commit):
            attempts.append((f"commit {origin.commit}", [f"{origin.commit}...HEAD"]))
        if written is not None:
            attempts.append((f"written {written.isoformat()}", [f"--since={_git_date(written)}", "HEAD"]))
    if not attempts:
        return unmeasured("no baseline: never verified, and no write commit or time")
    if head is None:  # no commits at all, so none since the baseline either
        return CommitDrift(status="clean", count=0, since=attempts[0][0], paths=list(pathspec), anchored=bool(pathspec))
    reason = None
    for since, baseline in attempts:  # a commit may be gone (rebased away): fall back to the date
        count, reason = cache.count(directory, head, baseline, pathspec)
        if count is not None:
            return CommitDrift(status="drift" if count else "clean", count=count, since=since, paths=list(pathspec),
                               anchored=bool(pathspec))
    return unmeasured(reason)


VERIFIED_HEAD = "verified_head"  # the metadata key memory_verify records the repository's HEAD under


def head_of(origin: OriginLike | None) -> str | None:
    """The HEAD commit of the directory commit drift is counted in for ``origin`` (None without one)."""
    if origin is None:
        return None
    directory = _drift_directory(origin)
    cache = DriftCache()
    if directory is None or not cache.git_available:
        return None
    return cache.head(directory)[0]


def _drift_directory(origin: OriginLike) -> str | None:
    """Where commit drift is counted: the origin's worktree, else its repository, whichever still exists."""
    return next((d for d in (origin.worktree, origin.repo) if d and os.path.isdir(d)), None)


def _is_sha(value: str) -> bool:
    """A commit id as git prints it: handed to git as a revision, never read as an option."""
    return re.fullmatch(r"[0-9a-fA-F]{4,64}", value) is not None


def _verdict(v: Verification, pd: PathDrift, cd: CommitDrift) -> tuple[Verdict, list[str]]:
    required, recommended = [], []
    if pd.claim_anchored_missing:
        required.append("a declared claim or attested path no longer holds: " + ", ".join(pd.claim_anchored_missing))
    # only anchored evidence escalates: attested/claimed paths, and commits narrowed to them
    anchored_missing = [p for p in pd.missing if p in pd.anchored]
    drifted = bool(cd.count and cd.anchored) or bool(anchored_missing)
    if v.status == "stale" and drifted:
        required.append(f"verification is stale ({v.age_days} days) and the project moved since")
    if v.overdue:
        recommended.append("never verified" + (f" (written {v.age_days} days ago)" if v.age_days is not None else "")
                           if v.status == "never" else f"verified {v.age_days} days ago")
    if cd.count and cd.anchored:
        recommended.append(f"{cd.count} commit(s) since {cd.since} touching the attested paths")
    if anchored_missing:
        recommended.append("attested path(s) missing: " + ", ".join(anchored_missing))
    if required:
        return "spot_check_required", required + recommended
    return ("spot_check_recommended", recommended) if recommended else ("fresh", [])


def assess_staleness(
    *,
    body: str,
    now: datetime,
    origin: OriginLike | None = None,
    claims: Iterable[ParsedClaim | str] = (),
    last_verified_at: datetime | str | None = None,
    verified_paths: Iterable[str] = (),
    verified_absent_paths: Iterable[str] = (),
    written_at: datetime | str | None = None,
    verification_stale_days: int = DEFAULT_STALE_DAYS,
    cache: DriftCache | None = None,
    verified_head: str | None = None,
) -> Staleness:
    """Every staleness signal of one memory and the verdict; pass one DriftCache per search."""
    verification = assess_verification(last_verified_at, now, verification_stale_days, written_at)
    path_drift = assess_path_drift(
        body, claims, origin.worktree if origin else None, verified_paths, verified_absent_paths
    )
    commit_drift = assess_commit_drift(origin, path_drift.anchored, last_verified_at, written_at, cache, verified_head)
    verdict, reasons = _verdict(verification, path_drift, commit_drift)
    return Staleness(
        verdict=verdict,
        reasons=reasons,
        verification=verification,
        path_drift=path_drift,
        commit_drift=commit_drift,
    )
