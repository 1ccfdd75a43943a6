"""Opening a store another process keeps locked waits for the lock instead of failing.

SQLite's default wait is 5 s; a store opened while another process (a long write, a backup with an
exclusive lock) holds the file must wait as long as a writer does (30 s), whether it opens for writing
or, without write access, for reading. The other process here is a real one holding SQLite's
exclusive lock for a little over 5 s."""

from __future__ import annotations

import subprocess
import sys

import pytest
from unprivileged import run_unprivileged

from kenning.store.db import DB_FILENAME, Database

pytestmark = [pytest.mark.sqlite_only, pytest.mark.slow]

HOLD_SECONDS = 6.5  # past SQLite's default 5 s wait, well inside kenning's 30 s

# Takes the file's exclusive lock (kept until the connection closes), writes a mark, says so, holds it.
HOLDER = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA locking_mode=EXCLUSIVE")
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO meta(key, value) VALUES ('held by', 'the other process')")
conn.execute("COMMIT")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.close()
"""


@pytest.fixture
def store_dir(tmp_path):
    """A store's file (schema of this kenning, nothing written yet), closed."""
    directory = tmp_path / "store"
    directory.mkdir()
    Database(directory / DB_FILENAME).close()
    yield directory
    for path in directory.iterdir():
        path.chmod(0o600)


def hold_lock(path):
    """A process holding ``path``'s exclusive lock for HOLD_SECONDS, returned once it holds it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(HOLD_SECONDS)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_opening_a_store_another_process_keeps_locked_waits_and_sees_its_write(store_dir):
    holder = hold_lock(store_dir / DB_FILENAME)
    try:
        db = Database(store_dir / DB_FILENAME)  # PRAGMA journal_mode waits here for the holder
        try:
            assert db.read_only is False
            assert db.get_meta("held by") == "the other process"
            with db.transaction() as conn:
                Database.set_meta(conn, "after", "written")
            assert db.get_meta("after") == "written"
        finally:
            db.close()
    finally:
        assert holder.wait(timeout=60) == 0


def test_a_reader_without_write_access_waits_for_the_lock_and_then_follows_the_owner(store_dir):
    """Waiting matters for a reader too: given up after 5 s, the open would fall back to reading the
    file as immutable, and never see a later write."""
    path = store_dir / DB_FILENAME
    path.chmod(0o400)
    holder = hold_lock(path)
    try:
        reader = run_unprivileged(lambda: Database(path))
    finally:
        assert holder.wait(timeout=60) == 0
    try:
        assert reader.read_only is True
        assert reader.get_meta("held by") == "the other process"
        path.chmod(0o600)
        owner = Database(path)
        try:
            with owner.transaction() as conn:
                Database.set_meta(conn, "later", "seen")
        finally:
            owner.close()
        assert reader.get_meta("later") == "seen"
    finally:
        reader.close()
