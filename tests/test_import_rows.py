"""The import's cheaper path writes what the record-by-record path wrote.

An import builds a record whose shape it has seen (same keys, scopes, category, confidence and
source) from the first validated Memory of that shape, and tokenizes each text once for both the
index and the stored term set. These tests compare both shortcuts with the full path, row by row.
"""

from __future__ import annotations

import itertools
import random
from datetime import datetime, timedelta, timezone

import pytest

import kenning
from kenning.errors import InvalidInput
from kenning.memory import requests, writes
from kenning.retrieval.text import query_terms, tokenize, tokens_and_terms
from kenning.store import plain, records

WORDS = ("deploy staging the a of cache warms nightly jenkins runs is not for Über naïve 東京都 "
         "c++ x86 v1.2 api_key zephyr pipeline rotates permission days and or it by").split()


def _clock():
    ticks = itertools.count()
    start = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    return lambda: start + timedelta(microseconds=next(ticks))


def _records(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))) + f" note{i}"
        record: dict = {"content": text} if rng.random() < 0.8 else {"text": text}
        roll = rng.random()
        if roll < 0.3:
            record["scopes"] = rng.choice([["a"], ["a", "a", " b "], ["b", "a"]])
        if rng.random() < 0.3:
            record["id"] = f"ext-{i}"
        if rng.random() < 0.2:
            record["category"] = rng.choice(["fact", "ambient", None])
        if rng.random() < 0.1:
            record["confidence"] = "high"
        if rng.random() < 0.05:
            record["metadata"] = {"k": i}
        if rng.random() < 0.05:
            record["source"] = "inferred"
        out.append(record)
    return out


def test_shaped_records_are_the_memories_full_validation_gives(tmp_path):
    items = _records(400)
    with kenning.open_store(tmp_path / "a", clock=_clock()) as a, kenning.open_store(tmp_path / "b", clock=_clock()) as b:
        fast = writes._import_memories(a._s, items, ["d"], None)
        full = writes._import_memories(b._s, items, ["d"], None, shapes=False)
    assert len(fast) == len(full) == 400
    for x, y in zip(fast, full):
        if not x.id.startswith("ext-"):  # a fresh ULID differs between runs; everything else may not
            x = x.model_copy(update={"id": y.id})
        assert x.model_dump_json() == y.model_dump_json()
        assert x.model_fields_set == y.model_fields_set
        assert x == y and x.__pydantic_extra__ is None and x.__pydantic_private__ is None
    assert len({id(m.scopes) for m in fast}) == len(fast)  # no list shared between two memories


@pytest.mark.parametrize("bad, message", [
    ({"content": " "}, "record 3: memory text is empty"),
    ({"content": "ok text", "id": 7}, "record 3: id must be a short non-blank string"),
    ({"content": "ok text", "id": "  "}, "record 3: id must be a short non-blank string"),
    ({"content": "!"}, "record 3: memory text '!' is too short"),
])
def test_a_bad_record_of_a_known_shape_is_refused_as_before(tmp_path, bad, message):
    items = [{"content": "first text", "id": "x1"}, {"content": "second text", "id": "x2"}, {**{"id": "x3"}, **bad}]
    with kenning.open_store(tmp_path / "s") as s:
        with pytest.raises(InvalidInput, match=message):
            s.import_records(items)
        assert s.count() == 0


def _rows(s, table: str, order: str) -> list[tuple]:
    return s._s.db.read(lambda c: c.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall())


def test_an_import_writes_the_rows_of_the_record_by_record_path(tmp_path):
    items = [{**r, "id": f"r{i}"} for i, r in enumerate(_records(600, seed=3))]
    with kenning.open_store(tmp_path / "new", clock=_clock()) as new:
        new.import_records(items, batch_size=128)
    with kenning.open_store(tmp_path / "old", clock=_clock()) as old:
        s = old._s
        memories = [requests.new_memory(writes._fields(r, ["imported"]), s.clock()) for r in items]
        for start in range(0, len(memories), 128):
            batch = memories[start : start + 128]
            with s.transaction() as c:
                keys = records.insert_many(c, batch)  # terms and tokens computed row by row
                s.lexicon.add_many(c, [(k, m.content, m.updated.timestamp()) for k, m in zip(keys, batch)])
                writes.enqueue(c, keys)
    with kenning.open_store(tmp_path / "new") as a, kenning.open_store(tmp_path / "old") as b:
        for table, order in (("memories", "rowid"), ("memory_scopes", "mem, scope"), ("memory_links", "source"),
                             ("lex_docs", "lexid"), ("lex_segments", "term, seg"), ("embed_queue", "mem")):
            assert _rows(a, table, order) == _rows(b, table, order), table
        stored = a._s.db.read(lambda c: c.execute("SELECT content, terms FROM memories").fetchall())
        assert all(terms == " ".join(query_terms(content)) for content, terms in stored)


def test_one_pass_gives_the_token_stream_and_the_query_terms():
    texts = [r.get("content") or r.get("text") for r in _records(500, seed=11)]
    texts += ["the of and", "THE Of", "", "...", "c++ and C# on x86", "naïve café", "don't stop"]
    for text in texts:
        assert tokens_and_terms(text) == (tokenize(text), query_terms(text)), text


@pytest.mark.parametrize("ts", [datetime(2026, 3, 1, 12, 0, 0, 5, timezone.utc), datetime(1, 1, 1, tzinfo=timezone.utc),
                                datetime(9999, 12, 31, 23, 59, 59, 999999, timezone.utc),
                                datetime(2026, 3, 1, 1, 0, 0, 7, timezone(timedelta(hours=2))),
                                datetime(2026, 3, 1, 12, 0, 0, 0, timezone(timedelta(0)))])
def test_a_stamp_is_written_the_same_whatever_its_zone(ts):
    """The UTC shortcut in ``iso`` writes what converting to naive UTC writes."""
    assert plain._iso.__wrapped__(ts) == ts.astimezone(timezone.utc).replace(tzinfo=None).isoformat(
        timespec="microseconds") + "Z"


def test_an_import_writes_the_rows_of_single_writes(tmp_path):
    """The batch statements (scopes and the embedding queue by INSERT ... SELECT over a run of rowids,
    postings appended to segments in key order) leave the rows one-memory-at-a-time inserts leave:
    ``records.insert``, the index's delta rows compacted, one queue row a memory."""
    rng = random.Random(5)
    items, scopes = [], ["a"]
    for i, record in enumerate(_records(700, seed=9)):
        if rng.random() < 0.06:  # runs of one scope list, long and short, around records.SCOPE_RUN
            scopes = rng.choice([["a"], ["b", "a"], ["c"], ["a", "c", "d"]])
        items.append({**record, "id": f"r{i}", "scopes": record.get("scopes", scopes)})
    with kenning.open_store(tmp_path / "batch", clock=_clock()) as batch:
        batch.import_records(items, batch_size=97)
    with kenning.open_store(tmp_path / "single", clock=_clock()) as single:
        s = single._s
        for record in items:
            memory = requests.new_memory(writes._fields(record, ["imported"]), s.clock())
            with s.transaction() as c:
                key = records.insert(c, memory)
                s.lexicon.add(c, key, memory.content, memory.updated.timestamp())
                writes.enqueue(c, [key])
        with s.transaction() as c:
            s.lexicon.compact(c)
    with kenning.open_store(tmp_path / "batch") as a, kenning.open_store(tmp_path / "single") as b:
        assert len(_rows(a, "memory_scopes", "mem, scope")) > len(items)
        for table, order in (("memories", "rowid"), ("memory_scopes", "mem, scope"), ("memory_links", "source"),
                             ("lex_docs", "lexid"), ("lex_segments", "term, seg"), ("lex_counts", "term"),
                             ("embed_queue", "mem")):
            assert _rows(a, table, order) == _rows(b, table, order), table
