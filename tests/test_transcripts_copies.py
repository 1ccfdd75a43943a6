"""A message a ledger holds twice, or a resumed session's ledger copies, is recalled once.

Claude Code writes a line again with its ``uuid`` and time when a session is resumed (the new
session's ledger opens with its predecessor's lines), and a ledger may hold a line twice; recall
returned each copy, so ``--limit 3`` could be one message three times. Real files, a real store.
"""

from __future__ import annotations

import json

from transcript_index import index  # noqa: F401

ANSWER = "The capybara importer skips rows with a null tenant id."


def _write(path, *objs) -> None:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))


def _claude(session: str, uuid: str, kind: str, text: str, at: str, cwd: str) -> dict:
    content = [{"type": "text", "text": text}] if kind == "assistant" else text
    return {"type": kind, "sessionId": session, "cwd": cwd, "timestamp": at, "uuid": uuid,
            "message": {"role": kind, "content": content}}


def test_a_claude_code_line_twice_and_in_a_resumed_session_is_recalled_once(index, tmp_path):
    folder = tmp_path / "cc"
    folder.mkdir()
    cwd = str(tmp_path)
    answer = _claude("S1", "same-uuid-1", "assistant", ANSWER, "2025-01-01T00:00:00Z", cwd)
    other = _claude("S1", "u-2", "user", "other capybara question about tenants", "2025-01-01T00:00:01Z", cwd)
    _write(folder / "S1.jsonl", answer, answer, other)
    _write(folder / "S2.jsonl", {**answer, "sessionId": "S2"}, {**other, "sessionId": "S2"},
           _claude("S2", "u-3", "user", "a capybara tenant question only the resumed session asks",
                   "2025-01-02T00:00:00Z", cwd))
    index.add_source(folder, project=tmp_path)
    hits = index.search("capybara importer null tenant", limit=3, all_projects=True).hits
    assert [h.snippet for h in hits].count(ANSWER) == 1
    assert len(hits) == 3 and len({h.snippet for h in hits}) == 3
    assert hits[0].snippet == ANSWER and hits[0].relevance == "high"  # its copy is no rival that lowers its label
    assert index.sources()[0]["messages"] == 6  # the ledgers' lines, as they are


def test_a_generic_line_repeated_in_its_session_is_recalled_once_but_another_sessions_is_kept(index, tmp_path):
    ledger = tmp_path / "gen.jsonl"
    line = {"session": "g1", "ts": "2025-01-01T00:00:00Z", "role": "user", "text": "the okapi scheduler pins jobs"}
    _write(ledger, line, line, {**line, "session": "g2"})
    index.add_source(ledger, project=tmp_path)
    hits = index.search("okapi scheduler", limit=5, all_projects=True).hits
    assert sorted(h.session for h in hits) == ["g1", "g2"]


def test_leaving_out_a_session_keeps_the_copy_another_session_holds(index, tmp_path):
    folder = tmp_path / "cc"
    folder.mkdir()
    answer = _claude("S1", "same-uuid-1", "assistant", ANSWER, "2025-01-01T00:00:00Z", str(tmp_path))
    _write(folder / "S1.jsonl", answer)
    _write(folder / "S2.jsonl", {**answer, "sessionId": "S2"})
    index.add_source(folder, project=tmp_path)
    assert [h.session for h in index.search("capybara importer", all_projects=True, exclude_session="S1").hits] == ["S2"]
    assert len(index.search("capybara importer", all_projects=True).hits) == 1
