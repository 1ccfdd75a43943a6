"""Who may talk to the server, and how much: loopback by default, a bearer token otherwise, bounded bodies.

One ASGI layer in front of every route (the page, the static files and the docs included):
- with a token, each request needs ``Authorization: Bearer <token>`` (or the page's cookie
  holding the same token), compared in constant time; else 401;
- without a token the server only listens on loopback, and then also refuses requests whose
  Host is not a loopback name (a DNS-rebinding page could otherwise drive it from a browser);
- a state-changing request whose Origin is another site is refused (no CSRF from other pages;
  CORS stays off, so no other origin can read an answer either), and so is any request a browser
  marks as made by another site's page (``Sec-Fetch-Site``: an image, script, frame or no-cors
  fetch; only a person's top-level navigation passes), since a search writes too (its log and
  the outcomes its hits settle into);
- a body larger than ``max_body`` is refused with 413 before any route sees it;
- every answer says that no page may frame it (a browser that sends no ``Sec-Fetch-*`` headers
  framed the page inside another site's, under a click meant for something else), that its type is
  not to be guessed, and that the page runs its own script only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import unquote, urlsplit

from kenning.errors import InvalidInput

TOKEN_ENV = "KENNING_TOKEN"
COOKIE = "kenning_token"
DEFAULT_MAX_BODY = 2 * 1024 * 1024  # a memory body is at most 1 MiB; JSON escaping can double it
LOOPBACK_NAMES = ("localhost", "localhost.", "ip6-localhost")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """True for localhost names and loopback addresses (127.0.0.0/8, ::1), with or without [brackets]."""
    host = host.strip().strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def usable_token(token: str | None) -> str | None:
    """The token without the blanks around it, or None when nothing is left. A blank token (a config
    whose secret was never filled in: KENNING_TOKEN=" ") opened a public bind, and the cookie
    ``kenning_token=%20`` then let anyone in; a token ending in a blank could never be sent, as a
    header's value loses its blanks."""
    if token is None:
        return None
    return token.strip() or None


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token: anyone on the network could read and write."""
    if not is_loopback(host) and not usable_token(token):
        raise InvalidInput(
            f"refusing to listen on {host.strip() or 'every interface (an empty host)'} without a token: anyone "
            "who can reach it could read and change "
            f"every memory; set one with --token or ${TOKEN_ENV} (or listen on 127.0.0.1)")


def _host_name(value: str) -> str:
    """The host part of a Host header or an Origin URL ('[::1]:8765' -> '::1')."""
    netloc = urlsplit(value).netloc if "://" in value else value
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


class Guard:
    """The ASGI layer described in the module docstring."""

    def __init__(self, app: Callable, token: str | None, max_body: int = DEFAULT_MAX_BODY):
        if max_body < 1:
            raise InvalidInput("the body limit must be at least 1 byte")
        self.app = app
        token = usable_token(token)
        self.token = token.encode("utf-8") if token else None
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_headers(send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            if refusal[0] == 401 and scope["method"] == "GET" and "text/html" in headers.get("accept", ""):
                await _answer_html(send, 401, LOGIN_PAGE, refusal[2])
            else:
                await _answer(send, *refusal)
            return
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            await _answer(send, 413, f"the request body is larger than the limit of {self.max_body} bytes")
            return
        body, complete = await _read_body(receive, self.max_body)
        if body is None:
            if complete:  # over the limit while streaming
                await _answer(send, 413, f"the request body is larger than the limit of {self.max_body} bytes")
            return  # the client went away
        await self.app(scope, _replay(body, receive), send)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str, dict[str, str]] | None:
        if self.token is not None:
            if not self._authorised(headers):
                return 401, "a bearer token is required: send Authorization: Bearer <token>", {
                    "www-authenticate": 'Bearer realm="kenning"'}
        elif not is_loopback(_host_name(headers.get("host", ""))):
            return 403, "this server answers only to localhost names (Host header); use http://127.0.0.1", {}
        if headers.get("sec-fetch-site") in ("cross-site", "same-site") and not _navigation(scope, headers):
            # another site's page (an <img>, <script>, <iframe> or no-cors fetch) asking for a GET: a search
            # is logged and its hits settle as applied, so even reads write; the person following a link is not refused
            return 403, "requests from another site's page are refused (Sec-Fetch-Site); open the page itself", {}
        origin = headers.get("origin")
        if scope["method"] not in SAFE_METHODS and origin is not None:
            same_site = "://" in origin and urlsplit(origin).netloc.lower() == headers.get("host", "").lower()
            if not same_site:
                return 403, "cross-site requests are refused (the Origin is another site)", {}
        return None

    def _authorised(self, headers: dict[str, str]) -> bool:
        given = b""
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            given = value.strip().encode("latin-1")
        elif "cookie" in headers:
            cookie = SimpleCookie()
            try:
                cookie.load(headers["cookie"])
            except Exception:  # a malformed Cookie header is no credential, not an error
                cookie = SimpleCookie()
            if COOKIE in cookie:
                given = unquote(cookie[COOKIE].value).encode("utf-8")
        return hmac.compare_digest(given, self.token)


def _navigation(scope: Scope, headers: dict[str, str]) -> bool:
    """A person opening a page (a link followed, a bookmark): a top-level GET of a document."""
    return (scope["method"] == "GET" and headers.get("sec-fetch-mode") == "navigate"
            and headers.get("sec-fetch-dest", "document") == "document")


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, bool]:
    """The whole body, or (None, True) past the limit, or (None, False) when the client left."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None, False
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None, True
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


# what a browser without the token sees: one field that stores the token as a same-site cookie
LOGIN_PAGE = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>kenning: token</title></head>
<body style="font:15px system-ui,sans-serif;max-width:30rem;margin:4rem auto">
<h1>kenning</h1><p>This server needs its token (the one given with --token or ${TOKEN_ENV}).</p>
<form id="login"><input type="password" name="token" autofocus> <button>Open</button></form>
<script>document.getElementById("login").addEventListener("submit", function (e) {{
  e.preventDefault();
  document.cookie = "{COOKIE}=" + encodeURIComponent(this.token.value) + "; path=/; SameSite=Strict";
  location.reload();
}});</script></body></html>"""


def _policy(script: str) -> str:
    return (f"default-src 'self'; script-src {script}; style-src 'self' 'unsafe-inline'; object-src 'none'; "
            "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


_LOGIN_SCRIPT = LOGIN_PAGE.split("<script>", 1)[1].split("</script>", 1)[0]
_LOGIN_POLICY = _policy("'sha256-%s'" % base64.b64encode(hashlib.sha256(_LOGIN_SCRIPT.encode()).digest()).decode())
SECURITY_HEADERS = {
    "content-security-policy": _policy("'self'"),  # the page's one script file; a stored text never runs
    "x-frame-options": "DENY",  # frame-ancestors for browsers that read only this
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def _with_headers(send: Send) -> Send:
    """send, adding SECURITY_HEADERS to the start of each answer (those it sets itself are kept)."""
    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


async def _answer_html(send: Send, status: int, page: str, extra: dict[str, str]) -> None:
    payload = page.encode("utf-8")
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(payload)).encode()),
               (b"content-security-policy", _LOGIN_POLICY.encode())]
    headers += [(k.encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def _answer(send: Send, status: int, message: str, extra: dict[str, str] | None = None) -> None:
    payload = json.dumps({"error": message}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
