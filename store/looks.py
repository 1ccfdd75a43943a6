"""One look at the store's commit state per block of reads, shared by both backends.

A search asks for its settings, lexicon, vector count and trust memo, each checking whether the
store changed; reading the commit marker (SQLite's data_version, PostgreSQL's commit counter) at
each ask costs a statement or a round trip apiece. In a ``one_generation`` block the first ask reads
it and the rest reuse that value (``seen`` on the thread-local); ``fresh_look`` suspends the block
for reads that must see every commit so far. The backend's own reader decides what ``seen`` holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_generation(local: threading.local) -> Iterator[bool]:
    """Mark this thread as in a block until it ends. Nested blocks are the outer one. Yields whether
    this block is the outer one (its look is still to come: what is read before the first ask is
    older than the look)."""
    if getattr(local, "looking", False):
        yield False
        return
    local.looking, local.seen = True, None
    try:
        yield True
    finally:
        local.looking, local.seen = False, None


@contextmanager
def fresh_look(local: threading.local) -> Iterator[None]:
    """Inside a block, a stretch whose reads see every commit made so far, as outside one: what a
    write's duplicate probe needs, which must not miss a text another process committed after the
    block's first look (it takes the store's last rowid as the point its late check starts from)."""
    looking, seen = getattr(local, "looking", False), getattr(local, "seen", None)
    local.looking, local.seen = False, None
    try:
        yield
    finally:
        local.looking, local.seen = looking, seen
