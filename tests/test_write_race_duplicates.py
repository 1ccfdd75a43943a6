"""Two writers of the same fact at the same moment: the gates probe before the write lock is taken,
so the write looks again inside its transaction (``pipeline.late_duplicate``) and one of the two
commits. Real stores on one SQLite file: a second connection in this process for a fixed
interleaving, and separate processes for the real race."""

from __future__ import annotations

import subprocess
import sys
import time

import kenning
from kenning.memory.gates import pipeline, write_enabled

FACT = "The Grafana dashboards for billing live in the observability folder"


def test_a_duplicate_committed_between_the_gates_and_the_commit_is_caught(tmp_path, monkeypatch):
    first, second = kenning.open_store(tmp_path / "s"), kenning.open_store(tmp_path / "s")
    try:
        gates = pipeline.run
        raced: list[str] = []

        def then_the_other_writes(*args, **kwargs):
            passed = gates(*args, **kwargs)  # the probe found nothing yet
            if not raced:
                raced.append("")  # the other write's own gates pass straight through
                raced[0] = second.write(FACT, scopes=["ops"]).id
            return passed

        monkeypatch.setattr(pipeline, "run", then_the_other_writes)
        result = first.write(FACT, scopes=["ops"])
        assert result.status == "duplicate" and result.id == raced[0] and result.override == "force"
        assert [m.id for m in first.list()] == raced
        forced = first.write(FACT, scopes=["ops"], force=True)  # force still writes both
        assert forced.status == "committed" and len(first.list()) == 2
    finally:
        first.close()
        second.close()


FACTS = ["Grafana dashboards for billing live in the observability folder",
         "Terraform state for the data platform is kept in the eu-west bucket",
         "The payroll export runs every Friday after the finance close",
         "Kafka brokers in staging use three partitions per topic",
         "Release notes are drafted by whoever is on call that week",
         "The VPN certificate for contractors is renewed each March",
         "Nightly backups of the wiki are copied to cold storage",
         "Customer support escalations go to the tier two Slack channel"]
WRITER = f"""
import sys, time, kenning
store = kenning.open_store(sys.argv[1])
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
for fact in {FACTS!r}:
    print(store.write(fact, scopes=["ops"]).status)
store.close()
"""


def test_processes_writing_the_same_facts_at_once_commit_each_once(tmp_path):
    path, texts = tmp_path / "s", len(FACTS)
    kenning.open_store(path).close()
    start = time.time() + 3  # both processes are up and have opened the store by then
    runs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(start)],
                             stdout=subprocess.PIPE, text=True) for _ in range(2)]
    statuses = [run.communicate(timeout=120)[0].split() for run in runs]
    assert all(run.returncode == 0 for run in runs)
    with kenning.open_store(path) as store:
        stored = [m.content for m in store.list(limit=100)]
    assert len(stored) == len(set(stored)) == texts
    assert sorted(a for pair in zip(*statuses) for a in pair).count("committed") == texts


def test_a_duplicate_committed_after_the_write_first_looked_at_the_store_is_caught(tmp_path, monkeypatch):
    """The write's block reads the store's commit count once, with its settings; another process's
    commit after that and before the gates' probe must still be seen by the probe or by the late
    look (the probe took the stale lexical view and the late look started past the other's row:
    two processes writing the same facts stored one twice, CI's base stage)."""
    first, second = kenning.open_store(tmp_path / "s"), kenning.open_store(tmp_path / "s")
    try:
        first.write("The payroll export runs every Friday after the finance close", scopes=["ops"])
        first.search("payroll", mode="bm25", record=False)  # first's lexical view is current
        check, raced = write_enabled.check, []

        def then_the_other_writes(config):
            refused = check(config)
            if not raced:
                raced.append("")  # the other write's own check passes straight through
                raced[0] = second.write(FACT, scopes=["ops"]).id
            return refused

        monkeypatch.setattr(write_enabled, "check", then_the_other_writes)
        result = first.write(FACT, scopes=["ops"])
        assert result.status == "duplicate" and result.id == raced[0]
        assert sorted(m.content for m in first.list()) == sorted([FACT, "The payroll export runs every Friday "
                                                                  "after the finance close"])
    finally:
        first.close()
        second.close()
