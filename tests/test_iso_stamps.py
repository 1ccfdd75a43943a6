"""``iso`` writes a UTC time from a remembered text of its second plus its microseconds
(store/plain.py): it must write what converting to naive UTC and ``isoformat`` write, for any time."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from kenning.store import plain


def _reference(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def test_random_times_and_the_edges_of_the_calendar():
    rng = random.Random(14)
    times = [datetime.fromtimestamp(rng.uniform(-62_000_000_000, 250_000_000_000), timezone.utc) for _ in range(20_000)]
    times += [datetime(1, 1, 1, tzinfo=timezone.utc), datetime(9999, 12, 31, 23, 59, 59, 999_999, timezone.utc),
              datetime(2026, 3, 1, 12, 0, 0, 0, timezone.utc), datetime(2024, 2, 29, 23, 59, 59, 1, timezone.utc)]
    for ts in times:
        assert plain._iso.__wrapped__(ts) == _reference(ts)


def test_many_stamps_within_one_second_and_across_seconds():
    start = datetime(2026, 12, 2, 11, 59, 59, 999_000, timezone.utc)
    for step in range(3_000):
        ts = start + timedelta(microseconds=step)
        assert plain.iso(ts) == _reference(ts)
    assert plain.iso(start.astimezone(timezone(timedelta(hours=-7)))) == _reference(start)
