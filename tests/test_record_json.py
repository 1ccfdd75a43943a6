"""The ``record`` column of a plain memory is filled into a template cut from the first plain
memory of its shape (store/records.py ``record_json``) instead of a pydantic dump each: it must be
exactly ``model_dump_json()`` (plain reads parse it as such), whatever the text holds."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone

import pytest

import kenning
from kenning.memory import requests
from kenning.store import records
from kenning.store.models import Memory

NOW = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)


def _memory(content: str, id: str = "m1", **fields) -> Memory:
    """Validated by the model alone: the escaping is checked on characters the limits would refuse too."""
    return requests.validated({"id": id, "content": content, "scopes": ["a"], "created": NOW, "updated": NOW, **fields})


def _chunks(step: int = 4096):
    """Every code point but the surrogates (which no stored text can hold), a few thousand at a time."""
    points = [p for p in range(1, sys.maxunicode + 1) if not 0xD800 <= p <= 0xDFFF]
    for i in range(0, len(points), step):
        yield "x " + "".join(map(chr, points[i : i + step]))


def test_every_character_is_escaped_as_pydantic_escapes_it():
    for text in [*_chunks(), "\x00\x01\x1f\x7f \"quoted\" back\\slash \u2028\u2029 \ud7ff \U0001F600 tab\tnl\n"]:
        memory = _memory(text, id="i\"d\\" + text[2:40])
        assert records.record_json(memory) == memory.model_dump_json()


@pytest.mark.parametrize("fields", [
    {}, {"scopes": ["a", "b\"c", "ü"]}, {"category": "ambient"}, {"confidence": "high"}, {"source": "inferred"},
    {"metadata": {"k": 1}}, {"links": [{"kind": "extends", "target": "m0"}]},
    {"claims": [{"spec": "README.md"}]},
])
def test_memories_of_every_shape_and_their_neighbours(fields):
    first = _memory("the first text", id="first", **fields)
    later = requests.sibling(first, {"id": "later", "content": "another \"text\"\n", "created": NOW + timedelta(days=1),
                                     "updated": NOW + timedelta(days=2)})
    for memory in (first, later, first.model_copy(update={"last_verified_at": NOW, "verification_note": "ok"})):
        assert records.record_json(memory) == memory.model_dump_json()


def test_a_time_without_microseconds_and_one_in_another_zone():
    for at in (datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 1, 1, 3, tzinfo=timezone(timedelta(hours=5)))):
        memory = requests.new_memory({"id": "t", "content": "timed text", "scopes": ["a"]}, at)
        assert records.record_json(memory) == memory.model_dump_json()


def test_an_import_stores_each_records_own_dump_and_cuts_one_template_a_shape(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "_templates", {})
    items = [{"id": f"r{i}", "content": f"note {i}: the \"cache\" warms nightly\tÜber {'東京' * (i % 3)}"}
             for i in range(300)]
    items += [{"id": f"s{i}", "content": f"scoped note {i}", "scopes": ["x", "y"], "category": "ambient"}
              for i in range(50)]
    with kenning.open_store(tmp_path / "s") as store:
        store.import_records(items, batch_size=64)
        stored = store._s.db.read(lambda c: c.execute("SELECT record FROM memories ORDER BY rowid").fetchall())
    assert len(stored) == 350
    for (record,) in stored:
        assert record == Memory.model_validate_json(record).model_dump_json()
    assert sorted(key[:2] for key in records._templates) == [(("imported",), "fact"), (("x", "y"), "ambient")]
