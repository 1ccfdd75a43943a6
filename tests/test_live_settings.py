"""Live settings held in the store: a change made by one process reaches every other at its next call.

The toggles (search_enabled, write_enabled, default_mode, require_write_confirmation) are flipped
here by real separate processes (python -c, the CLI) while a warm Store or a running MCP server
keeps going, and the effect is checked on the next call without reopening anything.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import kenning
from kenning import LIVE_SETTINGS, InvalidInput, SearchDisabled
from kenning.memory.gates import GateRefused


def _set_elsewhere(path, **changes) -> None:
    """Change settings from another process, as `kenning config set` or the HTTP page would."""
    code = f"import kenning; kenning.open_store({str(path)!r}).configure(**{changes!r})"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_live_settings_are_named_and_default_on():
    config = kenning.StoreConfig()
    assert set(LIVE_SETTINGS) == {"search_enabled", "write_enabled", "default_mode", "require_write_confirmation"}
    assert config.search_enabled and config.write_enabled and not config.require_write_confirmation


def test_configure_one_setting_leaves_the_others(store):
    store.configure(write_enabled=False)
    store.configure(default_mode="bm25")
    store.configure(search_enabled=False)
    reopened = kenning.open_store(store.directory)
    assert (reopened.config.write_enabled, reopened.config.default_mode, reopened.config.search_enabled) == (
        False, "bm25", False)
    assert reopened.config.require_write_confirmation is False


def test_unknown_or_bad_setting_is_a_clear_error_and_changes_nothing(store):
    with pytest.raises(InvalidInput, match="unknown setting 'serach_enabled'; settings are: .*search_enabled"):
        store.configure(serach_enabled=False)
    with pytest.raises(InvalidInput, match="default_mode"):
        store.configure(default_mode="fuzzy", write_enabled=False)
    assert kenning.open_store(store.directory).config.write_enabled is True


def test_two_writers_of_different_settings_both_win(tmp_path):
    a, b = kenning.open_store(tmp_path / "s"), kenning.open_store(tmp_path / "s")
    a.configure(write_enabled=False)
    b.configure(default_mode="keyword")  # b never read a's change before writing its own
    fresh = kenning.open_store(tmp_path / "s").config
    assert (fresh.write_enabled, fresh.default_mode) == (False, "keyword")


def test_a_local_override_stays_local_and_survives_a_reload(tmp_path):
    a, b = kenning.open_store(tmp_path / "s"), kenning.open_store(tmp_path / "s")
    a.configure(persist=False, bm25_k1=2.0)
    b.configure(write_enabled=False)
    assert a.config.bm25_k1 == 2.0 and a.config.write_enabled is False
    assert b.config.bm25_k1 == 1.2


def test_search_disabled_refuses_search(store):
    store.write("The auth service listens on port 8443", scopes=["x"])
    store.configure(search_enabled=False)
    with pytest.raises(SearchDisabled, match="search is disabled"):
        store.search("auth port", mode="bm25")
    store.configure(search_enabled=True)
    assert store.search("auth port", mode="bm25").hits


def test_write_disabled_refuses_every_change_and_writes_nothing(store):
    kept = store.write("The auth service listens on port 8443", scopes=["x"]).id
    gone = store.write("The billing job runs at midnight UTC", scopes=["x"]).id
    store.remove(gone, reason="obsolete")
    store.configure(require_write_confirmation=True)
    staged = store.write("The queue is RabbitMQ on port 5672", scopes=["x"])
    assert staged.status == "pending"
    store.configure(write_enabled=False)
    before = (store.count(), len(store.tombstones()), store.events()[-1])

    result = store.write("The cache is Redis on port 6379", scopes=["x"])
    assert (result.status, result.gate, result.code) == ("writes_disabled", "write_enabled", "writes_disabled")
    assert "writes are disabled" in result.reason and "write_enabled true" in result.hint
    confirmed = store.confirm_write(staged.pending_id)
    assert (confirmed.status, confirmed.pending_retained) == ("writes_disabled", True)
    for change in (lambda: store.update(kept, text="The auth service listens on port 9443"),
                   lambda: store.remove(kept, reason="x"),
                   lambda: store.restore(gone),
                   lambda: store.verify(kept, note="checked"),
                   lambda: store.import_records([{"content": "imported"}])):
        with pytest.raises(GateRefused, match="writes are disabled") as refused:
            change()
        assert refused.value.refusal.gate == "write_enabled"
    assert (store.count(), len(store.tombstones()), store.events()[-1]) == before
    assert store.get(kept).content == "The auth service listens on port 8443"
    assert len(store.pending_writes()) == 1


def test_a_setting_changed_by_another_process_reaches_a_warm_store(tmp_path):
    path = tmp_path / "shared"
    warm = kenning.open_store(path)
    warm.write("The auth service listens on port 8443", scopes=["x"])
    assert warm.search("auth", mode="bm25").mode == "bm25"
    assert warm.search("auth").mode == "hybrid"

    _set_elsewhere(path, default_mode="keyword")
    assert warm.search("auth").mode == "keyword"
    _set_elsewhere(path, search_enabled=False)
    with pytest.raises(SearchDisabled):
        warm.search("auth")
    _set_elsewhere(path, write_enabled=False)
    assert warm.write("The cache is Redis on port 6379", scopes=["x"]).status == "writes_disabled"
    _set_elsewhere(path, search_enabled=True, write_enabled=True, require_write_confirmation=True)
    assert warm.write("The cache is Redis on port 6379", scopes=["x"]).status == "pending"
    assert warm.config.default_mode == "keyword"  # untouched by the later changes


def test_the_cli_sees_and_obeys_a_setting_another_process_set(tmp_path):
    path = tmp_path / "shared"
    kenning.open_store(path).write("The auth service listens on port 8443", scopes=["x"])
    _set_elsewhere(path, search_enabled=False)
    run = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(path), "search", "auth"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "search is disabled" in run.stderr and "Traceback" not in run.stderr
    _set_elsewhere(path, search_enabled=True, write_enabled=False)
    run = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(path), "write",
                          "The cache is Redis on port 6379", "--scope", "x"], capture_output=True, text=True)
    assert "writes are disabled" in run.stdout + run.stderr
    assert kenning.open_store(path).count() == 1


@pytest.mark.slow
def test_a_running_mcp_server_obeys_a_setting_changed_by_another_process(tmp_path):
    from test_server import connect  # the MCP tests' real stdio client

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    store_dir = tmp_path / "store"
    with connect(store_dir, repo) as mcp:
        written = mcp.call("memory_write", content="The auth service listens on port 8443", scopes=["x"])
        assert written["status"] == "committed"
        assert mcp.call("memory_search", query="auth port", mode="bm25")["hits"]

        assert {"memory_search", "session_search"} <= set(mcp.tools())
        _set_elsewhere(store_dir, search_enabled=False)
        listed = set(mcp.tools())  # "false removes the tool from the loop": gone from the next listing
        assert not {"memory_search", "session_search"} & listed and "memory_write" in listed
        assert "search is disabled" in mcp.fails("memory_search", query="auth port", mode="bm25")
        _set_elsewhere(store_dir, search_enabled=True, write_enabled=False)
        assert {"memory_search", "session_search"} <= set(mcp.tools())
        assert mcp.call("memory_search", query="auth port", mode="bm25")["hits"]
        refused = mcp.call("memory_write", content="The cache is Redis on port 6379", scopes=["x"])
        assert (refused["status"], refused["gate"]) == ("writes_disabled", "write_enabled")
        removed = mcp.call("memory_remove", id=written["id"], reason="x")  # a status, as memory_write's
        assert (removed["status"], removed["gate"]) == ("writes_disabled", "write_enabled")
        assert "writes are disabled" in removed["reason"]
    assert kenning.open_store(store_dir).count() == 1


def test_transcript_search_obeys_search_enabled(store):
    from kenning.recall.transcripts import index_for

    assert index_for(store).search("auth port", all_projects=True).hits == []
    store.configure(search_enabled=False)
    with pytest.raises(SearchDisabled):
        index_for(store).search("auth port", all_projects=True)


def test_writes_disabled_refuses_a_scope_rename_and_changes_nothing(store):
    """A rename rewrites every memory of the scope: with write_enabled false it is refused as an update is."""
    from kenning.memory.gates import GateRefused

    mid = store.write("The auth service listens on port 8443", scopes=["projects:auth"]).id
    store.configure(write_enabled=False)
    with pytest.raises(GateRefused, match="writes are disabled"):
        store.rename_scope("projects:auth", "projects:login")
    assert store.get(mid).scopes == ["projects:auth"]
    store.configure(write_enabled=True)
    assert store.rename_scope("projects:auth", "projects:login") == 1


def test_the_mcp_mode_follows_default_mode_as_its_description_says(store):
    """memory_search's mode once read "omit for the store default (hybrid)": a store set to bm25 answers bm25."""
    from kenning.serve.mcp import build_server

    store.write("The auth service listens on port 8443", scopes=["projects:auth"])
    store.configure(default_mode="bm25")
    tool = build_server(store)._tool_manager.get_tool("memory_search")
    assert tool.fn(query="auth service port", auto_scope=False)["mode"] == "bm25"
    described = tool.parameters["properties"]["mode"]["description"]
    assert "default_mode" in described and "default (hybrid)" not in described


def test_the_audit_tools_mode_names_no_field_its_answer_lacks(store):
    """memory_audit_turn shared memory_search's mode text, which sends the caller to `degraded`:
    an audit's answer has no such field."""
    from kenning.serve.mcp import build_server

    tool = build_server(store)._tool_manager.get_tool("memory_audit_turn")
    described = tool.parameters["properties"]["mode"]["description"]
    answer = tool.fn(user_message="which port does the auth service use")
    assert "degraded" not in answer and "degraded" not in described and "default_mode" in described
