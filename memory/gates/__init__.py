"""Write gates: each module checks one way a write can be wrong and says why it refuses.

``GateRefusal`` (refusal.py, a pydantic model) loads on first use: a search imports this package
for the scope limits (limits.py) and the logged-string screen (secret_marks.py), and builds none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kenning.errors import InvalidInput

if TYPE_CHECKING:
    from .refusal import GateRefusal


def __getattr__(name: str) -> Any:
    if name == "GateRefusal":
        from .refusal import GateRefusal

        return GateRefusal
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
