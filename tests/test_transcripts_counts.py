"""`transcripts add` and `remove` say what happened to the source they name, and `remove` means it.

`add X` reported the whole sync's counts as X's (re-adding an unchanged ledger after another grew
said it added that one's new messages); adding a folder that holds a registered file counted that
file among the folder's ledgers though `list` showed it under the file; and removing the file said
its messages were dropped from the index while the folder, which also holds it, indexed them again
at the next search. Real files, a real store, the real command line.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from typer.testing import CliRunner

from kenning.cli import app
from transcript_index import index  # noqa: F401


def _line(ledger, text: str, session: str = "g") -> None:
    with open(ledger, "a") as f:
        f.write(json.dumps({"session": session, "ts": "2025-01-01T00:00:00Z", "role": "user", "text": text}) + "\n")


@pytest.fixture
def folder(tmp_path):
    led = tmp_path / "led"
    led.mkdir()
    _line(led / "a.jsonl", "the okapi scheduler pins jobs to node pools", session="o1")
    _line(led / "b.jsonl", "the okapi scheduler second session", session="o2")
    return led


def _listed(index) -> dict[str, tuple[int, int]]:
    return {os.path.basename(s["path"]): (s["ledgers"], s["messages"]) for s in index.sources()}


def test_re_adding_an_unchanged_ledger_adds_nothing_though_another_grew(index, tmp_path):
    a, other = tmp_path / "a.jsonl", tmp_path / "other.jsonl"
    for i in (1, 2, 3):
        _line(a, f"message number {i} about the heron pipeline")
    _line(other, "message number 50 about the heron pipeline")
    index.add_source(a, project=tmp_path)
    index.add_source(other, project=tmp_path)
    _line(a, "message number 4 about the heron pipeline")
    _line(a, "message number 5 about the heron pipeline")
    again = index.add_source(other, project=tmp_path)
    assert again["already_registered"] and (again["ledgers"], again["messages_added"]) == (1, 0)
    assert _listed(index) == {"a.jsonl": (1, 5), "other.jsonl": (1, 1)}  # a's new lines were taken in all the same


def test_a_folder_holding_a_registered_file_counts_only_its_own_ledgers(index, folder, tmp_path):
    index.add_source(folder / "a.jsonl", project=tmp_path)
    added = index.add_source(folder, project=tmp_path)
    assert (added["ledgers"], added["messages_added"], added["ledgers_under_other_sources"]) == (1, 1, 1)
    assert _listed(index) == {"led": (1, 1), "a.jsonl": (1, 1)}
    again = index.add_source(folder, project=tmp_path)
    assert (again["ledgers"], again["messages_added"], again["ledgers_under_other_sources"]) == (1, 0, 1)


def test_removing_a_file_a_registered_folder_also_holds_drops_nothing_and_says_so(index, folder, tmp_path):
    index.add_source(folder / "a.jsonl", project=tmp_path)
    index.add_source(folder, project=tmp_path)
    removed = index.remove_source(folder / "a.jsonl")
    assert (removed["ledgers_dropped"], removed["messages_dropped"]) == (0, 0)
    assert (removed["ledgers_kept"], removed["messages_kept"], removed["kept_under"]) == (1, 1, [str(folder.resolve())])
    assert _listed(index) == {"led": (2, 2)}
    assert index.sync().messages == 0  # handed over, not read again
    assert sorted(h.session for h in index.search("okapi", all_projects=True).hits) == ["o1", "o2"]


def test_removing_a_folder_keeps_the_file_registered_inside_it(index, folder, tmp_path):
    index.add_source(folder / "a.jsonl", project=tmp_path)
    index.add_source(folder, project=tmp_path)
    removed = index.remove_source(folder)
    assert (removed["ledgers_dropped"], removed["messages_dropped"], removed["ledgers_kept"]) == (1, 1, 0)
    assert [h.session for h in index.search("okapi", all_projects=True).hits] == ["o1"]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_a_link_to_a_listed_ledger_is_counted_as_skipped(index, folder, tmp_path):
    os.symlink("a.jsonl", folder / "latest.jsonl")
    added = index.add_source(folder, project=tmp_path)
    assert (added["ledgers"], added["messages_added"], added["links_skipped"]) == (2, 2, 1)


def test_the_command_line_says_what_stays_indexed(tmp_path, folder):
    store = str(tmp_path / "store")
    runner = CliRunner()
    assert runner.invoke(app, ["--store", store, "transcripts", "add", str(folder / "a.jsonl")]).exit_code == 0
    added = runner.invoke(app, ["--store", store, "transcripts", "add", str(folder)])
    assert added.exit_code == 0, added.output
    assert "1 ledger, 1 new message" in added.output and "1 new message; 1 ledger already indexed under another source" in added.output
    removed = runner.invoke(app, ["--store", store, "transcripts", "remove", str(folder / "a.jsonl")])
    assert removed.exit_code == 0, removed.output
    said = " ".join(removed.output.split())
    assert "0 ledgers, 0 messages dropped from the index" in said
    assert f"1 ledger (1 message) kept in the index under {folder.resolve()}, which also lists it" in said
