"""A markdown export or sync that the disk refuses (full, or a file-size limit) fails in one line and
leaves the folder as the next run needs it: no empty lock file that no later export or sync could
take over; and a store on a full disk is still exported. The real library, on a full disk: a child
process whose file-size limit is the full disk, or a small tmpfs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import kenning
from kenning.recall import markdown
from kenning.recall.files import LOCK_NAME

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE (the resource module)")

# the store is opened (and its shared-memory file sized) first; from then on no file may grow past 16 bytes
FULL_DISK = textwrap.dedent("""
    import resource, signal, sys
    import kenning
    from kenning.errors import StorageError
    from kenning.recall import markdown

    store = kenning.open_store(sys.argv[1])
    store.count()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (16, resource.RLIM_INFINITY))
    try:
        getattr(markdown, sys.argv[3])(store, sys.argv[2])
    except StorageError as exc:
        print("refused:", exc)
""")


def on_a_full_disk(store, folder, what):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(store), str(folder), what], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("what", ["export", "sync"])
def test_a_mirror_run_the_disk_refuses_leaves_no_lock_behind(tmp_path, what):
    store, folder = tmp_path / "s", tmp_path / "md"
    with kenning.open_store(store) as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
        markdown.export(s, folder)
    out = on_a_full_disk(store, folder, what)
    assert out.startswith("refused: ") and "a second run after the fix finishes the job" in out, out
    assert not (folder / LOCK_NAME).exists()
    with kenning.open_store(store) as s:  # the space is back: the next run is not refused as locked
        s.write("Deploys go through the staging cluster first", scopes=["projects:auth"])
        assert markdown.export(s, folder)["written"] == ["projects/auth/MEMORY.md"]
        assert markdown.sync(s, folder)["files_changed"] == []



@pytest.mark.slow
def test_a_store_on_a_full_disk_is_still_exported_to_a_folder_with_room(tmp_path):
    """Export reads the store, but first recorded the folder in it (for `kenning clean`): on a full disk
    that write failed the export ('the disk holding ... is full'), the copy a person wants most then.
    A real full disk: a small tmpfs where this process may mount one (root on Linux); skipped elsewhere."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        with kenning.open_store(mnt / "s") as s:
            s.write("The auth service listens on port 8443", scopes=["projects:auth"])
        fill, size = os.open(mnt / "fill", os.O_CREAT | os.O_WRONLY), 0
        try:  # the disk full, then room for the store's -shm file alone
            while True:
                size += os.write(fill, b"\0" * 4096)
        except OSError:
            os.ftruncate(fill, max(0, size - 36 * 1024))
        finally:
            os.close(fill)
        with kenning.open_store(mnt / "s") as s:
            assert s.search("auth port", mode="bm25").hits  # reads answer on the full disk, and so does export
            assert markdown.export(s, tmp_path / "md")["written"] == ["USER.md", "projects/auth/MEMORY.md"]
            assert "port 8443" in (tmp_path / "md" / "projects/auth/MEMORY.md").read_text()
            assert markdown.sync(s, tmp_path / "md")["files_changed"] == []
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
