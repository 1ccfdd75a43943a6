"""Pydantic records at the boundary: what the library returns, the CLI prints and the tools send."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, field_validator, model_validator

from .ids import canonical

# the pydantic-free names (timestamps, modes, summary lines) live in plain.py; imported from here too
from .plain import MODES, SUMMARY_CHARS, iso, summary_line, utcnow  # noqa: F401

Category = Literal["fact", "user-inference", "ambient"]
Confidence = Literal["low", "medium", "high"]
Source = Literal["explicit-statement", "inferred"]
LinkKind = Literal["supersedes", "contradicts", "extends", "depends_on"]
Mode = Literal["keyword", "bm25", "semantic", "hybrid"]


# A timestamp field: JSON carries it as ``iso`` text. Declared on the datetime fields alone, so a
# record's other fields serialize without a Python call each (an import dumps every record once).
Instant = Annotated[datetime, PlainSerializer(iso, return_type=str, when_used="json")]


class _Record(BaseModel):
    # defer_build: a model's validator is built on its first use, not at import; a search uses a
    # handful of these models, and building all of them took most of this module's import time
    model_config = ConfigDict(extra="ignore", defer_build=True)


class Origin(_Record):
    """Where a memory was written from: repository root, worktree and HEAD at write time."""

    repo: str
    worktree: str
    commit: str | None = None


class Link(_Record):
    """A typed edge to another memory. The spec's names are accepted too: ``{type, target_id, note?}``."""

    kind: LinkKind
    target: str
    note: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _spec_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("type" in data or "target_id" in data):
            data = dict(data)
            if "type" in data:
                data.setdefault("kind", data.pop("type"))
            if "target_id" in data:
                data.setdefault("target", data.pop("target_id"))
        return data

    @field_validator("target")
    @classmethod
    def _one_spelling(cls, target: str) -> str:
        return canonical(target)  # a ULID typed in lower case names the same memory (store/ids.py)


class Claim(_Record):
    """A checkable statement about the worktree: ``path``, ``path::symbol`` or ``path::NAME=literal``."""

    spec: str


class Memory(_Record):
    id: str
    content: str
    scopes: list[str]
    category: Category = "fact"
    confidence: Confidence = "medium"
    source: Source = "explicit-statement"
    created: Instant
    updated: Instant
    last_verified_at: Instant | None = None
    verification_note: str | None = None
    verified_paths: list[str] = Field(default_factory=list)
    verified_absent_paths: list[str] = Field(default_factory=list)
    origin: Origin | None = None
    claims: list[Claim] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_record(cls, record: str | bytes, id: str | None = None) -> "Memory":
        """A stored row's ``record`` as a memory. A record changed behind kenning's back (not JSON,
        or not a memory) is a StorageError naming the row, not the caller's bad argument."""
        try:
            return cls.model_validate_json(record)
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            from kenning.errors import StorageError

            why = str(exc).splitlines()[0][:160]
            name = f"memory {id}" if id else "a memory"
            raise StorageError(f"the stored record of {name} is damaged ({type(exc).__name__}: {why}); check "
                               "names every damaged row: rewrite that record as a memory's JSON or restore the "
                               "store from a backup") from None

    @property
    def summary(self) -> str:
        """The first line of the body, cut to one short line: what a listing or a link shows."""
        return summary_line(self.content)

    @property
    def version(self) -> str:
        """A token that changes with any change to the stored record (body, scopes, links, verification):
        update and verify compare it to refuse a write based on a stale read (optimistic concurrency)."""
        return hashlib.sha256(self.model_dump_json().encode("utf-8")).hexdigest()[:16]

    @property
    def cursor(self) -> str:
        """Where the memory stands in ``list``'s order (newest update first): ``list(after=cursor)``
        goes on past it, whatever was written, changed or removed since (an offset would skip or repeat)."""
        return f"{iso(self.updated)} {self.id}"

    def listing(self, with_body: bool = False) -> dict[str, Any]:
        """A one-line row for triage (id, scopes, category, summary, updated); the body only on request."""
        row = {"id": self.id, "scopes": self.scopes, "category": self.category, "summary": self.summary,
               "updated": iso(self.updated)}
        if with_body:
            row["content"] = self.content
        return row


class Tombstone(_Record):
    """A removed memory, kept whole with why, when and by which session, so it can be restored."""

    memory: Memory
    reason: str
    removed_at: Instant
    removed_by_session: str | None = None

    @property
    def cursor(self) -> str:
        """Where it stands in ``tombstones``' order (most recently removed first): ``tombstones(after=cursor)``
        goes on past it, as ``Memory.cursor`` does for ``list``."""
        return f"{iso(self.removed_at)} {self.memory.id}"


class LegScore(_Record):
    rank: int
    score: float


class Explained(_Record):
    """What every ranked hit says about why it matched (a memory's and a transcript message's alike)."""

    id: str
    score: float
    matched_leg: Literal["lexical", "semantic", "both"]
    relevance: Literal["high", "medium", "low"]
    match_terms: list[str]
    legs: dict[str, LegScore]
    snippet: str


class Hit(Explained):
    scopes: list[str]
    category: Category
    confidence: Confidence
    created: Instant
    updated: Instant
    staleness_verdict: str = "fresh"
    version: str | None = None  # the memory's version token, for a conditional update or verify
    # trust annotations, present only when they say something (see memory/staleness.py)
    trust: dict[str, Any] = Field(default_factory=dict, exclude=True)
    content: str | None = None  # the full body, only when expanded
    # hybrid: the words of the query's best matches (BM25 feedback) through which the bm25 leg found a hit
    # holding none of the query's words (its match_terms are empty); absent otherwise
    feedback_terms: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump(mode="json", exclude_none=True)
        out.update(self.trust)
        return out

    def __getattr__(self, name: str) -> Any:
        """A trust field read as the docs name it (``hit.superseded_by``, ``hit.path_drift_missing``): it
        lived only in ``trust`` and ``to_dict()``, and the attribute raised AttributeError. One of the
        link and outcome fields a hit carries only when it has something to say is None otherwise."""
        trust = self.__dict__.get("trust")
        if trust is not None and not name.startswith("_"):
            if name in trust:
                return trust[name]
            if name in OPTIONAL_TRUST_FIELDS:
                return None
        return super().__getattr__(name)


# the trust fields a hit carries only when they say something (memory/trust.py)
OPTIONAL_TRUST_FIELDS = frozenset({"superseded_by", "depends_on_resolved", "depends_on_more", "recent_negative_outcomes"})


class Degraded(_Record):
    reason: Literal["embeddings_absent", "embeddings_broken", "embeddings_loading", "lexical_index_repaired"]
    message: str
    install: str
    fix: str | None = None  # the command that repairs it (the install, or e.g. `kenning models --convert`)


class RankedResult(_Record):
    """A search's answer (memories' or transcripts'), sent as JSON the same way by every surface."""

    hits: list[Explained] = Field(default_factory=list)
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON, the note only when it says something, each hit as its own to_dict shows it."""
        out = self.model_dump(mode="json", exclude={"hits", "note"})
        if self.note:
            out["note"] = self.note
        out["hits"] = [h.to_dict() for h in self.hits]
        return out


class SearchResult(RankedResult):
    query: str
    mode: Mode
    legs_run: list[str]
    degraded: Degraded | None = None
    # semantic/hybrid: live memories the vector leg could not see yet (no vector; `kenning index`
    # or a server's background embedder fills them in), counted also when the encoder could not run
    # (degraded); None for a lexical mode
    pending_embeddings: int | None = None
    hits: list[Hit] = Field(default_factory=list)
    note: str | None = None  # why the result is empty for a reason other than "nothing matched"
    use_token: str | None = None  # the hits settle as applied unless memory_record_use says otherwise
    # evidence-fused hybrid: the legs that ran with pseudo-relevance feedback (retrieval/feedback.py), so
    # their ranks and scores are not those of the leg's own mode: "bm25" (the query expanded by its best
    # matches' words), "vector" (a question of five or more terms moved toward its nearest memories)
    feedback_legs: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        """``RankedResult.to_dict``, with ``feedback_legs`` only when a leg ran with feedback."""
        out = super().to_dict()
        if self.feedback_legs is None:
            del out["feedback_legs"]
        return out


# A gate's refusal carries the gate's own status name (the spec's), never a generic "refused".
REFUSAL_STATUSES: tuple[str, ...] = (
    "transient_warning", "credential_warning", "user_claim_warning", "scope_mismatch", "ungrounded",
    "claim_false", "claims_uncheckable", "writes_disabled", "duplicate", "previously_removed",
)
WriteStatus = Literal[
    "committed", "pending", "expired", "not_found",
    "transient_warning", "credential_warning", "user_claim_warning", "scope_mismatch", "ungrounded",
    "claim_false", "claims_uncheckable", "writes_disabled", "duplicate", "previously_removed",
]


class WriteResult(_Record):
    """What a write (or a confirm of a pending write) did.

    committed / pending: written or staged (``related`` lists similar live memories,
    ``removed_matches`` similar tombstones below the previously_removed threshold);
    a gate's status (transient_warning, credential_warning, user_claim_warning, scope_mismatch,
    ungrounded, claim_false, claims_uncheckable, writes_disabled): nothing was written; ``gate``
    and ``code`` name the gate and its verdict, ``reason``/``hint``/``matched`` say why and how to
    fix it, ``override`` names the argument that accepts the risk (None when nothing may);
    duplicate: ``id`` is the live memory that already says this, nothing was written, and it was
    credited a corroboration (``corroboration_recorded``, once per session); ``force=True`` writes anyway;
    previously_removed: ``match`` is the similar tombstone, ``reason`` why it was removed; ``force=True`` writes anyway;
    expired / not_found: a confirm whose pending write is gone (timed out, or never existed).
    """

    status: WriteStatus
    id: str | None = None
    pending_id: str | None = None
    pending_reason: Literal["user_inference", "confirmation_required"] | None = None
    pending_retained: bool | None = None  # a confirm that was refused keeps the staged write
    expires: Instant | None = None
    gate: str | None = None
    code: str | None = None  # the gate's own verdict, e.g. transient_warning
    reason: str | None = None
    hint: str | None = None
    matched: list[str] = Field(default_factory=list)
    override: str | None = None
    match: dict[str, Any] | None = None  # {id, overlap, reason?} of a duplicate or a removed memory
    related: list[str] = Field(default_factory=list)
    removed_matches: list[dict[str, Any]] = Field(default_factory=list)  # {id, overlap, reason}
    claims: list[str] | None = None  # ungrounded: the sentences the transcript does not support
    corroboration_recorded: bool | None = None  # duplicate: the match was credited (first time this session)
    warnings: list[str] = Field(default_factory=list)
    curation_hint: dict[str, Any] | None = None

    @property
    def refused(self) -> bool:
        return self.status in REFUSAL_STATUSES

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class ImportLine(_Record):
    """What an import did with one record: committed (``id``), or why not (``gate``, ``reason``, and
    ``match``: the memory, tombstone or earlier line it repeats)."""

    label: str
    status: Literal["committed", "refused", "duplicate", "previously_removed", "already_present"]
    id: str | None = None
    gate: str | None = None
    reason: str | None = None
    match: str | None = None
    code: str | None = None  # the gate's status as a single write would report it, e.g. credential_warning


class ImportReport(_Record):
    """Per record, what ``Store.import_checked`` committed, refused or skipped as a duplicate."""

    lines: list[ImportLine]
    gated: bool = True
    # keys of the records that are no memory's field (nor one `show --json` adds), read past: key ->
    # how many records carried it, most frequent first
    ignored_keys: dict[str, int] = Field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(1 for line in self.lines if line.status == status)

    @property
    def ids(self) -> list[str]:
        return [line.id for line in self.lines if line.status == "committed"]

    def to_dict(self) -> dict[str, Any]:
        counts = {s: self.count(s) for s in ("committed", "refused", "duplicate", "previously_removed", "already_present")}
        return {"gated": self.gated, **counts, "ignored_keys": dict(self.ignored_keys),
                "lines": [line.model_dump(exclude_none=True) for line in self.lines]}


class StoreConfig(_Record):
    """Per-store settings, persisted in the database; defaults chosen with the eval harness."""

    default_mode: Mode = "hybrid"
    bm25_k1: float = 1.2
    bm25_b: float = 0.5
    rrf_k: float = 60.0
    weights: dict[str, float] = Field(
        # measured on the development sets: the keyword leg adds nothing BM25 lacks except its
        # phrase bonus, so it only breaks near-ties (equal weights cost up to 0.03 nDCG@10)
        default_factory=lambda: {"keyword": 0.2, "bm25": 1.0, "vector": 1.0}
    )
    leg_depth: int = 100
    # how hybrid fuses when the vector leg runs: "evidence" (absolute, measured better) or "rrf"
    fusion: Literal["evidence", "rrf"] = "evidence"
    # chosen by leave-one-collection-out on the development sets (eval/baselines/README.md)
    evidence_alpha: float = Field(0.78, ge=0.0, le=1.0)
    evidence_cos_floor: float = Field(0.1, ge=-1.0, lt=1.0)
    evidence_power: float = Field(3.0, gt=0.0)
    model: str | None = None
    vector_floor: float | None = None
    verification_stale_days: int = 30
    # live settings (LIVE_SETTINGS): a person flips them while agents run; every process sees the
    # change at its next call (Store.config re-reads the database when another connection committed)
    require_write_confirmation: bool = False
    search_enabled: bool = True
    write_enabled: bool = True


# The settings meant to be flipped while servers run (HTTP PATCH /config, `kenning config set`).
LIVE_SETTINGS: tuple[str, ...] = ("search_enabled", "write_enabled", "default_mode", "require_write_confirmation")
