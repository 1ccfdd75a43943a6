"""Curating memories: remove (to a tombstone) and restore, verify against the worktree, record what a use did.

Nothing is ever deleted: a removal keeps the record with its reason and only takes it out of the
indexes. Each operation is one transaction with its event.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kenning.errors import InvalidInput, NotFound, Stale
from kenning.store import records
from kenning.store.ids import looked_up, shown
from kenning.store.models import Memory, Tombstone, iso
from kenning.store.semantic import enqueue, forget

from . import events, outcomes, requests, trust
from .claims import ParsedClaim, check_claims, exists, inside, parse_claim, parse_claims
from .gates import write_enabled
from .gates.limits import has_control_chars
from .session import Session
from .staleness import VERIFIED_HEAD, DriftCache, head_of

MAX_OUTCOME_IDS = 50
OUTCOMES = ("applied", "ignored", "contradicted", "corrected")
MAX_REASON_CHARS = 2000  # a reason is shown whenever a similar fact is written again: a sentence, not a file


def remove(s: Session, id: str, reason: str, version: str | None = None) -> Tombstone:
    """Move a memory to the tombstones with a reason; it leaves search but is never deleted. With
    ``version``, only the memory as the caller saw it (Stale if it changed since, as update)."""
    from .gates.pipeline import tombstones_changed  # the write path's module: loaded here, not with curation

    if reason is not None and not isinstance(reason, str):  # remove(id, 5) was told a reason is required
        raise InvalidInput(f"reason must be text, got {type(reason).__name__}")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput("a removal reason is required, e.g. --reason 'superseded by the new deploy doc'")
    if has_control_chars(reason):
        raise InvalidInput("the removal reason contains a control character")
    if len(reason.strip()) > MAX_REASON_CHARS:
        raise InvalidInput(f"the removal reason is {len(reason.strip()):,} characters; the limit is "
                           f"{MAX_REASON_CHARS:,} (say why in a sentence or two)")
    requests.no_secret(reason, "the removal reason")
    write_enabled.require(s.config)
    with s.transaction() as c:
        rowid, memory = records.live_row(c, id)
        if version is not None and version != memory.version:
            raise Stale(memory.id, version, memory.version)
        now = max(s.clock(), memory.updated)  # a clock set back must not remove it before its last change (as update)
        c.execute("UPDATE memories SET removed_at = ?, removed_reason = ? WHERE rowid = ?", (iso(now), reason.strip(), rowid))
        tombstones_changed(s.db)
        s.lexicon.remove(c, rowid)
        forget(c, rowid)
        events.log(c, now, s.session_id, events.REMOVE, memory.id, {"reason": reason.strip()})
    return Tombstone(memory=memory, reason=reason.strip(), removed_at=now, removed_by_session=s.session_id)


def restore(s: Session, id: str) -> Memory:
    """Bring a tombstoned memory back into search, as it was when removed."""
    from .gates.pipeline import tombstones_changed

    write_enabled.require(s.config)
    with s.transaction() as c:
        id = looked_up(id)
        row = c.execute("SELECT rowid, record, removed_at FROM memories WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise NotFound(f"no memory or tombstone has id {shown(id)}")
        if row[2] is None:
            raise InvalidInput(f"memory {id} is not removed; nothing to restore")
        memory = Memory.from_record(row[1], id)
        c.execute("UPDATE memories SET removed_at = NULL, removed_reason = NULL WHERE rowid = ?", (row[0],))
        tombstones_changed(s.db)
        s.lexicon.add(c, row[0], memory.content, memory.updated.timestamp())
        enqueue(c, [row[0]])
        events.log(c, s.clock(), s.session_id, events.RESTORE, memory.id)
    s.embed_if_loaded([memory.id])
    return memory


def verify(
    s: Session,
    id: str,
    note: str | None,
    verified_paths: Iterable[str] | None,
    verified_absent_paths: Iterable[str] | None,
    claims: Iterable[str] | None,
    verified_commits: Iterable[str] | None,
    verified_versions: Iterable[str] | None,
    version: str | None,
) -> dict[str, Any]:
    """Record a spot-check: ``last_verified_at`` = now; ``updated`` and the text stay as they are.

    ``verified_commits`` and ``verified_versions`` are an audit trail only (kept on the record and
    in the event log; nothing on the read path resolves them). With ``version`` (from show or
    search), a memory changed since returns ``{status: stale, current_version}`` and records nothing.

    Attested paths must exist in the memory's worktree and every claim (given, else stored) must
    hold there, or nothing is recorded (InvalidInput says which). Each list replaces the previous
    attestation; None keeps it, [] clears it.
    """
    note = requests.note(note)
    paths = None if verified_paths is None else requests.paths(verified_paths, "verified_paths")
    absent = None if verified_absent_paths is None else requests.paths(verified_absent_paths, "verified_absent_paths")
    given = None if claims is None else parse_claims(requests.texts(claims, "claims"))
    commits = None if verified_commits is None else requests.labels(verified_commits, "verified_commits")
    versions = None if verified_versions is None else requests.labels(verified_versions, "verified_versions")
    write_enabled.require(s.config)
    now = s.clock()
    with s.transaction() as c:
        rowid, memory = records.live_row(c, id)
        if version is not None and version != memory.version:
            return {"status": "stale", "id": memory.id, "version": version, "current_version": memory.version,
                    "hint": "another agent changed this memory since you read it; nothing was recorded. "
                            "Re-read it with memory_show, re-check, and verify again with the new version."}
        to_check = given if given is not None else parse_claims(c.spec for c in memory.claims)
        _check_attestation(memory, paths or [], to_check, absent or [])
        fields = memory.model_dump()
        fields.update(last_verified_at=now, verification_note=note)
        if paths is not None:
            fields["verified_paths"] = paths
        if absent is not None:
            fields["verified_absent_paths"] = absent
        if given is not None:
            fields["claims"] = [{"spec": str(claim)} for claim in given]
        audit_trail = dict(fields.get("metadata") or {})
        for key, values in (("verified_commits", commits), ("verified_versions", versions)):
            if values is not None:
                audit_trail[key] = values
        audit_trail.pop(VERIFIED_HEAD, None)
        if head := head_of(memory.origin):  # commit drift counts from here (git dates have whole seconds)
            audit_trail[VERIFIED_HEAD] = head
        fields["metadata"] = audit_trail
        verified = requests.validated(fields)
        c.execute("UPDATE memories SET record = ? WHERE rowid = ?", (verified.model_dump_json(), rowid))
        events.log(c, now, s.session_id, events.VERIFY, verified.id,
                   {"note": note, "verified_paths": verified.verified_paths,
                    "verified_absent_paths": verified.verified_absent_paths,
                    "claims": [claim.spec for claim in verified.claims],
                    "verified_commits": verified.metadata.get("verified_commits"),
                    "verified_versions": verified.metadata.get("verified_versions")})
    assessed = trust.staleness(verified, now, s.config.verification_stale_days, DriftCache())
    return {
        "status": "verified", "id": verified.id, "version": verified.version,
        "last_verified_at": iso(now), "verification_note": note,
        "verified_paths": verified.verified_paths, "verified_absent_paths": verified.verified_absent_paths,
        "claims": [claim.spec for claim in verified.claims],
        "verified_commits": verified.metadata.get("verified_commits", []),
        "verified_versions": verified.metadata.get("verified_versions", []), **assessed.to_hit_fields(),
    }


def record_use(
    s: Session,
    ids: Iterable[str] | str,
    outcome: str,
    note: str | None,
    excerpt: str | Iterable[str | None] | None,
) -> dict[str, Any]:
    """Log what happened with memories that were shown: applied, ignored, contradicted or corrected.

    ``excerpt`` is the phrase that mattered (the claim that was wrong): one for every id, or a list
    parallel to ``ids`` with None where there is none. Negative outcomes come back on later hits as
    ``recent_negative_outcomes``.
    """
    if ids is not None and not isinstance(ids, str) and (isinstance(ids, (bytes, dict))
                                                        or not isinstance(ids, Iterable)):
        raise InvalidInput(f"ids must be a memory id or a list of them, got {type(ids).__name__}")
    ids = [ids] if isinstance(ids, str) else list(ids or [])
    if not ids or len(ids) > MAX_OUTCOME_IDS or not all(isinstance(i, str) and i.strip() for i in ids):
        raise InvalidInput(f"give 1-{MAX_OUTCOME_IDS} memory ids")
    if outcome not in OUTCOMES:
        raise InvalidInput(f"unknown outcome {outcome!r}; choose one of {', '.join(OUTCOMES)}")
    note = requests.note(note)
    excerpts = requests.excerpts(excerpt, len(ids))
    unknown = sorted(set(ids) - records.existing_ids(s.db, ids))
    if unknown:
        raise NotFound(f"no memory has id {unknown[0]!r}" + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""))
    now = s.clock()
    # an id given twice (with the same excerpt) is one use: three rows would count as three contradictions
    rows = [(mid, {k: v for k, v in {"outcome": outcome, "note": note, "excerpt": ex}.items() if v is not None})
            for mid, ex in dict.fromkeys(zip(ids, excerpts))]
    with s.transaction() as c:
        events.log_many(c, now, s.session_id, events.OUTCOME, rows)
    trust.outcomes_logged(s.db)
    return {"status": "recorded", "outcome": outcome, "memory_ids": list(dict.fromkeys(ids)), "at": iso(now)}


def settle_uses(s: Session) -> int:
    """End of turn: every open use_token of this session settles (hits without an explicit outcome
    become applied, auto); returns how many auto-applies were logged."""
    if s.db.read_only:  # nothing was logged to settle, and nothing can be
        return 0
    with s.transaction() as c:
        applied, settled_through = outcomes.settle(c, s.session_id, s.clock(), after_rowid=s.settled_through)
    s.settled_through = settled_through
    return applied


def _as_lines(path: str) -> ParsedClaim | None:
    """The lines claim a verified path reads as (src/app.py:1-3), else None."""
    try:
        claim = None if "::" in path else parse_claim(path)
    except InvalidInput:
        return None
    return claim if claim and claim.lines else None


def _check_attestation(memory: Memory, paths: list[str], claims: list[ParsedClaim], absent: list[str]) -> None:
    worktree = memory.origin.worktree if memory.origin else None
    there = [p for p in absent if worktree and exists(Path(worktree) / p)]
    if there:  # drift never looks at an absent path again: one that is here would go unwatched
        raise InvalidInput(f"verified absent path(s) exist in {worktree}: {', '.join(there)}; attest them with "
                           "verified_paths instead")
    if not paths and not claims:
        return
    if worktree is None:
        raise InvalidInput(f"memory {memory.id} was written outside any git repository, so paths and claims "
                           "cannot be checked against it; verify it without them")
    root = Path(worktree)
    if not root.is_dir():
        raise InvalidInput(f"the worktree of memory {memory.id} ({worktree}) no longer exists, so its paths and "
                           "claims cannot be checked; update or remove the memory")
    outside = [p for p in paths if not inside(root, root / p)]
    if outside:  # commit drift would watch the link, never what it points at (claims refuse it too)
        raise InvalidInput(f"verified path(s) resolve outside {worktree} through a symlink: {', '.join(outside)}; "
                           "attest the paths inside the repository")
    unreadable = [p for p in paths if exists(root / p) is None]
    if unreadable:
        raise InvalidInput(f"verified path(s) cannot be read in {worktree}: {', '.join(unreadable)}; attest only "
                           "paths you could check")
    missing = [p for p in paths if exists(root / p) is False]
    lines = [c for c in map(_as_lines, missing) if c and exists(root / c.path)]
    if lines:  # src/app.py:1-3: its file is there, the path with the range never was
        raise InvalidInput(f"verified path(s) name lines, which a path cannot: {', '.join(map(str, lines))}; attest "
                           f"the file ({', '.join(c.path for c in lines)}) or declare the lines as a claim")
    if missing:
        raise InvalidInput(f"verified path(s) missing in {worktree}: {', '.join(missing)}; attest only paths that "
                           "exist (verified_absent_paths is for paths meant to be absent), or update the memory")
    failed = [r for r in check_claims(claims, root) if not r.ok]
    if failed:
        raise InvalidInput("claim(s) do not hold: " + "; ".join(f"{r.claim} ({r.detail})" for r in failed)
                           + "; update the memory (or its claims) first, then verify")
