"""ULIDs: 48 bits of milliseconds then 80 random bits, as 26 Crockford base32 characters.

The same text ``str(ulid.ULID())`` gives, made without the library's per-call objects: an import
names every record it writes and every search hands out a token, so the few microseconds count.
"""

from __future__ import annotations

import os
import time

# A memory id inside a message, as one regex group: the surfaces that restate the gates' hints for
# their users (commands/hints.py, serve/http/errors.py) carry the id over.
ID_IN_TEXT = r"([0-9A-Za-z]{26})"

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_IS_ULID = frozenset(_ALPHABET)
_LOOK_ALIKES = str.maketrans("ILO", "110")  # Crockford's decoding of the letters the alphabet leaves out
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # ten bits -> two characters


def looked_up(id: object) -> str:
    """An id a caller gives to find a memory by: text, in its one spelling (``canonical``). A dict or
    a list reached SQLite and came back in its words ("Error binding parameter 1"), and 5 or None
    as "no memory has id 5"."""
    if not isinstance(id, str):
        from kenning.errors import InvalidInput

        raise InvalidInput(f"a memory id is text (such as 01JD0Q6ZP3M2W9X8Y7V6T5S4R3), got {type(id).__name__}")
    return canonical(id)


def shown(id: str) -> str:
    """An id quoted in a message: a 50,000-character one was echoed whole. A long one is cut as the
    CLI cuts a long value it quotes (``'abc…' (100,000 characters)``)."""
    if len(id) <= 100:
        return repr(id)
    head = repr(id[:60])
    return f"{head[:-1]}…{head[-1]} ({len(id):,} characters)"


def canonical(id: str) -> str:
    """The one spelling of an id: a ULID is Crockford base32, which ignores case and reads I and L as
    1 and O as 0, so one typed in lower (or mixed) case, or with those look-alikes, names the same
    memory and becomes its upper-case spelling here. Any other text (an import's external id such as
    "wiki/ops/7") is returned as given."""
    upper = id.upper().translate(_LOOK_ALIKES) if isinstance(id, str) and len(id) == 26 else None
    if upper is None or upper == id or upper[0] > "7" or not _IS_ULID.issuperset(upper):
        return id
    return upper


def new_ulid() -> str:
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in range(120, -1, -10)])
