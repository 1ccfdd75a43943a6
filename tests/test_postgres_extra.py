"""A postgresql:// store without the postgres extra installed: one line naming the extra, on every
surface, instead of a ModuleNotFoundError traceback (or, from `serve --http`, the http extra named
for psycopg). No server is needed: the driver's import fails before any connection."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import kenning
from kenning.errors import KenningError

URL = "postgresql://kenning:secret@127.0.0.1:1/kenning"
NOT_INSTALLED = "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None  # not installed"
INSTALL = 'pip install "kenning[postgres]"'


@pytest.fixture
def no_driver(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.setitem(sys.modules, "psycopg_pool", None)


def test_the_library_names_the_extra_to_install(no_driver):
    with pytest.raises(KenningError, match=r"postgres extra") as caught:
        kenning.open_store(URL)
    assert INSTALL in str(caught.value) and "secret" not in str(caught.value)


def test_asking_whether_a_store_is_there_names_the_extra_too(no_driver):
    from kenning.store.backend import exists

    with pytest.raises(KenningError, match=r'pip install "kenning\[postgres\]"'):
        exists(URL)


@pytest.mark.parametrize("args", [
    ["search", "auth port"],                   # the fast search path
    ["search", "auth port", "--mode", "hybrid", "--json"],
    ["write", "The auth service listens on port 8443", "--scope", "projects:auth"],
    ["info"],
    ["list"],
    ["serve", "--http"],                       # named the http extra, for psycopg
])
def test_the_command_line_says_one_line_and_exits_2(args, tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-c", f"{NOT_INSTALLED}\nfrom kenning.__main__ import main; main()",
                           "--store", URL, *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and INSTALL in lines[0], done.stderr
    assert "http extra" not in lines[0] and "secret" not in lines[0]
