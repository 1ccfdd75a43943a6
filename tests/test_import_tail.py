"""An import appends each batch's postings to the rows its earlier batches wrote without reading
them back (store/lexicon.py ``ImportTail``). The index it leaves must be the one reading them back
leaves, across many segments, and must stay right when someone else changes the index between
two batches: another connection's commit, or another write through the same connection."""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest

import kenning
from kenning.retrieval.text import tokenize
from kenning.store import lexicon

SEGMENT = 64  # segments of 64 documents, so a few hundred records span many of them


@pytest.fixture(autouse=True)
def small_segments(monkeypatch):
    monkeypatch.setattr(lexicon, "SEGMENT_DOCS", SEGMENT)


def _records(n: int, prefix: str = "r") -> list[dict]:
    words = "alpha beta gamma delta the of cache deploy nightly zephyr pipeline rotates".split()
    return [{"id": f"{prefix}{i}", "content": " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 9))
             + f" note{i}"} for i in range(n)]


def _postings(store) -> dict[str, list[tuple[int, int]]]:
    """Every term's stored postings (segments, then delta rows), as (lexid, tf) in lexid order."""
    def read(c):
        out: dict[str, list[tuple[int, int]]] = {}
        for term, seg, blob in c.execute("SELECT term, seg, postings FROM lex_segments ORDER BY term, seg"):
            assert lexicon.valid_segment(blob, seg), (term, seg)
            ids, tfs = lexicon._decode(blob)
            out.setdefault(term, []).extend(zip(ids.tolist(), tfs.tolist()))
        for term, lexid, tf in c.execute("SELECT term, lexid, tf FROM lex_delta"):
            out.setdefault(term, []).append((lexid, tf))
        return {term: sorted(p) for term, p in out.items()}
    return store._s.db.read(read)


def _expected(store) -> dict[str, list[tuple[int, int]]]:
    """The postings the index must hold: every indexed text version tokenized again."""
    rows = store._s.db.read(lambda c: c.execute(
        "SELECT d.lexid, m.content FROM lex_docs d JOIN memories m ON m.rowid = d.mem").fetchall())
    out: dict[str, list[tuple[int, int]]] = {}
    for lexid, content in rows:
        for term, tf in Counter(tokenize(content)).items():
            out.setdefault(term, []).append((lexid, tf))
    return {term: sorted(p) for term, p in out.items()}


def test_an_import_across_many_segments_writes_the_rows_reading_back_writes(tmp_path, monkeypatch):
    items = _records(900)
    with kenning.open_store(tmp_path / "tail") as a:
        a.import_records(_records(5, "before"), batch_size=5)  # the first segment holds rows already
        a.import_records(items, batch_size=23)
    monkeypatch.setattr(lexicon.ImportTail, "check", lambda self, db: self.__init__())  # never trusted
    with kenning.open_store(tmp_path / "read") as b:
        b.import_records(_records(5, "before"), batch_size=5)  # the first segment holds rows already
        b.import_records(items, batch_size=23)
    with kenning.open_store(tmp_path / "tail") as a, kenning.open_store(tmp_path / "read") as b:
        segments = a._s.db.read(lambda c: c.execute("SELECT COUNT(DISTINCT seg) FROM lex_segments").fetchone()[0])
        assert segments > 10
        rows = lambda c: [(t, seg, bytes(blob)) for t, seg, blob in c.execute(  # noqa: E731
            "SELECT term, seg, postings FROM lex_segments ORDER BY term, seg").fetchall()]
        assert a._s.db.read(rows) == b._s.db.read(rows)
        assert _postings(a) == _expected(a)


@pytest.mark.parametrize("writer", ["another connection", "the same connection"])
def test_a_write_between_two_batches_is_kept(tmp_path, monkeypatch, writer):
    """Single writes between the batches land in the delta rows and are compacted into the very
    segment the import is filling; the next batch must append to that, not to what it wrote."""
    monkeypatch.setattr(lexicon, "COMPACT_AFTER_DELTA_ROWS", 1)  # every single write compacts at once
    with kenning.open_store(tmp_path / "s") as store, kenning.open_store(tmp_path / "s") as other:
        target = other if writer == "another connection" else store
        written = iter(range(1000))

        def between(done: int) -> None:
            target.write(f"zephyr pipeline rotates nightly alpha interleaved write number {next(written)}",
                         scopes=["between"])

        store.import_records(_records(400), batch_size=17, progress=between)
    with kenning.open_store(tmp_path / "s") as store:
        assert _postings(store) == _expected(store)
        assert store.search("interleaved", mode="bm25", limit=50, scopes=["between"]).hits


def test_a_commit_right_after_a_batchs_commit_is_kept(tmp_path, monkeypatch):
    """Another writer may commit the moment a batch's COMMIT releases the write lock, before the
    import's next line runs: the tail must not count that commit as its own."""
    monkeypatch.setattr(lexicon, "COMPACT_AFTER_DELTA_ROWS", 1)  # the other write compacts into the segment at once
    with kenning.open_store(tmp_path / "s") as store, kenning.open_store(tmp_path / "s") as other:
        db = store._s.db
        original = db.transaction
        batches = iter(range(1000))
        in_batch, written = [], []
        add_coded = lexicon.Lexicon.add_coded  # what an import batch indexes through

        def marked_add_coded(self, *args, **kwargs):
            in_batch.append(True)
            return add_coded(self, *args, **kwargs)

        @contextlib.contextmanager
        def then_another_writer():
            with original() as c:
                yield c
            if in_batch:  # this was an import batch, now committed
                in_batch.clear()
                n = next(batches)
                written.append(other.write(f"zephyr pipeline alpha after{n} k{n}x q{n}y m{n}z", scopes=["between"]))

        monkeypatch.setattr(lexicon.Lexicon, "add_coded", marked_add_coded)
        monkeypatch.setattr(db, "transaction", then_another_writer)
        store.import_records(_records(400), batch_size=17)
    assert len(written) > 20 and {w.status for w in written} == {"committed"}
    with kenning.open_store(tmp_path / "s") as store:
        assert _postings(store) == _expected(store)
        assert len(store.search("zephyr pipeline", mode="bm25", limit=50, scopes=["between"]).hits) == len(written)
