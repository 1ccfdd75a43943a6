"""`kenning check` names every memory or episode row whose JSON column is damaged (reads fail on it),
by id and column, and exits 1 as for any other damage; `--json` carries the same. The rows are
damaged through the store's own connection, so this runs on SQLite and PostgreSQL alike; the CLI
runs in a real subprocess."""

import json
import os
import subprocess
import sys

import kenning
from kenning.memory.episodes import Episodes


def cli(store, *args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    return subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args], capture_output=True,
                          text=True, env=env, timeout=300)


def damaged_store(folder):
    """Four memories and an episode; then one memory's record cut short (not JSON), one whose JSON
    is no memory (scopes a string), and the episode's scopes cut short. One memory stays whole."""
    with kenning.open_store(folder) as store:
        ids = [store.write(f"the {name} service listens on port {port}", scopes=["projects:x"]).id
               for name, port in (("auth", 8443), ("billing", 9090), ("search", 7700))]
        episode = Episodes(store).write("tried the sweep", takeaway="k1=1.5 hurts", scopes=["projects:x"])["id"]
        with store.db.transaction() as c:
            record = c.execute("SELECT record FROM memories WHERE id = ?", (ids[0],)).fetchone()[0]
            c.execute("UPDATE memories SET record = ? WHERE id = ?", (record[:40], ids[0]))
            shaped = json.loads(c.execute("SELECT record FROM memories WHERE id = ?", (ids[1],)).fetchone()[0])
            shaped["scopes"] = "projects:x"
            c.execute("UPDATE memories SET record = ? WHERE id = ?", (json.dumps(shaped), ids[1]))
            c.execute("UPDATE episodes SET scopes = ? WHERE id = ?", ('["projects:x", broken', episode))
    return ids, episode


def test_check_names_each_row_with_damaged_json_and_exits_1(tmp_path):
    folder = tmp_path / "s"
    ids, episode = damaged_store(folder)
    done = cli(folder, "check")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done  # was: "check clean", exit 0
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 3, done.stdout
    assert lines[0].startswith(f"memories: memory {ids[0]}: its record column is not valid JSON (")
    assert lines[1].startswith(f"memories: memory {ids[1]}: its record column is valid JSON but not a memory (scopes:")
    assert lines[2].startswith(f"episodes: episode {episode}: its scopes column is not valid JSON (")
    assert all("(fix: " in line and "backup" in line for line in lines)
    assert ids[2] not in done.stdout  # the whole memory is not named

    report = json.loads(cli(folder, "check", "--json").stdout)
    assert report["ok"] is False
    assert [(p["part"], p["id"], p["column"]) for p in report["problems"]] == [
        ("memories", ids[0], "record"), ("memories", ids[1], "record"), ("episodes", episode, "scopes")]


def test_the_library_check_reports_the_rows_and_a_whole_store_stays_clean(tmp_path):
    folder = tmp_path / "s"
    ids, _ = damaged_store(folder)
    with kenning.open_store(folder) as store:
        report = store.check()
    assert not report["ok"] and {p.get("id") for p in report["problems"]} >= {ids[0], ids[1]}
    with kenning.open_store(tmp_path / "whole") as store:
        store.write("the auth service listens on port 8443", scopes=["projects:x"])
        Episodes(store).write("tried the sweep", takeaway="k1=1.5 hurts", scopes=["projects:x"])
        report = store.check()
    assert report["ok"] and report["problems"] == [], report


def test_reading_a_damaged_memory_says_the_store_is_damaged_not_that_the_argument_was_bad(tmp_path):
    """show, list and search of a memory whose record is damaged: one line naming the memory and
    damage (was "bad argument to show: ValidationError"), exit 2, no traceback; the whole memory
    still reads."""
    folder = tmp_path / "s"
    ids, _ = damaged_store(folder)
    for args in (["show", ids[0]], ["show", ids[1]], ["list"], ["search", "auth service port", "--mode", "bm25"]):
        done = cli(folder, *args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done)
        assert "bad argument" not in done.stderr and "is damaged" in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
    for args in (["show", ids[0]], ["show", ids[1]]):
        assert args[1] in cli(folder, *args).stderr  # the row is named
    assert cli(folder, "show", ids[2]).returncode == 0
    with kenning.open_store(folder) as store:
        try:
            store.get(ids[0])
        except kenning.errors.StorageError as exc:
            assert ids[0] in str(exc)
        else:
            raise AssertionError("a damaged record read without error")
