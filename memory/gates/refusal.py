"""A gate's refusal, the pydantic model every gate returns (kenning.memory.gates.GateRefusal)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class GateRefusal(BaseModel):
    """Why a gate refused a write, phrased so the caller (often a model) can fix it and retry.

    ``matched`` never holds a secret: the credentials gate masks what it found.
    ``override`` names the write argument that accepts the risk, or is None when nothing may.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on the first refusal, not at import

    gate: str
    status: str
    reason: str
    hint: str
    matched: list[str] = []
    override: str | None = None
