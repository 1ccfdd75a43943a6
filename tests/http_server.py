"""Start ``kenning serve --http`` as a real process for tests and the load bench; stop it after."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def http_server(store: Path, *args: str, token: str | None = None, host: str = "127.0.0.1",
                env: dict[str, str] | None = None, ready_timeout: float = 60.0) -> Iterator[str]:
    """Run the CLI's HTTP server on a free port; yields its base URL once it answers."""
    port = free_port()
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    environment.pop("KENNING_TOKEN", None)
    if token is not None:
        environment["KENNING_TOKEN"] = token
    command = [sys.executable, "-m", "kenning.cli", "--store", str(store), "serve", "--http",
               "--host", host, "--port", str(port), *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}: {process.stderr.read()}")
            try:
                if httpx.get(f"{base}/openapi.json", headers=headers, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not answer in time")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
