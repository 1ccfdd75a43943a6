"""Transcript recall on real files in temporary folders: formats, the incremental index, scoping, ranking.

The fixtures under tests/data/transcripts follow the shapes Claude Code and Codex CLI write
(one session a file, sidechain / worker ledgers beside them) plus a generic ledger.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

import kenning
from kenning.errors import InvalidInput, NotFound
from kenning.recall import profile
from kenning.recall.recall import recall
from kenning.recall.transcripts import ENV_CURRENT_SESSION, index_for

DATA = Path(__file__).parent / "data" / "transcripts"
PAYMENTS = "/home/dev/projects/payments"
WEBSITE = "/home/dev/projects/website"
MAIN_SESSION = "4f35e220-c435-4cf7-b9b9-f40426042847"
CODEX_SESSION = "0199a213-81c0-7800-8aa1-bbab2a035a53"


@pytest.fixture
def ledgers(tmp_path):
    target = tmp_path / "ledgers"
    shutil.copytree(DATA, target)
    return target


@pytest.fixture
def index(store, ledgers):
    store.configure(persist=False, default_mode="bm25")  # the lexical behaviour; the vector leg has its own tests
    ix = index_for(store)
    ix.add_source(ledgers, project=PAYMENTS)
    return ix


def _texts(result) -> list[str]:
    return [h.snippet for h in result.hits]


def _append(path: Path, *objs) -> None:
    with open(path, "a") as f:
        for obj in objs:
            f.write(json.dumps(obj) + "\n")


def _generic(text: str, session: str = "nightly-42", role: str = "assistant", **extra) -> dict:
    return {"session": session, "ts": "2026-11-30T10:00:00Z", "role": role, "text": text, **extra}


# ---------------------------------------------------------------------------------------- formats
def test_claude_code_ledger_keeps_user_and_assistant_text_and_short_tool_prose(index):
    found = index.search("deadlock ledger_entries reconciliation", project=PAYMENTS)
    main = [h for h in found.hits if h.session == MAIN_SESSION]
    assert {h.speaker for h in main} == {"user", "assistant"}
    assert all(h.format == "claude-code" and h.timestamp.startswith("2026-11-20T09:1") for h in main)
    short_tool = index.search("212 tests passed payments suite", project=PAYMENTS).hits[0]
    assert short_tool.speaker == "tool" and short_tool.snippet.startswith("All 212 tests passed")
    # a long grep listing, thinking, tool calls, meta lines and slash commands are not indexed
    for absent in ("FOR UPDATE", "Need to look at the job code first", "Grep", "Caveat", "cost"):
        assert not [h for h in index.search(absent, all_projects=True).hits if absent.lower() in h.snippet.lower()], absent


def test_claude_code_compact_summary_is_not_recalled_as_something_the_user_said(store, tmp_path):
    """When Claude Code compacts a session it writes the summary as a "user" message (isCompactSummary):
    injected context repeating the session's own messages, not the person's words."""
    store.configure(persist=False, default_mode="bm25")
    sid = "9d1c3f00-0000-4000-8000-00000000c0de"
    base = {"sessionId": sid, "cwd": str(tmp_path), "isSidechain": False, "userType": "external", "version": "2.0.61"}
    ledger = tmp_path / f"{sid}.jsonl"
    _append(ledger,
            {**base, "type": "user", "uuid": "u1", "timestamp": "2026-11-20T09:10:00.000Z",
             "message": {"role": "user", "content": "Why does the wombat importer drop rows?"}},
            {**base, "type": "user", "uuid": "u2", "timestamp": "2026-11-20T10:00:00.000Z", "isCompactSummary": True,
             "isVisibleInTranscriptOnly": True,
             "message": {"role": "user", "content": "This session is being continued from a previous conversation "
                                                    "that ran out of context. Summary: the wombat importer drops rows."}},
            {**base, "type": "assistant", "uuid": "a1", "timestamp": "2026-11-20T10:01:00.000Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "The wombat importer skips "
                                                                                    "rows without a key."}]}})
    ix = index_for(store)
    ix.add_source(ledger, project=tmp_path)
    hits = ix.search("wombat importer", all_projects=True, limit=10).hits
    assert sorted(h.speaker for h in hits) == ["assistant", "user"]
    assert not any("continued from a previous conversation" in h.snippet for h in hits)



def test_an_index_read_by_older_readers_is_read_again_once(tmp_path, monkeypatch):
    """A store whose ledgers an older kenning read (here: one that still took Claude Code's compact
    summary for the user's words) is read again from each ledger's start at the next sync, once:
    the summary goes, nothing is counted twice, and a later sync reads nothing again."""
    from kenning.recall import readers, transcripts

    sid = "9d1c3f00-0000-4000-8000-00000000beef"
    base = {"sessionId": sid, "cwd": str(tmp_path), "isSidechain": False, "userType": "external"}
    ledger = tmp_path / f"{sid}.jsonl"
    _append(ledger,
            {**base, "type": "user", "uuid": "u1", "timestamp": "2026-11-20T09:10:00.000Z",
             "message": {"role": "user", "content": "Why does the numbat exporter drop rows?"}},
            {**base, "type": "user", "uuid": "u2", "timestamp": "2026-11-20T10:00:00.000Z", "isCompactSummary": True,
             "message": {"role": "user", "content": "This session is being continued. Summary: the numbat "
                                                    "exporter drops rows."}},
            {**base, "type": "assistant", "uuid": "a1", "timestamp": "2026-11-20T10:01:00.000Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "The numbat exporter skips "
                                                                                    "rows without a key."}]}})
    claude = readers._claude
    with monkeypatch.context() as older:  # the readers before READER_VERSION 2
        older.setattr(readers, "_claude", lambda obj, state: claude(
            {k: v for k, v in obj.items() if k != "isCompactSummary"}, state))
        older.setattr(transcripts, "READER_VERSION", "1")
        with kenning.open_store(tmp_path / "s") as old:
            index_for(old).add_source(ledger, project=tmp_path)
            assert len(index_for(old).search("numbat exporter", all_projects=True, limit=10).hits) == 3
            with old.db.transaction() as c:
                old.db.set_meta(c, transcripts.READER_KEY, "1")
    with kenning.open_store(tmp_path / "s") as store:
        ix = index_for(store)
        report = ix.sync()
        assert report.reread == 1 and report.messages == 2
        hits = ix.search("numbat exporter", all_projects=True, limit=10).hits
        assert sorted(h.speaker for h in hits) == ["assistant", "user"]
        assert not any("being continued" in h.snippet for h in hits)
        assert store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM transcript_messages").fetchone()[0]) == 2
    with kenning.open_store(tmp_path / "s") as store:
        assert not index_for(store).sync().changed  # read again once, not at every open

def test_codex_rollout_skips_injected_context_event_echoes_and_reasoning(index):
    hits = index.search("refund idempotency", project=PAYMENTS).hits
    # the worker's "refund_requests ... idempotency_key" matches too (a memory indexes an identifier's words)
    codex = [h for h in hits if h.format == "codex" and h.session == CODEX_SESSION]
    assert [(h.speaker, h.session) for h in codex] == [("user", CODEX_SESSION), ("assistant", CODEX_SESSION)] or \
        sorted(h.speaker for h in codex) == ["assistant", "user"]
    assert len(codex) == 2  # the event_msg echoes of the same two messages are not indexed twice
    assert not index.search("approval_policy environment_context", all_projects=True).hits
    assert not index.search("Inspecting refund handler", all_projects=True).hits or all(
        "Inspecting" not in h.snippet for h in index.search("Inspecting refund handler", all_projects=True).hits)


def test_generic_ledger_and_malformed_lines_are_counted_not_fatal(index, ledgers):
    hit = index.search("backup snapshots", project=PAYMENTS).hits[0]
    assert hit.format == "generic" and hit.session == "nightly-42" and hit.speaker == "assistant"
    assert hit.timestamp.startswith("2026-11-29T")  # epoch seconds converted
    (source,) = index.sources()
    assert source["malformed_lines"] == 2  # one in the generic ledger, one truncated Claude Code line
    assert source["ledgers"] == 6 and source["messages"] > 10


def test_sidechain_and_worker_ledgers_are_included_with_their_parent(index):
    sub = [h for h in index.search("payouts lock order ledger_entries", project=PAYMENTS).hits if h.sidechain]
    assert sub and all(h.parent_session == MAIN_SESSION and h.session == "a7f3c21" for h in sub)
    worker = [h for h in index.search("unique index concurrent retries", project=PAYMENTS).hits if h.format == "codex"]
    assert worker and worker[0].parent_session == CODEX_SESSION and worker[0].sidechain


def test_a_generic_worker_ledger_names_its_parent_session_id_for_all_its_lines(store, tmp_path):
    """The agent-recall design's worker ledgers (``child-*``) carry ``parent_session_id``, maybe on their
    first line only: every message of the worker, read now or appended later, is a worker's with that parent."""
    store.configure(persist=False, default_mode="bm25")
    folder = tmp_path / "sessions" / "proj"
    folder.mkdir(parents=True)
    _append(folder / "sess-parent.jsonl",
            _generic("the narwhal batch loop needs a deadlock watchdog", session="sess-parent"))
    worker = folder / "child-w1.jsonl"
    _append(worker, _generic("worker found the narwhal deadlock in the batch loop", session="child-w1",
                             parent_session_id="sess-parent"),
            _generic("the narwhal fix orders the two row locks", session="child-w1"),  # no parent: the ledger's
            _generic("narwhal audit of another session", session="other-9"))  # another session: not the worker's
    _append(folder / "child-w2.jsonl", _generic("narwhal retries were capped at three", session="child-w2",
                                                parentSessionId="sess-parent"))
    ix = index_for(store)
    ix.add_source(folder, project=tmp_path)
    _append(worker, _generic("narwhal watchdog timer shipped", session="child-w1"))  # read on from the offset later

    hits = {h.snippet: h for h in ix.search("narwhal", all_projects=True, limit=10).hits}
    assert len(hits) == 6
    workers = [h for h in hits.values() if h.session in ("child-w1", "child-w2")]
    assert len(workers) == 4 and all(h.parent_session == "sess-parent" and h.sidechain for h in workers)
    for own in ("sess-parent", "other-9"):
        (hit,) = [h for h in hits.values() if h.session == own]
        assert hit.parent_session is None and not hit.sidechain and "parent_session" not in hit.to_dict()
    # the design's exclusion: the current (parent) session is left out, its worker's messages are not
    found = recall(store, "narwhal", all_projects=True, exclude_session="sess-parent", roles=("transcript",))
    shown = {(h["session"], h.get("parent_session"), h["sidechain"]) for h in found["hits"]}
    assert shown == {("child-w1", "sess-parent", True), ("child-w2", "sess-parent", True), ("other-9", None, False)}


def test_hits_carry_the_same_explanation_as_memory_hits(index):
    hit = index.search("pgbouncer port 6432", project=PAYMENTS).hits[0]
    payload = hit.to_dict()
    # the user's message and the assistant's that repeats it hold every word: two candidates
    assert payload["role"] == "transcript" and payload["relevance"] == "medium"
    assert set(payload["legs"]) == {"bm25"} and payload["matched_leg"] == "lexical"
    assert set(index.search("pgbouncer port 6432", project=PAYMENTS, mode="keyword").hits[0].legs) == {"keyword"}
    assert set(payload["match_terms"]) == {"pgbouncer", "port", "6432"}
    assert {"session", "timestamp", "speaker", "snippet", "ledger", "line"} <= set(payload)


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_a_matched_german_word_is_shown_with_its_sharp_s_as_memory_hits_show_it(index, ledgers, mode):
    """``match_terms`` of a transcript hit showed "fußgänger" as "fussgänger", the casefold the
    index compares, which neither the query nor the message writes (a memory hit's was fixed first)."""
    _append(ledgers / "generic" / "notes-agent.jsonl", _generic("Die Straße bleibt für Fußgänger bis Montag gesperrt"))
    [hit] = index.search("STRASSE Fußgänger", project=PAYMENTS, mode=mode).hits
    assert hit.match_terms == ["strasse", "fußgänger"]


def test_a_misspelt_query_word_is_respelt_as_memory_search_does(index):
    """"pgbuoncer prot" holds two slips no message holds; each is the one indexed word an adjacent swap
    away, so the hit is the one the right spelling finds, and match_terms shows the words respelt."""
    right = index.search("pgbouncer port 6432", project=PAYMENTS).hits[0]
    hit = index.search("pgbuoncer prot 6432", project=PAYMENTS).hits[0]
    assert hit.id == right.id and hit.relevance == right.relevance and hit.score == right.score
    assert set(hit.match_terms) == {"pgbouncer", "port", "6432"}


def test_a_swap_the_stemmer_hides_is_respelt_in_the_word_as_written(index):
    """"idempotnecy" stems to "idempotneci", none of whose swaps is a stored stem; the word as written,
    swapped back, is "idempotency" (stem "idempot"), as memory search respells it."""
    right = index.search("refund idempotency", project=PAYMENTS).hits[0]
    hit = index.search("refund idempotnecy", project=PAYMENTS).hits[0]
    assert hit.id == right.id and hit.score == right.score
    assert set(hit.match_terms) == {"refund", "idempotency"}



def test_a_contractions_piece_is_no_term_a_message_must_hold(index):
    """"What's" is the stopword "what" and a piece "s" that any "it's" holds; written out, as memory
    search writes it, the message that holds every other word is the same hit, labelled alike."""
    right = index.search("pgbouncer port", project=PAYMENTS).hits[0]
    hit = index.search("What's the pgbouncer port?", project=PAYMENTS).hits[0]
    assert hit.id == right.id and hit.relevance == right.relevance and hit.score == right.score
    assert set(hit.match_terms) == {"pgbouncer", "port"}

# ---------------------------------------------------------------------------------------- scope
def test_project_scope_by_default_and_all_for_every_project(index):
    scoped = index.search("image optimizer libvips", project=PAYMENTS)
    assert not scoped.hits and scoped.scope == PAYMENTS
    everywhere = index.search("image optimizer libvips", all_projects=True)
    assert everywhere.hits and everywhere.hits[0].project == WEBSITE and everywhere.scope == "all"
    assert index.search("image optimizer libvips", project=WEBSITE).hits


def test_default_project_is_the_callers_directory(tmp_path, ledgers):
    here = tmp_path / "work" / "payments"
    here.mkdir(parents=True)
    generic = ledgers / "mine.jsonl"
    generic.write_text(json.dumps(_generic("the cache warmer runs every ten minutes", cwd=str(here))) + "\n")
    with kenning.open_store(tmp_path / "s", cwd=here) as store:
        index_for(store).add_source(generic)
        assert index_for(store).search("cache warmer").hits
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with kenning.open_store(tmp_path / "s", cwd=elsewhere) as store:
        assert not index_for(store).search("cache warmer").hits
        assert index_for(store).search("cache warmer", all_projects=True).hits


def test_a_parent_folder_is_not_the_project_of_the_folders_beneath_it(tmp_path, ledgers):
    """Run from a parent folder (or $HOME, or /), "this project" held the sessions of every project nested
    below it; it holds the sessions started there, and --all is what reaches the others."""
    parent = tmp_path / "work"
    projects = {name: parent / name for name in ("alpha", "beta")}
    for folder in projects.values():
        folder.mkdir(parents=True)
    lines = [_generic(f"{name} talks about the vole cache", session=name, cwd=str(folder))
             for name, folder in projects.items()]
    lines.append(_generic("the parent folder talks about the vole cache too", session="parent", cwd=str(parent)))
    (ledgers / "nested.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with kenning.open_store(tmp_path / "s", cwd=parent) as store:
        index_for(store).add_source(ledgers / "nested.jsonl")
        here = index_for(store).search("vole cache")
        assert [h.session for h in here.hits] == ["parent"]
        assert len(index_for(store).search("vole cache", all_projects=True).hits) == 3
    with kenning.open_store(tmp_path / "s", cwd=projects["alpha"]) as store:
        assert [h.session for h in index_for(store).search("vole cache").hits] == ["alpha"]


def test_current_session_is_excluded_by_argument_or_environment(index, monkeypatch):
    query = "refund idempotency"
    assert any(h.session == CODEX_SESSION for h in index.search(query, project=PAYMENTS).hits)
    excluded = index.search(query, project=PAYMENTS, exclude_session=CODEX_SESSION)
    assert excluded.excluded_session == CODEX_SESSION
    assert not any(h.session == CODEX_SESSION for h in excluded.hits)
    assert any(h.parent_session == CODEX_SESSION for h in index.search("unique index retries", project=PAYMENTS,
                                                                         exclude_session=CODEX_SESSION).hits)
    monkeypatch.setenv(ENV_CURRENT_SESSION, CODEX_SESSION)
    assert not any(h.session == CODEX_SESSION for h in index.search(query, project=PAYMENTS).hits)


def test_exclusion_is_by_each_message_s_session_in_a_ledger_holding_several(store, tmp_path):
    """A generic ledger names the session on every line, so one file may hold several sessions: leaving
    out the current session drops exactly its messages, wherever they are, and no other session's."""
    store.configure(persist=False, default_mode="bm25")
    folder = tmp_path / "notes"
    folder.mkdir()
    _append(folder / "notes.jsonl",
            _generic("the reconciliation job deadlocks on the ledger table", session="sess-a"),
            _generic("the reconciliation job deadlock was fixed by ordering locks", session="sess-b"),
            _generic("the reconciliation job now runs hourly", session="sess-c"))
    _append(folder / "later.jsonl", _generic("reconciliation job alerts go to the ops channel", session="sess-b"))
    ix = index_for(store)
    ix.add_source(folder, project=tmp_path)

    def sessions(exclude):
        return sorted(h.session for h in ix.search("reconciliation job", all_projects=True, limit=10,
                                                   exclude_session=exclude).hits)

    assert sessions(None) == ["sess-a", "sess-b", "sess-b", "sess-c"]
    assert sessions("sess-b") == ["sess-a", "sess-c"]  # both of its messages, in either ledger
    assert sessions("sess-a") == ["sess-b", "sess-b", "sess-c"]  # the ledger's first session: only its own line
    _append(folder / "notes.jsonl", _generic("reconciliation job retries twice", session="sess-a"))
    assert sessions("sess-a") == ["sess-b", "sess-b", "sess-c"]  # an appended line of it is left out too
    found = recall(store, "reconciliation job", all_projects=True, exclude_session="sess-c", roles=("transcript",))
    assert sorted(h["session"] for h in found["hits"]) == ["sess-a", "sess-a", "sess-b", "sess-b"]


def test_a_session_working_elsewhere_in_a_shared_ledger_belongs_to_its_own_project(store, tmp_path):
    """Each line of a generic ledger may name its ``cwd``: a session that worked in another project is
    found from that project (and labelled with it), not from the project of the ledger's first line."""
    store.configure(persist=False, default_mode="bm25")
    payments, website = tmp_path / "payments", tmp_path / "website"
    payments.mkdir()
    website.mkdir()
    ledger = tmp_path / "notes.jsonl"
    _append(ledger, _generic("the okapi job deadlocks on the ledger table", session="pay-1", cwd=str(payments)),
            _generic("the okapi banner is cached for an hour", session="web-1", cwd=str(website)),
            _generic("the okapi job retries three times", session="pay-1", cwd=str(payments)),
            _generic("the okapi banner moved to the footer", session="web-1"))  # the session's cwd carries over
    ix = index_for(store)
    ix.add_source(ledger, project=payments)
    _append(ledger, _generic("okapi banner tests run in Chromium", session="web-1", cwd=str(website)))

    def found(project, **kw):
        return sorted((h.session, h.project) for h in ix.search("okapi", project=project, limit=10, **kw).hits)

    assert found(payments) == [("pay-1", str(payments))] * 2
    assert found(website) == [("web-1", str(website))] * 3
    assert found(website, exclude_session="web-1") == []
    assert len(ix.search("okapi", all_projects=True, limit=10).hits) == 5
    with kenning.open_store(tmp_path / "store", cwd=website) as other:  # recall from the other project's directory
        other.configure(persist=False, default_mode="bm25")
        index_for(other).add_source(ledger)
        hits = recall(other, "okapi banner", roles=("transcript",))["hits"]
        assert hits and {(h["session"], h["project"]) for h in hits} == {("web-1", str(website))}


def test_a_fifo_named_like_a_ledger_is_not_read_and_nothing_hangs(store, tmp_path):
    """Opening a FIFO for reading blocks until someone writes to it: a ``*.jsonl`` pipe in a registered
    folder hung `transcripts add` and every later search (and an HTTP server behind its lock)."""
    store.configure(persist=False, default_mode="bm25")
    folder = tmp_path / "ledgers"
    folder.mkdir()
    os.mkfifo(folder / "pipe.jsonl")
    _append(folder / "real.jsonl", _generic("the capybara queue drains at noon"))
    ix = index_for(store)
    done: dict = {}
    worker = threading.Thread(target=lambda: done.update(added=ix.add_source(folder, project=tmp_path),
                                                        hits=ix.search("capybara", all_projects=True).hits),
                              daemon=True)
    worker.start()
    worker.join(timeout=120)  # a guard against hanging forever, not a timing assertion
    try:
        assert not worker.is_alive(), "reading the folder blocked on the FIFO"
    finally:
        if worker.is_alive():  # let the blocked open() go, so the test run ends
            os.close(os.open(folder / "pipe.jsonl", os.O_WRONLY | os.O_NONBLOCK))
            worker.join(timeout=30)
    assert done["added"]["ledgers"] == 1 and len(done["hits"]) == 1


# ---------------------------------------------------------------------------------------- incremental
def test_appended_line_is_searchable_at_the_next_query(index, ledgers):
    ledger = ledgers / "generic" / "notes-agent.jsonl"
    assert not index.search("zeppelin", project=PAYMENTS).hits
    _append(ledger, _generic("the zeppelin migration is scheduled for Tuesday"))
    assert index.search("zeppelin", project=PAYMENTS).hits[0].line == 5
    report = index.sync()
    assert not report.changed  # nothing new: the unchanged file is not read again


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_last_line_read_before_its_newline_keeps_the_line_numbers_of_later_lines(store, tmp_path, newline):
    """A whole last line without its newline is indexed; the newline written after it ends that line,
    so the next line is the next number (a hit's ``line`` points at the line holding it)."""
    store.configure(persist=False, default_mode="bm25")
    ledger = tmp_path / "live.jsonl"
    ledger.write_text(json.dumps(_generic("the walrus cache is warm")) + newline
                      + json.dumps(_generic("the walrus queue drains hourly")), newline="")
    ix = index_for(store)
    ix.add_source(ledger, project=tmp_path)
    assert {h.line for h in ix.search("walrus", all_projects=True, limit=10).hits} == {1, 2}
    with open(ledger, "a", newline="") as f:
        f.write(newline + json.dumps(_generic("the walrus backup runs at noon")) + newline)
    with open(ledger, "a", newline="") as f:
        f.write(json.dumps(_generic("the walrus alerts page the on-call")) + newline)
    lines = ledger.read_text().splitlines()
    hits = ix.search("walrus", all_projects=True, limit=10).hits
    assert len(hits) == 4
    for hit in hits:
        assert hit.snippet in json.loads(lines[hit.line - 1])["text"], (hit.line, hit.snippet)


def test_half_written_line_waits_until_it_is_whole(index, ledgers):
    ledger = ledgers / "generic" / "notes-agent.jsonl"
    line = json.dumps(_generic("the quokka service answers on port 7070"))
    with open(ledger, "a") as f:
        f.write(line[:30])
    assert not index.search("quokka", project=PAYMENTS).hits
    with open(ledger, "a") as f:
        f.write(line[30:] + "\n")
    assert index.search("quokka", project=PAYMENTS).hits


def test_append_is_seen_by_another_process_store(tmp_path, index, ledgers, store):
    other = kenning.open_store(store.directory)
    try:
        assert not index_for(other).search("narwhal", project=PAYMENTS).hits
        _append(ledgers / "generic" / "notes-agent.jsonl", _generic("narwhal is the codename of the billing rewrite"))
        assert index.search("narwhal", project=PAYMENTS).hits  # read by the first connection ...
        assert index_for(other).search("narwhal", project=PAYMENTS).hits  # ... and seen by the second
    finally:
        other.close()


def test_rewritten_file_is_read_again(index, ledgers):
    ledger = ledgers / "generic" / "notes-agent.jsonl"
    assert index.search("S3 access keys", project=PAYMENTS).hits
    ledger.write_text("\n".join(json.dumps(_generic(t)) for t in (
        "the ocelot queue drains at midnight", "the ocelot queue has three consumers", "padding line one",
        "padding line two", "padding line three")) + "\n")
    report = index.sync()
    assert report.reread == 1
    assert not [h for h in index.search("S3 access keys", project=PAYMENTS).hits if h.format == "generic"]
    assert len(index.search("ocelot", project=PAYMENTS).hits) == 2


def test_deleted_file_drops_out(index, ledgers):
    assert index.search("image optimizer", all_projects=True).hits
    shutil.rmtree(ledgers / "claude" / "projects" / "-home-dev-projects-website")
    assert not index.search("image optimizer", all_projects=True).hits
    assert index.sources()[0]["ledgers"] == 5


def test_new_ledgers_in_folders_listed_before_are_found_at_the_next_query(index, ledgers):
    old = 1_700_000_000
    for folder in [ledgers, *(p for p in ledgers.rglob("*") if p.is_dir())]:
        os.utime(folder, (old, old))  # long unchanged: the search keeps their listings instead of walking them
    assert not index.search("platypus", all_projects=True).hits
    project = ledgers / "claude" / "projects" / "-home-dev-projects-payments"
    _append(project / "5d0c4a7e-0000-4000-8000-000000000001.jsonl", _generic("the platypus queue drains at noon", session="new-1"))
    (project / "5d0c4a7e-0000-4000-8000-000000000002" / "subagents").mkdir(parents=True)
    _append(project / "5d0c4a7e-0000-4000-8000-000000000002" / "subagents" / "agent-x.jsonl",
            _generic("the platypus worker restarts hourly", session="new-2"))
    os.utime(project, (old + 1, old + 1))  # a new entry changes its folder's mtime (set here to an old one)
    found = index.search("platypus", all_projects=True)
    assert sorted(h.session for h in found.hits) == ["new-1", "new-2"]
    (project / "5d0c4a7e-0000-4000-8000-000000000001.jsonl").unlink()
    assert [h.session for h in index.search("platypus", all_projects=True).hits] == ["new-2"]


def test_sources_add_list_remove(store, ledgers):
    ix = index_for(store)
    with pytest.raises(InvalidInput):
        ix.add_source(ledgers / "missing")
    added = ix.add_source(ledgers / "codex")
    assert added["ledgers"] == 2 and added["messages_added"] == 3
    assert ix.add_source(ledgers / "codex")["already_registered"]
    assert [s["path"] for s in ix.sources()] == [str((ledgers / "codex").resolve())]
    removed = ix.remove_source(ledgers / "codex")
    assert removed["ledgers_dropped"] == 2 and removed["messages_dropped"] == 3
    assert ix.sources() == [] and not ix.search("refund", all_projects=True).hits
    with pytest.raises(NotFound):
        ix.remove_source(ledgers / "codex")


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_source_this_user_may_not_read_is_refused_not_registered_empty(store, ledgers, what):
    """`transcripts add` of a ledger (or folder) without read permission answered '0 ledgers, 0 new
    messages' with exit 0, and every later sync skipped it in silence."""
    from unprivileged import run_unprivileged

    source = ledgers / "codex" if what == "folder" else ledgers / "generic" / "notes-agent.jsonl"
    source.chmod(0)
    ix = index_for(store)
    try:
        with pytest.raises(InvalidInput, match=f"cannot read {re.escape(str(source))}: Permission denied; "
                                               "nothing was registered"):
            run_unprivileged(lambda: ix.add_source(source, project=PAYMENTS))
    finally:
        source.chmod(0o755 if what == "folder" else 0o644)
    assert ix.sources() == []


def test_bad_queries_are_clear_errors(index):
    with pytest.raises(InvalidInput):
        index.search("   ")
    with pytest.raises(InvalidInput):
        index.search("x", limit=0)


@pytest.mark.parametrize("mode", ["bm25", pytest.param("hybrid", marks=pytest.mark.embeddings)])
def test_equal_hits_come_newest_first(store, tmp_path, mode):
    """The recall design's tiebreak: the same sentence said in five sessions (written to the ledger out
    of order, one without a readable time) answers from the newest session first."""
    ledger = tmp_path / "session.jsonl"
    lines = [_generic("the wombat migration failed on shard nine", session=f"s{day}", ts=f"2026-11-0{day}T10:00:00Z",
                      cwd=str(tmp_path)) for day in (3, 1, 5, 2, 4)]
    lines.insert(2, _generic("the wombat migration failed on shard nine", session="undated", ts="not a date",
                             cwd=str(tmp_path)))
    ledger.write_text("".join(json.dumps(line) + "\n" for line in lines))
    index_for(store).add_source(ledger, project=tmp_path)
    hits = index_for(store).search("wombat migration shard", all_projects=True, mode=mode).hits
    assert len({h.score for h in hits}) == 1
    assert [h.session for h in hits] == ["s5", "s4", "s3", "s2", "s1", "undated"]


# ---------------------------------------------------------------------------------------- curated over raw
def test_curated_memory_and_profile_note_outrank_an_equal_transcript_hit(store, tmp_path):
    """A memory and a profile note that match the query exactly as well as a transcript message come first."""
    text = "deploys to the staging cluster go through the blue green switch"
    ledger = tmp_path / "session.jsonl"
    ledger.write_text(json.dumps(_generic(text, cwd=str(tmp_path))) + "\n")
    index_for(store).add_source(ledger, project=tmp_path)
    memory = store.write(text, scopes=["projects:demo"])
    assert memory.status == "committed"
    staged = profile.remember(store, "The user prefers to watch every blue green switch on the staging cluster "
                                     "personally")
    assert staged.status == "pending"  # the user-inference rule still holds for the profile tier
    store.confirm_write(staged.pending_id)
    found = recall(store, "staging cluster blue green switch", all_projects=True)
    roles = [h["role"] for h in found["hits"]]
    assert roles[:3] == ["profile", "memory", "transcript"], roles
    assert found["hits"][0]["recall_score"] == found["hits"][1]["recall_score"]
    assert found["hits"][2]["recall_score"] < found["hits"][1]["recall_score"]


def test_a_transcript_matching_better_outranks_a_weaker_memory(store, tmp_path):
    ledger = tmp_path / "session.jsonl"
    ledger.write_text(json.dumps(_generic("the walrus cron job rotates the kiwi certificates", cwd=str(tmp_path))) + "\n")
    index_for(store).add_source(ledger, project=tmp_path)
    store.write("the walrus host is in rack four", scopes=["projects:demo"])
    found = recall(store, "walrus kiwi certificates", all_projects=True)
    assert [h["role"] for h in found["hits"]] == ["transcript", "memory"]


# ---------------------------------------------------------------------------------------- vector leg
@pytest.mark.embeddings
def test_vector_leg_ranks_transcripts_when_embeddings_work(index, ledgers):
    paraphrase = "two transactions waiting on each other forever"
    before = index.search(paraphrase, project=PAYMENTS, mode="hybrid")
    waiting = before.pending_embeddings
    assert waiting > 10 and before.legs_run == ["keyword", "bm25", "vector"]  # no search embeds: it says what waits
    assert index.vectors.embed_pending() == waiting
    found = index.search(paraphrase, project=PAYMENTS, mode="hybrid")
    assert found.pending_embeddings == 0 and found.degraded is None
    top = found.hits[0]
    assert "deadlock" in top.snippet and "vector" in top.legs
    lexical = index.search(paraphrase, project=PAYMENTS, mode="bm25")
    assert lexical.legs_run == ["bm25"] and lexical.pending_embeddings is None
    assert not any("deadlock" in h.snippet for h in lexical.hits[:1])
    semantic = index.search("postgres connection pooler", project=PAYMENTS, mode="semantic")
    assert semantic.legs_run == ["vector"]
    assert all(h.matched_leg == "semantic" for h in semantic.hits)


@pytest.mark.embeddings
def test_a_hybrid_search_asks_the_model_the_respelt_words(index):
    """"pgbuoncer prot 6432" is asked of the model as "pgbouncer port 6432" in a hybrid search (the
    model reads neither slip whole), so its vector leg scores every message as the right spelling
    does; semantic mode asks the model the words as written."""
    index.vectors.embed_pending()

    def cosines(query, mode):
        return {h.id: h.legs["vector"].score for h in index.search(query, project=PAYMENTS, mode=mode, limit=20).hits
                if "vector" in h.legs}

    right = cosines("pgbouncer port 6432", "hybrid")
    assert right and cosines("pgbuoncer prot 6432", "hybrid") == right
    assert cosines("pgbuoncer prot 6432", "semantic") != cosines("pgbouncer port 6432", "semantic")


def _wait_for(condition, seconds: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the background embedder did not catch up"
        time.sleep(0.05)


@pytest.mark.embeddings
def test_an_append_is_found_lexically_at_once_and_embedded_in_the_background(index, ledgers, store):
    index.vectors.embed_pending()
    store.semantic.start_background(poll_s=0.2)  # what the MCP and HTTP servers run
    ledger = ledgers / "generic" / "notes-agent.jsonl"
    _append(ledger, _generic("the feline mascot sleeps on the build server"))
    right_away = index.search("feline mascot", project=PAYMENTS, mode="hybrid")
    assert right_away.hits and "feline" in right_away.hits[0].snippet  # the lexical legs see it at once
    _wait_for(lambda: index.search("cat napping on a machine", project=PAYMENTS, mode="semantic").pending_embeddings == 0)
    found = index.search("cat napping on a machine", project=PAYMENTS, mode="semantic")
    assert found.hits and "feline" in found.hits[0].snippet


@pytest.mark.embeddings
def test_recall_encodes_its_query_once_for_every_tier(index, store):
    index.vectors.embed_pending()
    store.write("the deadlock detector logs to the audit table", scopes=["projects:payments"])
    encoder = store.semantic.encoder()
    encoded: list[str] = []
    real = encoder.encode_query
    encoder.encode_query = lambda text: encoded.append(text) or real(text)  # a spy: the real encoder runs
    try:
        found = recall(store, "two transactions waiting on each other", all_projects=True, mode="hybrid")
        assert encoded == ["two transactions waiting on each other"]  # profile (twice), memory, transcript
        assert found["legs_run"]["transcript"] == ["keyword", "bm25", "vector"]
        assert "vector" in found["legs_run"]["memory"] and found["pending_embeddings"] == {"memory": 0, "transcript": 0}
        recall(store, "deadlock detector", all_projects=True, mode="hybrid")
        assert encoded[1:] == ["deadlock detector"]  # the next recall encodes its own query again
    finally:
        del encoder.encode_query


@pytest.mark.embeddings
def test_vector_leg_follows_appends_and_rewrites(index, ledgers):
    ledger = ledgers / "generic" / "notes-agent.jsonl"
    _append(ledger, _generic("the feline mascot sleeps on the build server"))
    index.sync()
    index.vectors.embed_pending()
    found = index.search("cat napping on a machine", project=PAYMENTS, mode="semantic")
    assert found.hits and "feline" in found.hits[0].snippet
    assert index.vectors.pending() == 0
    ledger.write_text(json.dumps(_generic("the canine mascot guards the office")) + "\n")
    after = index.search("cat napping on a machine", project=PAYMENTS, mode="semantic")
    assert not any("feline" in h.snippet for h in after.hits)  # the rewritten ledger's old vectors are gone
    assert after.pending_embeddings == 1  # the new text waits for its vector, the old one's is dropped
    index.vectors.embed_pending()
    stored = index.db.read(lambda c: c.execute("SELECT COUNT(*) FROM transcript_embeddings").fetchone()[0])
    messages = index.db.read(lambda c: c.execute("SELECT COUNT(*) FROM transcript_messages").fetchone()[0])
    assert stored == messages
    dog = index.search("a dog protecting the workplace", project=PAYMENTS, mode="semantic")
    assert dog.hits and "canine" in dog.hits[0].snippet


def test_a_read_only_store_serves_what_is_indexed(index, ledgers, store):
    _append(ledgers / "generic" / "notes-agent.jsonl", _generic("the heron cache is warmed hourly"))
    store.db.read_only = True  # what Database sets when the user may not write the store's files
    found = index.search("heron cache", project=PAYMENTS)
    assert found.hits == [] and "read-only" in found.note
    assert index.search("S3 access keys", project=PAYMENTS).hits  # indexed before: still served
    with pytest.raises(kenning.KenningError, match="read-only"):
        index.add_source(ledgers / "codex")
    store.db.read_only = False
    assert index.search("heron cache", project=PAYMENTS).hits


def test_a_generic_line_may_spell_its_text_content_and_a_line_of_no_format_is_counted(store, tmp_path):
    """`transcripts add` said "1 ledger, 2 new messages" of a ledger whose "content" line and {"foo": "bar"}
    line were dropped: import takes "content", and nothing said two lines were skipped."""
    ledger = tmp_path / "g.jsonl"
    ledger.write_text("\n".join([
        json.dumps(_generic("the kafka brokers moved to the new rack")),
        json.dumps({"session": "nightly-42", "ts": "2026-11-30T10:00:01Z", "role": "user",
                    "content": "zookeeper is retired next week"}),
        json.dumps({"foo": "bar"}), "42", json.dumps(["a", "list"]),
        json.dumps({"session": "nightly-42", "role": "user"}),  # a generic line without its text
        json.dumps({"record_type": "state"}),  # an older Codex rollout's state line: no message, not malformed
    ]) + "\n")
    index = index_for(store)
    added = index.add_source(ledger)
    assert added["messages_added"] == 2 and added["malformed_lines"] == 4 and added["unreadable_ledgers"] == []
    assert [h.snippet for h in index.search("zookeeper retired", all_projects=True).hits] == [
        "zookeeper is retired next week"]


def test_a_ledger_of_a_folder_that_cannot_be_read_is_named(store, tmp_path):
    from unprivileged import run_unprivileged

    folder = tmp_path / "ledgers"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps(_generic("the kafka brokers moved to the new rack")) + "\n")
    locked = folder / "b.jsonl"
    locked.write_text(json.dumps(_generic("zookeeper is retired next week")) + "\n")
    locked.chmod(0)
    try:
        added = run_unprivileged(lambda: index_for(store).add_source(folder))
    finally:
        locked.chmod(0o644)
    assert added["messages_added"] == 1
    assert added["unreadable_ledgers"] == [{"path": str(locked.resolve()), "why": "Permission denied"}]
