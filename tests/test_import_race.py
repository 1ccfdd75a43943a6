"""Two imports of the same records at once commit each record once: a batch checks, under the write
lock, the memories another import committed after this one looked for what is already stored."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kenning
from kenning.errors import InvalidInput
from kenning.memory import writes
from kenning.memory.gates import batch as batch_gates
from kenning.store import records

RECORDS = [{"content": f"the relay station {i} on ridge {i * 7} reports wind speed hourly", "scopes": ["t"]}
           for i in range(120)]


def stored(home) -> tuple[int, int]:
    """(memories, distinct texts) in the store, through its own connection: SQLite or PostgreSQL."""
    with kenning.open_store(home) as s:
        return tuple(s._s.db.read(lambda c: c.execute("SELECT COUNT(*), COUNT(DISTINCT content) FROM memories")
                                  .fetchone()))


def meanwhile(monkeypatch, owner, name, other):
    """Run ``other()`` once, right after ``owner.name`` looked at the store: another process
    importing the same file commits between this import's look and its batches."""
    real = getattr(owner, name)
    done = []

    def looked(*args, **kwargs):
        out = real(*args, **kwargs)
        if not done:
            done.append(True)
            other()
        return out

    monkeypatch.setattr(owner, name, looked)


def test_a_gated_import_skips_what_another_import_committed_after_its_gates_looked(tmp_path, monkeypatch):
    home = tmp_path / "s"
    kenning.open_store(home).close()

    def other():
        with kenning.open_store(home) as s2:
            assert len(s2.import_checked(RECORDS[:70], batch_size=25).ids) == 70

    meanwhile(monkeypatch, batch_gates, "gate_batch", other)
    with kenning.open_store(home) as s:
        report = s.import_checked(RECORDS, batch_size=25)
    assert stored(home) == (120, 120)  # was (190, 120): 70 texts twice
    assert len(report.ids) == 50 and report.count("duplicate") == 70
    ids = set(report.ids)
    with kenning.open_store(home) as s:
        assert all(s.get(i) for i in ids)
        again = [line for line in report.lines if line.status == "duplicate"]
        assert all(line.match and s.get(line.match).content in {r["content"] for r in RECORDS[:70]}
                   for line in again)


def test_a_resumable_bulk_import_skips_what_another_import_committed_meanwhile(tmp_path, monkeypatch):
    home = tmp_path / "s"
    kenning.open_store(home).close()
    repeated = RECORDS + RECORDS[:5]  # a text the file repeats is stored as many times as it repeats

    def other():
        with kenning.open_store(home) as s2:
            s2.import_bulk(repeated[:90], batch_size=40)

    meanwhile(monkeypatch, writes, "_already_present", other)
    with kenning.open_store(home) as s:
        report = s.import_bulk(repeated, batch_size=40)
    assert stored(home) == (125, 120)  # was (215, 120)
    assert len(report.ids) == 35 and report.count("already_present") == 90


def test_a_gated_import_with_ids_reports_a_record_another_import_committed_as_a_duplicate(tmp_path, monkeypatch):
    home = tmp_path / "s"
    kenning.open_store(home).close()
    with_ids = [{**r, "id": f"relay-{i:03d}"} for i, r in enumerate(RECORDS)]

    def other():
        with kenning.open_store(home) as s2:
            s2.import_checked(with_ids[:30])

    meanwhile(monkeypatch, batch_gates, "gate_batch", other)
    with kenning.open_store(home) as s:
        report = s.import_checked(with_ids)
    assert stored(home) == (120, 120)
    assert report.count("refused") == 0 and report.count("duplicate") == 30  # was 30 refused (id taken)


def test_the_trusted_import_refuses_ids_another_process_stored_meanwhile_in_one_line(tmp_path, monkeypatch):
    home = tmp_path / "s"
    kenning.open_store(home).close()
    with_ids = [{**r, "id": f"relay-{i:03d}"} for i, r in enumerate(RECORDS)]

    def other():
        with kenning.open_store(home) as s2:
            s2.import_records(with_ids[60:], batch_size=30)

    meanwhile(monkeypatch, records, "existing_ids", other)
    with kenning.open_store(home) as s:
        with pytest.raises(InvalidInput, match="stored by another process during this import"):
            s.import_records(with_ids, batch_size=30)  # was sqlite3.IntegrityError
    assert stored(home) == (120, 120)  # its first two batches committed, then it stopped


@pytest.mark.slow
def test_three_kenning_import_processes_of_one_file_store_each_line_once(tmp_path):
    import json

    home = tmp_path / "s"
    source = tmp_path / "notes.jsonl"
    source.write_text("".join(json.dumps({"content": f"the ferry {i} to island {i % 97} leaves at pier {i}",
                                          "scopes": ["t"]}) + "\n" for i in range(1500)))
    kenning.open_store(home).close()
    for extra in ([], ["--no-gates"]):
        runs = [subprocess.Popen([sys.executable, "-m", "kenning", "--store", str(home), "import", str(source),
                                  "--batch-size", "50", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for _ in range(3)]
        for run in runs:
            out, err = run.communicate(timeout=600)
            assert run.returncode == 0, err
            assert "Traceback" not in err
        assert stored(home) == (1500, 1500)


def test_a_stored_copy_the_look_already_matched_answers_no_second_record(tmp_path, monkeypatch):
    """The file holds one text twice; another process stores it once, after this import noted the
    newest row but before it looked: that copy answers one line, and the second is still stored."""
    home = tmp_path / "s"
    kenning.open_store(home).close()
    twice = [RECORDS[0], RECORDS[0], RECORDS[1]]

    def other():
        with kenning.open_store(home) as s2:
            s2.import_bulk([RECORDS[0]])

    real, done = writes._already_present, []

    def look(*args, **kwargs):
        if not done:
            done.append(True)
            other()  # committed after `since` was read, before this look
        return real(*args, **kwargs)

    monkeypatch.setattr(writes, "_already_present", look)
    with kenning.open_store(home) as s:
        report = s.import_bulk(twice)
    assert report.count("already_present") == 1 and len(report.ids) == 2
    assert stored(home) == (3, 2)  # the text twice, as the file has it
