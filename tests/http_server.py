"""Start ``kenning serve --http`` as a real process for tests and the load bench; stop it after."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

_START_LINE = re.compile(r"serving on http://\S+:(\d+)/")


@contextmanager
def http_server(store: Path, *args: str, token: str | None = None, host: str = "127.0.0.1",
                env: dict[str, str] | None = None, ready_timeout: float = 60.0) -> Iterator[str]:
    """Run the CLI's HTTP server on a port the kernel picks (``--port 0``: no other test process can
    take it between choosing and binding, as with a port probed free first); yields its base URL
    once it answers."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    environment.pop("KENNING_TOKEN", None)
    if token is not None:
        environment["KENNING_TOKEN"] = token
    command = [sys.executable, "-m", "kenning.cli", "--store", str(store), "serve", "--http",
               "--host", host, "--port", "0", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    lines: queue.Queue[str | None] = queue.Queue()
    said: list[str] = []
    threading.Thread(target=_drain, args=(process.stderr, lines), daemon=True).start()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        deadline = time.monotonic() + ready_timeout
        base = None
        while base is None:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"the server did not say where it listens in time: {''.join(said)}") from None
            if line is None:
                process.wait()
                raise RuntimeError(f"the server exited with {process.returncode}: {''.join(said)}")
            said.append(line)
            if match := _START_LINE.search(line):
                base = f"http://127.0.0.1:{match.group(1)}"
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}: {''.join(said)}")
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


def _drain(stream, lines: queue.Queue) -> None:
    """Read the server's stderr to its end (so a chatty server never blocks on a full pipe)."""
    for line in stream:
        lines.put(line)
    lines.put(None)
