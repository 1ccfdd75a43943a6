"""A store on a full disk that SQLite cannot open (no room for its -shm file) is named as on a full
disk, not as "not a kenning store": that wording sends a person to look for another store, or to
delete this one."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from types import SimpleNamespace

import pytest

import kenning
from kenning.errors import StorageError
from kenning.store import backend

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def home(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        s.write("The turbine blade inspection happens every spring", scopes=["t"])
    return tmp_path / "s"


def test_a_disk_io_error_at_open_on_a_full_disk_is_named_as_a_full_disk(home, monkeypatch):
    def full(path):
        raise sqlite3.OperationalError("disk I/O error")  # what SQLite says when it cannot size its -shm

    monkeypatch.setattr(backend, "Database", full)
    monkeypatch.setattr(os, "statvfs", lambda _: SimpleNamespace(f_bavail=0, f_frsize=4096))
    with pytest.raises(StorageError, match="is full, so the store cannot be opened") as caught:
        kenning.open_store(home)
    assert "not a kenning store" not in str(caught.value)


def test_a_disk_io_error_with_room_on_the_disk_names_the_disk_not_the_file_kind(home, monkeypatch):
    def failing(path):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(backend, "Database", failing)
    monkeypatch.setattr(os, "statvfs", lambda _: SimpleNamespace(f_bavail=10**6, f_frsize=4096))
    with pytest.raises(StorageError, match="could not be read or written"):
        kenning.open_store(home)


@pytest.mark.slow
def test_a_store_on_a_really_full_tmpfs(home, tmp_path):
    """Where this process may mount a small tmpfs (root on Linux), the real thing; skipped elsewhere."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        shutil.copytree(home, mnt / "s")
        with open(mnt / "fill", "wb") as fill:
            try:
                while True:
                    fill.write(b"\0" * 65536)
                    fill.flush()
            except OSError:
                pass
        run = subprocess.run([sys.executable, "-m", "kenning", "--store", str(mnt / "s"), "search", "turbine",
                              "--mode", "bm25"], capture_output=True, text=True, timeout=120)
        assert run.returncode == 2 and "is full" in run.stderr and "Traceback" not in run.stderr, run.stderr
        (mnt / "fill").unlink()
        again = subprocess.run([sys.executable, "-m", "kenning", "--store", str(mnt / "s"), "search", "turbine",
                                "--mode", "bm25"], capture_output=True, text=True, timeout=120)
        assert again.returncode == 0 and "turbine blade" in again.stdout, again.stderr
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
