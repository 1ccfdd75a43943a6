"""A scripted agent's project week through the real MCP client: each day a new server process (one
session, named by KENNING_CURRENT_SESSION as a client would), a real git repository whose files the
memories cite and the agent later edits, and a session ledger that cross-session recall reads.

The agent knows nothing but what the tools answer: every id it uses next comes out of an answer, every
refusal is recovered from with what the refusal said. The assertions are what the agent needed at each
step: ids to act on, drift that names the file and what changed, superseded decisions marked, the
hand-off naming the session before, and answers without padding it pays for in context.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client

from child_env import passed_on

pytestmark = pytest.mark.slow  # four server processes and some sixty calls


class Agent:
    """One session: calls tools as a model does and reads only their answers."""

    def __init__(self, portal, session: ClientSession):
        self.portal, self.session = portal, session
        self.sizes: dict[str, int] = {}

    def _raw(self, name: str, arguments: dict[str, Any]):
        result = self.portal.call(self.session.call_tool, name, arguments)
        text = " ".join(c.text for c in result.content)
        self.sizes[name] = max(self.sizes.get(name, 0), len(text))
        return result, text

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        result, text = self._raw(name, arguments)
        assert not result.is_error, f"{name}: {text}"
        assert json.loads(text) == result.structured_content  # the text is the answer, key for key
        assert "\n" not in text, f"{name} answered indented JSON: {text[:120]}"  # no padding paid for in context
        return result.structured_content

    def refused(self, name: str, **arguments: Any) -> str:
        result, text = self._raw(name, arguments)
        assert result.is_error, f"{name} should have been refused: {text[:300]}"
        assert "\n" not in text and "Traceback" not in text
        return text


@asynccontextmanager
async def _open(store: Path, repo: Path, session: str):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kenning.server", "--store", str(store)], cwd=str(repo),
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GIT_CEILING_DIRECTORIES": str(repo.parent),
             "KENNING_CURRENT_SESSION": session, **passed_on()})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            yield client


@contextmanager
def day(store: Path, repo: Path, session: str):
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(_open(store, repo, session)) as client:
            yield Agent(portal, client)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def said(ledger: Path, repo: Path, session: str, day_of_month: int, *lines: tuple[str, str]) -> None:
    """What the agent's client appends to its session ledger (the generic format)."""
    with ledger.open("a", encoding="utf-8") as f:
        for minute, (role, text) in enumerate(lines):
            f.write(json.dumps({"session": session, "ts": f"2026-11-{day_of_month:02d}T10:{minute:02d}:00Z",
                                "role": role, "text": text, "cwd": str(repo)}) + "\n")


DECISION = ("Decision: the orders service keeps its data in PostgreSQL 16, not MySQL; the connection pool "
            "size is POOL_SIZE in src/db.py.")


def test_an_agents_week_through_the_mcp_server(tmp_path, request):
    from conftest import _extra_installed

    if _extra_installed():
        request.getfixturevalue("_converted_once")  # servers load the encoder instead of converting it
    repo, store, ledger = tmp_path / "shop", tmp_path / "store", tmp_path / "ledger.jsonl"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "agent@example.com")
    git(repo, "config", "user.name", "agent")
    (repo / "src/db.py").write_text("POOL_SIZE = 10\n\n\ndef connect_db(url):\n    return url\n")
    (repo / "Makefile").write_text("test:\n\tpytest -n 2 tests\n")
    git(repo, "add", "src/db.py", "Makefile")
    git(repo, "commit", "-qm", "start")
    ledger.write_text("")
    subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), "transcripts", "add", str(ledger)],
                   check=True, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})

    # ------------------------------------------------------------------ Monday: a first session
    with day(store, repo, "mon") as agent:
        overview = agent.call("memory_scope_overview")
        assert overview["total"] == 0 and overview["curation_pending_new_since_last_session"] is None
        handoff = agent.call("episode_handoff")
        assert handoff["prior_session_id"] is None and handoff["episodes"] == [] and handoff["note"]

        decision = agent.call("memory_write", content=DECISION, scopes=["projects:shop", "decisions"],
                              claims=["src/db.py::POOL_SIZE=10"])
        assert decision["status"] == "committed"
        pending = agent.call("memory_write", content="The user prefers running the tests with pytest -x -q while iterating.",
                             scopes=["user", "tools"], category="user-inference")
        assert pending["status"] == "pending"  # the agent asks the user, who agrees
        preference = agent.call("memory_write_confirm", pending_id=pending["pending_id"])
        assert preference["status"] == "committed"
        command = agent.call("memory_write", content="Run the test suite with `make test` (pytest -n 2 over tests/, "
                                                     "see the Makefile).", scopes=["projects:shop", "commands"],
                             claims=["Makefile"])
        file_fact = agent.call("memory_write", content="src/db.py::connect_db opens the database connection for the "
                                                       "orders service.", scopes=["projects:shop"],
                               claims=["src/db.py::connect_db"])
        deploy = agent.call("memory_write", content="The orders service deploys with Helm to the staging cluster "
                                                    "kestrel-stg.", scopes=["projects:shop", "infrastructure"])
        assert all(w["status"] == "committed" for w in (command, file_fact, deploy))

        # the write gates, each recovered from with what the answer said
        again = agent.call("memory_write", content=DECISION, scopes=["projects:shop"])
        assert again["status"] == "duplicate" and again["match"]["id"] == decision["id"]
        assert decision["id"] in again["hint"]
        assert agent.call("memory_show", id=again["match"]["id"])["content"] == DECISION  # relies on the match

        secret = agent.call("memory_write", content="The staging database password is hunter2-Xk9!pQ for the "
                                                    "orders service.", scopes=["projects:shop"])
        assert secret["status"] == "credential_warning" and "hunter2" not in json.dumps(secret)
        assert "placeholder" in secret["hint"] or "where it lives" in secret["hint"]
        vault = agent.call("memory_write", content="The staging database password of the orders service is kept in "
                                                   "the team vault under shop/staging.", scopes=["projects:shop"])
        assert vault["status"] == "committed"

        too_long = agent.refused("memory_write", content="orders " * 200_000, scopes=["projects:shop"])
        limit = int(re.search(r"the limit is ([\d,]+)", too_long).group(1).replace(",", ""))
        assert too_long.startswith("memory_write: ") and limit == 1 << 20
        assert agent.call("memory_write", content="The orders export job writes one CSV per day, "
                                                  "about 1.4 MB each.", scopes=["projects:shop"])["status"] == "committed"

        run_state = "Currently I am migrating the orders table; next step is the created_at index."
        transient = agent.call("memory_write", content=run_state, scopes=["projects:shop"])
        assert transient["status"] == "transient_warning" and "episode_write" in transient["hint"]
        monday = agent.call("episode_write", body=run_state, takeaway="orders migration blocked on the created_at index",
                            scopes=["projects:shop"])
        assert monday["status"] == "committed"
        said(ledger, repo, "mon", 2, ("user", "Keep the orders service on PostgreSQL rather than MySQL."),
             ("assistant", "Agreed: PostgreSQL 16 for the orders service; I stored the decision."))

    # ------------------------------------------------------------------ Tuesday: hand-off, drift, supersession
    with day(store, repo, "tue") as agent:
        handoff = agent.call("episode_handoff")
        assert handoff["prior_session_id"] == monday["session_id"]
        assert [e["takeaway"] for e in handoff["episodes"]] == ["orders migration blocked on the created_at index"]

        recalled = agent.call("session_search", query="orders service PostgreSQL decision")
        assert recalled["excluded_session"] == "tue"
        roles = {(h["role"], h.get("id") if h["role"] != "transcript" else h["session"]) for h in recalled["hits"]}
        assert ("memory", decision["id"]) in roles and ("transcript", "mon") in roles

        (repo / "src/db.py").write_text("POOL_SIZE = 20\n\n\ndef open_pool(url):\n    return url\n")
        git(repo, "commit", "-qam", "a bigger pool, and connect_db is open_pool now")

        found = agent.call("memory_search", query="connect_db database connection", mode="bm25")
        hit = next(h for h in found["hits"] if h["id"] == file_fact["id"])
        assert hit["staleness_verdict"] == "spot_check_required"
        assert hit["claim_anchored_missing"] == ["src/db.py::connect_db"]  # which file, which claim
        shown = agent.call("memory_show", id=hit["id"])
        [claim] = shown["path_drift"]["claims"]
        assert claim["status"] == "missing_symbol" and "connect_db" in claim["detail"] and "src/db.py" in claim["detail"]
        refusal = agent.refused("memory_verify", id=hit["id"], claims=["src/db.py::connect_db"])
        assert "connect_db" in refusal and "update" in refusal
        updated = agent.call("memory_update", id=hit["id"], version=hit["version"],
                             content="src/db.py::open_pool opens the database connection pool for the orders service.")
        assert updated["status"] == "updated"
        verified = agent.call("memory_verify", id=hit["id"], claims=["src/db.py::open_pool"], version=updated["version"])
        assert verified["status"] == "verified" and verified["staleness_verdict"] == "fresh"

        found = agent.call("memory_search", query="PostgreSQL pool size", mode="bm25", expand_top=True)
        top = found["hits"][0]
        assert top["id"] == decision["id"] and top["staleness_verdict"] == "spot_check_required"
        assert any("POOL_SIZE = 20, not 10" in c["detail"] for c in top["path_drift"]["claims"])  # what changed
        newer = agent.call("memory_write", content="Decision: the orders service moves to PostgreSQL 17 with "
                                                   "POOL_SIZE = 20 connections in src/db.py.",
                           scopes=["projects:shop", "decisions"], claims=["src/db.py::POOL_SIZE=20"],
                           links=[{"type": "supersedes", "target_id": decision["id"], "note": "PostgreSQL 17, pool 20"}])
        assert newer["status"] == "committed"
        found = agent.call("memory_search", query="orders PostgreSQL decision", mode="bm25")
        marks = {h["id"]: h.get("superseded_by") for h in found["hits"]}
        assert marks[decision["id"]] == [newer["id"]] and marks[newer["id"]] is None

        removed = agent.call("memory_remove", id=deploy["id"], reason="wrong: the orders service deploys with Argo CD")
        assert removed["status"] == "removed"
        rewritten = agent.call("memory_write", content="The orders service deploys with Helm to the staging cluster "
                                                       "kestrel-stg.", scopes=["projects:shop", "infrastructure"])
        assert rewritten["status"] == "previously_removed" and rewritten["match"]["id"] == deploy["id"]
        assert "Argo CD" in rewritten["match"]["reason"] and f"memory_restore {deploy['id']}" in rewritten["hint"]
        tuesday = agent.call("episode_write", body="Moved the orders decision to PostgreSQL 17 with a pool of 20.",
                             takeaway="decided PostgreSQL 17, pool 20", scopes=["projects:shop"])
        said(ledger, repo, "tue", 3, ("user", "We go with PostgreSQL 17 for orders, and a pool of 20."),
             ("assistant", "Updated: the orders decision is PostgreSQL 17 now; the old one is superseded."))

    # ------------------------------------------------------------------ Wednesday: back after a day
    with day(store, repo, "wed") as agent:
        overview = agent.call("memory_scope_overview")
        assert overview["recently_removed_in_worktree"] == 1 and overview["curation_pending"]["drifted"] >= 1
        handoff = agent.call("episode_handoff")  # "what was I doing before?"
        assert handoff["prior_session_id"] == tuesday["session_id"]
        assert [e["takeaway"] for e in handoff["episodes"]] == ["decided PostgreSQL 17, pool 20"]

        recalled = agent.call("session_search", query="what did we decide about the orders database last time?")
        memories = {h["id"]: h for h in recalled["hits"] if h["role"] == "memory"}
        assert newer["id"] in memories and "superseded_by" not in memories[newer["id"]]
        if decision["id"] in memories:
            assert memories[decision["id"]]["superseded_by"] == [newer["id"]]
        assert {h["session"] for h in recalled["hits"] if h["role"] == "transcript"} <= {"mon", "tue"}

        # the Helm memory was right after all: the refusal yesterday named the id to restore
        restored = agent.call("memory_restore", id=rewritten["match"]["id"])
        assert restored["status"] == "restored"
        assert agent.call("memory_search", query="Helm kestrel-stg", mode="bm25")["hits"][0]["id"] == deploy["id"]
        assert agent.call("memory_list_tombstones")["count"] == 0

        decisions = agent.call("memory_list", scopes=["decisions"])
        assert {m["id"]: m.get("superseded_by") for m in decisions["memories"]} == \
            {decision["id"]: [newer["id"]], newer["id"]: None}  # which of the two decisions holds
        assert all("content" not in m for m in decisions["memories"])  # triage rows, no bodies
        about_user = agent.call("memory_list", category="user-inference", auto_scope=False)
        assert [m["id"] for m in about_user["memories"]] == [preference["id"]]
        commands = agent.call("memory_search", query="make test", scopes=["commands"], mode="bm25")
        assert [h["id"] for h in commands["hits"]] == [command["id"]]
        assert agent.call("memory_search", query="orders", mode="bm25", since_prior_session=True)["hits"] == []

    # ------------------------------------------------------------------ what the week cost in context
    with day(store, repo, "thu") as agent:
        full = agent.call("memory_search", query="orders service", mode="bm25", max_results=5)
        assert len(full["hits"]) == 5
        per_hit = agent.sizes["memory_search"] / len(full["hits"])
        assert per_hit < 900, f"a search hit costs {per_hit:.0f} characters"
