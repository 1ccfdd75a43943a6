"""The typed shape of every tool's answer, published as its MCP output schema.

TypedDicts rather than models: an answer carries only the keys that say something (a hit without
drift has no path_drift), so the schema names each key's type while absent keys stay absent, and
a key added later reaches the client without a schema change (``extra="allow"``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, with_config
from typing_extensions import Required, TypedDict

Verdict = Literal["fresh", "spot_check_recommended", "spot_check_required"]
WriteStatus = Literal[
    "committed", "pending", "expired", "not_found", "transient_warning", "credential_warning",
    "user_claim_warning", "scope_mismatch", "ungrounded", "claim_false", "claims_uncheckable",
    "writes_disabled", "duplicate", "previously_removed",
]
_OPEN = ConfigDict(extra="allow")


@with_config(_OPEN)
class Hit(TypedDict, total=False):
    id: Required[str]
    version: str
    score: float
    relevance: Literal["high", "medium", "low"]
    matched_leg: Literal["lexical", "semantic", "both"]
    match_terms: list[str]
    feedback_terms: list[str]  # hybrid: the feedback words that found a hit holding none of the query's
    snippet: str
    scopes: list[str]
    category: str
    staleness_verdict: Verdict
    path_drift_missing: int | None  # None: unmeasured (path_drift_reason says why)
    path_drift: dict[str, Any]
    claim_anchored_missing: list[str]
    commit_drift_count: int | None  # None: unmeasured (commit_drift_reason says why)
    depends_on_resolved: list[dict[str, Any]]
    depends_on_more: int  # depends_on links the caps left out
    recent_negative_outcomes: list[dict[str, Any]]
    content: str


@with_config(_OPEN)
class SearchOut(TypedDict, total=False):
    query: Required[str]
    mode: str
    legs_run: list[str]
    degraded: dict[str, Any] | None
    pending_embeddings: int | None
    use_token: str | None  # None: a read-only store logs no search, so there is nothing to settle
    feedback_legs: list[str]  # hybrid: the legs that ran with feedback (their scores are not their mode's)
    hits: Required[list[Hit]]
    note: str


@with_config(_OPEN)
class MemoryOut(TypedDict, total=False):
    id: Required[str]
    version: str
    content: str
    summary: str
    scopes: list[str]
    category: str
    confidence: str
    source: str
    created: str
    updated: str
    last_verified_at: str | None
    verification: dict[str, Any]
    staleness_verdict: Verdict
    path_drift: dict[str, Any]
    commit_drift: dict[str, Any]
    links: list[dict[str, Any]]
    reverse_links: list[dict[str, Any]]


@with_config(_OPEN)
class ListOut(TypedDict, total=False):
    count: Required[int]
    with_bodies: bool
    memories: Required[list[dict[str, Any]]]
    next_after: str | None


@with_config(_OPEN)
class OverviewOut(TypedDict, total=False):
    current_repo: str | None
    current_cwd: str
    auto_scope: bool
    scopes: Required[dict[str, int]]
    total: Required[int]
    disabled_scopes: list[str]
    curation_pending: dict[str, int]
    curation_pending_new_since_last_session: dict[str, int] | None
    recently_removed_in_worktree: int
    proposals_pending: int
    pending_writes: list[dict[str, Any]]
    moved_checkouts: list[dict[str, Any]]


@with_config(_OPEN)
class TombstonesOut(TypedDict, total=False):
    count: Required[int]
    tombstones: Required[list[dict[str, Any]]]
    next_after: str | None


@with_config(_OPEN)
class WriteOut(TypedDict, total=False):
    status: Required[WriteStatus]
    id: str
    pending_id: str
    pending_reason: str
    pending_retained: bool
    expires: str
    gate: str
    code: str
    reason: str
    hint: str
    matched: list[str]
    override: str
    match: dict[str, Any]
    related: list[str]
    removed_matches: list[dict[str, Any]]
    claims: list[str]
    corroboration_recorded: bool
    warnings: list[str]
    curation_hint: dict[str, Any]
    promoted_from_episode_id: str
    episode_deleted: bool


@with_config(_OPEN)
class CancelOut(TypedDict, total=False):
    status: Required[Literal["cancelled", "expired", "not_found"]]
    pending_id: str
    existed: bool
    reason: str  # why not_found, when another session staged it


@with_config(_OPEN)
class Refused(TypedDict, total=False):
    """What a memory-changing tool answers when a gate stopped it, beside status = the gate's verdict
    (writes_disabled when the user turned writes off): the shape memory_write's refusals have."""
    gate: str
    reason: str
    hint: str
    matched: list[str]
    override: str | None


@with_config(_OPEN)
class UpdateOut(Refused, total=False):
    status: Required[str]  # updated, stale, or a gate's status (transient_warning, truncation_warning, ...)
    memory: dict[str, Any]
    current_version: str


@with_config(_OPEN)
class RemoveOut(Refused, total=False):
    status: Required[str]  # removed, or a gate's status (writes_disabled, credential_warning)
    id: str
    reason: str
    removed_at: str
    removed_by_session: str


@with_config(_OPEN)
class RestoreOut(Refused, total=False):
    status: Required[str]  # restored, or writes_disabled
    memory: dict[str, Any]


@with_config(_OPEN)
class VerifyOut(Refused, total=False):
    status: Required[str]  # verified, stale or writes_disabled
    id: str
    version: str
    current_version: str
    last_verified_at: str
    verified_paths: list[str]
    verified_absent_paths: list[str]
    verified_commits: list[str]
    verified_versions: list[str]
    claims: list[str]
    staleness_verdict: Verdict


@with_config(_OPEN)
class OutcomeOut(TypedDict, total=False):
    status: Required[Literal["recorded"]]
    outcome: str
    memory_ids: list[str]
    at: str


@with_config(_OPEN)
class AuditOut(TypedDict, total=False):
    verdict: Required[Literal["miss", "ok", "no_signal"]]
    hits: list[dict[str, Any]]


@with_config(_OPEN)
class ScopesOut(TypedDict, total=False):
    disabled_scopes: Required[list[str]]


@with_config(_OPEN)
class RenameOut(Refused, total=False):
    status: Required[str]  # renamed, or writes_disabled
    old: str
    new: str
    count: int


@with_config(_OPEN)
class HealthOut(TypedDict, total=False):
    total: Required[int]
    auto_scope: bool
    by_category: dict[str, int]
    tombstones: int
    pending_writes: int
    counts: dict[str, int]


@with_config(_OPEN)
class ConflictsOut(Refused, total=False):
    status: str  # listed, resolved, or writes_disabled
    count: int
    conflicts: list[dict[str, Any]]


@with_config(_OPEN)
class EpisodeWriteOut(TypedDict, total=False):
    status: Required[Literal["committed", "writes_disabled"]]
    gate: str
    reason: str
    hint: str
    matched: list[str]
    override: str | None
    id: str
    session_id: str
    created: str
    expires: str
    scopes: list[str]
    takeaway: str | None
    swarm_id: str | None
    pruned_sessions: list[str]


@with_config(_OPEN)
class HandoffOut(TypedDict, total=False):
    prior_session_id: Required[str | None]
    episodes: Required[list[dict[str, Any]]]
    note: str


@with_config(_OPEN)
class EpisodeSearchOut(TypedDict, total=False):
    count: Required[int]
    episodes: Required[list[dict[str, Any]]]


@with_config(_OPEN)
class RecallOut(TypedDict, total=False):
    query: Required[str]
    all: bool
    scope: Any
    excluded_session: str | None
    legs_run: dict[str, list[str]]  # per tier: {"memory": [...], "transcript": [...]}
    degraded: dict[str, Any] | None
    pending_embeddings: dict[str, int] | None  # per tier with a vector leg: texts it could not see yet
    hits: Required[list[dict[str, Any]]]


@with_config(_OPEN)
class ExportOut(TypedDict, total=False):
    folder: Required[str]
    written: Required[list[str]]  # files (relative to folder) whose text changed
    unchanged: list[str]
    removed: list[str]  # files of scopes that hold no memory any more
    memories: int
    lock_taken_over: dict[str, Any] | None  # {pid, host, at} of a dead process whose lock this run took over


@with_config(_OPEN)
class SyncOut(TypedDict, total=False):
    folder: Required[str]
    # each entry names the file (and line / id where there is one); refused and conflicts say why
    updated: list[dict[str, Any]]
    written: list[dict[str, Any]]
    pending: list[dict[str, Any]]  # new profile notes staged until the user confirms them (pending_id)
    withdrawn: list[dict[str, Any]]  # staged notes whose paragraph changed before confirmation (pending_id)
    repeats: list[dict[str, Any]]  # a new paragraph given twice in a file: taken in once, the copy dropped
    removed: list[dict[str, Any]]
    refused: list[dict[str, Any]]
    conflicts: list[dict[str, Any]]
    mangled: list[dict[str, Any]]
    held: list[dict[str, Any]]
    missing_files: list[str]
    files_changed: list[str]
    lock_taken_over: dict[str, Any] | None  # {pid, host, at} of a dead process whose lock this run took over


@with_config(_OPEN)
class CleanOut(TypedDict, total=False):
    dry_run: Required[bool]
    removed: Required[list[dict[str, str]]]  # {path, what}: what was (or, dry_run, would be) removed
