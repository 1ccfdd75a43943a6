"""Run a command with its stderr on a pseudo-terminal, as for a person: what progress bars and spinners draw."""

from __future__ import annotations

import os
import pty
import select
import subprocess


def run_on_a_terminal(command: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, bytes]:
    """The finished run (stdout captured) and every byte its stderr drew on the terminal."""
    controller, terminal = pty.openpty()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=terminal, **kwargs)
    os.close(terminal)
    drawn = b""
    while select.select([controller], [], [], 0)[0]:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal's other end is closed: everything was read
            break
        if not chunk:
            break
        drawn += chunk
    os.close(controller)
    return done, drawn
