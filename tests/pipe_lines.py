"""A child's output pipe read a line at a time with a timeout.

``select`` on the pipe's buffered file object and then ``readline`` misses a line already read: when
two answers reach the pipe before the test reads, ``readline`` takes both into Python's buffer and
returns one, and the next ``select`` waits on an empty pipe for an answer the test already holds
(tests/test_fuzz_mcp.py failed so, "no response within 60s; server alive: True", when a JSON-RPC
batch's answers arrived together). This reads the descriptor itself and keeps what follows a line."""

from __future__ import annotations

import os
import select
import time


class PipeLines:
    def __init__(self, stream):
        self._fd = stream.fileno()
        self._held = b""

    def next(self, timeout: float) -> bytes | None:
        """The next line with its newline; b"" once the pipe is closed and drained (a last line with
        no newline is returned first); None when no whole line came within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._held:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                return None
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                line, self._held = self._held, b""
                return line
            self._held += chunk
        line, _, self._held = self._held.partition(b"\n")
        return line + b"\n"
