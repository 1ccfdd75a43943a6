"""The library's front door: ``Store`` and ``open_store``. Every method delegates to one lifecycle module:
writes.py (write, confirm, cancel, import, update), curation.py (remove, restore, verify, record_use), reads.py
(get, show, list, search, …), scoping.py, overview.py (scope overview, health), maintenance.py (check, rebuild),
settings.py; they share a Session (session.py); boundary.py turns bad input into project errors."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from kenning.store import records, search as ranking
from kenning.store.models import ImportReport, Link, Memory, SearchResult, StoreConfig, Tombstone, WriteResult, utcnow

from . import boundary, events, reads
from .lifecycle import conflicts as conflict_ops, curation, maintenance, overview, scoping, writes  # each on first use
from .origin import Origin
from .reads import MAX_LIMIT
from .session import Session, SessionState

__all__ = ["MAX_LIMIT", "Store", "open_store"]


@boundary.guard  # bad input at any entry point: a project error, never a TypeError
class Store(SessionState):
    """A memory store on disk, one session (a CLI run, a server connection); shareable between processes and threads."""

    def __init__(self, directory: str | os.PathLike | None = None, clock: Callable[[], datetime] = utcnow,
                 session_id: str | None = None, cwd: str | os.PathLike | None = None):
        self._s = Session(directory, clock, session_id, cwd)
        self._s.settings.current()  # a stored setting StoreConfig refuses fails the open, not a later call

    @property
    def config(self) -> StoreConfig:
        """The settings in force now: re-read when another process (or Store object) committed."""
        return self._s.config

    def configure(self, persist: bool = True, **changes: Any) -> StoreConfig:
        """Change settings (e.g. ``bm25_k1=1.5``); stored for every process, or with ``persist=False``
        kept to this object. An unknown name or a bad value raises InvalidInput and changes nothing."""
        return self._s.settings.change(persist, changes)

    def here(self) -> Origin | None:
        """The caller's repository, worktree and HEAD (detected once per Store; None outside git)."""
        return self._s.here()

    def write(
        self,
        content: str,
        scopes: Iterable[str] | str,
        category: str = "fact",
        confidence: str = "medium",
        source: str = "explicit-statement",
        metadata: dict | None = None,
        links: list[dict | Link] | None = None,
        claims: list[str] | None = None,
        acknowledge_transient: bool = False,
        acknowledge_user_claim: bool = False,
        acknowledge_scope_mismatch: bool = False,
        acknowledge_ungrounded: bool = False,
        force: bool = False,
        groundedness_check: bool = False,
        source_transcript: str | None = None,
    ) -> WriteResult:
        """Gate, then commit one memory (or stage it: user-inference, or require_write_confirmation).
        A malformed request raises InvalidInput / NotFound; a gate's refusal comes back as a
        WriteResult with the gate's status and writes nothing (a duplicate credits its match).
        ``groundedness_check=True`` compares every sentence with ``source_transcript``;
        ``force=True`` writes through duplicate, previously_removed and scope_mismatch."""
        return writes.write(self._s, content, scopes, category, confidence, source, metadata, links, claims,
                            acknowledge_transient, acknowledge_user_claim, acknowledge_scope_mismatch,
                            acknowledge_ungrounded, force, groundedness_check, source_transcript)

    def confirm_write(self, pending_id: str, own_session: bool = False) -> WriteResult:
        """Commit a staged write (only this session's with ``own_session``), gated again."""
        return writes.confirm_write(self._s, pending_id, own_session)

    def cancel_write(self, pending_id: str, own_session: bool = False) -> dict[str, Any]:
        """Drop a staged write (only this session's with ``own_session``): cancelled, expired or not_found."""
        return writes.cancel_write(self._s, pending_id, own_session)

    def pending_writes(self, all_sessions: bool = False) -> list[dict[str, Any]]:
        """Unexpired staged writes of this session (or of every session), oldest first."""
        return writes.pending_writes(self._s, all_sessions)

    def import_records(self, records: Iterable[dict], batch_size: int = 2000,
                       progress: Callable[[int], None] | None = None, default_scopes: list[str] | None = None,
                       labels: list[str] | None = None, embed: bool = False) -> list[str]:
        """Trusted bulk path (no gates): all validated first (one bad: none written), then committed batch by batch."""
        return writes.import_records(self._s, records, batch_size, progress, default_scopes, labels, embed)

    def import_bulk(self, records: Iterable[dict], **options: Any) -> ImportReport:
        """The trusted path, resumable: a record already stored (same id and text, or same text) is skipped."""
        return writes.import_bulk(self._s, records, **options)

    def import_checked(self, records: Iterable[dict], batch_size: int = 2000,
                       progress: Callable[[int], None] | None = None, default_scopes: list[str] | None = None,
                       labels: list[str] | None = None) -> ImportReport:
        """Import through the write gates, in batch form: each record committed, refused or skipped as a
        duplicate; importing again commits nothing new. A malformed record means nothing is written."""
        return writes.import_checked(self._s, records, batch_size, progress, default_scopes, labels)

    def update(
        self,
        id: str,
        text: str | None = None,
        scopes: Iterable[str] | None = None,
        confidence: str | None = None,
        category: str | None = None,
        links: list[dict | Link] | None = None,
        metadata: dict | None = None,
        acknowledge_transient: bool = False,
        acknowledge_user_claim: bool = False,
        acknowledge_truncation: bool = False,
        version: str | None = None,
    ) -> Memory:
        """Change fields of a live memory and bump ``updated``; a new text clears its verification and
        passes the content and truncation gates (a refusal raises GateRefused). Scopes and links are
        replaced whole. With ``version`` (from show or search) a memory changed since raises Stale."""
        return writes.update(self._s, id, text, scopes, confidence, category, links, metadata,
                             acknowledge_transient, acknowledge_user_claim, acknowledge_truncation, version)

    def remove(self, id: str, reason: str, version: str | None = None) -> Tombstone:
        """Move a memory to the tombstones with a reason; it leaves search but is never deleted. With
        ``version`` (from show or search), a memory changed since raises Stale and stays."""
        return curation.remove(self._s, id, reason, version)

    def restore(self, id: str) -> Memory:
        """Bring a tombstoned memory back into search, as it was when removed."""
        return curation.restore(self._s, id)

    def verify(
        self,
        id: str,
        note: str | None = None,
        verified_paths: Iterable[str] | None = None,
        verified_absent_paths: Iterable[str] | None = None,
        claims: Iterable[str] | None = None,
        verified_commits: Iterable[str] | None = None,
        verified_versions: Iterable[str] | None = None,
        version: str | None = None,
    ) -> dict[str, Any]:
        """Record a spot-check (``last_verified_at`` = now). Attested paths must exist in the memory's
        worktree and its claims hold there, or nothing is recorded; a list given replaces the old one.
        Commits and versions are an audit trail; with ``version``, a changed memory answers stale."""
        return curation.verify(self._s, id, note, verified_paths, verified_absent_paths, claims,
                               verified_commits, verified_versions, version)

    def record_use(
        self,
        ids: Iterable[str] | str,
        outcome: str,
        note: str | None = None,
        excerpt: str | Iterable[str | None] | None = None,
    ) -> dict[str, Any]:
        """Log what happened with memories that were shown: applied, ignored, contradicted or corrected;
        ``excerpt`` is the phrase that mattered (one, or a list parallel to ``ids``)."""
        return curation.record_use(self._s, ids, outcome, note, excerpt)

    def get(self, id: str) -> Memory:
        """The memory as stored (no event, no annotation); ``show`` is the annotated read."""
        return reads.get(self._s, id)

    def show(self, id: str) -> dict[str, Any]:
        """One memory in full with its version, trust report (verdict and reasons), links and reverse links."""
        return reads.show(self._s, id)

    def list(
        self,
        scopes: Iterable[str] | None = None,
        category: str | None = None,
        limit: int = 50,
        auto_scope: bool = True,
        record: bool = True, after: str | None = None,
    ) -> list[Memory]:
        """Live memories the caller may see (as in ``search``), newest first, by scope (any of) and category;
        ``after``: the last listed memory's ``cursor``, for the next page (nothing skipped or repeated)."""
        return reads.list_memories(self._s, scopes, category, limit, auto_scope, record, after)

    def tombstones(self, scopes: Iterable[str] | None = None, limit: int = 50,
                   after: str | None = None) -> list[Tombstone]:
        """Removed memories with their reasons, most recently removed first; ``after``: the last one's ``cursor``."""
        return reads.tombstones(self._s, scopes, limit, after)

    def count(self) -> int:
        """How many live memories the store holds."""
        return records.count_live(self._s.db)

    def search(
        self,
        query: str,
        mode: str | None = None,
        scopes: Iterable[str] | None = None,
        limit: int = 5,
        category: str | None = None,
        expand_top: bool = False,
        auto_scope: bool = True,
        since_prior_session: bool = False,
        record: bool = True,
    ) -> SearchResult:
        """Ranked, explained hits with trust annotations. ``limit`` is 1-50; filters apply before ranking.
        ``auto_scope``: only memories from the caller's repository and worktree, plus global ones.
        ``since_prior_session``: only memories updated after the latest event of another session.
        ``expand_top`` inlines a clear top hit's body; ``record=False`` leaves the event log alone."""
        return reads.search(self._s, query, mode, scopes, limit, category, expand_top, auto_scope,
                            since_prior_session, record)

    def rank(
        self,
        query: str,
        mode: str | None = None,
        depth: int = 100,
        scopes: Iterable[str] | None = None, category: str | None = None,
        explain: bool = True,  # False: rank-only ids and scores (a Ranking), what eval times
    ) -> SearchResult | ranking.Ranking:
        """Pure ranking for evaluation (e.g. Recall@100): no cap, no auto_scope, no annotation, no event."""
        return reads.rank(self._s, query, mode, depth, scopes, category, explain)

    def disable_scope(self, scope: str) -> list[str]:
        """Hide a scope from this session's searches, lists and counts; returns the disabled scopes."""
        return scoping.disable(self._s, scope)

    def enable_scope(self, scope: str) -> list[str]:
        """Show a disabled scope again; returns the scopes still disabled."""
        return scoping.enable(self._s, scope)

    def rename_scope(self, old: str, new: str) -> int:
        """Relabel a scope on every memory and tombstone carrying it; returns how many changed."""
        return scoping.rename(self._s, old, new)

    def rehome(self, old: str | os.PathLike, new: str | os.PathLike | None = None,
               force: bool = False) -> dict[str, Any]:
        """Give the memories written in a checkout moved from folder ``old`` its new one (default: ours)."""
        return scoping.rehome(self._s, old, new, force)

    def scope_overview(self, auto_scope: bool = True) -> dict[str, Any]:
        """A cheap session-start picture without memory content: counts per scope, curation backlog, pending writes."""
        return overview.scope_overview(self._s, auto_scope)

    def health(self, auto_scope: bool = True, limit: int | None = None) -> dict[str, Any]:
        """The curation report: counts per bucket and ``limit`` (default 10) members of each, plus store totals."""
        return overview.health_report(self._s, auto_scope, limit)

    def conflicts(self, auto_scope: bool = True, limit: int = MAX_LIMIT) -> list[dict[str, Any]]:
        """Contradiction pairs among visible live memories (one row per pair), with both summaries."""
        return conflict_ops.conflicts(self._s, auto_scope, limit)

    def resolve_conflict(self, id: str, other_id: str, resolution: str, keep_id: str | None = None,
                         note: str | None = None) -> dict[str, Any]:
        """Settle a contradiction: ``supersede`` (``keep_id`` wins) or ``keep_both`` (an ``extends`` link, ``note``)."""
        return conflict_ops.resolve(self._s, id, other_id, resolution, keep_id, note)

    def stats(self) -> dict[str, Any]:
        """What `kenning info` reports: schema version, counts and size, without memory text or an event."""
        return overview.stats(self._s)

    def check(self) -> dict[str, Any]:
        """Verify the database and all derived data without changing anything: {ok, store, problems}."""
        return maintenance.check(self._s)

    def rebuild(self, what: str = "all", progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
        """Rebuild ``lexical``, ``vectors`` or ``all`` from the memories; ``progress(stage, done, total)``."""
        return maintenance.rebuild(self._s, what, progress)

    def settle_uses(self) -> int:
        """End of turn: open use_tokens settle (hits without an outcome become applied, auto); returns how many."""
        return curation.settle_uses(self._s)

    def log_event(self, kind: str, memory_id: str | None = None, payload: dict[str, Any] | None = None) -> None:
        """Append one event for this session (other modules log their own kinds: the audit, episodes)."""
        self._s.log(kind, *events.from_caller(memory_id, payload))

    def events(self, session: str | None = None, since: datetime | str | None = None,
               kinds: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Logged events, oldest first: {at, session, kind, memory_id, payload}."""
        return events.query(self._s.db, session=session, since=since, kinds=kinds)

    def close(self) -> None:
        """Save the vector index, close the database; closing again does nothing, other calls raise InvalidInput."""
        self._closed = True  # first: a later call, or one racing the close, says so (boundary.py), not sqlite3
        self._s.close()  # saves the vector index, closes the database

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(path: str | os.PathLike | None = None, *, clock: Callable[[], datetime] = utcnow,
               session_id: str | None = None, cwd: str | os.PathLike | None = None, **unknown: Any) -> Store:
    """Open (creating if needed) the store at ``path``: a folder, a ``postgresql://`` URL, or None for the first set of
    $KENNING_URL, $KENNING_HOME, ./.kenning, the user data folder. ``cwd``'s git repository scopes writes."""
    if unknown:  # a misspelt keyword is named, not a TypeError
        raise boundary.InvalidInput(f"open_store() takes path, clock, session_id and cwd, not {next(iter(unknown))!r}")
    return Store(path, clock=clock, session_id=session_id, cwd=cwd)
