"""Start the HTTP server: refuse an unsafe bind before opening anything, then run uvicorn."""

from __future__ import annotations

import os
import sys

from .app import DEFAULT_HOST, DEFAULT_PORT, create_app
from .security import DEFAULT_MAX_BODY, check_bind


def serve(
    store_dir: str | os.PathLike | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> None:
    """Serve the store until interrupted. Binding beyond loopback needs a token (InvalidInput otherwise)."""
    import uvicorn

    check_bind(host, token)
    app = create_app(store_dir, token=token, max_body=max_body)
    shown = f"[{host}]" if ":" in host else host
    print(f"kenning: serving on http://{shown}:{port}/ (API reference at /docs){' with a token' if token else ''}",
          file=sys.stderr, flush=True)
    # no proxy headers: the client address is the socket's, and Host checks see what the client sent
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=False, server_header=False,
                date_header=True, timeout_graceful_shutdown=5,
                # longer than uvicorn's 5 s, so a busy client's kept-alive connection is not closed
                # just as it sends its next request (seen as resets under load)
                timeout_keep_alive=30)
