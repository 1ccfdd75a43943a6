"""Safe writes into a folder a person also edits: a per-directory lock and temp-file-plus-rename writes.

The lock is a file created exclusively (``O_EXCL``) holding the owner's pid, host and start time,
and removed on release. A lock whose owner provably died (its pid, recorded on this host, is gone)
is *abandoned*: the next writer takes it over and says so (``DirLock.taken_over``), and ``kenning
clean`` removes it. Either breaks it only while holding an ``flock`` on that very file and after
checking the path still names it, so two processes breaking the same dead lock never both believe
they hold the new one; a lock whose owner lives, or may live (another host, an unreadable file),
is never broken. Every file is
written to a temporary sibling and renamed over the target, so a reader (or a crash) sees the old
bytes or the new ones, never half of each. The names of both are recognisable, which is how
``kenning clean`` knows it made them.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path

from kenning.errors import InvalidInput

LOCK_NAME = ".kenning.lock"
TEMP_MARK = ".kenning-tmp-"  # temp files are "<dir>/.<name>.kenning-tmp-<pid>-<n>"
LOCK_WAIT_S = 10.0
_POLL_S = 0.05
_counter = 0


class EditedMeanwhile(InvalidInput):
    """A file a person edits was saved by someone else after kenning read it and before its rewrite landed."""


_ANY = object()


def atomic_write(path: Path, text: str, expected: "str | None | object" = _ANY) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` through a temp file and a rename. A new file
    follows the umask; one replaced keeps its mode (chmod 600 on a MEMORY.md was undone by the next export).
    With ``expected`` (the text read before, or None: there was no file), the rename happens only if the
    file still holds it, else EditedMeanwhile: the folder's lock keeps out other kenning processes, not a
    person's editor, whose save in the meantime the rename would have thrown away."""
    global _counter
    _counter += 1
    tmp = path.parent / f".{path.name}{TEMP_MARK}{os.getpid()}-{_counter}"
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = None
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            if mode is not None and os.chmod in os.supports_fd:
                os.chmod(f.fileno(), mode)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if expected is not _ANY and _current(path) != expected:
            raise EditedMeanwhile(f"{path} was saved by someone else while kenning was rewriting it; "
                                  "that save is kept as it is")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _current(path: Path) -> str | None:
    """The file's text now, None if there is none; a file no longer UTF-8 differs from any text read."""
    try:
        return path.read_bytes().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None


class NotUtf8(InvalidInput):
    """A file a person edits holds a byte that is no UTF-8 (saved in another encoding, a stray byte)."""


def read_text(path: Path) -> str:
    """A file's text exactly as stored (no newline translation), so untouched bytes stay untouched;
    NotUtf8 naming the byte and where it is when the file is not UTF-8 (a traceback said only that
    some codec failed, somewhere)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[:exc.start].decode("utf-8")
        line, column = before.count("\n") + 1, len(before) - before.rfind("\n")
        raise NotUtf8(f"{path} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line}, column {column}); "
                      "save it as UTF-8") from None


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


def can_break() -> bool:
    try:
        import fcntl  # noqa: F401  (POSIX: elsewhere an abandoned lock is left for `kenning clean`)
    except ImportError:
        return False
    return True


def break_abandoned(path: Path) -> dict | None:
    """Remove the lock file at ``path`` if its owner is provably dead on this host; the dead owner's
    record when it was removed, else None (alive, gone already, replaced, or no flock here).

    The file is opened and ``flock``-ed first, then the path is checked to still name that same file,
    and only then is the owner read and the file unlinked, all under the flock. Another process
    breaking the same file waits on the flock and then finds the path names a new file (or none), so
    it never unlinks the lock a third process has just created."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for an instant only, by another breaker
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            return None
        if not same:
            return None
        holder = lock_holder(path)
        if holder is None or not isinstance(holder.get("pid"), int) or holder.get("host") != socket.gethostname() \
                or pid_alive(holder["pid"]):
            return None
        path.unlink()
        return holder
    finally:
        os.close(fd)  # releases the flock


class DirLock:
    """``with DirLock(folder):`` — one kenning writer in a folder at a time (waits up to LOCK_WAIT_S)."""

    def __init__(self, folder: Path, wait_s: float | None = None):
        self.path = folder / LOCK_NAME
        self.wait_s = LOCK_WAIT_S if wait_s is None else wait_s
        # the dead owner's record ({pid, host, at}) when this lock was taken over from it
        self.taken_over: dict | None = None

    def __enter__(self) -> "DirLock":
        deadline = time.monotonic() + self.wait_s
        payload = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "at": time.time()})
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = lock_holder(self.path)
                if holder is not None and abandoned(holder, 0.0, float("inf")):
                    broken = break_abandoned(self.path)
                    if broken is not None:
                        self.taken_over = broken
                        continue  # and create it as ours, against any other writer as ever
                    if not can_break():
                        raise InvalidInput(
                            f"{self.path} was left by a kenning process that is gone (pid {holder.get('pid')}); "
                            "`kenning clean` removes it") from None
                    # else another writer broke it first, or it names a live owner now: wait as for any lock
                if time.monotonic() >= deadline:
                    who = f"pid {holder.get('pid')}" if holder else "another process"
                    raise InvalidInput(f"{self.path.parent} is locked by {who}; try again when it has finished") from None
                time.sleep(_POLL_S)
                continue
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(payload)
            except BaseException:  # a full disk: an empty lock names no owner, so no later run could take it over
                self.path.unlink(missing_ok=True)
                raise
            return self

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)
