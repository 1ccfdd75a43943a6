"""Transcript recall through its surfaces: the CLI as a real subprocess and the MCP tool over stdio."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client

from child_env import passed_on

pytestmark = pytest.mark.slow  # every call starts a Python process

DATA = Path(__file__).parent / "data" / "transcripts"
PAYMENTS = "/home/dev/projects/payments"
CODEX_SESSION = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def kenning(store: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_CURRENT_SESSION", None)
    return subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(store), *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


@pytest.fixture
def ledgers(tmp_path):
    shutil.copytree(DATA, tmp_path / "ledgers")
    return tmp_path / "ledgers"


def test_cli_transcripts_add_list_recall_remove(tmp_path, ledgers):
    store = tmp_path / "store"
    added = kenning(store, "transcripts", "add", str(ledgers), "--project", PAYMENTS, "--json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["ledgers"] == 6
    listed = json.loads(kenning(store, "transcripts", "list", "--json").stdout)
    assert listed["count"] == 1 and listed["sources"][0]["malformed_lines"] == 2
    assert kenning(store, "write", "Staging connects through pgbouncer on port 6432", "--scope", "projects:payments").returncode == 0
    recalled = json.loads(kenning(store, "recall", "pgbouncer port 6432", "--all", "--json").stdout)
    roles = [h["role"] for h in recalled["hits"]]
    assert roles[0] == "memory" and "transcript" in roles
    transcript = next(h for h in recalled["hits"] if h["role"] == "transcript")
    assert transcript["speaker"] in ("user", "assistant") and transcript["session"] and transcript["timestamp"]
    table = kenning(store, "recall", "pgbouncer port 6432", "--all")
    assert "memory" in table.stdout and "transcript" in table.stdout
    refunds = json.loads(kenning(store, "recall", "refund idempotency", "--all", "--json").stdout)["hits"]
    assert CODEX_SESSION in {h.get("session") for h in refunds}
    mine = kenning(store, "recall", "refund idempotency", "--all", "--exclude-session", CODEX_SESSION, "--json")
    assert CODEX_SESSION not in {h.get("session") for h in json.loads(mine.stdout)["hits"]}
    here = kenning(store, "recall", "refund idempotency", cwd=tmp_path)  # another project than the ledgers'
    assert here.returncode == 0 and "nothing matches" in here.stdout and "--all" in here.stdout
    indexed = json.loads(kenning(store, "transcripts", "index", "--json").stdout)
    assert indexed["embedded"] > 10 and indexed["pending"] == 0
    assert indexed["runtime"] == "onnxruntime" and indexed["runtimes"] == {"onnxruntime": indexed["embedded"]}
    again = json.loads(kenning(store, "transcripts", "index", "--json").stdout)
    assert again == {"embedded": 0, "pending": 0, "runtime": None, "runtimes": {}}
    removed = json.loads(kenning(store, "transcripts", "remove", str(ledgers), "--json").stdout)
    assert removed["messages_dropped"] > 10
    assert [h["role"] for h in json.loads(kenning(store, "recall", "pgbouncer", "--all", "--json").stdout)["hits"]] == ["memory"]


def test_cli_mistakes_are_one_line_errors(tmp_path):
    missing = kenning(tmp_path / "store", "transcripts", "add", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    unknown = kenning(tmp_path / "store", "transcripts", "remove", str(tmp_path / "nope"))
    assert unknown.returncode == 2 and "not a registered transcript source" in unknown.stderr
    empty = kenning(tmp_path / "store", "recall", " ")
    assert empty.returncode == 2 and "empty" in empty.stderr


@asynccontextmanager
async def _open(store: Path, cwd: Path, env: dict[str, str]):
    params = StdioServerParameters(command=sys.executable, args=["-m", "kenning.server", "--store", str(store)],
                                   cwd=str(cwd), env={"HF_HUB_OFFLINE": "1", **passed_on(), **env})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


@contextmanager
def mcp(store: Path, cwd: Path, env: dict[str, str]):
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(_open(store, cwd, env)) as session:
            def call(name: str, **arguments):
                result = portal.call(session.call_tool, name, arguments)
                assert not result.is_error, result.content
                return result.structured_content

            call.tools = lambda: {t.name: t for t in portal.call(session.list_tools).tools}
            call.raw = lambda name, **arguments: portal.call(session.call_tool, name, arguments)
            yield call


def test_mcp_session_search_excludes_the_current_session_and_sees_appends(tmp_path, ledgers):
    store = tmp_path / "store"
    work = tmp_path / "work"
    work.mkdir()
    assert kenning(store, "transcripts", "add", str(ledgers), "--project", PAYMENTS).returncode == 0
    with mcp(store, work, {"KENNING_CURRENT_SESSION": CODEX_SESSION}) as call:
        tool = call.tools()["session_search"]
        assert set(tool.input_schema["properties"]) == {"query", "limit", "all"}
        assert tool.annotations.read_only_hint is True
        found = call("session_search", query="refund idempotency unique index", all=True)
        assert found["excluded_session"] == CODEX_SESSION
        assert found["hits"] and not [h for h in found["hits"] if h.get("session") == CODEX_SESSION]
        assert call("session_search", query="refund idempotency")["hits"] == []  # work/ is another project
        with open(ledgers / "generic" / "notes-agent.jsonl", "a") as f:
            f.write(json.dumps({"session": "live", "role": "user", "text": "the axolotl release ships Monday",
                                "cwd": PAYMENTS}) + "\n")
        live = call("session_search", query="axolotl release", all=True)  # same server process, no restart
        assert live["hits"][0]["role"] == "transcript" and live["hits"][0]["session"] == "live"
        # the profile tier through the same tools: a fact about the user waits for confirmation, then is
        # recalled as role profile ahead of a transcript message that matches as well
        staged = call("memory_write", content="The user prefers that the axolotl release ships without a freeze",
                      scopes=["user"], category="user-inference")
        assert staged["status"] == "pending"
        assert call("memory_write_confirm", pending_id=staged["pending_id"])["status"] == "committed"
        roles = [h["role"] for h in call("session_search", query="axolotl release", all=True)["hits"]]
        assert roles[0] == "profile" and "transcript" in roles


def test_a_generic_worker_ledgers_parent_reaches_the_cli_and_mcp_session_search(tmp_path):
    """A ``child-*`` ledger carrying ``parent_session_id`` (the agent-recall design's worker) is recalled with
    its parent, through ``kenning recall --json`` and through ``session_search`` while the parent is current."""
    store, work, folder = tmp_path / "store", tmp_path / "work", tmp_path / "sessions"
    work.mkdir()
    folder.mkdir()
    (folder / "sess-parent.jsonl").write_text(json.dumps(
        {"session": "sess-parent", "ts": "2026-11-01T10:00:00Z", "role": "user",
         "text": "look into the narwhal deadlock"}) + "\n")
    (folder / "child-w1.jsonl").write_text(json.dumps(
        {"session": "child-w1", "parent_session_id": "sess-parent", "ts": "2026-11-01T10:05:00Z", "role": "assistant",
         "text": "Worker found the narwhal deadlock in the batch loop."}) + "\n")
    assert kenning(store, "transcripts", "add", str(folder), "--project", str(work)).returncode == 0
    found = kenning(store, "recall", "narwhal deadlock", "--json", "--mode", "bm25", cwd=work)
    assert found.returncode == 0, found.stderr
    shown = {h["session"]: (h.get("parent_session"), h["sidechain"]) for h in json.loads(found.stdout)["hits"]}
    assert shown == {"child-w1": ("sess-parent", True), "sess-parent": (None, False)}
    with mcp(store, work, {"KENNING_CURRENT_SESSION": "sess-parent"}) as call:
        (hit,) = call("session_search", query="narwhal deadlock")["hits"]
    assert (hit["session"], hit["parent_session"], hit["sidechain"]) == ("child-w1", "sess-parent", True)


@pytest.mark.parametrize("tz", ["UTC", "Asia/Kathmandu", "America/St_Johns"])
def test_a_past_messages_time_prints_in_utc_whatever_zone_its_ledger_or_the_shell_is_in(tmp_path, tz):
    """A ledger's "2026-11-30T08:00:00+05:45" printed as "2026-11-30 08:00", six hours from the UTC the CLI
    prints every other time in; a text no time can be read from still shows as the ledger wrote it."""
    store, ledger = tmp_path / "store", tmp_path / "notes.jsonl"
    ledger.write_text("".join(json.dumps({"session": session, "ts": ts, "role": "user", "text": text}) + "\n"
                              for session, ts, text in [
                                  ("sess-ktm", "2026-11-30T08:00:00+05:45", "the flamingo deploy broke on the cold cache"),
                                  ("sess-old", "last tuesday", "the pelican queue drains slowly")]))
    assert kenning(store, "transcripts", "add", str(ledger), "--project", str(tmp_path)).returncode == 0
    env_tz = {**os.environ, "HF_HUB_OFFLINE": "1", "TZ": tz}
    env_tz.pop("KENNING_CURRENT_SESSION", None)
    for query, shown in (("flamingo deploy", "user  2026-11-30 02:15  session sess-ktm"),
                         ("pelican queue", "user  last tuesday  session sess-old")):
        table = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(store), "recall", query, "--all",
                                "--mode", "bm25"], capture_output=True, text=True, env=env_tz, timeout=120)
        assert table.returncode == 0 and shown in table.stdout, table


def test_mcp_markdown_export_hand_edits_sync_and_clean(tmp_path):
    from kenning.recall.files import LOCK_NAME, TEMP_MARK
    from kenning.recall.markdown_format import parse

    store, work, notes = tmp_path / "store", tmp_path / "work", tmp_path / "notes"
    work.mkdir()
    dead_pid = 2**22 + 4321  # above the default pid_max: no live process has it
    with mcp(store, work, {}) as call:
        tools = call.tools()
        for name, params in {"memory_export_markdown": {"directory", "force"}, "memory_sync_markdown": {"directory"},
                             "memory_clean": {"dry_run"}}.items():
            schema = tools[name].input_schema
            assert set(schema["properties"]) == params and schema["additionalProperties"] is False
            assert all(p.get("description") for p in schema["properties"].values())
            assert tools[name].output_schema and tools[name].annotations.read_only_hint is False
        assert tools["memory_export_markdown"].annotations.destructive_hint is True  # force overwrites edits
        assert tools["memory_sync_markdown"].annotations.destructive_hint is False  # removals are tombstones
        port = call("memory_write", content="The auth service listens on port 8443", scopes=["projects:auth"])["id"]
        backup = call("memory_write", content="Postgres backups keep 14 daily snapshots", scopes=["projects:auth"])["id"]
        exported = call("memory_export_markdown", directory=str(notes))
        assert exported["written"] == ["USER.md", "projects/auth/MEMORY.md"] and exported["memories"] == 2
        path = notes / "projects" / "auth" / "MEMORY.md"
        text = path.read_text()
        (gone,) = [b for b in parse(text).blocks if b.id == backup]
        edited = text[: gone.start] + text[gone.end :]
        edited = edited.replace("port 8443", "port 9443") + "\nThe auth service logs to the audit bucket nightly\n"
        path.write_text(edited)
        refused = call.raw("memory_export_markdown", directory=str(notes))  # unsynced edits are not overwritten
        assert refused.is_error and "not synced yet" in refused.content[0].text
        synced = call("memory_sync_markdown", directory=str(notes))
        assert synced["updated"] == [{"file": "projects/auth/MEMORY.md", "id": port}]
        assert synced["removed"] == [{"file": "projects/auth/MEMORY.md", "id": backup}]
        (written,) = synced["written"]
        assert call("memory_show", id=port)["content"] == "The auth service listens on port 9443"
        assert "audit bucket" in call("memory_show", id=written["id"])["content"]
        (tomb,) = call("memory_list_tombstones")["tombstones"]
        assert tomb["memory"]["id"] == backup and tomb["reason"] == "removed from MEMORY.md"
        call("memory_export_markdown", directory=str(notes))  # may tidy the blank lines the hand edit left
        before = path.read_bytes()
        quiet = call("memory_sync_markdown", directory=str(notes))  # nothing edited since: nothing to do
        assert not any(quiet[k] for k in ("updated", "written", "removed", "refused", "mangled", "files_changed"))
        assert call("memory_export_markdown", directory=str(notes))["written"] == [] and path.read_bytes() == before
        # a fact about the user added to USER.md (written even with no profile note yet) waits for the user
        user = notes / "USER.md"
        user.write_text(user.read_text() + "\nThe user prefers tabs over spaces in Go code\n")
        (staged,) = call("memory_sync_markdown", directory=str(notes))["pending"]
        committed = call("memory_write_confirm", pending_id=staged["pending_id"])
        assert committed["status"] == "committed"
        assert call("memory_sync_markdown", directory=str(notes))["files_changed"] == ["USER.md"]  # now a block
        profile_hits = call("session_search", query="tabs spaces Go", all=True)["hits"]
        assert profile_hits and profile_hits[0]["role"] == "profile"
        # a mangled header is reported and nothing is guessed: the file's blocks stay as they are
        mangled = path.read_text().replace('{"id": "', '{"id" "', 1)
        path.write_text(mangled)
        report = call("memory_sync_markdown", directory=str(notes))
        assert report["mangled"] and report["mangled"][0]["file"] == "projects/auth/MEMORY.md"
        assert not report["removed"] and path.read_text() == mangled
        assert call("memory_show", id=port)["content"] == "The auth service listens on port 9443"
        path.write_bytes(before)
        (notes / LOCK_NAME).write_text(json.dumps({"pid": dead_pid, "host": os.uname().nodename, "at": 0}))
        leftover = path.parent / f".MEMORY.md{TEMP_MARK}{dead_pid}-1"
        leftover.write_text("half a write")
        dry = call("memory_clean", dry_run=True)
        assert dry["dry_run"] is True and {r["path"] for r in dry["removed"]} == {str(notes / LOCK_NAME), str(leftover)}
        assert leftover.exists() and (notes / LOCK_NAME).exists()
        assert len(call("memory_clean")["removed"]) == 2
        assert not leftover.exists() and not (notes / LOCK_NAME).exists() and path.read_bytes() == before
        assert call("memory_clean")["removed"] == []
        bad = call.raw("memory_sync_markdown", directory=str(tmp_path / "nowhere"))
        assert bad.is_error and "not a folder" in bad.content[0].text


@pytest.mark.embeddings
def test_mcp_server_embeds_transcripts_in_the_background_and_no_search_waits(tmp_path, ledgers):
    import time

    store, work = tmp_path / "store", tmp_path / "work"
    work.mkdir()
    assert kenning(store, "transcripts", "add", str(ledgers), "--project", PAYMENTS).returncode == 0
    with mcp(store, work, {}) as call:
        first = call("session_search", query="refund idempotency", all=True)
        assert first["legs_run"]["transcript"] == ["keyword", "bm25", "vector"]
        assert first["hits"] and first["hits"][0]["role"] == "transcript"  # found by its words meanwhile
        deadline = time.monotonic() + 120
        while call("session_search", query="refund idempotency", all=True)["pending_embeddings"]["transcript"]:
            assert time.monotonic() < deadline, "the server's background embedder did not embed the transcripts"
            time.sleep(0.2)
        found = call("session_search", query="two transactions waiting on each other forever", all=True)
        assert any(h["role"] == "transcript" and "deadlock" in h["snippet"] and "vector" in h["legs"] for h in found["hits"])


def test_mcp_markdown_folder_errors_name_the_reason_in_tool_terms(tmp_path):
    store, work = tmp_path / "store", tmp_path / "work"
    work.mkdir()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with mcp(store, work, {}) as call:
        call("memory_write", content="The auth service listens on port 8443", scopes=["projects:auth"])
        under_a_file = call.raw("memory_export_markdown", directory=str(blocker / "notes"))
        assert under_a_file.is_error and "Not a directory" in under_a_file.content[0].text
        missing = call.raw("memory_sync_markdown", directory=str(tmp_path / "nowhere"))
        text = missing.content[0].text
        assert missing.is_error and "memory_export_markdown(directory=" in text and "kenning" not in text.split(
            "nowhere")[-1], text
        notes = tmp_path / "notes"
        call("memory_export_markdown", directory=str(notes))
        path = notes / "projects" / "auth" / "MEMORY.md"
        path.write_text(path.read_text().replace("8443", "9443"))
        call("memory_write", content="Postgres backups keep 14 daily snapshots", scopes=["projects:auth"])
        unsynced = call.raw("memory_export_markdown", directory=str(notes)).content[0].text
        assert "memory_sync_markdown(directory=" in unsynced and "force=True" in unsynced, unsynced


def test_mcp_sync_reasons_name_tools_not_commands(tmp_path):
    from kenning.recall.markdown_format import parse

    store, work, notes = tmp_path / "store", tmp_path / "work", tmp_path / "notes"
    work.mkdir()
    with mcp(store, work, {}) as call:
        mid = call("memory_write", content="The auth service listens on port 8443", scopes=["projects:auth"])["id"]
        call("memory_write", content="Grafana dashboards live in the ops repository", scopes=["ops"])
        call("memory_export_markdown", directory=str(notes))
        auth, ops = notes / "projects" / "auth" / "MEMORY.md", notes / "ops" / "MEMORY.md"
        text = auth.read_text()
        (block,) = [b for b in parse(text).blocks if b.id == mid]
        auth.write_text(text[: block.start] + text[block.end :])
        ops.write_text(ops.read_text() + "\n" + text[block.start : block.end] + "\n")
        report = call("memory_sync_markdown", directory=str(notes))
        reasons = [entry["why"] for key in ("conflicts", "held") for entry in report[key]]
        assert reasons and all(f"memory_update(id={mid}" in why for why in reasons), reasons
        assert not any("`kenning" in why or "--scope" in why for why in reasons), reasons
