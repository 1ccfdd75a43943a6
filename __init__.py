"""kenning: long-term memory for AI agents, with hybrid retrieval that explains every hit.

>>> import kenning
>>> store = kenning.open_store("/tmp/kenning-demo")
>>> store.write("The auth service listens on port 8443", scopes=["projects:demo"]).status
'committed'

The public names load on first use (PEP 562), so ``import kenning`` and ``kenning --help`` stay
fast: pydantic, numpy and the store are imported only by code that touches them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# the module that defines each public name
_MODULES = {
    "kenning.errors": ("EmbeddingsUnavailable", "InvalidInput", "KenningError", "NotFound", "ReadOnlyStore",
                       "SearchDisabled", "Stale", "StorageError"),
    "kenning.memory.gates": ("GateRefused",),
    "kenning.store.models": ("Degraded", "LIVE_SETTINGS", "Hit", "Link", "Memory", "SearchResult", "StoreConfig",
                             "Tombstone", "WriteResult"),
    "kenning.memory.facade": ("Store", "open_store"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

if TYPE_CHECKING:
    from kenning.errors import (
        EmbeddingsUnavailable, InvalidInput, KenningError, NotFound, ReadOnlyStore, SearchDisabled, Stale, StorageError,
    )
    from kenning.memory.gates import GateRefused
    from kenning.store.models import (
        LIVE_SETTINGS, Degraded, Hit, Link, Memory, SearchResult, StoreConfig, Tombstone, WriteResult,
    )
    from kenning.memory.facade import Store, open_store


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kenning' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


def embeddings_available() -> bool:
    """True when the semantic leg can run in this process (loads the model on first call)."""
    from kenning.retrieval.embeddings import probe

    return probe().working


__all__ = [*sorted(_EXPORTS), "embeddings_available", "__version__"]
