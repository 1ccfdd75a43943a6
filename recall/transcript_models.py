"""The records transcript recall returns (library, CLI --json and the MCP tool send the same shape)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kenning.store.models import Degraded, Explained, RankedResult


class TranscriptHit(Explained):
    """One past message: where it was said, by whom, and why it matched (as a memory hit explains itself)."""

    role: Literal["transcript"] = "transcript"
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


class TranscriptResult(RankedResult):
    query: str
    mode: str
    legs_run: list[str]
    degraded: Degraded | None = None
    scope: str  # "all", or the project searched
    excluded_session: str | None = None
    # semantic/hybrid: messages the vector leg could not see yet (a server's background embedder or
    # `kenning transcripts index` gives them vectors); None when no vector leg ran
    pending_embeddings: int | None = None
    hits: list[TranscriptHit] = Field(default_factory=list)
