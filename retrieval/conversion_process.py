"""The first-use ONNX conversion, run in a child process.

Converting imports torch and sentence-transformers (~600 MB resident, ~7 s), and a process that
imported them keeps them until it exits: a server that converted on its first search would serve
for its whole life at torch's size, the size the ONNX encoder exists to avoid. So a process that
needs a conversion (``embeddings._convert_or_explain``) starts ``python -m
kenning.retrieval.conversion_process`` for it and relays its steps; only that child ever holds torch.
``kenning models --convert``, a one-shot command, converts in its own process.

The protocol is JSON lines on the child's stdout: ``{"step": message}`` per step, then one of
``{"done": path}``, ``{"error": text, "fix": command-or-null, "cache": bool}`` (``cache``: the model
cache could not be written). The child's stderr is the parent's (a library's warning reaches the user).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from kenning.errors import EmbeddingsUnavailable
from kenning.retrieval.embeddings import REPAIR_COMMAND  # embeddings imports this module only when it converts


class ConversionFailed(EmbeddingsUnavailable):
    """The child could not convert; ``cache`` when the model cache could not be written (its own fix)."""

    def __init__(self, cause: str, fix: str | None = None, cache: bool = False):
        super().__init__(cause, fix=fix)
        self.cache = cache


# the conversion children running now, each with the thread waiting on it (abandon says why)
_children: dict[subprocess.Popen, threading.Thread] = {}


def abandon(thread: threading.Thread) -> None:
    """Stop the conversion ``thread`` waits on: its process is shutting down (a server whose client
    closed stdin waited up to half a minute on a first-use conversion before it could exit). The
    child dies mid-way, as a killed one does; the next conversion takes the folder's lock and clears
    what it left, so the model cache is not left broken. The waiting thread gets ConversionFailed."""
    for child, waiter in list(_children.items()):
        if waiter is thread:
            child.terminate()


def convert_in_child(spec, variant: str, force: bool, step: Callable[[str], None]) -> Path:
    """``onnx_export.ensure(spec, variant, force=force)`` in a child process, ``step`` called with each
    of its progress messages; raises ConversionFailed with the child's own description of what failed."""
    request = {"name": spec.name, "path": str(spec.path), "source": spec.source, "model_id": spec.model_id,
               "variant": variant, "force": force}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the parent's kenning
    child = subprocess.Popen([sys.executable, "-m", "kenning.retrieval.conversion_process", json.dumps(request)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env, text=True, encoding="utf-8")
    answer: dict = {}
    _children[child] = threading.current_thread()
    try:
        for line in child.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue  # something else wrote to stdout; the protocol's lines are JSON
            if not isinstance(message, dict):
                continue
            if "step" in message:
                step(str(message["step"]))
            else:
                answer = message
        code = child.wait()
    except BaseException:  # an interrupt: the conversion must not outlive the process that asked for it
        child.kill()
        child.wait()
        raise
    finally:
        _children.pop(child, None)
    if "done" in answer and code == 0:
        return Path(answer["done"])
    if "error" in answer:
        raise ConversionFailed(str(answer["error"]), answer.get("fix"), bool(answer.get("cache")))
    raise ConversionFailed(f"the converting process {_ending(code)} before it finished; nothing was kept",
                           fix=REPAIR_COMMAND)


def _ending(code: int) -> str:
    """How the child ended without an answer, for the user: a signal by name (SIGKILL is most often the
    kernel's out-of-memory killer), else its exit code."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}" + (" (out of memory?)" if -code == signal.SIGKILL else "")
    return f"ended with exit code {code}"


def parent_gone() -> None:
    """End quietly: the conversion must not outlive the process that asked for it (the next one clears
    what it left), and a traceback about a broken pipe would land on the user's terminal after the
    command they ran had exited. Stdout points at nothing first, so the exit's flush has nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(1)


def main(argv: list[str]) -> int:
    from kenning.retrieval import onnx_export
    from kenning.retrieval.embeddings import ModelSpec, _describe

    request = json.loads(argv[0])

    def say(message: dict) -> None:
        try:
            print(json.dumps(message), flush=True)
        except BrokenPipeError:  # the parent is gone (killed, or SIGTERM from a client): nobody waits for this
            parent_gone()

    spec = ModelSpec(request["name"], Path(request["path"]), request["source"], request["model_id"])
    try:
        path = onnx_export.ensure(spec, request["variant"], step=lambda m: say({"step": m}), force=request["force"])
    except onnx_export.CacheNotWritable as exc:
        say({"error": str(exc), "fix": exc.fix, "cache": True})
        return 1
    except Exception as exc:
        say({"error": _describe(exc), "fix": None, "cache": False})
        return 1
    try:  # the runtime's optimised copy too: making it parses the whole model, ~90 MB the parent's peak spares
        from kenning.retrieval.onnx_encoder import optimized_copy

        optimized_copy(path)
    except Exception:
        pass  # the parent's first load makes it, or loads the file itself
    say({"done": str(path)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
