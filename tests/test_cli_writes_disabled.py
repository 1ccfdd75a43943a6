"""With writes turned off (`kenning config set write_enabled false`), every CLI command that changes a
memory answers as `kenning write` does: the status `writes_disabled` with the gate, reason and hint on
stdout, exit 1, and with --json the same object as write's. It used to be so for `write` alone; update,
remove, restore and verify printed "error: ..." on stderr and exited 2, as for a malformed request.
The real CLI in a subprocess, on a real store."""

import json
import os
import subprocess
import sys

import pytest

import kenning


def cli(store, *args, stdin=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    return subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args], capture_output=True,
                          text=True, env=env, timeout=300, input=stdin)


@pytest.fixture(scope="module")
def switched_off(tmp_path_factory):
    """A store with a live memory and a removed one, writes then turned off; what `write` answers."""
    store = tmp_path_factory.mktemp("off") / "s"
    with kenning.open_store(store, cwd=store.parent) as s:  # the module's fixture runs before the autouse chdir
        live = s.write("The auth service listens on port 8443", scopes=["projects:auth"]).id
        gone = s.write("The billing service runs three replicas", scopes=["projects:billing"]).id
        s.remove(gone, "moved")
        rival = s.write("The auth service listens on port 9443", scopes=["projects:auth"], force=True,
                        links=[{"kind": "contradicts", "target": live}]).id
    assert cli(store, "config", "set", "write_enabled", "false").returncode == 0
    write = cli(store, "write", "The deploy job runs at noon", "-s", "x")
    write_json = cli(store, "write", "The deploy job runs at noon", "-s", "x", "--json")
    assert write.returncode == write_json.returncode == 1 and write.stdout.startswith("writes_disabled\n")
    return store, (live, gone, rival), write.stdout, json.loads(write_json.stdout)


COMMANDS = {
    "update": lambda live, gone, rival: ["update", live, "--text", "The auth service listens on port 9443"],
    "remove": lambda live, gone, rival: ["remove", live, "--reason", "obsolete"],
    "restore": lambda live, gone, rival: ["restore", gone],
    "verify": lambda live, gone, rival: ["verify", live, "--note", "port still 8443"],
    "rename-scope": lambda live, gone, rival: ["rename-scope", "projects:auth", "projects:identity"],
    "resolve": lambda live, gone, rival: ["resolve", live, rival, "--keep", rival],
    "import": lambda live, gone, rival: ["import", "-"],
    "episodes prune": lambda live, gone, rival: ["episodes", "prune"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_change_with_writes_off_is_the_status_write_gives(switched_off, command):
    store, (live, gone, rival), write_text, write_json = switched_off
    args = COMMANDS[command](live, gone, rival)
    lines = '{"content": "The cache TTL is 300 seconds"}\n' if command == "import" else None
    done = cli(store, *args, stdin=lines)
    # was: "error: write_enabled gate refused it: ..." on stderr, exit 2 (write alone gave a status)
    assert done.returncode == 1 and done.stderr == "", done
    assert done.stdout == write_text
    as_json = cli(store, *args, "--json", stdin=lines)
    assert as_json.returncode == 1 and as_json.stderr == "", as_json
    assert json.loads(as_json.stdout) == write_json and write_json["status"] == "writes_disabled"
    with kenning.open_store(store) as s:  # nothing changed
        assert s.get(live).content == "The auth service listens on port 8443" and s.get(live).scopes == ["projects:auth"]
        assert s.get(live).last_verified_at is None
        assert [t.memory.id for t in s.tombstones()] == [gone] and s.count() == 2
        assert [link.kind for link in s.get(rival).links] == ["contradicts"]

