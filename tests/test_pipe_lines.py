"""The test helper that reads a child's answers: lines that reach the pipe together are each seen."""

from __future__ import annotations

import subprocess
import sys

from pipe_lines import PipeLines


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)


def test_lines_written_together_are_each_returned_at_once():
    """select + readline on the buffered pipe waited its whole timeout for the second line here."""
    child = _child("import sys; sys.stdout.write('one\\ntwo\\nthr'); sys.stdout.flush()")
    child.wait()
    lines = PipeLines(child.stdout)
    assert [lines.next(5), lines.next(5), lines.next(5), lines.next(5)] == [b"one\n", b"two\n", b"thr", b""]


def test_no_whole_line_within_the_timeout_is_none_and_the_part_is_kept():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.write('par'); sys.stdout.flush(); "
                              "sys.stdin.readline(); sys.stdout.write('t\\n')"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lines = PipeLines(child.stdout)
    assert lines.next(0.2) is None
    child.stdin.write(b"go\n")
    child.stdin.flush()
    assert lines.next(30) == b"part\n"
    child.wait()
