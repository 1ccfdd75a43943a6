"""Pydantic records at the boundary: what the library returns, the CLI prints and the tools send."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

Category = Literal["fact", "user-inference", "ambient"]
Confidence = Literal["low", "medium", "high"]
Source = Literal["explicit-statement", "inferred"]
LinkKind = Literal["supersedes", "contradicts", "extends", "depends_on"]
Mode = Literal["keyword", "bm25", "semantic", "hybrid"]
MODES: tuple[str, ...] = ("keyword", "bm25", "semantic", "hybrid")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(ts: datetime | None) -> str | None:
    """UTC timestamps as fixed-width ISO-8601 with a Z, so they also sort as text."""
    if ts is None:
        return None
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")

    @field_serializer("*", when_used="json")
    def _dates(self, value: Any) -> Any:
        return iso(value) if isinstance(value, datetime) else value


class Origin(_Record):
    """Where a memory was written from: repository root, worktree and HEAD at write time."""

    repo: str
    worktree: str
    commit: str | None = None


class Link(_Record):
    kind: LinkKind
    target: str
    note: str | None = None


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
    created: datetime
    updated: datetime
    last_verified_at: datetime | None = None
    verification_note: str | None = None
    verified_paths: list[str] = Field(default_factory=list)
    verified_absent_paths: list[str] = Field(default_factory=list)
    origin: Origin | None = None
    claims: list[Claim] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Tombstone(_Record):
    """A removed memory, kept whole with why and when, so it can be restored."""

    memory: Memory
    reason: str
    removed_at: datetime


class LegScore(_Record):
    rank: int
    score: float


class Hit(_Record):
    id: str
    score: float
    matched_leg: Literal["lexical", "semantic", "both"]
    relevance: Literal["high", "medium", "low"]
    match_terms: list[str]
    legs: dict[str, LegScore]
    snippet: str
    scopes: list[str]
    category: Category
    confidence: Confidence
    created: datetime
    updated: datetime
    staleness_verdict: str = "fresh"
    # trust annotations, present only when they say something (see store/staleness.py)
    trust: dict[str, Any] = Field(default_factory=dict, exclude=True)
    content: str | None = None  # the full body, only when expanded

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump(mode="json", exclude_none=True)
        out.update(self.trust)
        return out


class Degraded(_Record):
    reason: Literal["embeddings_absent", "embeddings_broken"]
    message: str
    install: str


class SearchResult(_Record):
    query: str
    mode: Mode
    legs_run: list[str]
    degraded: Degraded | None = None
    hits: list[Hit] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump(mode="json", exclude={"hits"})
        out["hits"] = [h.to_dict() for h in self.hits]
        return out


class WriteResult(_Record):
    """What a write did: committed, pending, refused, duplicate or previously_removed."""

    status: Literal["committed", "pending", "refused", "duplicate", "previously_removed"]
    id: str | None = None
    pending_id: str | None = None
    gate: str | None = None
    reason: str | None = None
    related: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class StoreConfig(_Record):
    """Per-store settings, persisted in the database; defaults chosen with the eval harness."""

    default_mode: Mode = "hybrid"
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    rrf_k: float = 60.0
    weights: dict[str, float] = Field(
        default_factory=lambda: {"keyword": 1.0, "bm25": 1.0, "vector": 1.0}
    )
    leg_depth: int = 100
    model: str | None = None
    vector_floor: float | None = None
    verification_stale_days: int = 30
    require_write_confirmation: bool = False
