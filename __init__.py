"""kenning: long-term memory for AI agents, with hybrid retrieval that explains every hit.

>>> import kenning
>>> store = kenning.open_store("/tmp/kenning-demo")
>>> store.write("The auth service listens on port 8443", scopes=["projects:demo"]).status
'committed'
"""

from kenning.errors import EmbeddingsUnavailable, InvalidInput, KenningError, NotFound, SearchDisabled
from kenning.store.models import (
    Degraded,
    LIVE_SETTINGS,
    Hit,
    Link,
    Memory,
    SearchResult,
    StoreConfig,
    Tombstone,
    WriteResult,
)
from kenning.memory.facade import Store, open_store

__version__ = "0.1.0"


def embeddings_available() -> bool:
    """True when the semantic leg can run in this process (loads the model on first call)."""
    from kenning.retrieval.embeddings import probe

    return probe().working


__all__ = [
    "Degraded",
    "EmbeddingsUnavailable",
    "Hit",
    "InvalidInput",
    "KenningError",
    "LIVE_SETTINGS",
    "Link",
    "Memory",
    "NotFound",
    "SearchDisabled",
    "SearchResult",
    "Store",
    "StoreConfig",
    "Tombstone",
    "WriteResult",
    "embeddings_available",
    "open_store",
    "__version__",
]
