"""Run test code as a process that file permissions bind.

An ordinary user's process already is one. Root ignores file modes through three capabilities
(CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER); Linux keeps capabilities per thread, so the code
runs in a thread that drops them from its effective set with capset(2). The kernel then refuses that
thread exactly what it refuses a user without write access, while the rest of the test session keeps
its rights (to restore modes and delete the temporary folder). Threads the code starts inherit the
dropped set. Only the library runs there: nothing of kenning is replaced.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

_CAPABILITY_VERSION_3 = 0x20080522
_OVERRIDES = (1, 2, 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_overrides() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _Header(_CAPABILITY_VERSION_3, 0), (_Data * 2)()  # pid 0: this thread
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    for bit in _OVERRIDES:
        data[0].effective &= ~(1 << bit)
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def run_unprivileged(fn: Callable[[], T]) -> T:
    """``fn()``'s result (or its exception), computed without the power to ignore file permissions."""
    if os.geteuid() != 0:
        return fn()
    if not sys.platform.startswith("linux"):
        pytest.skip("running as root outside Linux: file permissions cannot be made to bind")
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            _drop_overrides()
            outcome["result"] = fn()
        except BaseException as exc:  # handed to the calling thread
            outcome["error"] = exc

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]
