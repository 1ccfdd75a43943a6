"""``kenning clean`` on real folders: what kenning left behind goes, knowledge and people's files stay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from kenning.recall import markdown
from kenning.recall.clean import STALE_AFTER_S, clean
from kenning.recall.files import LOCK_NAME, TEMP_MARK

DEAD_PID = 2**22 + 4321  # above the default pid_max, so no live process has it


@pytest.fixture
def litter(store, tmp_path):
    """A mirror with an abandoned lock, temp files, an emptied kenning folder and a person's own empty folder."""
    store.write("The auth service listens on port 8443", scopes=["projects:auth"])
    store.write("The on-call rota changes every Monday", scopes=["ops"])
    folder = tmp_path / "notes"
    markdown.export(store, folder)
    (folder / "ops" / "MEMORY.md").unlink()  # a person deleted the file: its folder, kenning's, is empty
    (folder / "mine").mkdir()  # a person's own empty folder
    (folder / LOCK_NAME).write_text(json.dumps({"pid": DEAD_PID, "host": os.uname().nodename, "at": 0}))
    dead_tmp = folder / "projects" / f".MEMORY.md{TEMP_MARK}{DEAD_PID}-1"
    dead_tmp.write_text("half a file")
    live_tmp = folder / f".USER.md{TEMP_MARK}{os.getpid()}-7"
    live_tmp.write_text("being written")
    old_index_tmp = store.directory / ".vectors.idx.abc123.tmp"
    old_index_tmp.write_bytes(b"\0" * 16)
    os.utime(old_index_tmp, (time.time() - 2 * STALE_AFTER_S,) * 2)
    new_index_tmp = store.directory / ".vectors.idx.def456.tmp"
    new_index_tmp.write_bytes(b"\0" * 16)
    return folder, {"lock": folder / LOCK_NAME, "dead_tmp": dead_tmp, "live_tmp": live_tmp, "ops": folder / "ops",
                    "old_index_tmp": old_index_tmp, "new_index_tmp": new_index_tmp, "mine": folder / "mine"}


def test_dry_run_lists_and_removes_nothing(store, litter):
    _, paths = litter
    report = clean(store, dry_run=True)
    listed = {r["path"] for r in report["removed"]}
    assert listed == {str(paths[k]) for k in ("lock", "dead_tmp", "ops", "old_index_tmp")}
    assert all(p.exists() for p in paths.values())


@pytest.mark.sqlite_only  # about the files beside the SQLite database
def test_clean_removes_leftovers_and_never_knowledge(store, litter):
    folder, paths = litter
    before = store.count()
    report = clean(store)
    assert {r["path"] for r in report["removed"]} == {str(paths[k]) for k in ("lock", "dead_tmp", "ops", "old_index_tmp")}
    for kept in ("live_tmp", "new_index_tmp", "mine"):
        assert paths[kept].exists(), kept
    assert not paths["lock"].exists() and not paths["ops"].exists()
    assert (folder / "projects" / "auth" / "MEMORY.md").exists() and store.count() == before
    assert (store.directory / "kenning.sqlite3").exists()
    assert clean(store)["removed"] == []  # nothing left to do
    markdown.sync(store, folder)  # the lock is gone, so the folder is usable again


@pytest.mark.sqlite_only  # about the files beside the SQLite database
def test_clean_never_removes_a_folder_outside_the_export_a_manifest_names(store, tmp_path):
    """The manifest lies in a folder people edit and share: one listing '../x', an absolute path or a
    link out of the export as a folder kenning made must not make clean remove that (empty) folder."""
    store.write("The auth service listens on port 8443", scopes=["projects:auth"])
    folder = tmp_path / "notes"
    markdown.export(store, folder)
    outside = [tmp_path / "empty-sibling", tmp_path / "empty-absolute", tmp_path / "linked-target"]
    for path in outside:
        path.mkdir()
    (folder / "link").symlink_to(tmp_path / "linked-target")
    manifest_path = folder / markdown.MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text())
    manifest["folders"] += ["../empty-sibling", str(tmp_path / "empty-absolute"), "link"]
    manifest_path.write_text(json.dumps(manifest))
    listed = clean(store, dry_run=True)
    report = clean(store)
    assert all(path.is_dir() for path in outside)
    named = json.dumps([listed, report])
    assert "empty-sibling" not in named and "empty-absolute" not in named and "linked-target" not in named


def test_clean_never_removes_by_age(store, tmp_path):
    store.write("Backups keep 14 daily snapshots", scopes=["ops"])
    folder = tmp_path / "notes"
    markdown.export(store, folder)
    long_ago = time.time() - 10 * 365 * 86400
    database = store.directory / "kenning.sqlite3"  # a PostgreSQL store has no such file
    for path in [*folder.rglob("*"), *([database] if database.exists() else [])]:
        os.utime(path, (long_ago, long_ago))
    assert clean(store)["removed"] == []
    assert store.count() == 1 and (folder / "ops" / "MEMORY.md").exists()


@pytest.mark.slow
def test_cli_export_sync_clean(tmp_path):
    store, folder = tmp_path / "store", tmp_path / "notes"

    def kenning(*args):
        return subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(store), *args],
                              capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})

    assert kenning("write", "The auth service listens on port 8443", "--scope", "projects:auth").returncode == 0
    exported = kenning("export", "--markdown", str(folder), "--json")
    assert exported.returncode == 0 and json.loads(exported.stdout)["written"] == ["USER.md", "projects/auth/MEMORY.md"]
    path = folder / "projects" / "auth" / "MEMORY.md"
    path.write_text(path.read_text() + "\nThe auth service runs three replicas.\n")
    synced = kenning("sync", str(folder))
    assert synced.returncode == 0 and synced.stdout.startswith("written: projects/auth/MEMORY.md")
    broken = path.read_text().replace('{"id": "', '{"id" "', 1)
    path.write_text(broken)
    mangled = kenning("sync", str(folder))
    assert mangled.returncode == 1 and "mangled" in mangled.stdout
    (folder / LOCK_NAME).write_text(json.dumps({"pid": DEAD_PID, "host": os.uname().nodename, "at": 0}))
    dry = kenning("clean", "--dry-run")
    assert "would remove" in dry.stdout and (folder / LOCK_NAME).exists()
    done = kenning("clean")
    assert done.returncode == 0 and f"removed {folder / LOCK_NAME}" in done.stdout.replace("\n", "")
    assert not (folder / LOCK_NAME).exists()
    (folder / LOCK_NAME).write_text(json.dumps({"pid": DEAD_PID, "host": os.uname().nodename, "at": 0}))
    taken = kenning("sync", str(folder))  # a dead owner's lock: the next sync takes it over
    assert taken.returncode == 1 and f"left by pid {DEAD_PID}" in taken.stderr and not (folder / LOCK_NAME).exists()


def test_nested_emptied_folders_go_deepest_first_and_leave_the_manifest(store, tmp_path):
    """projects/auth emptied leaves projects empty too: both go in one clean (the inner one first, or
    the outer would still hold it), and the manifest forgets them; the report's keys are its contract."""
    store.write("The auth service listens on port 8443", scopes=["projects:auth"])
    store.write("The on-call rota changes every Monday", scopes=["ops"])
    folder = tmp_path / "notes"
    markdown.export(store, folder)
    manifest_path = folder / markdown.MANIFEST_NAME
    assert {"projects", "projects/auth", "ops"} <= set(json.loads(manifest_path.read_text())["folders"])
    (folder / "projects" / "auth" / "MEMORY.md").unlink()
    assert clean(store, dry_run=True)["dry_run"] is True
    report = clean(store)
    assert report == {"dry_run": False, "removed": [
        {"path": str(folder / "projects" / "auth"), "what": "empty folder kenning made"},
        {"path": str(folder / "projects"), "what": "empty folder kenning made"}]}
    assert not (folder / "projects").exists() and (folder / "ops" / "MEMORY.md").exists()
    assert "ops" in (folders := json.loads(manifest_path.read_text())["folders"])
    assert "projects" not in folders and "projects/auth" not in folders


def test_a_live_lock_keeps_the_emptied_folders_its_writer_may_be_about_to_fill(store, tmp_path):
    store.write("The on-call rota changes every Monday", scopes=["ops"])
    folder = tmp_path / "notes"
    markdown.export(store, folder)
    (folder / "ops" / "MEMORY.md").unlink()
    (folder / LOCK_NAME).write_text(json.dumps({"pid": os.getpid(), "host": os.uname().nodename, "at": time.time()}))
    assert clean(store)["removed"] == []
    assert (folder / "ops").is_dir() and (folder / LOCK_NAME).exists()
