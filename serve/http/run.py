"""Start the HTTP server: refuse an unsafe bind before opening anything, take the port, then run uvicorn."""

from __future__ import annotations

import errno
import os
import socket
import sys

from kenning.errors import KenningError

from .app import DEFAULT_HOST, DEFAULT_PORT, create_app
from .security import DEFAULT_MAX_BODY, check_bind, usable_token


def serve(
    store_dir: str | os.PathLike | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> None:
    """Serve the store until interrupted. Binding beyond loopback needs a token (InvalidInput otherwise);
    port 0 takes any free port, and the start line names the one taken."""
    import uvicorn

    token = usable_token(token)
    check_bind(host, token)
    sock = listen_on(host, port)
    try:
        app = create_app(store_dir, token=token, max_body=max_body)
    except BaseException:
        sock.close()
        raise
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    print(f"kenning: serving on http://{shown}:{sock.getsockname()[1]}/ (API reference at /docs)"
          f"{' with a token' if token else ''}", file=sys.stderr, flush=True)
    # no proxy headers: the client address is the socket's, and Host checks see what the client sent
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", proxy_headers=False, server_header=False,
                            date_header=True, timeout_graceful_shutdown=5,
                            # longer than uvicorn's 5 s, so a busy client's kept-alive connection is not closed
                            # just as it sends its next request (seen as resets under load)
                            timeout_keep_alive=30)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    if not server.started:  # the app failed its startup: uvicorn said why; not a clean stop
        raise SystemExit(3)


def listen_on(host: str, port: int) -> socket.socket:
    """The server's socket, bound and listening before anything is printed: a port another process holds
    is one line saying so (not a start line followed by uvicorn's own error), port 0 is a free port the
    kernel picks, which no other process can take between choosing and binding it, and a client that
    connects on reading the start line waits in the backlog until uvicorn accepts (it was refused while
    the server started: ~0.3 s at 100k memories on a loaded machine)."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # "[::1]" as in a URL
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise KenningError(f"port {port} on {host} is in use (another server?); choose another with --port, "
                               "or --port 0 for any free one") from None
        raise KenningError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)  # uvicorn's own backlog, which it sets again on the same socket
    sock.set_inheritable(True)
    return sock
