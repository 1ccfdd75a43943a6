"""Reading a ledger file incrementally: whole lines from a byte offset, and telling an append from a rewrite.

A ledger is append-only while its session runs, so the index remembers (size, mtime, offset), the
file it read (device and inode) and two digests: of the first bytes and of the bytes just before
the offset. The same file grown with both digests intact is read on from the offset. Any other
change is a rewrite, read again from the start: another file put in its place (``sed -i``, an
editor saving by rename, however long the new file is), the same size with another mtime (an edit
in place, such as a redaction of the same length), a file that shrank or whose digests changed.
An edit in place that also grew the file past its digests is not seen: telling it from an append
would mean reading the whole file at every search. Only whole lines are consumed, so a line being
written right now is picked up whole at the next read (a last line without a newline counts
once it parses).

A line that cannot be read is counted as malformed and skipped, whatever is wrong with it (not
JSON, not an object, nested too deeply, a field of the wrong type, a timestamp that is no date: see
readers.py); the lines around it are read as usual.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

from .readers import Malformed, Message, read_line

HEAD_BYTES = 1024
TAIL_BYTES = 256


@dataclass
class Mark:
    """How far a ledger was read, and what its bytes looked like there."""

    size: int
    mtime_ns: int
    offset: int
    head: str
    tail: str


@dataclass
class Increment:
    messages: list[tuple[int, Message]] = field(default_factory=list)  # (1-based line, message)
    malformed: int = 0
    mark: Mark | None = None
    lines: int = 0  # total lines consumed so far


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def file_id(stat: os.stat_result) -> str:
    """Which file a path leads to: a file renamed into its place (``sed -i``, an editor's save) is another one."""
    return f"{stat.st_dev}:{stat.st_ino}"


def appended(f, stat: os.stat_result, mark: Mark, read: str | None) -> bool:
    """Was the file ``f`` (``stat``) only appended to since ``mark``? ``read`` is the ``file_id`` of the
    file the mark was made on (None for a mark older than that record)."""
    if read is not None and read != file_id(stat):
        return False
    if stat.st_size == mark.size and stat.st_mtime_ns != mark.mtime_ns:  # written over in place
        return False
    return stat.st_size >= mark.offset and marks_hold(f, mark)


def marks_hold(f, mark: Mark) -> bool:
    """Do the bytes the mark remembers still read the same (so the file was appended to, not rewritten)?"""
    f.seek(0)
    head = f.read(min(mark.offset, HEAD_BYTES))
    if digest(head) != mark.head:
        return False
    start = max(0, mark.offset - TAIL_BYTES)
    f.seek(start)
    return digest(f.read(mark.offset - start)) == mark.tail


def read_from(path: str, stat: os.stat_result, offset: int, lines_before: int, state: dict[str, Any]) -> Increment:
    """Parse the whole lines after ``offset``; malformed lines are counted and skipped."""
    inc = Increment(lines=lines_before)
    with open(path, "rb") as f:
        if offset > 0:  # the last read took a final line without its newline: that newline ends it, no new line
            f.seek(offset - 1)
            before, after = f.read(1), f.read(2)
            if before not in (b"\n", b""):
                offset += 1 if after.startswith(b"\n") else 2 if after == b"\r\n" else 0
        f.seek(offset)
        data = f.read(max(0, stat.st_size - offset))
        end = data.rfind(b"\n") + 1
        body, rest = data[:end], data[end:]
        if rest.strip():
            try:  # a final line without its newline: take it if it is already whole
                json.loads(rest)
                body, end = data, len(data)
            except (ValueError, RecursionError):
                pass
        consumed = offset + end
        chunks = body.split(b"\n")
        if chunks and not chunks[-1]:
            chunks.pop()
        for raw in chunks:
            inc.lines += 1
            if not raw.strip():
                continue
            try:  # not JSON, nested past the parser's depth, or fields read_line cannot use
                obj = json.loads(raw)
                if not isinstance(obj, dict):
                    raise Malformed("not a JSON object")
                messages = read_line(obj, state)
            except (ValueError, RecursionError):  # Malformed is a ValueError; state is left as it was
                inc.malformed += 1
                continue
            for message in messages:
                inc.messages.append((inc.lines, message))
        f.seek(0)
        head = f.read(min(consumed, HEAD_BYTES))
        start = max(0, consumed - TAIL_BYTES)
        f.seek(start)
        tail = f.read(consumed - start)
    inc.mark = Mark(stat.st_size, stat.st_mtime_ns, consumed, digest(head), digest(tail))
    return inc
