"""Stored text prints as stored: rich would turn a ``:name:`` emoji code in a memory, a scope, a reason,
a link's note, an episode or a transcript into its emoji, so the text output would differ from what
was written and from what ``--json`` returns. Every printing command is checked against a real store,
through typer's runner, and the fast ``kenning search`` path as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kenning.cli import app

# ":white_check_mark:", ":x:", ":+1:", ":rocket:" and the ":ok:" inside the scope are all codes rich knows
TEXT = "Approvals in Slack use the :white_check_mark: reaction and rejections use :x:"
OTHER = "Approvals in Slack use the :+1: reaction, never :white_check_mark:"
SCOPE = "team:ok:board"
EMOJI = ("\u2705", "\u274c", "\U0001f44d", "\U0001f197", "\U0001f680")  # what rich would print for them
QUERY = ["search", "slack approvals reaction", "--mode", "bm25"]
EXPAND = ["search", "slack rejections", "--mode", "bm25", "--expand-top"]  # TEXT is clearly the answer

runner = CliRunner()


def verbatim(output: str, *codes: str) -> None:
    assert not any(e in output for e in EMOJI), output
    for code in codes:
        assert code in output, output


def run(store: Path, *args: str, code: int = 0) -> str:
    result = runner.invoke(app, ["--store", str(store), *args])
    assert result.exit_code == code, result.output
    return result.stdout


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Two memories, the second contradicting the first with a note; a staged user inference; a
    removed memory with its reason."""
    store = tmp_path_factory.mktemp("verbatim") / "store"
    first = json.loads(run(store, "write", TEXT, "--scope", SCOPE, "--json"))["id"]
    run(store, "write", OTHER, "--scope", SCOPE, "--force", "--link", f"contradicts:{first}:the :x: rule changed")
    run(store, "write", "I think the user reacts with :x: to drafts", "--scope", SCOPE,
        "--category", "user-inference")
    gone = json.loads(run(store, "write", "Deploy approvals use the :rocket: reaction", "--scope", SCOPE,
                          "--json"))["id"]
    run(store, "remove", gone, "--reason", ":x: nobody uses it")
    return store


def id_of(store: Path, text: str) -> str:
    return next(m["id"] for m in json.loads(run(store, "list", "--json")) if m["content"] == text)


def test_list_and_show_print_the_text_the_scope_and_the_link_note_as_written(store):
    verbatim(run(store, "list"), TEXT, OTHER, SCOPE)
    verbatim(run(store, "show", id_of(store, TEXT)), TEXT, SCOPE)
    verbatim(run(store, "show", id_of(store, OTHER)), OTHER, "note the :x: rule changed")


@pytest.mark.parametrize("options", [[], ["--why"]])
def test_search_prints_snippets_and_scopes_as_written(store, options):
    verbatim(run(store, *QUERY, *options), TEXT, OTHER, SCOPE)


def test_search_prints_the_expanded_top_hit_as_written(store):
    assert json.loads(run(store, *EXPAND, "--json"))["hits"][0]["content"] == TEXT
    out = run(store, *EXPAND)
    assert out.endswith("\n\n" + TEXT + "\n")
    verbatim(out, SCOPE)


def test_the_fast_search_path_prints_them_as_written(store):
    """``python -m kenning search`` (commands/search.py's fast path) prints without rich, and must
    print what the typer command prints: the stored text."""
    for args in (QUERY, [*QUERY, "--why"], EXPAND):
        done = subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args],
                              capture_output=True, text=True, encoding="utf-8", timeout=300,
                              env={**os.environ, "PYTHONIOENCODING": "utf-8"})
        assert done.returncode == 0, done.stderr
        verbatim(done.stdout, TEXT, SCOPE)
    assert done.stdout.endswith("\n\n" + TEXT + "\n")


def test_tombstones_pending_and_conflicts_print_texts_and_reasons_as_written(store):
    verbatim(run(store, "tombstones"), "Deploy approvals use the :rocket: reaction", "reason: :x: nobody uses it")
    verbatim(run(store, "pending"), "I think the user reacts with :x: to drafts", SCOPE)
    verbatim(run(store, "conflicts"), TEXT, OTHER, "(the :x: rule changed)")


def test_recall_prints_memory_and_transcript_text_as_written(store, tmp_path):
    said = "Mark approved drafts with :white_check_mark: and rejected ones with :x: in Slack."
    ledgers = tmp_path / "ledgers" / "generic"
    ledgers.mkdir(parents=True)
    (ledgers / "notes.jsonl").write_text(json.dumps({"session": "s-1", "ts": "2026-11-28T22:00:00Z", "role": "user",
                                                     "text": said, "cwd": "/home/dev/p"}) + "\n")
    run(store, "transcripts", "add", str(ledgers.parent), "--project", "/home/dev/p")
    out = run(store, "recall", "approvals drafts slack reaction", "--all", "--mode", "bm25")
    assert "transcript" in out and "memory" in out
    verbatim(out, said, TEXT, SCOPE)


def test_a_refused_write_echoes_its_reason_as_written(tmp_path, monkeypatch):
    """The claims gate's reason names the claimed path, which the caller wrote."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.chdir(repo)
    out = run(tmp_path / "store", "write", "Reactions are listed in the handbook", "--scope", SCOPE,
              "--claim", "docs/:white_check_mark:.md", code=1)
    assert out.startswith("claim_false")
    verbatim(out, "docs/:white_check_mark:.md does not exist")


def test_episodes_print_takeaways_and_bodies_as_written(tmp_path, monkeypatch):
    import kenning
    from kenning.commands.episodes import episodes_app
    from kenning.memory.episodes import Episodes

    store = kenning.open_store(tmp_path / "store")
    Episodes(store).write("Reviewers now answer with :x: or :white_check_mark:", takeaway="reactions :+1: agreed",
                          scopes=[SCOPE])
    store.close()
    monkeypatch.setenv("KENNING_HOME", str(tmp_path / "store"))
    listed = runner.invoke(episodes_app, ["list", "--bodies"])
    assert listed.exit_code == 0, listed.output
    verbatim(listed.stdout, "Reviewers now answer with :x: or :white_check_mark:", "reactions :+1: agreed", SCOPE)
