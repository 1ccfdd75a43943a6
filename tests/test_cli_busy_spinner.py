"""Commands that run one long call without steps to count (check, export, rename-scope: seconds at 100k
memories) show a spinner on stderr when it is a terminal, and nothing on a pipe or under --json."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from terminal import run_on_a_terminal

import kenning

COMMANDS = {
    "check": (["check"], b"checking the store"),
    "export": (["export", "--markdown", "{tmp}/md"], b"exporting to"),
    "rename-scope": (["rename-scope", "projects:auth", "projects:[/login]"], b"renaming projects:auth to projects:[/login]"),
}


def run(store, args: list[str], terminal: bool) -> tuple[subprocess.CompletedProcess, bytes]:
    """The command with stderr on a pseudo-terminal (as for a person) or a pipe: (the run, what stderr got)."""
    command = [sys.executable, "-m", "kenning.cli", "--store", str(store), *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if terminal:
        return run_on_a_terminal(command, timeout=300, env=env)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, env=env)
    return done, done.stderr


@pytest.mark.slow  # real subprocesses
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_long_command_spins_on_a_terminal_and_stays_quiet_elsewhere(tmp_path, name):
    args, said = COMMANDS[name]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    with kenning.open_store(tmp_path / "s") as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
    done, drawn = run(tmp_path / "s", args, terminal=True)
    assert done.returncode == 0, drawn
    assert said in drawn and said not in done.stdout
    with kenning.open_store(tmp_path / "t") as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
    piped, quiet = run(tmp_path / "t", [*args, "--json"], terminal=False)
    assert piped.returncode == 0, quiet
    assert said not in quiet
