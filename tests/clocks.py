"""A settable clock for tests: stores take `clock=`, so time moves only when a test says so."""

from __future__ import annotations

from datetime import datetime, timedelta


class Clock:
    """Returns `now`; with `tick`, each reading first advances by it, so rows keep a strict order."""

    def __init__(self, now: datetime, tick: timedelta = timedelta(0)):
        self.now = now
        self.tick = tick

    def __call__(self) -> datetime:
        self.now += self.tick
        return self.now


def ticking(now: datetime) -> Clock:
    """A clock that moves one millisecond per reading (events and rows stay strictly ordered)."""
    return Clock(now, timedelta(milliseconds=1))
