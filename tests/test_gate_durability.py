"""Durability gate: run-state wording is refused with a hint to write an episode; durable wording
that merely resembles it passes; acknowledge_transient overrides."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kenning.cli import app
from kenning.memory.gates import durability, run_content_gates


@pytest.mark.parametrize(
    ("text", "marker"),
    [
        ("The deploy is currently blocked on the cert renewal.", "currently"),
        ("Right now the staging DB is read-only.", "right now"),
        ("At the moment the nightly job fails on macOS.", "at the moment"),
        ("Pin numpy<2 for now.", "for now"),
        ("Migration to Postgres 16 is in progress.", "in progress"),
        ("Auth rewrite: work in progress, do not merge.", "in progress"),
        ("WIP: the exporter skips archived rows.", "WIP"),
        ("As of 2026-03-14 the API returns 429 above 10 rps.", "as of <date>"),
        ("As of March 2026 builds run on arm64.", "as of <date>"),
        ("as of 14 March, the flag is on", "as of <date>"),
        ("As of today the cache is disabled.", "as of <date>"),
        ("On this branch the tests use SQLite.", "this branch"),
        ("This PR renames the config key.", "this PR"),
        ("Today I'm refactoring the search engine.", "today"),
        ("We're fixing the flaky test today.", "I'm … -ing"),
    ],
)
def test_transient_wording_is_refused(text, marker):
    refusal = durability.check(text)
    assert refusal is not None
    assert refusal.gate == "durability" and refusal.status == "transient_warning"
    assert refusal.override == "acknowledge_transient"
    assert "episode" in refusal.hint
    assert any(m.startswith(marker) for m in refusal.matched), refusal.matched


@pytest.mark.parametrize(
    "text",
    [
        "The current version policy is to support the last three Python releases.",
        "Use `git branch --show-current` to print the branch name.",
        "Requests run concurrently on a thread pool of 8.",
        "As of Python 3.12, distutils is gone from the standard library.",
        "As of version 2 the API paginates with cursors.",
        "Hooks fire at the moment of commit, before the message editor opens.",
        "The job model has an in_progress state between queued and done.",
        "A progress bar is shown for downloads larger than 10 MB.",
        "Branch protection requires two reviews on main.",
        "Release branches are cut from main every sixth Tuesday.",
        "The wipe command deletes the cache directory.",
        "Today's date is formatted with ISO-8601 in logs.",
    ],
)
def test_durable_look_alikes_pass(text):
    assert durability.find_transient_markers(text) == [], text
    assert durability.check(text) is None


def test_acknowledge_transient_overrides():
    text = "The deploy is currently blocked on the cert renewal."
    assert durability.check(text, acknowledge_transient=True) is None
    assert run_content_gates(text, "fact", acknowledge_transient=True) is None


def test_markers_are_reported_in_text_order():
    assert durability.find_transient_markers("WIP. Right now it is currently broken, as of May 2026.") == [
        "WIP",
        "right now",
        "currently",
        "as of <date>: 'as of May 2026'",
    ]


def test_durability_runs_before_user_claims():
    text = "The user prefers tabs, currently."
    assert run_content_gates(text, "fact").gate == "durability"
    assert run_content_gates(text, "fact", acknowledge_transient=True).gate == "user_claims"


def test_a_day_word_is_generic_only_in_a_sentence_that_says_how_often():
    from kenning.memory.gates.durability import _sentence_of, find_transient_markers

    text = "Alpha one. Beta two; gamma three"
    assert _sentence_of(text, text.index("Beta")) == "Beta two"
    assert _sentence_of(text, 0) == "Alpha one"
    assert _sentence_of("a. b. c", 6) == "c"
    assert find_transient_markers("The report runs every day and today it failed.") == []
    assert find_transient_markers("The report runs daily. The build broke today.") == ["today"]
    assert find_transient_markers("The build broke today. The report runs daily.") == ["today"]
    assert find_transient_markers("When a migration is in progress, writes are blocked.") == []
    assert find_transient_markers("The migration is in progress.") == ["in progress"]


def test_the_refusal_names_every_marker_and_says_what_to_do():
    from kenning.memory.gates.durability import check

    refusal = check("The deploy is currently blocked and we'll fix it tomorrow.")
    assert refusal.reason == ("the text reads as run-state that will go stale ("
                              + ", ".join(refusal.matched) + ")") and len(refusal.matched) >= 2
    assert refusal.reason.startswith("the text reads as run-state that will go stale (currently, ")
    assert refusal.hint == ("Write run-state as an episode (episode_write) instead. If the fact is durable, restate it "
                            "without the time-bound wording, or pass acknowledge_transient=True.")
    assert refusal.override == "acknowledge_transient"


def test_a_marker_around_a_code_name_is_quoted_in_the_writers_own_words():
    """Code names are blanked for matching, keeping every position, so the refusal quotes what was written."""
    assert durability.find_transient_markers("The PR needs two more `CODEOWNERS` approvals.") == [
        "one more …: 'two more `CODEOWNERS` approvals'"]


def test_a_condition_or_relative_clause_counts_only_in_its_own_clause_and_near_the_status():
    """A condition anywhere in the six words before a status phrase makes it generic, a relative pronoun
    only in the two right before it, and neither reaches past the clause (nor does an opening condition)."""
    find = durability.find_transient_markers
    assert find("Skip the nightly deploy if the import is still in progress.") == []
    assert find("Retry a request that is still running.") == []
    assert find("The PR that adds OAuth is still open.") == ["still <status>: 'still open'"]
    assert find("When the queue fills, writes are slow. The deploy pipeline is broken.") == [
        "is <status>: 'is broken'"]


def test_a_marker_generic_in_one_sentence_is_still_found_in_the_next():
    assert durability.find_transient_markers("When the build is broken, deploys wait. The build is broken.") == [
        "is <status>: 'is broken'"]


def test_markers_that_touch_without_a_space_are_both_reported():
    """Spans are half-open: one that starts where another ends does not overlap it (pasted text)."""
    assert durability.find_transient_markers("The upload is at 40%currently") == ["is at N%: 'is at 40%'", "currently"]
    assert durability.find_transient_markers("The upload is at 40%this PR") == ["is at N%: 'is at 40%'", "this PR"]


# red is also a plain colour: it reports run-state only of something that has a status
@pytest.mark.parametrize("text", [
    "Apples are red",
    "Stop signs are red",
    "Our logo colors are red and white",
    "Cherries are red fruit",
    "The fire trucks in Lisbon are red",
    "Error banners are red in the dashboard theme",
    "The error banners in production are red.",
    "The logo's red on the light theme.",
])
def test_a_colour_of_a_thing_without_a_status_passes(text):
    assert durability.find_transient_markers(text) == [], text
    assert durability.check(text) is None


@pytest.mark.parametrize(("text", "words"), [
    ("The build is red", "is red"),
    ("CI is red on main", "is red"),
    ("CI on main is red.", "is red"),
    ("The tests for the auth service are red.", "are red"),
    ("The PR's checks are red.", "are red"),
    ("The build's red.", "'s red"),
    ("Our deploy pipeline is red.", "is red"),
    ("Logs of failed builds are red; the nightly job is red.", "is red"),
    ("tests are green again", "are green again"),
    ("The barn is red again.", "is red again"),  # news of a change, whatever turned red
])
def test_red_of_a_build_ci_or_branch_and_a_colour_come_back_are_run_state(text, words):
    assert durability.find_transient_markers(text) == [f"is <status>: {words!r}"]


def test_colour_facts_commit_through_the_import_and_a_red_build_is_refused(tmp_path):
    """`kenning import` on a real store: each durable colour fact is committed, the run-state line refused."""
    texts = ["Apples are red", "Stop signs are red", "Our logo colors are red and white", "Cherries are red fruit",
             "The fire trucks in Lisbon are red", "Error banners are red in the dashboard theme", "The build is red"]
    notes = tmp_path / "notes.jsonl"
    notes.write_text("".join(json.dumps({"content": t, "scopes": ["colours"]}) + "\n" for t in texts))
    done = CliRunner().invoke(app, ["--store", str(tmp_path / "store"), "import", str(notes), "--json"])
    assert done.exit_code == 1, done.output  # a refused line
    lines = json.loads(done.stdout)["lines"]
    assert [line["status"] for line in lines] == ["committed"] * 6 + ["refused"]
    assert lines[-1]["gate"] == "durability" and "'is red'" in lines[-1]["reason"]
