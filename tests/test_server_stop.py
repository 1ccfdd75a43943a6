"""The MCP server stopped by a signal, as a real process: an MCP client that closes stdin sends
SIGTERM when the server does not exit within its grace period, and a Ctrl-C in the terminal an
agent runs in reaches the server's process group as SIGINT. Either must end the session the way
closing stdin does (the reads it answered logged, the store clean) and exit, not hang or die."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kenning import Store
from child_env import passed_on
from pipe_lines import PipeLines

pytestmark = pytest.mark.slow  # a real server process


def _answer(proc: subprocess.Popen, rid: int) -> dict:
    line = proc.lines.next(60)
    assert line, "no answer within 60 s" if line is None else proc.stderr.read().decode()[-2000:]
    response = json.loads(line)
    assert response["id"] == rid and "result" in response, response
    return response["result"]


def _request(proc: subprocess.Popen, rid: int, method: str, params: dict) -> dict:
    proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n").encode())
    proc.stdin.flush()
    return _answer(proc, rid)


@contextmanager
def _initialized_server(store) -> Iterator[subprocess.Popen]:
    """``kenning.server`` on ``store`` over pipes, past its ``initialize``; killed on the way out if
    the test left it running."""
    proc = subprocess.Popen([sys.executable, "-m", "kenning.server", "--store", str(store)], cwd=store.parent,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"HF_HUB_OFFLINE": "1", **passed_on()})
    proc.lines = PipeLines(proc.stdout)
    try:
        _request(proc, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "test", "version": "1"}})
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_session_with_its_reads_logged(tmp_path, signum):
    store = tmp_path / "store"
    with _initialized_server(store) as proc:
        wrote = _request(proc, 2, "tools/call", {"name": "memory_write", "arguments": {
            "content": "The staging database runs PostgreSQL 16 on port 5433", "scopes": ["infrastructure"]}})
        assert wrote["structuredContent"]["status"] == "committed"
        for rid in range(3, 13):  # read events wait in memory up to half a second before they are written
            _request(proc, rid, "tools/call", {"name": "memory_search", "arguments": {
                "query": "staging database port", "mode": "bm25", "auto_scope": False}})
        proc.send_signal(signum)  # the client stays connected: stdin is still open
        code = proc.wait(timeout=60)
    assert code == 128 + signum, proc.stderr.read().decode()[-2000:]
    assert proc.lines.next(60) == b""  # nothing but answers on stdout, and nothing after them
    with Store(store) as opened:
        assert len(opened.events(kinds=["search"])) == 10
        assert opened.check()["ok"] and len(opened.list(auto_scope=False)) == 1


def test_a_client_gone_without_reading_its_answers_ends_the_session_cleanly(tmp_path):
    """A client killed with writes in flight closes both pipes: the answers meet a broken pipe. The
    session ends as at EOF (exit 0, no traceback in the client's log); what committed is whole."""
    store = tmp_path / "store"
    with _initialized_server(store) as proc:
        proc.stdin.write(b"".join(json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {
            "name": "memory_write", "arguments": {"content": f"The queue worker {i} drains the redis list jobs{i}",
                                                  "scopes": ["infrastructure"], "force": True}}}).encode() + b"\n"
                                  for i in range(30)))
        proc.stdin.flush()
        proc.stdout.close()  # gone before reading a single answer
        proc.stdin.close()
        code = proc.wait(timeout=60)
    log = proc.stderr.read().decode()
    assert code == 0 and "Traceback" not in log and "Error" not in log, log[-3000:]
    with Store(store) as opened:
        written = opened.list(auto_scope=False, record=False)
        assert opened.check()["ok"] and 0 < len(written) <= 30
        assert len({m.content for m in written}) == len(written)


def test_requests_sent_before_stdin_closes_are_answered_before_the_exit(tmp_path):
    """A client may write its requests and close stdin at once (a script piping them in, a hook): the
    session ended at EOF with their handlers cancelled, so a write committed and its answer (the new
    id) never came, nor a search's. Every request read before EOF is now answered, then the server exits."""
    store = tmp_path / "store"
    with _initialized_server(store) as proc:
        calls = [{"name": "memory_write", "arguments": {"content": "The staging database runs PostgreSQL 16 on port 5433",
                                                         "scopes": ["infrastructure"]}},
                 {"name": "memory_search", "arguments": {"query": "staging database", "mode": "bm25", "auto_scope": False}},
                 {"name": "memory_list", "arguments": {"auto_scope": False}}]
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")
        proc.stdin.write(b"".join(json.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": call})
                                  .encode() + b"\n" for i, call in enumerate(calls)))
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 20, "method": "ping"}).encode() + b"\n")
        proc.stdin.close()
        code = proc.wait(timeout=60)
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.read().splitlines())}
    assert code == 0 and set(answers) == {10, 11, 12, 20}, (answers, proc.stderr.read().decode()[-2000:])
    wrote = answers[10]["result"]["structuredContent"]
    assert wrote["status"] == "committed"
    assert "hits" in answers[11]["result"]["structuredContent"]  # calls run side by side: it may precede the write
    assert "memories" in answers[12]["result"]["structuredContent"]
    with Store(store) as opened:
        assert [m.id for m in opened.list(auto_scope=False, record=False)] == [wrote["id"]]
