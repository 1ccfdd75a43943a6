"""Python's cyclic garbage collector held off while an import builds its records and batches.

An import keeps every validated record alive until it is written and makes tens of container
objects a record besides (rows, token lists, postings): the collector's generation counts pass
their thresholds over and over, and each full collection walks every record made so far. Measured
on 100,000 records: about a sixth of the import's CPU (bench/README.md). An import makes next to
no reference cycles (about a hundred objects over 100,000 records), so reference counting frees
what it drops; the collector runs again as soon as the last import in the process finishes, and is
left off if it was off before.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0  # imports running now (threads of one process share one collector)
_was_enabled = False  # the collector's state when the first of them began


@contextmanager
def paused() -> Iterator[None]:
    """The block runs with the collector off; it is back on (if it was on) once no import runs."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
