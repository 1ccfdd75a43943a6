"""A ledger edited in place is read again whole: a redacted secret must leave the index.

Rewrite detection compared only the size and digests of the first bytes and of the bytes before the
read offset, so a same-length edit in the middle (``sed -i 's/hunter2xyzzy/XXXXXXXXXXXX/'``: a new
file of the same size) was never read again, and neither after more lines were appended. Real files,
a real store.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from kenning.recall.transcripts import index_for

SECRET, MASK = "hunter2xyzzy", "XXXXXXXXXXXX"


def _lines(ledger, n: int = 30, secret_at: int = 15) -> None:
    with open(ledger, "w") as f:
        for i in range(1, n + 1):
            text = (f"the prod password is {SECRET} please keep it" if i == secret_at
                    else f"routine line {i:02d} about the build farm and nothing else at all")
            f.write(json.dumps({"session": "r", "ts": f"2025-01-01T00:00:{i:02d}Z", "role": "user", "text": text}) + "\n")


def _later(stat: os.stat_result) -> tuple[int, int]:
    """Times a second after ``stat``'s: a coarse file system may give an edit made now the same mtime."""
    return stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000


@pytest.fixture
def index(store, tmp_path):
    store.configure(persist=False, default_mode="bm25")
    ledger = tmp_path / "a.jsonl"
    _lines(ledger)
    ix = index_for(store)
    ix.add_source(ledger, project=tmp_path)
    assert [h.snippet for h in ix.search(SECRET, all_projects=True).hits] == [f"the prod password is {SECRET} please keep it"]
    return ix, ledger


def _redact(ledger) -> None:
    before = os.stat(ledger)
    subprocess.run(["sed", "-i", f"s/{SECRET}/{MASK}/", str(ledger)], check=True)  # a new file, same size
    after = os.stat(ledger)
    assert after.st_size == before.st_size and after.st_ino != before.st_ino
    os.utime(ledger, ns=_later(before))


def test_a_same_length_redaction_by_sed_is_read_again(index):
    ix, ledger = index
    _redact(ledger)
    assert ix.sync().reread == 1
    assert not ix.search(SECRET, all_projects=True).hits
    assert len(ix.search(MASK, all_projects=True).hits) == 1
    assert ix.sources()[0]["messages"] == 30


def test_a_redaction_followed_by_an_append_is_read_again(index):
    ix, ledger = index
    _redact(ledger)
    with open(ledger, "a") as f:
        f.write(json.dumps({"session": "r", "ts": "2025-01-01T00:01:00Z", "role": "user", "text": "later line"}) + "\n")
    assert not ix.search(SECRET, all_projects=True).hits
    assert ix.sources()[0]["messages"] == 31


def test_a_same_size_edit_in_place_is_read_again(index):
    """Same file, same size, a later mtime: an edit that kept the inode (an editor writing in place)."""
    ix, ledger = index
    before = os.stat(ledger)
    data = ledger.read_bytes()
    with open(ledger, "r+b") as f:
        f.seek(data.index(SECRET.encode()))
        f.write(MASK.encode())
    os.utime(ledger, ns=_later(before))
    assert os.stat(ledger).st_ino == before.st_ino
    assert not ix.search(SECRET, all_projects=True).hits
    assert ix.sources()[0]["messages"] == 30


def test_an_append_is_still_read_on_from_where_it_stopped(index):
    """The cheap path stays: only the new lines are read (the old ones keep their message ids)."""
    ix, ledger = index
    ids = {h.id for h in ix.search("routine build farm", all_projects=True, limit=50).hits}
    with open(ledger, "a") as f:
        f.write(json.dumps({"session": "r", "ts": "2025-01-01T00:01:00Z", "role": "user",
                            "text": "routine line about the build farm, appended"}) + "\n")
    report = ix.sync()
    assert (report.appended, report.reread, report.messages) == (1, 0, 1)
    after = {h.id for h in ix.search("routine build farm", all_projects=True, limit=50).hits}
    assert ids < after and len(after - ids) == 1
