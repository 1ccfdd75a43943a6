"""Claims gate: a memory that declares checkable claims about its repository must be right now.

Claims (``path``, ``path:N-M``, ``path::symbol``, ``path::NAME=literal``; see memory/claims.py)
are checked against the writer's worktree at write time. A false claim would be recorded as a fact
that was never true, so it refuses the write; so does a claim written from outside any git
worktree, where there is nothing to check it against. There is no override: drop or fix the claim.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kenning.memory.claims import UNCHECKED, ParsedClaim, check_claims
from kenning.memory.gates import GateRefusal

GATE = "claims"


def check(claims: Iterable[ParsedClaim], worktree: str | None) -> GateRefusal | None:
    """Refuse when any claim does not hold in worktree (or there is no worktree to check)."""
    claims = list(claims)
    if not claims:
        return None
    if worktree is None or not Path(worktree).is_dir():
        return GateRefusal(
            gate=GATE,
            status="claims_uncheckable",
            reason="claims are checked against a git worktree, and this write comes from outside any",
            hint="Write from inside the repository the claims are about, or leave the claims out.",
            matched=[str(c) for c in claims],
        )
    failed = [r for r in check_claims(claims, worktree) if not r.ok]
    if not failed:
        return None
    if all(r.status in UNCHECKED for r in failed):  # not shown false: calling them false sends a true claim to be "fixed"
        return GateRefusal(
            gate=GATE,
            status="claims_uncheckable",
            reason="claim(s) cannot be checked in " + worktree + ": " + "; ".join(f"{r.claim} ({r.detail})"
                                                                             for r in failed),
            hint="Declare claims about files kenning can read (within their first 4 MiB), or leave these out.",
            matched=[r.claim for r in failed],
        )
    return GateRefusal(
        gate=GATE,
        status="claim_false",
        reason="claim(s) do not hold in " + worktree + ": " + "; ".join(f"{r.claim} ({r.detail})" for r in failed),
        hint="Correct the claim or the memory text so they match the code as it is now, then write again.",
        matched=[r.claim for r in failed],
    )
