"""The write gates in order, against the store as it is now: the first refusal wins.

Order: limits (shape of the request: size, scope count, control characters; a caller mistake,
raised as InvalidInput before anything else so no gate runs on a malformed request) ->
credentials -> durability -> user claims -> scope match -> declared claims -> groundedness
(opt-in) -> duplicates. The content gates are pure text checks; scope match compares project
scopes with the repository written from; the claims gate reads the worktree; groundedness compares
each sentence with a source transcript; the duplicates gate compares the body with its BM25
neighbours among live memories (top 20, found through the same lexical index search uses) and
with the most recent tombstones. A refusal writes nothing.

``force=True`` overrides what only warns of a likely mistake in the store's terms (duplicate,
previously_removed, scope_mismatch); it never overrides credentials, durability, user claims or
claims, which each have their own acknowledgement or none.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import sqlite3
import weakref
from dataclasses import dataclass, field

from kenning.memory.claims import ParsedClaim
from kenning.retrieval import bm25
from kenning.retrieval.text import query_terms, tokens_and_terms
from kenning.store.db import Database
from kenning.store.lexicon import Lexicon
from kenning.store.models import StoreConfig, WriteResult
from kenning.store.records import stored_terms

from . import GateRefusal, claims as claims_gate, duplicates, groundedness, run_content_gates, scope_match

DUPLICATE_CANDIDATES = 20
PROBE_TERMS = 256  # a long body probes with its first distinct terms; a near duplicate shares most of them
# ... and of those only the rarest: a text overlapping >= 40 % with the new one shares its rare
# terms, and skipping the long posting lists of common words keeps a write cheap at 100k memories
RAREST_PROBE_TERMS = 8
TOMBSTONES_COMPARED = 1000  # the most recently removed


@dataclass(frozen=True)
class Overrides:
    """The risks a caller accepted for one write; carried over to a pending write's confirm."""

    acknowledge_transient: bool = False
    acknowledge_user_claim: bool = False
    acknowledge_scope_mismatch: bool = False
    acknowledge_ungrounded: bool = False
    force: bool = False

    @classmethod
    def from_request(cls, request: dict) -> "Overrides":
        return cls(**{name: bool(request.get(name, False)) for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Passed:
    """The gates let the write through: similar live memories and similar tombstones, to report."""

    related: list[str] = field(default_factory=list)
    removed_matches: list[dict] = field(default_factory=list)
    terms: list[str] | None = None  # the body's query_terms, as the probe found them (stored with the row)
    tokens: list[str] | None = None  # the body's token stream (what the lexical index counts)
    seen: int = 0  # the last memory rowid there was when the probe looked (``late_duplicate``)


def refused(refusal: GateRefusal) -> WriteResult:
    return WriteResult(status=refusal.status, gate=refusal.gate, code=refusal.status, reason=refusal.reason,
                       hint=refusal.hint, matched=refusal.matched, override=refusal.override,
                       claims=refusal.matched if refusal.status == groundedness.STATUS else None)


def run(
    db: Database,
    lexicon: Lexicon,
    config: StoreConfig,
    content: str,
    category: str,
    claims: list[ParsedClaim],
    worktree: str | None,
    overrides: Overrides = Overrides(),
    scopes: list[str] = (),
    repo: str | None = None,
    source_transcript: str | None = None,
    seen: int | None = None,
) -> WriteResult | Passed:
    """A refusal (a gate's status, duplicate or previously_removed), or what the write may proceed with.
    ``seen``: the store's last memory rowid, read before the caller's ``one_generation`` block first
    looked at the store (``last_rowid``); without it the probe takes a fresh look of its own."""
    refusal = (
        run_content_gates(content, category, overrides.acknowledge_transient, overrides.acknowledge_user_claim)
        or scope_match.check(scopes, repo, worktree, overrides.acknowledge_scope_mismatch or overrides.force)
        or claims_gate.check(claims, worktree)
        or groundedness.check(content, source_transcript, overrides.acknowledge_ungrounded)
    )
    if refusal is not None:
        return refused(refusal)
    # tokenized once: the probe, the overlap, the stored row and the index entry share it
    tokens, terms = tokens_and_terms(content)
    # the last rowid first, then a probe that sees every commit up to it: what the probe misses, the
    # write's transaction finds past ``seen`` (late_duplicate). A caller's one_generation block may
    # have looked at the store before another process's commit, so the rowid is read before that
    # look (``seen``), or the probe looks afresh
    with contextlib.nullcontext() if seen is not None else db.fresh_look():
        seen = last_rowid(db) if seen is None else seen
        check = duplicates.check_duplicate(content, _neighbours(db, lexicon, config, content, terms),
                                           _tombstones(db), new_terms=frozenset(terms), content_of=content_of(db))
    match = check.match
    removed = [m.model_dump(exclude_none=True) for m in check.removed]
    if check.status == "duplicate" and not overrides.force:
        return _duplicate(match, check.related_ids)
    if check.status == "previously_removed" and not overrides.force:
        return WriteResult(
            status="previously_removed", gate="duplicates", code="previously_removed",
            reason=f"a memory like this ({match.id}) was removed: {match.reason}",
            hint=(f"If the removal was a mistake, memory_restore {match.id}; if the fact changed since, say how "
                  "it differs, or pass force=True to write it anyway."),
            match=match.model_dump(exclude_none=True), related=check.related_ids, removed_matches=removed,
            override="force",
        )
    related = ([match.id] if check.status == "duplicate" else []) + check.related_ids
    return Passed(related=related, removed_matches=removed, terms=terms, tokens=tokens, seen=seen)


def late_duplicate(c: sqlite3.Connection, content: str, passed: Passed) -> WriteResult | None:
    """Inside the write's transaction (which holds the write lock): a duplicate among the memories
    committed since the gates' probe looked - another process writing the same fact at the same
    moment - or None. The gates run before the lock is taken, so without this look both writes commit."""
    # "+removed_at": the rowid range is the few rows committed since; with the column indexed
    # (memories_live_updated) SQLite walked every live memory's index entry instead (~20 ms at 100k)
    rows = c.execute("SELECT id, content, terms FROM memories WHERE rowid > ? AND +removed_at IS NULL",
                     (passed.seen,)).fetchall()
    if not rows:
        return None
    check = duplicates.check_duplicate(content, [(id_, stored_terms(terms, text)) for id_, text, terms in rows],
                                       new_terms=frozenset(passed.terms) if passed.terms is not None else None,
                                       content_of={id_: text for id_, text, _ in rows}.get)
    return _duplicate(check.match, check.related_ids + passed.related) if check.status == "duplicate" else None


def last_rowid(db: Database) -> int:
    return db.read(lambda c: c.execute("SELECT COALESCE(MAX(rowid), 0) FROM memories").fetchone()[0])


def _duplicate(match: duplicates.Match, related: list[str]) -> WriteResult:
    return WriteResult(
        status="duplicate", id=match.id, gate="duplicates", code="duplicate",
        reason=f"memory {match.id} already says this ({match.overlap:.0%} of their words are shared); nothing was written",
        hint=(f"Rely on {match.id}, or memory_update it if the new text adds something; "
              "pass force=True only if both must exist."),
        match=match.model_dump(exclude_none=True), related=list(dict.fromkeys(related)), override="force",
    )


def content_of(db: Database) -> Callable[[str], str | None]:
    """A memory's (or tombstone's) text by id, for the duplicates gate's second look at a close pair."""
    def read(id_: str) -> str | None:
        row = db.read(lambda c: c.execute("SELECT content FROM memories WHERE id = ?", (id_,)).fetchone())
        return row[0] if row else None
    return read


def _neighbours(db: Database, lexicon_store: Lexicon, config: StoreConfig, content: str,
                terms: list[str] | None = None) -> list[tuple[str, frozenset[str]]]:
    """The body's BM25 neighbours among live memories as (id, content terms); ``terms``: the body's
    ``query_terms`` when the caller has them."""
    terms = (query_terms(content) if terms is None else terms)[:PROBE_TERMS]
    lexicon = lexicon_store.refresh()
    if len(terms) > RAREST_PROBE_TERMS:
        # ranked by document frequency without reading a posting list: the cost stays the body's
        df = lexicon.doc_freqs(terms)
        known = [t for t in terms if df[t]]  # a word no memory has finds nothing
        terms = sorted(known, key=lambda t: (df[t], t))[:RAREST_PROBE_TERMS]
    keys = [key for key, _ in bm25.search_once(lexicon, terms, DUPLICATE_CANDIDATES, k1=config.bm25_k1,
                                               b=config.bm25_b)]
    if not keys:
        return []
    marks = ",".join("?" * len(keys))
    rows = db.read(lambda c: c.execute(
        # "+removed_at": keep SQLite on the rowid lookup; indexing removed_at scans every live row
        f"SELECT id, content, terms FROM memories WHERE rowid IN ({marks}) AND +removed_at IS NULL", keys).fetchall())
    return [(id_, stored_terms(terms, content)) for id_, content, terms in rows]


# Database -> ((another connection's last commit, this process's removals and restores), tombstones)
_read_tombstones: "weakref.WeakKeyDictionary[Database, tuple[tuple[int, int], list]]" = weakref.WeakKeyDictionary()
_tombstone_edits: "weakref.WeakKeyDictionary[Database, int]" = weakref.WeakKeyDictionary()


def tombstones_changed(db: Database) -> None:
    """Say that this connection removed or restored a memory (curation's remove and restore, the
    only statements that change a tombstone): the next write reads the tombstones again."""
    _tombstone_edits[db] = _tombstone_edits.get(db, 0) + 1


def _tombstones(db: Database) -> list[tuple[str, frozenset[str], str]]:
    """The most recently removed memories as (id, content terms, removal reason).

    Read again only when they may have changed: after a removal or restore through this
    connection (``tombstones_changed``), or any commit by another connection (``data_version``);
    reading a thousand rows at every write was most of a write on a store with many removals."""
    stamp = (db.data_version(), _tombstone_edits.get(db, 0))
    known = _read_tombstones.get(db)
    if known is not None and known[0] == stamp:
        return known[1]
    rows = db.read(lambda c: c.execute(
        "SELECT id, content, removed_reason, terms FROM memories WHERE removed_at IS NOT NULL "
        "ORDER BY removed_at DESC LIMIT ?", (TOMBSTONES_COMPARED,)).fetchall())
    found = [(id_, stored_terms(terms, content), reason) for id_, content, reason, terms in rows]
    _read_tombstones[db] = (stamp, found)
    return found
