"""MCP over stdio with every line answered: malformed JSON-RPC gets an error response, not silence.

The SDK's stdio transport drops a line it cannot parse or validate (``params: "x"``), so the
client waits forever; and a lone surrogate (``"\\ud800"``) in a request cannot be echoed back as
UTF-8. This transport screens each line first and answers those itself, with JSON-RPC's codes:
-32700 parse error, -32600 invalid request, -32602 invalid params. Good lines pass through as is; a
batch (a JSON array) is taken apart into its messages, each answered on its own. At EOF the input
ends only once every request read before it has its answer written.

It also ends the session cleanly on SIGTERM (what an MCP client sends when the server does not exit
within its grace period after closing stdin) and SIGINT: the calls in progress finish and the caller
closes the store, so the read events still queued are written (Python's default for SIGTERM dies on
the spot, and SIGINT left the server waiting on stdin for a line that might never come). Stdin is
read on a daemon thread for that reason: a read waiting for the client never holds the exit.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp import types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

if sys.version_info >= (3, 11):
    _Group = BaseExceptionGroup
else:  # anyio brings the backport there
    from exceptiongroup import BaseExceptionGroup as _Group

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def screen(line: str) -> tuple[Any, int, str] | None:
    """None for a line the SDK can take; else (id, code, message) of the error to answer with.
    The id is None when the line has none worth answering (a notification gets ``...``)."""
    if not line.strip():
        return ..., 0, ""  # a blank line: nothing to answer
    try:
        obj = json.loads(line)
    except ValueError as exc:
        return None, PARSE_ERROR, f"parse error: {exc}"
    except RecursionError:
        return None, PARSE_ERROR, "parse error: the JSON is nested too deeply"
    try:
        if any("\udc80" <= ch <= "\udcff" for ch in line):  # bytes the UTF-8 decoder could not read
            return _reply_to(obj), INVALID_PARAMS, "invalid params: the request is not valid UTF-8; send UTF-8 text"
        return _screened(obj)
    except RecursionError:  # parsed, but too deep to walk (Python's limit is below json's)
        return _reply_to(obj), INVALID_REQUEST, "invalid request: the message is nested too deeply"


def _reply_to(obj: Any) -> Any:
    """The id an error about a parsed line answers: its own, None when it has none usable, ``...``
    (no answer) for a notification."""
    if isinstance(obj, dict) and "method" in obj and "id" not in obj:
        return ...
    rid = obj.get("id") if isinstance(obj, dict) else None
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None


def _screened(obj: Any) -> tuple[Any, int, str] | None:
    """``screen`` of a parsed line."""
    reply = _reply_to(obj)
    if reply is None and isinstance(obj, dict) and "method" in obj and "id" in obj:
        # the SDK would take it for a notification and never answer: a client waiting on it would hang
        return None, INVALID_REQUEST, "invalid request: id: must be a string or an integer"
    if _has_lone_surrogate(obj):
        return reply, INVALID_PARAMS, \
            "invalid params: a string holds a lone surrogate (such as \\ud800); send valid Unicode"
    try:
        types.jsonrpc_message_adapter.validate_python(obj, by_name=False)
    except Exception as exc:  # pydantic's ValidationError, whatever shape the SDK's union takes
        first = getattr(exc, "errors", lambda: [{}])()[0] if hasattr(exc, "errors") else {}
        where = ".".join(str(p) for p in first.get("loc", ())[-2:]) or "message"
        detail = first.get("msg", "not a JSON-RPC 2.0 message")
        code = INVALID_PARAMS if isinstance(obj, dict) and "params" in obj and not isinstance(obj["params"], dict) \
            else INVALID_REQUEST
        return reply, code, f"invalid request: {where}: {detail}"
    return None


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return not value.isprintable() and any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


class _ScreenedStdin:
    """An async line source for the SDK's stdio transport that keeps back the lines it answers itself."""

    def __init__(self) -> None:
        self._replies: Any = None
        self._ready = anyio.Event()
        self._unanswered: set[Any] = set()  # ids of the requests passed on whose answer is not written yet
        self._answer_sent = anyio.Event()

    def attach(self, write_stream: Any) -> None:
        self._replies = write_stream
        self._ready.set()

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        send, received = anyio.create_memory_object_stream[str](1)
        taken = threading.Event()
        threading.Thread(target=_pump, args=(sys.stdin.fileno(), send, taken, anyio.lowlevel.current_token()),
                         name="kenning-stdin", daemon=True).start()
        async for received_line in received:
            taken.set()
            for line in unbatched(received_line):
                verdict = screen(line)
                if verdict is None:
                    self._passing(line)
                    yield line
                    continue
                rid, code, message = verdict
                if rid is ...:
                    continue  # a blank line or a notification: JSON-RPC answers neither
                await self._ready.wait()
                error = types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))
                await self._replies.send(SessionMessage(error))
        # EOF: the SDK ends the session when its input ends, cancelling the calls still running, so a
        # client that wrote its requests and closed stdin got no answers (a write committed, its id
        # never said). Input ends once every request passed on is answered (a SIGTERM still ends it now).
        while self._unanswered:
            await self._answer_sent.wait()
            self._answer_sent = anyio.Event()

    def _passing(self, line: str) -> None:
        """Note a request the SDK will answer; a notifications/cancelled withdraws one (never answered)."""
        message = json.loads(line)
        if not isinstance(message, dict):
            return
        if "id" in message and "method" in message:
            self._unanswered.add(message["id"])
        elif message.get("method") == "notifications/cancelled" and isinstance(message.get("params"), dict):
            self._unanswered.discard(message["params"].get("requestId"))

    def answered(self, message: Any) -> None:
        """The session wrote ``message``: an answer settles its request."""
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
            self._unanswered.discard(message.id)
            self._answer_sent.set()


class _Answers:
    """The session's output stream, telling the stdin source which requests have their answer."""

    def __init__(self, stream: Any, stdin: _ScreenedStdin) -> None:
        self._stream, self._stdin = stream, stdin

    async def send(self, item: Any) -> None:
        await self._stream.send(item)
        self._stdin.answered(getattr(item, "message", None))

    async def __aenter__(self) -> _Answers:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def unbatched(line: str) -> list[str]:
    """A JSON-RPC batch (a JSON array, which protocol 2025-03-26 requires a server to take) as its
    messages, a line each, so each is screened and answered on its own line with its own id: the SDK
    reads one message a line, and the batch's one error with no id left its requests unanswered.
    Any other line as it is."""
    if not line.lstrip().startswith("["):
        return [line]
    try:
        batch = json.loads(line)
        return [json.dumps(message) + "\n" for message in batch] if isinstance(batch, list) and batch else [line]
    except (ValueError, RecursionError):
        return [line]  # not JSON, or too deep: screen answers the line


def _pump(fd: int, send: Any, taken: threading.Event, token: Any) -> None:
    """Hand stdin's lines to the event loop until EOF (a last line without a newline included), one
    at a time: the next waits until the session took the last (``taken``). ``os.read``, not
    sys.stdin: a daemon thread blocked inside a buffered reader's lock aborts the interpreter's exit;
    and ``send_nowait`` from here, so no send of this thread is left pending when the loop ends."""
    try:
        for line in _split_lines(fd):
            # surrogateescape keeps a byte that is no UTF-8 visible to ``screen`` (as U+DC80-U+DCFF),
            # which refuses its line; "replace" stored such text silently altered (U+FFFD)
            text = line.decode("utf-8", "surrogateescape")
            while True:
                taken.clear()
                try:
                    anyio.from_thread.run_sync(send.send_nowait, text, token=token)
                    break
                except anyio.WouldBlock:
                    taken.wait()
        anyio.from_thread.run_sync(send.close, token=token)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError):
        return  # the session ended (a signal, the client gone) or the event loop did: nobody reads on


def _split_lines(fd: int):
    """The lines read from ``fd``, each ending in a newline; a CR or CRLF ends a line too, as the
    text reader the SDK uses reads them (universal newlines)."""
    parts: list[bytes] = []
    while chunk := os.read(fd, 1 << 16):
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            parts.append(piece)
            yield from (line + b"\n" for line in b"".join(parts).split(b"\r"))
            parts = []
        if rest:
            parts.append(rest)
    if parts:
        yield from (line + b"\n" for line in b"".join(parts).split(b"\r"))


async def run(server: Any) -> int | None:
    """Serve ``server`` (an MCPServer) over stdio with screened input until the client closes stdin
    (None) or a SIGTERM or SIGINT arrives (its number; the calls in progress finish first)."""
    stdin = _ScreenedStdin()
    stopped_by: list[int] = []
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_stop_on_signal, tasks.cancel_scope, stopped_by)
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                stdin.attach(write_stream)
                low = server._lowlevel_server
                await low.run(read_stream, _Answers(write_stream, stdin), low.create_initialization_options())
            tasks.cancel_scope.cancel()
    except _Group as group:
        # the client closed its end (killed, or gone without reading its answers): the session ends
        # as at EOF, not with a traceback and exit 1; the calls it sent are answered to no one
        _, rest = group.split(BrokenPipeError)
        if rest is not None:
            raise rest from None
    return stopped_by[0] if stopped_by else None


async def _stop_on_signal(scope: anyio.CancelScope, stopped_by: list[int]) -> None:
    try:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                stopped_by.append(int(signum))
                scope.cancel()
                return
    except NotImplementedError:  # Windows: no signal receiver; the default handling stays
        await anyio.sleep_forever()
