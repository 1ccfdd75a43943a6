"""The profile tier: what kenning knows about the user, one global tier recalled with ``role: profile``.

A profile note is a memory about the person (category ``user-inference``, or any memory scoped
``user``). It is global: every project sees it, whatever the repository it was written from.
Writing one goes through the ordinary write path, so the user-inference rule holds: it is staged
until the user confirms it (``kenning confirm`` / ``memory_write_confirm``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kenning.store.models import Hit, Memory, WriteResult

if TYPE_CHECKING:
    from kenning.memory.facade import Store

PROFILE_SCOPE = "user"
PROFILE_CATEGORY = "user-inference"


def is_profile(memory: Memory) -> bool:
    return memory.category == PROFILE_CATEGORY or PROFILE_SCOPE in memory.scopes


def remember(store: "Store", text: str, confidence: str = "medium") -> WriteResult:
    """Propose a fact about the user; it stays pending until the user confirms it."""
    return store.write(text, scopes=[PROFILE_SCOPE], category=PROFILE_CATEGORY, confidence=confidence,
                       source="explicit-statement")


def search(store: "Store", query: str, limit: int, mode: str | None = None) -> list[Hit]:
    """Profile notes matching the query, best first, from every project."""
    by_category = store.search(query, mode=mode, limit=limit, category=PROFILE_CATEGORY, auto_scope=False, record=False)
    by_scope = store.search(query, mode=mode, limit=limit, scopes=[PROFILE_SCOPE], auto_scope=False, record=False)
    merged: dict[str, Hit] = {}
    for hit in sorted(by_category.hits + by_scope.hits, key=lambda h: -h.score):
        merged.setdefault(hit.id, hit)
    return list(merged.values())[:limit]


def notes(store: "Store", limit: int = 500) -> list[Memory]:
    """Every live profile note (for USER.md), newest update first."""
    found = {m.id: m for m in store.list(category=PROFILE_CATEGORY, limit=limit, auto_scope=False, record=False)}
    for m in store.list(scopes=[PROFILE_SCOPE], limit=limit, auto_scope=False, record=False):
        found.setdefault(m.id, m)
    return sorted(found.values(), key=lambda m: (m.updated, m.id), reverse=True)
