"""A markdown folder's lock left by a killed `kenning export` / `kenning sync` is taken over by the next
one when its recorded owner is provably dead on this host (its pid gone), and it says so in one line
on stderr; a live owner's lock still refuses. Real processes killed with SIGKILL, the real CLI."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import kenning
from kenning.errors import InvalidInput
from kenning.recall.files import LOCK_NAME, DirLock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and flock are POSIX")

HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from kenning.recall.files import DirLock
    with DirLock(Path(sys.argv[1])):
        print("held", flush=True)
        time.sleep(600)
""")


def cli(store, *args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    return subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args], capture_output=True,
                          text=True, env=env, timeout=300)


def holding(folder):
    """A real process that holds the folder's lock (it has said so before this returns)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def killed_holding(folder):
    """The pid of a process killed (SIGKILL: no cleanup ran) while it held the folder's lock."""
    proc = holding(folder)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert json.loads((folder / LOCK_NAME).read_text())["pid"] == proc.pid
    return proc.pid


@pytest.fixture
def exported(tmp_path):
    store = tmp_path / "s"
    with kenning.open_store(store) as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
    folder = tmp_path / "md"
    done = cli(store, "export", "--markdown", str(folder))
    assert done.returncode == 0, done.stderr
    return store, folder


@pytest.mark.parametrize("command", ["export", "sync"])
def test_a_lock_whose_owner_was_killed_is_taken_over_and_said_in_one_line(exported, command):
    store, folder = exported
    dead = killed_holding(folder)
    args = ["export", "--markdown", str(folder)] if command == "export" else ["sync", str(folder)]
    done = cli(store, *args)
    # was: exit 2, "... was left by a kenning process that is gone (pid N); `kenning clean` removes it"
    assert done.returncode == 0 and "Traceback" not in done.stderr, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"note: took over the lock in {folder} left by pid {dead},"), lines
    assert not (folder / LOCK_NAME).exists()  # released at the end as ever
    again = cli(store, *args, "--json")
    assert again.returncode == 0 and again.stderr == "" and json.loads(again.stdout)["lock_taken_over"] is None


def test_json_carries_the_dead_owner(exported):
    store, folder = exported
    dead = killed_holding(folder)
    done = cli(store, "sync", str(folder), "--json")
    assert done.returncode == 0, done
    assert json.loads(done.stdout)["lock_taken_over"]["pid"] == dead
    assert f"left by pid {dead}" in done.stderr


def test_a_live_owners_lock_still_refuses_and_stays(exported):
    store, folder = exported
    live = holding(folder)
    try:
        before = (folder / LOCK_NAME).read_bytes()
        with pytest.raises(InvalidInput, match=f"is locked by pid {live.pid}"):
            with DirLock(folder, wait_s=0):
                pass
        done = cli(store, "clean")
        assert done.returncode == 0 and LOCK_NAME not in done.stdout
        assert (folder / LOCK_NAME).read_bytes() == before
    finally:
        live.kill()
        live.wait()


RACER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from kenning.recall.files import DirLock
    folder = Path(sys.argv[1])
    while not (folder / "go").exists():
        time.sleep(0.001)
    with DirLock(folder, wait_s=120) as lock:
        fd = os.open(folder / "inside", os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # fails if two hold the lock
        time.sleep(0.05)
        os.close(fd)
        os.unlink(folder / "inside")
    print("took over" if lock.taken_over else "waited", flush=True)
""")


def test_writers_racing_to_take_over_one_dead_lock_hold_it_one_at_a_time(tmp_path):
    folder = tmp_path / "md"
    folder.mkdir()
    killed_holding(folder)
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(folder)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(6)]
    (folder / "go").touch()
    outcomes = [r.communicate(timeout=300) for r in racers]
    assert all(r.returncode == 0 for r in racers), [err for _, err in outcomes]
    said = sorted(out.strip() for out, _ in outcomes)
    assert said == ["took over"] + ["waited"] * 5  # one process broke the dead lock; the rest queued behind it
    assert not (folder / LOCK_NAME).exists()
