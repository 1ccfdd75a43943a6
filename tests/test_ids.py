"""kenning's ULIDs are the text python-ulid gives for the same 128 bits, ordered by time."""

from __future__ import annotations

import random
import time

from ulid import ULID

from kenning.store import ids


def test_the_same_text_as_the_library_for_the_same_bits(monkeypatch):
    draw = random.Random(7)
    for _ in range(2000):
        raw = draw.randbytes(16)
        stamp, rest = int.from_bytes(raw[:6], "big"), raw[6:]
        monkeypatch.setattr(ids.time, "time_ns", lambda s=stamp: s * 1_000_000)
        monkeypatch.setattr(ids.os, "urandom", lambda n, r=rest: r)
        assert ids.new_ulid() == str(ULID.from_bytes(raw))


def test_fresh_ids_parse_and_carry_the_time():
    before = time.time()
    made = [ids.new_ulid() for _ in range(100)]
    assert len(set(made)) == 100
    for text in made:
        assert len(text) == 26
        assert abs(ULID.from_str(text).timestamp - before) < 60
