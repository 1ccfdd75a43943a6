"""A ledger reached by a symlink is indexed once, as the file it leads to.

A folder holding ``latest.jsonl -> a.jsonl`` was indexed as two ledgers, and every message in it was
recalled twice; so was a file registered on its own and linked from a registered folder. Real files
and links, a real store.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from transcript_index import index  # noqa: F401

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")


def _ledger(path, text: str, session: str = "s1") -> None:
    path.write_text(json.dumps({"session": session, "ts": "2025-01-01T00:00:00Z", "role": "user", "text": text}) + "\n")


def test_a_link_beside_its_ledger_is_read_once(index, tmp_path):
    folder = tmp_path / "led"
    folder.mkdir()
    _ledger(folder / "a.jsonl", "the pangolin cache evicts after ten minutes")
    os.symlink("a.jsonl", folder / "latest.jsonl")
    added = index.add_source(folder, project=tmp_path)
    assert (added["ledgers"], added["messages_added"]) == (1, 1)
    hits = index.search("pangolin", all_projects=True).hits
    assert [(h.ledger, h.line) for h in hits] == [(str((folder / "a.jsonl").resolve()), 1)]
    assert index.sources()[0]["ledgers"] == 1


def test_a_link_that_sorts_first_is_indexed_as_the_file_it_leads_to(index, tmp_path):
    folder = tmp_path / "led"
    folder.mkdir()
    _ledger(folder / "z.jsonl", "the pangolin cache evicts after ten minutes")
    os.symlink("z.jsonl", folder / "0-current.jsonl")
    index.add_source(folder, project=tmp_path)
    assert [h.ledger for h in index.search("pangolin", all_projects=True).hits] == [str((folder / "z.jsonl").resolve())]


def test_a_registered_file_linked_from_a_registered_folder_is_read_once(index, tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "led").mkdir()
    real = tmp_path / "other" / "real.jsonl"
    _ledger(real, "the albatross runbook lives in confluence", session="h")
    os.symlink(real, tmp_path / "led" / "link.jsonl")
    _ledger(tmp_path / "led" / "own.jsonl", "the albatross pager rota", session="o")
    index.add_source(tmp_path / "led", project=tmp_path)
    index.add_source(real, project=tmp_path)
    hits = index.search("albatross runbook confluence", all_projects=True).hits
    assert [h.ledger for h in hits if h.session == "h"] == [str(real.resolve())]
    assert sum(s["ledgers"] for s in index.sources()) == 2
    assert sum(s["messages"] for s in index.sources()) == 2
