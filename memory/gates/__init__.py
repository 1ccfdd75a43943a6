"""Write gates: each module checks one way a write can be wrong and says why it refuses."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from kenning.errors import InvalidInput


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


class GateRefused(InvalidInput):
    """A gate refused an update. ``update`` returns the memory, so its refusal is raised; ``write``
    returns its refusals as a WriteResult instead."""

    def __init__(self, refusal: GateRefusal):
        super().__init__(f"{refusal.gate} gate refused it: {refusal.reason}. {refusal.hint}")
        self.refusal = refusal


def run_content_gates(
    content: str,
    category: str,
    acknowledge_transient: bool = False,
    acknowledge_user_claim: bool = False,
) -> GateRefusal | None:
    """The body gates in write order (credentials -> durability -> user claims): first refusal, or None.

    Credentials come first and have no override: a secret must never reach the store. The three
    modules compile dozens of regular expressions, so they load here, on the first write, not with
    the package (every search imports it for the scope limits).
    """
    from kenning.memory.gates import credentials, durability, user_claims

    return (
        credentials.check(content)
        or durability.check(content, acknowledge_transient=acknowledge_transient)
        or user_claims.check(content, category, acknowledge_user_claim=acknowledge_user_claim)
    )
