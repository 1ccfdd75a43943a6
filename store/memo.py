"""Per-database memos of stored rows, valid until the next change to the store.

A search returns the same few memories again and again, and reading their records (and which
memories supersede them) costs SQL round trips per search. These memos keep what was read and
serve it while ``Database.stamp()`` is unchanged: nobody else committed and this connection wrote
nothing since outside its own event-log batches (``Database.log_only``). Any other commit (a
write, another process's event, a setting) empties them, so they can never serve a row the store
no longer holds.
"""

from __future__ import annotations

import weakref
from typing import Any

ROWS_REMEMBERED = 8192  # entries per memo before it starts afresh

_HELD: "weakref.WeakKeyDictionary[Any, tuple[Any, dict[str, dict]]]" = weakref.WeakKeyDictionary()


def memo(db: Any, name: str) -> dict:
    """The memo ``name`` of ``db`` for the store as it is now: emptied when the stamp moved or it grew
    too large; a fresh one every time for a database without a cheap stamp (PostgreSQL)."""
    stamp = db.stamp()
    if stamp is None:
        return {}
    held = _HELD.get(db)
    if held is None or held[0] != stamp:
        held = _HELD[db] = (stamp, {})
    table = held[1].get(name)
    if table is None or len(table) > ROWS_REMEMBERED:
        table = held[1][name] = {}
    return table
