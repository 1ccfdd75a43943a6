"""The store's files: owner-only modes, symlinks resolved deliberately, a repo-local store git-ignored."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from kenning import open_store
from kenning.errors import InvalidInput


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.sqlite_only
def test_a_new_store_is_owner_only_under_a_permissive_umask(tmp_path):
    old = os.umask(0o022)
    try:
        with open_store(tmp_path / "s") as store:
            store.write("the build server is called hopper", scopes=["ops"])
            names = {p.name for p in (tmp_path / "s").iterdir()}
            assert {"kenning.sqlite3", "kenning.sqlite3-wal", "kenning.sqlite3-shm"} <= names
            for name in ("kenning.sqlite3", "kenning.sqlite3-wal", "kenning.sqlite3-shm"):
                assert mode(tmp_path / "s" / name) == 0o600, name
        assert mode(tmp_path / "s") == 0o700
    finally:
        os.umask(old)


@pytest.mark.sqlite_only
def test_an_old_world_readable_store_is_tightened(tmp_path):
    with open_store(tmp_path) as store:
        store.write("the build server is called hopper", scopes=["ops"])
    os.chmod(tmp_path / "kenning.sqlite3", 0o644)
    with open_store(tmp_path):
        assert mode(tmp_path / "kenning.sqlite3") == 0o600


@pytest.mark.sqlite_only
def test_a_dangling_database_symlink_is_refused_and_nothing_is_created(tmp_path):
    target = tmp_path / "elsewhere" / "kenning.sqlite3"
    store_dir = tmp_path / "s"
    store_dir.mkdir()
    (store_dir / "kenning.sqlite3").symlink_to(target)
    with pytest.raises(InvalidInput, match="symlink"):
        open_store(store_dir)
    assert not target.exists() and not target.parent.exists()


@pytest.mark.sqlite_only
def test_a_database_symlink_to_a_file_is_followed(tmp_path):
    real = tmp_path / "real"
    with open_store(real) as store:
        store.write("the build server is called hopper", scopes=["ops"])
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "kenning.sqlite3").symlink_to(real / "kenning.sqlite3")
    with open_store(linked) as store:
        assert store.count() == 1


def test_a_store_in_a_git_repository_ignores_itself(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with open_store(tmp_path / ".kenning") as store:
        store.write("the build server is called hopper", scopes=["ops"])
    out = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
                         capture_output=True, text=True, check=True).stdout
    assert ".kenning" not in out


def test_a_file_where_the_store_folder_should_be_is_an_error(tmp_path):
    (tmp_path / "s").write_text("not a folder")
    with pytest.raises(InvalidInput, match="is a file, not a store folder"):
        open_store(tmp_path / "s")


@pytest.mark.sqlite_only
@pytest.mark.parametrize("command", [["info"], ["search", "hopper", "--mode", "bm25"], ["check"], ["list"]])
def test_a_folder_where_the_database_file_should_be_is_said_alike_by_reads_and_writes(tmp_path, command):
    """Reads and `info` called such a folder "no store here yet; the first `kenning write` creates it" (or
    "write a memory to create it"), and that write then refused: they now say what the write says."""
    (tmp_path / "s" / "kenning.sqlite3").mkdir(parents=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    done = [subprocess.run([sys.executable, "-m", "kenning", "--store", str(tmp_path / "s"), *args],
                           capture_output=True, text=True, env=env, timeout=300)
            for args in (command, ["write", "the build server is called hopper", "--scope", "ops"])]
    expected = f"error: {tmp_path / 's' / 'kenning.sqlite3'} is not a file; move it away so kenning can create its database there\n"
    assert [(d.returncode, d.stderr) for d in done] == [(2, expected)] * 2
    assert os.listdir(tmp_path / "s") == ["kenning.sqlite3"]
