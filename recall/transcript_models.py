"""The records transcript recall returns (library, CLI --json and the MCP tool send the same shape)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kenning.store.models import Degraded, LegScore


class TranscriptHit(BaseModel):
    """One past message: where it was said, by whom, and why it matched (as a memory hit explains itself)."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["transcript"] = "transcript"
    id: str
    score: float
    matched_leg: Literal["lexical", "semantic", "both"]
    relevance: Literal["high", "medium", "low"]
    match_terms: list[str]
    legs: dict[str, LegScore]
    snippet: str
    session: str | None
    parent_session: str | None = None  # set on a sidechain / worker message: the session that spawned it
    sidechain: bool = False
    timestamp: str | None
    speaker: Literal["user", "assistant", "tool"]
    project: str | None
    ledger: str
    line: int
    format: str | None

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump(mode="json")
        if out["parent_session"] is None:
            out.pop("parent_session")
        return out


class TranscriptResult(BaseModel):
    query: str
    mode: str
    legs_run: list[str]
    degraded: Degraded | None = None
    scope: str  # "all", or the project searched
    excluded_session: str | None = None
    hits: list[TranscriptHit] = Field(default_factory=list)
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump(mode="json", exclude={"hits", "note"})
        if self.note:
            out["note"] = self.note
        out["hits"] = [h.to_dict() for h in self.hits]
        return out
