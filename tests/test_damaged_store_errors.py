"""A store the process cannot use is one line naming the file or folder and what to do, from every
command and from ``open_store``: a damaged ``meta`` page (read by every open), a damaged ``events``
page (written only after a read has answered) and a store folder this user may not enter. Real
SQLite files, the real CLI in a subprocess, file permissions made to bind for root too."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
from unprivileged import run_unprivileged

import kenning
from kenning.errors import StorageError
from kenning.memory import deferred
from kenning.store.db import DB_FILENAME

pytestmark = pytest.mark.sqlite_only  # pages of the SQLite file itself

FACT = "Alice prefers tabs over spaces"


def cli(store, *args, prefix=()):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    env.pop("KENNING_HOME", None)
    env.pop("KENNING_URL", None)
    return subprocess.run([*prefix, sys.executable, "-m", "kenning", "--store", str(store), *args],
                          capture_output=True, text=True, env=env, timeout=300)


def one_line(done) -> str:
    """The single stderr line of a run that printed no traceback."""
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def damage_table(folder, table: str) -> str:
    """Overwrite the root page of ``table`` as a bad disk would; the file's digest afterwards."""
    path = folder / DB_FILENAME
    assert not (folder / (DB_FILENAME + "-wal")).exists()  # closed: every commit is in the file
    with sqlite3.connect(path) as conn:
        page = conn.execute("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?",
                            (table,)).fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with open(path, "r+b") as f:
        f.seek((page - 1) * size)
        f.write(b"\xff" * size)
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store_dir(tmp_path):
    folder = tmp_path / "s"
    with kenning.open_store(folder) as store:
        store.write(FACT, scopes=["t"])
    return folder


def damage_line(folder) -> str:
    return f"the store file {folder / DB_FILENAME} is damaged (database disk image is malformed)"


# ---------------------------------------------------------------- the meta table: read by every open
@pytest.mark.parametrize("args", [("search", "tabs"), ("search", "tabs", "--mode", "bm25", "--json"), ("list",),
                                  ("info",), ("health",), ("rebuild",), ("write", "Bob uses vim", "-s", "t")],
                         ids=lambda a: " ".join(a[:3]))
def test_a_damaged_meta_page_is_one_line_and_exit_2_and_the_file_is_left_as_it_was(store_dir, args):
    """Every open reads the meta table first: its damage is the store's damage, not sqlite3's traceback."""
    before = damage_table(store_dir, "meta")
    done = cli(store_dir, *args)
    line = one_line(done)
    assert done.returncode == 2, done
    assert damage_line(store_dir) in line and "restore it from a backup" in line
    assert hashlib.sha256((store_dir / DB_FILENAME).read_bytes()).hexdigest() == before


def test_check_reports_a_damaged_meta_page_as_its_finding(store_dir):
    """`kenning check` exits 1 on damage (its documented code) and says it in its report, not a crash."""
    damage_table(store_dir, "meta")
    path = store_dir / DB_FILENAME
    done = cli(store_dir, "check")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done
    assert done.stdout.startswith(f"sqlite: the store file {path} is damaged and cannot be opened")
    report = json.loads(cli(store_dir, "check", "--json").stdout)
    assert [p["part"] for p in report["problems"]] == ["sqlite"]
    assert f"sqlite3 {path} .recover" in report["problems"][0]["repair"]


def test_open_store_on_a_damaged_meta_page_raises_the_same_storage_error(store_dir):
    damage_table(store_dir, "meta")
    with pytest.raises(StorageError) as failed:
        kenning.open_store(store_dir)
    assert str(failed.value).startswith(damage_line(store_dir))


# ---------------------------------------------------------------- the events table: after the answer
def test_a_read_whose_event_cannot_be_logged_prints_its_answer_and_one_line_naming_the_damage(store_dir):
    """The answer is complete when the read's event is committed at close: losing that log row to a
    damaged page is one warning line that names the file and its repair, not a traceback."""
    damage_table(store_dir, "events")
    done = cli(store_dir, "search", "tabs", "--mode", "bm25", "--json")
    assert done.returncode == 0, done
    assert [h["snippet"] for h in json.loads(done.stdout)["hits"]] == [FACT]
    line = one_line(done)
    assert line.startswith("the read events of this session were not logged: " + damage_line(store_dir))
    assert "restore it from a backup" in line
    listed = cli(store_dir, "list")
    assert FACT in listed.stdout and damage_line(store_dir) in one_line(listed)
    assert listed.returncode == 0


def test_a_damaged_events_page_still_fails_a_write_and_check_names_it(store_dir):
    damage_table(store_dir, "events")
    write = cli(store_dir, "write", "Bob uses vim for everything", "-s", "t")
    assert write.returncode == 2 and damage_line(store_dir) in one_line(write)
    check = cli(store_dir, "check")
    assert check.returncode == 1 and "Traceback" not in check.stderr, check
    assert check.stdout.startswith(f"sqlite: the store file {store_dir / DB_FILENAME} is damaged")


def test_read_events_a_damaged_page_refuses_are_dropped_not_retried_and_close_succeeds(store_dir, caplog,
                                                                                        monkeypatch):
    """Retrying cannot mend a page: the batch is said once and let go, so no later read or the exit
    trips over it again; the library's close returns. (The flushing thread is held off: this test
    commits the queue itself.)"""
    monkeypatch.setattr(deferred, "FLUSH_AFTER", 3600.0)
    damage_table(store_dir, "events")
    store = kenning.open_store(store_dir)
    assert [h.snippet for h in store.search("tabs", mode="bm25").hits] == [FACT]
    queue = store._s.deferred
    with pytest.raises(StorageError, match="is damaged"):
        queue.flush()
    assert len(queue) == 0
    store.search("tabs", mode="bm25")
    with caplog.at_level(logging.WARNING, logger=deferred.__name__):
        store.close()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and len(queue) == 0
    assert said[0].startswith("the read events of this session were not logged: " + damage_line(store_dir))
    assert "restore it from a backup" in said[0]


# ---------------------------------------------------------------- a folder this user may not enter
def unprivileged_prefix() -> list[str]:
    """A command prefix without the power to ignore file permissions (root has it; a user has not)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be made to bind")
    caps = "-dac_override,-dac_read_search,-fowner"
    return ["setpriv", "--bounding-set", caps, "--inh-caps", caps, "--"]


@pytest.fixture
def closed_folder(store_dir):
    """The store folder with no permissions at all; restored afterwards so it can be deleted."""
    store_dir.chmod(0o000)
    yield store_dir
    store_dir.chmod(0o700)


def test_a_store_folder_it_cannot_enter_is_one_line_naming_permissions(closed_folder):
    prefix = unprivileged_prefix()
    probe = subprocess.run([*prefix, sys.executable, "-c", f"import os; os.stat({str(closed_folder / DB_FILENAME)!r})"],
                           capture_output=True)
    if probe.returncode == 0:
        pytest.skip("this process can enter a folder of mode 000 (a privileged runner)")
    expected = f"error: the store folder {closed_folder} cannot be opened: not even for reading (check its permissions)"
    for args in (("search", "kafka"), ("search", "kafka", "--mode", "bm25", "--json"), ("info",), ("check",),
                 ("list",), ("write", "Kafka brokers restart nightly", "-s", "t")):
        done = cli(closed_folder, *args, prefix=prefix)
        assert done.returncode == 2 and one_line(done) == expected, (args, done.stderr)


def test_open_store_on_a_folder_it_cannot_enter_raises_a_storage_error(closed_folder):
    with pytest.raises(StorageError) as failed:
        run_unprivileged(lambda: kenning.open_store(closed_folder))
    assert str(failed.value) == (f"the store folder {closed_folder} cannot be opened: not even for reading "
                                 "(check its permissions)")


def test_a_store_file_it_cannot_read_raises_a_storage_error_too(store_dir):
    """The unreadable file inside a usable folder: the same kind of error, so a caller catches one type."""
    path = store_dir / DB_FILENAME
    path.chmod(0o000)
    try:
        with pytest.raises(StorageError) as failed:
            run_unprivileged(lambda: kenning.open_store(store_dir))
        assert str(failed.value) == f"{path} cannot be opened: not even for reading (check its permissions)"
    finally:
        path.chmod(0o600)
