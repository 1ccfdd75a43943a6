"""Resumable imports: a re-run after a crash commits what is missing and skips what is present,
with or without ids, and says what it did. The crash is real: a child process importing in batches
is killed with SIGKILL part-way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kenning import open_store
from kenning.errors import InvalidInput

N = 3000
BATCH = 200


def records(with_ids: bool) -> list[dict]:
    out = []
    for i in range(N):
        record = {"content": f"import record {i}: the {i % 17} relay feeds queue {i % 31}", "scopes": ["bulk"]}
        if with_ids:
            record["id"] = f"ext-{i:05d}"
        out.append(record)
    return out


def import_and_die(home, with_ids: bool, after_batches: int) -> int:
    """Import in a child and SIGKILL it once ``after_batches`` batches are committed; returns rows left."""
    script = f"""
import json, sys, os
from kenning import open_store
store = open_store({str(home)!r})
records = json.load(sys.stdin)
def tick(done):
    if done >= {after_batches * BATCH}:
        print("committed", done, flush=True)
        import time; time.sleep(60)
store.import_bulk(records, batch_size={BATCH}, progress=tick)
"""
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    child.stdin.write(json.dumps(records(with_ids)))
    child.stdin.close()
    line = child.stdout.readline()
    assert line.startswith("committed"), line
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with open_store(home) as store:
        return store.count()


@pytest.mark.slow
@pytest.mark.parametrize("with_ids", [True, False])
def test_a_rerun_after_kill_9_finishes_the_import_without_duplicates(tmp_path, with_ids):
    home = tmp_path / "s"
    committed = import_and_die(home, with_ids, after_batches=4)
    assert committed == 4 * BATCH  # whole batches only
    with open_store(home) as store:
        report = store.import_bulk(records(with_ids), batch_size=BATCH)
        assert report.count("already_present") == committed
        assert report.count("committed") == N - committed
        assert store.count() == N
        again = store.import_bulk(records(with_ids), batch_size=BATCH)
        assert again.count("already_present") == N and again.count("committed") == 0
        assert store.count() == N
        assert store.check()["ok"], store.check()["problems"]


def test_an_id_reused_for_other_text_refuses_the_whole_import(tmp_path):
    with open_store(tmp_path) as store:
        store.import_bulk([{"id": "a", "content": "the first text", "scopes": ["x"]}])
        with pytest.raises(InvalidInput, match="other text"):
            store.import_bulk([{"id": "b", "content": "a new one", "scopes": ["x"]},
                               {"id": "a", "content": "a different text", "scopes": ["x"]}])
        assert store.count() == 1


def test_repeated_lines_without_ids_are_kept_as_often_as_the_file_has_them(tmp_path):
    lines = [{"content": "the same line", "scopes": ["x"]}] * 3 + [{"content": "another", "scopes": ["x"]}]
    with open_store(tmp_path) as store:
        store.import_bulk(lines[:2])
        report = store.import_bulk(lines)
        assert report.count("already_present") == 2 and report.count("committed") == 2
        assert store.count() == 4


def test_cli_no_gates_rerun_says_what_it_skipped(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records(False)[:50]))

    def run():
        return subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(tmp_path / "s"), "import",
                               str(data), "--no-gates"], capture_output=True, text=True)

    first, second = run(), run()
    assert first.returncode == 0 and "imported 50 memories from 50 lines" in first.stdout
    assert second.returncode == 0 and "imported 0 memories from 50 lines; 50 already present" in second.stdout


@pytest.mark.slow
def test_ctrl_c_during_kenning_import_says_what_was_kept_and_how_to_resume(tmp_path):
    """A Ctrl-C exited 130 with nothing said, 11,000 of 20,000 lines in the store. The SIGINT here is
    real, sent by the command's own process once two batches are committed."""
    lines = tmp_path / "notes.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records(with_ids=False)))
    script = f"""
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal: a runner in the background ignores it
from kenning import Store
from kenning.cli import main
real = Store.import_checked
def interrupted(self, records, progress=None, **kw):
    def tick(done):
        progress(done)
        if done >= {2 * BATCH}:
            os.kill(os.getpid(), signal.SIGINT)
    return real(self, records, progress=tick, **kw)
Store.import_checked = interrupted
main(["--store", {str(tmp_path / "s")!r}, "import", {str(lines)!r}, "--batch-size", "{BATCH}"])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert f"interrupted after {2 * BATCH:,} of {N:,} lines (each batch of {BATCH:,} is committed whole); run the " \
           "same import again to resume" in " ".join(done.stderr.split()), done.stderr
    with open_store(tmp_path / "s") as store:
        assert store.count() == 2 * BATCH
