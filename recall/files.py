"""Safe writes into a folder a person also edits: a per-directory lock and temp-file-plus-rename writes.

The lock is a file created exclusively (``O_EXCL``) holding the owner's pid, host and start time,
and removed on release; a lock whose owner died is *abandoned* and ``kenning clean`` removes it
(nothing breaks it silently, so two writers never both believe they hold it). Every file is
written to a temporary sibling and renamed over the target, so a reader (or a crash) sees the old
bytes or the new ones, never half of each. The names of both are recognisable, which is how
``kenning clean`` knows it made them.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from kenning.errors import InvalidInput

LOCK_NAME = ".kenning.lock"
TEMP_MARK = ".kenning-tmp-"  # temp files are "<dir>/.<name>.kenning-tmp-<pid>-<n>"
LOCK_WAIT_S = 10.0
_POLL_S = 0.05
_counter = 0


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` through a temp file and a rename."""
    global _counter
    _counter += 1
    tmp = path.parent / f".{path.name}{TEMP_MARK}{os.getpid()}-{_counter}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_text(path: Path) -> str:
    """A file's text exactly as stored (no newline translation), so untouched bytes stay untouched."""
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def temp_owner(name: str) -> int | None:
    """The pid in a temp file's name, or None when the name is not one of ours."""
    if TEMP_MARK not in name:
        return None
    tail = name.rsplit(TEMP_MARK, 1)[1]
    pid = tail.split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def lock_holder(path: Path) -> dict | None:
    """What a lock file says about its owner ({pid, host, at}); None when unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def abandoned(holder: dict | None, age_s: float, stale_after_s: float) -> bool:
    """A lock (or temp file) whose owner is gone: a dead pid on this host, or an unreadable one left long ago."""
    if holder is None or not isinstance(holder.get("pid"), int):
        return age_s > stale_after_s
    if holder.get("host") != socket.gethostname():
        return age_s > stale_after_s
    return not pid_alive(holder["pid"])


class DirLock:
    """``with DirLock(folder):`` — one kenning writer in a folder at a time (waits up to LOCK_WAIT_S)."""

    def __init__(self, folder: Path, wait_s: float | None = None):
        self.path = folder / LOCK_NAME
        self.wait_s = LOCK_WAIT_S if wait_s is None else wait_s

    def __enter__(self) -> "DirLock":
        deadline = time.monotonic() + self.wait_s
        payload = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "at": time.time()})
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = lock_holder(self.path)
                if holder is not None and abandoned(holder, 0.0, float("inf")):
                    raise InvalidInput(
                        f"{self.path} was left by a kenning process that is gone (pid {holder.get('pid')}); "
                        "`kenning clean` removes it") from None
                if time.monotonic() >= deadline:
                    who = f"pid {holder.get('pid')}" if holder else "another process"
                    raise InvalidInput(f"{self.path.parent} is locked by {who}; try again when it has finished") from None
                time.sleep(_POLL_S)
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(payload)
            return self

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)
