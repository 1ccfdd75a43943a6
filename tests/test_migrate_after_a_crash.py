"""A migrate killed before its one copy transaction committed leaves an empty store at the
destination; looking at it (info, check) must not make the re-run refuse it as "holding a store"."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kenning
from kenning.store import transfer
from kenning.store.backend import open_backend

pytestmark = pytest.mark.sqlite_only  # folder to folder


@pytest.fixture
def source(tmp_path):
    with kenning.open_store(tmp_path / "src") as s:
        for text in ("The auth service listens on port 8443", "Deploys go through the staging cluster"):
            s.write(text, scopes=["projects:auth"])
    return tmp_path / "src"


def killed_migrate(destination) -> None:
    """What a migrate killed during its copy leaves: the destination opened (created), nothing committed."""
    open_backend(destination).db.close()


def test_a_migrate_run_again_after_a_crash_copies_into_the_empty_store_it_left(source, tmp_path):
    dst = tmp_path / "dst"
    killed_migrate(dst)
    cli = [sys.executable, "-m", "kenning", "--store", str(dst)]
    for look in (["info"], ["check"]):  # what one runs to see what the crash left
        assert subprocess.run([*cli, *look], capture_output=True, text=True).returncode == 0
    transfer.migrate(source, dst)  # was: InvalidInput "already holds a store"
    with kenning.open_store(dst) as copy:
        assert copy.count() == 2
        assert copy.search("auth port", mode="bm25").hits[0].snippet == "The auth service listens on port 8443"
        assert copy.check()["ok"]


def test_a_destination_holding_a_memory_or_a_setting_is_still_refused(source, tmp_path):
    with kenning.open_store(tmp_path / "a") as s:
        s.write("Something already lives here", scopes=["projects:x"])
    with kenning.open_store(tmp_path / "b") as s:
        s.configure(default_mode="bm25")
    for taken in ("a", "b"):
        with pytest.raises(kenning.InvalidInput, match="already holds a store"):
            transfer.migrate(source, tmp_path / taken)
