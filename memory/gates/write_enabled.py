"""The live setting write_enabled=false refuses every memory change, before anything is written."""

from __future__ import annotations

from kenning.store.models import StoreConfig

from . import GateRefusal, GateRefused


def check(config: StoreConfig) -> GateRefusal | None:
    if config.write_enabled:
        return None
    return GateRefusal(
        gate="write_enabled", status="writes_disabled",
        reason="writes are disabled on this store (write_enabled=false)",
        hint="nothing was written; a person turns writes back on with: kenning config set write_enabled true",
    )


def require(config: StoreConfig) -> None:
    """Raise GateRefused when writes are off (the operations that return a memory, not a WriteResult)."""
    refusal = check(config)
    if refusal is not None:
        raise GateRefused(refusal)
