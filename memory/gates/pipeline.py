"""The write gates in order, against the store as it is now: the first refusal wins.

Order: limits (shape of the request: size, scope count, control characters; a caller mistake,
raised as InvalidInput before anything else so no gate runs on a malformed request) ->
credentials -> durability -> user claims -> declared claims -> duplicates. The content gates
are pure text checks; the claims gate reads the worktree; the duplicates gate compares the body
with its BM25 neighbours among live memories (top 20, found through the same lexical index
search uses) and with the most recent tombstones. A refusal writes nothing.
"""

from __future__ import annotations

from kenning.memory.claims import ParsedClaim
from kenning.retrieval import bm25
from kenning.retrieval.text import query_terms
from kenning.store.db import Database
from kenning.store.lexicon import Lexicon
from kenning.store.models import StoreConfig, WriteResult

from . import GateRefusal, claims as claims_gate, duplicates, run_content_gates

DUPLICATE_CANDIDATES = 20
PROBE_TERMS = 256  # a long body probes with its first distinct terms; a near duplicate shares most of them
# ... and of those only the rarest: a text overlapping >= 40 % with the new one shares its rare
# terms, and skipping the long posting lists of common words keeps a write cheap at 100k memories
RAREST_PROBE_TERMS = 8
TOMBSTONES_COMPARED = 1000  # the most recently removed


def refused(refusal: GateRefusal) -> WriteResult:
    return WriteResult(status="refused", gate=refusal.gate, code=refusal.status, reason=refusal.reason,
                       hint=refusal.hint, matched=refusal.matched, override=refusal.override)


def run(
    db: Database,
    lexicon: Lexicon,
    config: StoreConfig,
    content: str,
    category: str,
    claims: list[ParsedClaim],
    worktree: str | None,
    acknowledge_transient: bool = False,
    acknowledge_user_claim: bool = False,
) -> WriteResult | list[str]:
    """A refusal (refused / duplicate / previously_removed), or the ids of related live memories."""
    refusal = run_content_gates(content, category, acknowledge_transient, acknowledge_user_claim)
    refusal = refusal or claims_gate.check(claims, worktree)
    if refusal is not None:
        return refused(refusal)
    check = duplicates.check_duplicate(content, _neighbours(db, lexicon, config, content), _tombstones(db))
    match = check.match
    if check.status == "duplicate":
        return WriteResult(
            status="duplicate", id=match.id, gate="duplicates", code="duplicate",
            reason=f"memory {match.id} already says this ({match.overlap:.0%} of their words are shared); nothing was written",
            hint=f"Rely on {match.id}, or update it (kenning update / memory_update) if the new text adds something.",
            match=match.model_dump(exclude_none=True), related=check.related_ids,
        )
    if check.status == "previously_removed":
        return WriteResult(
            status="previously_removed", gate="duplicates", code="previously_removed",
            reason=f"a memory like this ({match.id}) was removed: {match.reason}",
            hint=f"If the removal was a mistake, restore {match.id}; if the fact changed since, say how it differs.",
            match=match.model_dump(exclude_none=True), related=check.related_ids,
        )
    return check.related_ids


def _neighbours(db: Database, lexicon_store: Lexicon, config: StoreConfig, content: str) -> list[tuple[str, str]]:
    terms = list(dict.fromkeys(query_terms(content)))[:PROBE_TERMS]
    lexicon = lexicon_store.refresh()
    if len(terms) > RAREST_PROBE_TERMS:
        postings = lexicon.postings(terms)
        known = [t for t in terms if postings[t][0].size]  # a word no memory has finds nothing
        terms = sorted(known, key=lambda t: (postings[t][0].size, t))[:RAREST_PROBE_TERMS]
    keys = [key for key, _ in bm25.search(lexicon, terms, DUPLICATE_CANDIDATES, None,
                                          k1=config.bm25_k1, b=config.bm25_b)]
    if not keys:
        return []
    marks = ",".join("?" * len(keys))
    return db.read(lambda c: c.execute(
        # "+removed_at": keep SQLite on the rowid lookup; indexing removed_at scans every live row
        f"SELECT id, content FROM memories WHERE rowid IN ({marks}) AND +removed_at IS NULL", keys).fetchall())


def _tombstones(db: Database) -> list[tuple[str, str, str]]:
    return db.read(lambda c: c.execute(
        "SELECT id, content, removed_reason FROM memories WHERE removed_at IS NOT NULL "
        "ORDER BY removed_at DESC LIMIT ?", (TOMBSTONES_COMPARED,)).fetchall())
