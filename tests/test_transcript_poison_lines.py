"""One bad line in one agent ledger is one malformed line: never a failed add, a broken recall or a traceback.

The lines below are what real ledgers hold now and then (an emoji cut in half by a tool's
truncation, NaN written by Python's json.dumps, a nonsense epoch, a structure where an id belongs,
a line nested past the parser's depth). Each is skipped and counted as malformed (a lone surrogate
in good text is replaced with U+FFFD instead, so the message is kept), and the ledger's other
lines and the folder's other ledgers are indexed and found.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kenning.recall.transcripts import index_for

from transcript_index import index  # noqa: F401

PROJECT = "/home/me/proj"
GOOD_CLAUDE = {"type": "user", "sessionId": "aaaa", "cwd": PROJECT, "timestamp": "2026-01-01T10:00:00Z", "uuid": "1",
               "message": {"role": "user", "content": "the deadlock in the reconciliation job came from lock ordering"}}


def _claude(session: str, text: str, uuid: str, kind: str = "user", **extra) -> dict:
    return {"type": kind, "sessionId": session, "cwd": PROJECT, "timestamp": "2026-01-02T10:00:00Z", "uuid": uuid,
            "message": {"role": kind, "content": [{"type": "text", "text": text}]}, **extra}


def _write(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="ascii")  # json.dumps escapes: the bytes are ASCII
    return path


def kenning(store: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_CURRENT_SESSION", None)
    return subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args],
                          capture_output=True, text=True, env=env, timeout=120)


# ---------------------------------------------------------------------------------------- the CLI
@pytest.mark.slow
def test_a_lone_surrogate_in_one_ledger_breaks_neither_the_folder_nor_recall(tmp_path):
    folder = tmp_path / "claude" / "-home-me-proj"
    _write(folder / "aaaa-good.jsonl", json.dumps(GOOD_CLAUDE))
    _write(folder / "bbbb-bad.jsonl",
           json.dumps(_claude("bbbb", "fine line about the flamingo cluster", "2")),
           # what a tool result cut inside an emoji looks like on disk: "Done \ud83d" (half a pair)
           json.dumps(_claude("bbbb", "Done migrating the heron tables \ud83d", "3", kind="assistant")))
    store = tmp_path / "store"
    added = kenning(store, "transcripts", "add", str(tmp_path / "claude"), "--json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["ledgers"] == 2 and json.loads(added.stdout)["messages_added"] == 3
    listed = kenning(store, "transcripts", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout and json.loads(listed.stdout)["sources"][0]["messages"] == 3
    for query, expected in (("deadlock", "lock ordering"), ("flamingo", "flamingo cluster"), ("heron", "heron tables")):
        found = kenning(store, "recall", query, "--all", "--json")
        assert found.returncode == 0, found.stderr
        snippets = [h["snippet"] for h in json.loads(found.stdout)["hits"] if h["role"] == "transcript"]
        assert any(expected in s for s in snippets), (query, snippets)
    heron = json.loads(kenning(store, "recall", "heron", "--all", "--json").stdout)["hits"]
    assert any("\ufffd" in h["snippet"] for h in heron if h["role"] == "transcript")  # the half emoji, replaced


@pytest.mark.slow
@pytest.mark.parametrize("bad", ['{"session":"s9","ts":NaN,"role":"user","text":"cormorant backups are encrypted"}',
                                 '{"session":"s9","ts":-1e18,"role":"user","text":"egret storage quota was raised"}',
                                 '{"session":"s","ts":"2026-01-01T00:00:00Z","role":"user","text":"deep","x":'
                                 + "[" * 3000 + "]" * 3000 + "}"],
                         ids=["nan", "negative-epoch", "deep"])
def test_a_bad_generic_line_is_counted_not_a_traceback_on_every_recall(tmp_path, bad):
    ledger = _write(tmp_path / "tr.jsonl", bad,
                    '{"session":"s9","ts":"2026-01-01T00:00:00Z","role":"user","text":"pelican backups run nightly"}')
    store = tmp_path / "store"
    added = kenning(store, "transcripts", "add", str(ledger), "--json")
    assert added.returncode == 0 and "Traceback" not in added.stderr, added.stderr
    assert json.loads(added.stdout)["malformed_lines"] == 1
    for _ in range(2):  # and every later recall
        found = kenning(store, "recall", "backups", "--all", "--json")
        assert found.returncode == 0 and "Traceback" not in found.stderr, found.stderr
        assert [h["snippet"] for h in json.loads(found.stdout)["hits"]] == ["pelican backups run nightly"]
    listed = json.loads(kenning(store, "transcripts", "list", "--json").stdout)
    assert listed["sources"][0]["malformed_lines"] == 1


# ---------------------------------------------------------------------------------------- the library
GOOD_GENERIC = {"session": "s9", "ts": "2026-01-01T00:00:00Z", "role": "user", "text": "pelican backups run nightly"}
BAD_LINES = {
    "ts-nan": '{"session":"s9","ts":NaN,"role":"user","text":"cormorant backups are encrypted"}',
    "ts-infinity": '{"session":"s9","ts":Infinity,"role":"user","text":"cormorant backups are encrypted"}',
    "ts-negative-epoch": '{"session":"s9","ts":-1e18,"role":"user","text":"cormorant backups are encrypted"}',
    "ts-far-future": '{"session":"s9","ts":1e30,"role":"user","text":"cormorant backups are encrypted"}',
    "ts-huge-int": '{"session":"s9","ts":' + "9" * 400 + ',"role":"user","text":"cormorant backups are encrypted"}',
    "deep-nesting": '{"session":"s9","ts":"2026-01-01T00:00:00Z","role":"user","text":"cormorant backups",'
                    '"x":' + "[" * 3000 + "]" * 3000 + "}",
    "claude-sessionId-object": json.dumps(_claude("x", "cormorant backups are encrypted", "7") | {"sessionId": {"a": 1}}),
    "claude-agentId-list": json.dumps(_claude("s9", "cormorant backups are encrypted", "8", isSidechain=True,
                                              agentId=["a", "b"])),
    "generic-parent-id-object": json.dumps(GOOD_GENERIC | {"text": "cormorant backups are encrypted",
                                                           "parent_session_id": {"id": "p1"}}),
}


@pytest.mark.parametrize("bad", list(BAD_LINES.values()), ids=list(BAD_LINES))
def test_a_bad_line_is_skipped_and_counted_and_its_neighbours_are_indexed(index, tmp_path, bad):
    folder = tmp_path / "ledgers"
    _write(folder / "good.jsonl", json.dumps(GOOD_CLAUDE))
    _write(folder / "mixed.jsonl", json.dumps(GOOD_GENERIC), bad,
           json.dumps(GOOD_GENERIC | {"text": "osprey restores were tested"}))
    added = index.add_source(folder, project=PROJECT)
    assert added["ledgers"] == 2 and added["messages_added"] == 3 and added["malformed_lines"] == 1
    (source,) = index.sources()
    assert source["malformed_lines"] == 1 and source["messages"] == 3
    for query in ("deadlock", "pelican", "osprey"):
        assert index.search(query, all_projects=True).hits, query
    assert not [h for h in index.search("cormorant", all_projects=True).hits]


def test_a_bad_last_line_without_its_newline_is_counted_too(index, tmp_path):
    ledger = tmp_path / "tail.jsonl"
    ledger.write_text(json.dumps(GOOD_GENERIC) + "\n" + BAD_LINES["deep-nesting"], encoding="ascii")
    added = index.add_source(ledger, project=PROJECT)
    assert added["messages_added"] == 1
    assert [h.snippet for h in index.search("backups", all_projects=True).hits] == ["pelican backups run nightly"]


def test_a_refused_line_leaves_the_ledgers_identity_to_its_good_lines(index, tmp_path):
    bad = _claude("main-1", "cormorant", "1", isSidechain=True, agentId={"id": "x"}) | {"cwd": "/home/elsewhere"}
    ledger = _write(tmp_path / "main-1.jsonl", json.dumps(bad), json.dumps(_claude("main-1", "heron tables moved", "2")))
    index.add_source(ledger, project="/nowhere")
    (hit,) = index.search("heron", all_projects=True).hits
    assert hit.session == "main-1" and hit.project == PROJECT and not hit.sidechain  # nothing of the bad line stayed


def test_lone_surrogates_in_ids_and_text_become_replacement_characters(index, tmp_path):
    line = _claude("sess-\udc00", "the heron migration finished \ud83d", "1") | {"cwd": "/home/me/pr\ud800oj"}
    ledger = _write(tmp_path / "s.jsonl", json.dumps(line), json.dumps(GOOD_GENERIC))
    added = index.add_source(ledger, project=PROJECT)
    assert added["malformed_lines"] == 0 and added["messages_added"] == 2
    (hit,) = index.search("heron migration", all_projects=True).hits
    assert hit.snippet.endswith("finished \ufffd") and hit.session == "sess-\ufffd"
    assert hit.project == "/home/me/pr\ufffdoj"
    assert index.sources()[0]["messages"] == 2


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_nuls_in_ids_and_text_become_replacement_characters_on_every_backend(backend, tmp_path, request):
    """PostgreSQL's text cannot hold a NUL: one message with one made adding the folder fail there,
    and every later recall and transcripts list with it (each sync tried again)."""
    import kenning

    where = tmp_path / "s" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    line = _claude("sess-\x00", "the heron migration\x00 finished", "1") | {"cwd": "/home/me/pr\x00oj"}
    ledger = _write(tmp_path / "s.jsonl", json.dumps(line), json.dumps(GOOD_GENERIC))
    with kenning.open_store(where) as store:
        store.configure(persist=False, default_mode="bm25")
        index = index_for(store)
        added = index.add_source(ledger, project=PROJECT)
        assert added["malformed_lines"] == 0 and added["messages_added"] == 2
        (hit,) = index.search("heron migration", all_projects=True).hits
        assert hit.snippet == "the heron migration\ufffd finished" and hit.session == "sess-\ufffd"
        assert hit.project == "/home/me/pr\ufffdoj" and index.sources()[0]["messages"] == 2


def test_a_file_no_line_of_which_is_a_message_is_added_with_a_warning_naming_remove(tmp_path):
    not_a_transcript = _write(tmp_path / "passwd", "root:x:0:0:root:/root:/bin/bash", "daemon:x:1:1::/:/bin/false")
    store = tmp_path / "store"
    added = kenning(store, "transcripts", "add", str(not_a_transcript))
    assert added.returncode == 0, added.stderr
    said = " ".join(added.stderr.split())
    assert "warning: no line of" in said and f"kenning transcripts remove {not_a_transcript}" in said
    good = _write(tmp_path / "tr.jsonl",
                  '{"session":"s9","ts":"2026-01-01T00:00:00Z","role":"user","text":"pelican backups run nightly"}',
                  "not json")
    added = kenning(store, "transcripts", "add", str(good))
    assert added.returncode == 0 and "warning" not in added.stderr, added.stderr
