"""An import's batches are each one committed transaction; around them ``Database.bulk_writes``
lets the WAL grow to ``BULK_CHECKPOINT_PAGES`` before copying it into the database file (a
batch rewrites the newest segment's postings pages, which a checkpoint every 1,000 pages copied
over and over), then puts the connection's settings back and checkpoints what is left."""

from __future__ import annotations

import pytest

import kenning
from kenning.store import db as db_mod


def _records(n: int) -> list[dict]:
    return [{"id": f"r{i}", "content": f"nightly deploy {i} rotates the cache of zephyr {i % 7}"} for i in range(n)]


@pytest.mark.sqlite_only  # SQLite's WAL and its checkpoints
def test_the_import_checkpoints_less_often_and_restores_the_setting(tmp_path):
    seen: list[tuple[int, int]] = []
    with kenning.open_store(tmp_path / "s") as store:
        conn = store._s.db.conn
        before = conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]

        def progress(done: int) -> None:  # between two batches, inside bulk_writes
            seen.append((done, conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]))

        store.import_records(_records(60), batch_size=20, progress=progress)
        assert [d for d, _ in seen] == [20, 40, 60]
        assert {pages for _, pages in seen} == {db_mod.BULK_CHECKPOINT_PAGES}
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == before
        busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert busy == 0 and frames == copied  # the import left nothing uncopied behind it


def test_each_batch_is_committed_before_the_next_begins(tmp_path):
    """Durability is the batch's: another connection sees each batch as soon as it is reported."""
    counts: list[int] = []
    path = tmp_path / "s"
    with kenning.open_store(path) as store, kenning.open_store(path) as other:

        def progress(done: int) -> None:
            counts.append(other._s.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()[0]))

        store.import_records(_records(50), batch_size=20, progress=progress)
    assert counts == [20, 40, 50]
