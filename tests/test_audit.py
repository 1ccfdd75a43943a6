"""The silent-miss audit against a real store, its real event log and an injected clock."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import kenning
from kenning.errors import InvalidInput
from kenning.memory.audit import audit_turn
from clocks import Clock

QUESTION = "which port does the auth service listen on"


@pytest.fixture
def clock():
    return Clock(datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc))


@pytest.fixture
def store(tmp_path, clock):
    s = kenning.open_store(tmp_path / "store", clock=clock)
    s.write("The auth service listens on port 8443", scopes=["projects:auth"])
    yield s
    s.close()


def kinds(store) -> list[str]:
    return [e["kind"] for e in store.events(session=store.session_id, kinds=["turn_audited", "search_miss"])]


def test_a_needed_memory_never_looked_up_is_a_miss(store):
    report = audit_turn(store, QUESTION, mode="bm25")
    assert report["verdict"] == "miss" and report["retrieval_events"] == 0
    top = report["hits"][0]
    assert top["relevance"] == "high" and top["probe"] == "user_message" and "8443" in top["snippet"]
    assert kinds(store) == ["turn_audited", "search_miss"]
    [miss] = store.events(session=store.session_id, kinds=["search_miss"])
    assert miss["memory_id"] == top["id"]


def test_a_lookup_within_the_window_makes_it_ok(store, clock):
    store.search("auth service port", mode="bm25")
    clock.now += timedelta(seconds=30)
    report = audit_turn(store, QUESTION, lookback_seconds=60, mode="bm25")
    assert report["verdict"] == "ok" and report["retrieval_events"] >= 1
    assert kinds(store) == ["turn_audited"]


def test_a_lookup_outside_the_window_does_not_count(store, clock):
    store.search("auth service port", mode="bm25")
    clock.now += timedelta(seconds=61)
    assert audit_turn(store, QUESTION, lookback_seconds=60, mode="bm25")["verdict"] == "miss"
    assert audit_turn(store, QUESTION, lookback_seconds=120, mode="bm25")["verdict"] == "ok"


def test_show_and_list_count_as_lookups(store):
    mid = store.list()[0].id  # a list event
    assert audit_turn(store, QUESTION, mode="bm25")["verdict"] == "ok"
    other = kenning.open_store(store.directory, clock=store.clock)  # a fresh session
    other.show(mid)
    assert audit_turn(other, QUESTION, mode="bm25")["verdict"] == "ok"
    other.close()


def test_another_sessions_lookup_does_not_count(store):
    other = kenning.open_store(store.directory, clock=store.clock)
    other.search("auth service port", mode="bm25")
    other.close()
    assert audit_turn(store, QUESTION, mode="bm25")["verdict"] == "miss"


def test_the_probe_is_not_a_lookup(store):
    assert audit_turn(store, QUESTION, mode="bm25")["verdict"] == "miss"
    assert audit_turn(store, QUESTION, mode="bm25")["verdict"] == "miss"  # the first probe did not count


def test_nothing_relevant_is_no_signal(store):
    report = audit_turn(store, "write a haiku about autumn leaves", mode="bm25")
    assert report["verdict"] == "no_signal" and kinds(store) == ["turn_audited"]


def test_a_medium_match_is_no_signal(store):
    report = audit_turn(store, "auth tokens expire after an hour on the mobile client", mode="bm25")
    assert report["verdict"] == "no_signal" and all(h["relevance"] != "high" for h in report["hits"])


def test_the_reply_is_probed_too(store):
    report = audit_turn(store, "hmm, what was it again?", assistant_response="auth service port 8443", mode="bm25")
    assert report["verdict"] == "miss" and report["hits"][0]["probe"] == "assistant_response"


def test_disabled_scopes_are_honoured(store):
    store.disable_scope("projects:auth")
    assert audit_turn(store, QUESTION, mode="bm25")["verdict"] == "no_signal"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"user_message": "  "}, "user_message is empty"),
        ({"user_message": "x", "lookback_seconds": 0}, "lookback_seconds"),
        ({"user_message": "x", "lookback_seconds": 10**9}, "lookback_seconds"),
        ({"user_message": "x", "assistant_response": 5}, "assistant_response"),
    ],
)
def test_bad_arguments(store, kwargs, message):
    with pytest.raises(InvalidInput, match=message):
        audit_turn(store, **kwargs)
    assert kinds(store) == []


def test_the_turn_settles_its_hits_with_or_without_the_reply_as_the_tool_says(store):
    """The tool's assistant_response once claimed to be what settles the turn's hits; every audit settles
    them, and the reply is a second probe."""
    from kenning.serve.mcp import build_server

    store.search("auth service port", mode="bm25")
    assert audit_turn(store, QUESTION, mode="bm25")["auto_applied"] == 1  # no reply given
    tool = build_server(store)._tool_manager.get_tool("memory_audit_turn")
    assert "auto_applied" in tool.description
    reply = tool.parameters["properties"]["assistant_response"]["description"]
    assert "settle" not in reply and "probe" in reply


@pytest.mark.embeddings  # hybrid's bm25 leg runs with feedback beside the vector leg
def test_a_reported_hit_found_by_feedback_words_names_them(store):
    """A probe hit that hybrid's bm25 leg found through feedback words alone holds none of the turn's
    words: the report names the words that found it, as the search does (``feedback_terms``)."""
    store.write("The billing service uses Adyen for payments", scopes=["projects:auth"])
    report = audit_turn(store, "billing payments", mode="hybrid")
    [found] = [h for h in report["hits"] if "8443" in h["snippet"]]
    assert found["match_terms"] == [] and found["feedback_terms"] == ["service"]
