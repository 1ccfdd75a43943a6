"""Status codes for the library's answers: a caller's mistake is 400, a missing id 404, a refusal 409/422.

The body of every error is ``{"error": "<the library's one-line message>"}``, plus ``gate``,
``code`` and ``hint`` when a gate or a live setting refused. Nothing a caller sends can reach a
500: validation failures of the request itself are 400 with one line naming the field. The
server's own trouble is not the caller's: a store it may only read is 403 (``code: read_only``),
a storage failure (a full disk, a lock held too long) or a missing encoder 503 (``code: unavailable``).
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from kenning.errors import EmbeddingsUnavailable, KenningError, NotFound, ReadOnlyStore, SearchDisabled, Stale, StorageError
from kenning.memory.gates import GateRefused
from kenning.store.ids import ID_IN_TEXT as _ID
from kenning.store.models import WriteResult

# a refusal by a live setting is a conflict with the store's state; a gate's verdict on the
# content is unprocessable content
SETTING_GATES = ("write_enabled",)

WRITE_STATUS = {
    "committed": 201,
    "pending": 202,
    "duplicate": 409,
    "previously_removed": 409,
    "expired": 410,
    "not_found": 404,
}


# the library and the gates word their messages for the CLI or the MCP tools; an HTTP client reads routes and fields
_TO_HTTP: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"Rely on {_ID}, or memory_update it"), r"Rely on \1, or change it with PATCH /memories/\1"),
    (re.compile(rf"\bmemory_update {_ID}"), r"PATCH /memories/\1"),
    (re.compile(rf"\bmemory_restore {_ID}"), r"POST /memories/\1/restore"),
    (re.compile(r"\(?\bepisode_write\b\)?"), "(an MCP tool: the HTTP API writes no episodes)"),
    (re.compile(r"`kenning list` shows the ids"), "GET /memories lists the ids"),
    (re.compile(r"`kenning restore ([^`]+)`"), r"POST /memories/\1/restore"),
    (re.compile(r"e\.g\. --reason '([^']*)'"), r"e.g. DELETE /memories/ID?reason=\1"),
    (re.compile(r"e\.g\. --scope (\S+)"), r'e.g. "scopes": ["\1"]'),
    (re.compile(r"\b(force|acknowledge_\w+)=True"), r'"\1": true'),
]


def for_http(text: str | None) -> str | None:
    """A library message or gate hint restated for an HTTP client: routes and JSON fields."""
    if text is None:
        return None
    for pattern, replacement in _TO_HTTP:
        text = pattern.sub(replacement, text)
    return text


def http_result(result: WriteResult) -> dict[str, Any]:
    """A write result's JSON with its reason and hint in HTTP terms; a refusal (a 4xx) also carries its
    reason as ``error``, the key every other error body has (a client read it on a refused DELETE and
    found none on a refused POST)."""
    body = result.to_dict()
    for key in ("reason", "hint"):
        if body.get(key):
            body[key] = for_http(body[key])
    if write_status(result) >= 400:
        body = {"error": body.get("reason") or result.status.replace("_", " "), **body}
    return body


def refusal_status(gate: str | None) -> int:
    return 409 if gate in SETTING_GATES else 422


def write_status(result: WriteResult) -> int:
    """The status of a write (or confirm) result: created, accepted (pending), or why not."""
    if result.status not in WRITE_STATUS:  # a gate's own status (transient_warning, scope_mismatch, ...)
        return refusal_status(result.gate)
    return WRITE_STATUS[result.status]


def error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **{k: v for k, v in extra.items() if v is not None}}, status_code=status)


def _kenning_error(_: Request, exc: KenningError) -> JSONResponse:
    if isinstance(exc, GateRefused):
        r = exc.refusal
        return error(refusal_status(r.gate), for_http(str(exc)), gate=r.gate, code=r.status, reason=r.reason,
                     hint=for_http(r.hint), matched=r.matched or None, override=r.override)
    if isinstance(exc, SearchDisabled):
        return error(409, str(exc), setting="search_enabled")
    if isinstance(exc, NotFound):
        return error(404, for_http(str(exc)))
    if isinstance(exc, Stale):  # changed since the caller read it: a conflict with the store's state
        return error(409, str(exc), code="stale")
    # the server's own trouble, not the caller's mistake: a 400 would tell a client not to send it again
    if isinstance(exc, ReadOnlyStore):  # this server may not write its store: no write will ever pass
        return error(403, str(exc), code="read_only")
    if isinstance(exc, (StorageError, EmbeddingsUnavailable)):  # a full disk, a lock held too long ...: retry later
        return error(503, for_http(str(exc)), code="unavailable")
    return error(400, for_http(str(exc)))


# the parts of a location pydantic adds for a union's member ("scopes.list[str]"): a type, not a field
_TYPE_TAG = re.compile(r"^(?:[a-z-]+\[.*\]|str|int|float|bool|none|dict|list|function-[a-z]+\[.*\])$")


def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's 422 list becomes a 400 with one line: where, and what is wrong."""
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", ())
                     if p not in ("body", "query", "path") and not _TYPE_TAG.match(str(p))) or "request"
    message = first.get("msg", "invalid request")
    if first.get("type") == "json_invalid":
        where, message = "body", "the body is not valid JSON"
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if where == "request" and first.get("loc", ())[:1] == ("body",) and kind != "application/json":
        # a JSON body sent as text/plain or a form was "Input should be a valid dictionary ..."
        where, message = "body", f"send a JSON object with content-type: application/json (got {kind or 'none'})"
    return error(400, f"{where}: {message}")


def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
    return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)


def install(app: FastAPI) -> None:
    app.add_exception_handler(KenningError, _kenning_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
