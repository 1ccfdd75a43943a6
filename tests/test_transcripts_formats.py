"""Two ledger shapes the readers half read: an older Codex rollout's time, and a chat message's parts.

An older Codex rollout opens with ``{id, timestamp, instructions}`` and then holds bare response
items without a time of their own: their hits said ``timestamp: null`` though the first line gives
the session's. A generic line whose ``content`` is a list of parts (``[{"type": "text", "text": ...}]``,
the OpenAI chat shape) was counted as malformed and its words were never found. Real files, a real store.
"""

from __future__ import annotations

import json

from transcript_index import index  # noqa: F401


def _write(path, *objs) -> None:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))


def test_an_older_codex_rollouts_messages_take_the_time_its_first_line_gives(index, tmp_path):
    ledger = tmp_path / "rollout-old.jsonl"
    _write(ledger,
           {"id": "old-codex-1", "timestamp": "2024-05-01T00:00:00Z", "instructions": "be helpful"},
           {"record_type": "state"},
           {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "where is the marmot queue"}]},
           {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "the marmot queue is SQS"}]},
           {"type": "message", "role": "user", "timestamp": "2024-05-01T00:05:00Z",
            "content": [{"type": "input_text", "text": "and the marmot dead letters"}]})
    added = index.add_source(ledger, project=tmp_path)
    assert (added["messages_added"], added["malformed_lines"]) == (3, 0)
    hits = index.search("marmot", all_projects=True, limit=10).hits
    assert {(h.session, h.format, h.speaker, h.timestamp) for h in hits} == {
        ("old-codex-1", "codex", "user", "2024-05-01T00:00:00Z"),
        ("old-codex-1", "codex", "assistant", "2024-05-01T00:00:00Z"),
        ("old-codex-1", "codex", "user", "2024-05-01T00:05:00Z"),  # a line's own time comes first
    }


def test_a_generic_line_whose_content_is_a_list_of_parts_is_read(index, tmp_path):
    ledger = tmp_path / "gen.jsonl"
    _write(ledger,
           {"session": "g1", "ts": "2025-01-01T00:00:00Z", "role": "user",
            "content": [{"type": "text", "text": "content parts line about"}, {"type": "text", "text": "the marmot migration"}]},
           {"session": "g1", "ts": "2025-01-01T00:00:01Z", "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://example.com/marmot.png"}}]},
           {"session": "g1", "ts": "2025-01-01T00:00:02Z", "role": "assistant", "content": "a plain marmot answer"})
    added = index.add_source(ledger, project=tmp_path)
    assert (added["messages_added"], added["malformed_lines"]) == (2, 0)  # an image alone is no text, not a bad line
    hits = index.search("marmot migration", all_projects=True).hits
    assert hits[0].snippet == "content parts line about the marmot migration"  # the parts' text, joined
    assert (hits[0].format, hits[0].speaker, hits[0].timestamp) == ("generic", "user", "2025-01-01T00:00:00Z")
