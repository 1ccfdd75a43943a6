"""Conformance to the tool spec (../shared/seeds/memory-tools-spec.txt): one spec-shaped call per spec item,
through the real server (``python -m kenning.server``) and the MCP SDK's stdio client, as a model would.

Each test is one item of the spec, named in ``SPEC``; ``python tests/test_conformance.py`` prints the
item table. One server session serves most items (a store and a git repository made once per
module); items about sessions open a second one. Searches use bm25 so nothing waits for a model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client

from child_env import passed_on

pytestmark = pytest.mark.slow  # each session starts a server process

SPEC: dict[str, str] = {}


def spec(item: str):
    """Register a test as the check of one spec item."""
    def mark(fn):
        SPEC[fn.__name__] = item
        return fn
    return mark


class Session:
    def __init__(self, portal, session: ClientSession, init):
        self.portal, self.session, self.init = portal, session, init

    def raw(self, name: str, **arguments: Any):
        return self.portal.call(self.session.call_tool, name, arguments)

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = self.raw(name, **arguments)
        assert not result.is_error, " ".join(c.text for c in result.content)
        assert json.loads(result.content[0].text) == result.structured_content
        return result.structured_content

    def error(self, name: str, **arguments: Any) -> str:
        result = self.raw(name, **arguments)
        assert result.is_error, f"{name} should have failed: {result.structured_content}"
        return " ".join(c.text for c in result.content)

    def tools(self) -> dict[str, Any]:
        return {t.name: t for t in self.portal.call(self.session.list_tools).tools}


@asynccontextmanager
async def _open(store: Path, cwd: Path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kenning.server", "--store", str(store)], cwd=str(cwd),
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GIT_CEILING_DIRECTORIES": str(cwd.parent),
             **passed_on()},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            yield session, await session.initialize()


@contextmanager
def connect(store: Path, cwd: Path):
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(_open(store, cwd)) as (session, init):
            yield Session(portal, session, init)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                   check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    root = tmp_path_factory.mktemp("conformance")
    repo = root / "shop"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("def main():\n    pass\nPORT = 8443\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "deploy.md").write_text("# deploy\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return root / "store", repo


@pytest.fixture(scope="module")
def s(place):
    store, repo = place
    with connect(store, repo) as session:
        yield session


def write(s: Session, content: str, **kw: Any) -> dict[str, Any]:
    return s.call("memory_write", content=content, scopes=kw.pop("scopes", ["projects:shop"]), **kw)


# --- memory_search ----------------------------------------------------------------------------------

@spec("memory_search: hits carry relevance with matched_leg, match_terms and a snippet")
def test_search_hit_fields(s):
    mid = write(s, "The checkout service retries Stripe webhooks three times")["id"]
    hit = s.call("memory_search", query="checkout stripe webhooks", mode="bm25")["hits"][0]
    assert hit["id"] == mid and hit["relevance"] in ("high", "medium", "low") and hit["matched_leg"] == "lexical"
    assert set(hit["match_terms"]) >= {"checkout", "stripe"} and hit["snippet"]


@spec("memory_search: staleness_verdict fresh | spot_check_recommended | spot_check_required per hit")
def test_search_staleness_verdict(s):
    write(s, "The zebra importer runs hourly")
    hit = s.call("memory_search", query="zebra importer", mode="bm25")["hits"][0]
    assert hit["staleness_verdict"] == "fresh"


@spec("memory_search: path_drift_missing (int), path_drift {checked, missing, verified} when drift")
def test_search_path_drift(s):
    write(s, "The runbook lives in docs/rollback.md")
    hit = s.call("memory_search", query="runbook rollback", mode="bm25")["hits"][0]
    assert hit["path_drift_missing"] == 1
    assert hit["path_drift"]["missing"] == ["docs/rollback.md"] and set(hit["path_drift"]) >= {"checked", "verified"}


@spec("memory_search: claim_anchored_missing escalates; prose-scraped missing rides fresh")
def test_search_claim_anchored(s, place):
    _, repo = place
    (repo / "src" / "legacy.py").write_text("OLD = 1\n")
    mid = write(s, "Legacy settings are in src/legacy.py", claims=["src/legacy.py::OLD=1"])["id"]
    (repo / "src" / "legacy.py").unlink()
    hit = next(h for h in s.call("memory_search", query="legacy settings", mode="bm25")["hits"] if h["id"] == mid)
    assert hit["claim_anchored_missing"] and hit["staleness_verdict"] == "spot_check_required"
    said = write(s, "The legacy rollback notes live in docs/legacy-rollback.md")["id"]
    prose = next(h for h in s.call("memory_search", query="legacy rollback notes", mode="bm25")["hits"]
                 if h["id"] == said)
    assert prose["path_drift_missing"] == 1 and prose["staleness_verdict"] == "fresh"


@spec("memory_search: commit_drift_count (commits since verify on the origin repo)")
def test_search_commit_drift_count(s):
    write(s, "The yak shaver config lives in src/app.py")
    hit = s.call("memory_search", query="yak shaver", mode="bm25")["hits"][0]
    assert hit["commit_drift_count"] == 0


@spec("memory_search: commit_drift_count null (unmeasured, with a reason) when the origin repo is gone")
def test_search_commit_drift_unmeasured(s, place):
    import shutil

    store, repo = place
    gone = repo.parent / "gone"
    gone.mkdir()
    git(gone, "init", "-q", "-b", "main")
    git(gone, "commit", "-q", "--allow-empty", "-m", "init")
    with connect(store, gone) as there:
        there.call("memory_write", content="The albatross relay lives in relay/main.go", scopes=["relay"])
    shutil.rmtree(gone)
    hit = s.call("memory_search", query="albatross relay", mode="bm25", auto_scope=False)["hits"][0]
    assert hit["commit_drift_count"] is None and hit["commit_drift_reason"]


@spec("memory_search: depends_on_resolved {id, scopes, summary, link_note}, omitted without depends_on")
def test_search_depends_on_resolved(s):
    base = write(s, "Quokka builds need the arm64 toolchain")["id"]
    write(s, "Quokka release steps follow the toolchain setup",
          links=[{"type": "depends_on", "target_id": base, "note": "set up first"}])
    hits = s.call("memory_search", query="quokka release steps", mode="bm25")["hits"]
    top = next(h for h in hits if h["id"] != base)
    assert top["depends_on_resolved"][0]["id"] == base and top["depends_on_resolved"][0]["link_note"] == "set up first"
    assert set(top["depends_on_resolved"][0]) >= {"id", "scopes", "summary", "link_note"}
    assert "depends_on_resolved" not in next(h for h in hits if h["id"] == base)


@spec("memory_search: depends_on_resolved max 3 per hit, 10 per call; a hit whose links the caps cut says so")
def test_search_depends_on_caps(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    with connect(tmp_path / "store", repo) as fresh:
        targets = [write(fresh, f"Zorblax gizmo {n} needs firmware {n * 13}", scopes=["z"])["id"] for n in range(5)]
        links = [{"type": "depends_on", "target_id": t} for t in targets]
        for k in range(5):
            write(fresh, f"Quibble runbook step {k} covers the quibble deploy", scopes=["z"], links=links)
        hits = fresh.call("memory_search", query="quibble runbook deploy", mode="bm25", max_results=5)["hits"]
    shown = [len(h.get("depends_on_resolved", [])) for h in hits]
    assert shown == [3, 3, 3, 1, 0]  # 3 a hit until the call's 10 run out
    assert [h["depends_on_more"] for h in hits] == [2, 2, 2, 4, 5]  # never read as "no depends_on links"


@spec("memory_search: recent_negative_outcomes after ignored/contradicted")
def test_search_recent_negative_outcomes(s):
    mid = write(s, "The walrus cache uses memcached")["id"]
    s.call("memory_record_use", memory_ids=[mid], outcome="contradicted", claim_excerpts=["memcached"])
    hit = s.call("memory_search", query="walrus cache", mode="bm25")["hits"][0]
    assert hit["recent_negative_outcomes"][0]["outcome"] == "contradicted"


@spec("memory_search: scopes filter, max_results (default 5, cap 50)")
def test_search_scopes_and_max_results(s):
    write(s, "Ocelot metrics go to prometheus", scopes=["ocelot-a"])
    write(s, "Ocelot logs go to loki", scopes=["ocelot-b"])
    hits = s.call("memory_search", query="ocelot", mode="bm25", scopes=["ocelot-a"])["hits"]
    assert [h["scopes"] for h in hits] == [["ocelot-a"]]
    assert "less than or equal to 50" in s.error("memory_search", query="ocelot", max_results=51)


@spec("memory_search: expand_top inlines the top hit's body")
def test_search_expand_top(s):
    write(s, "The narwhal exporter writes parquet files nightly")
    hit = s.call("memory_search", query="narwhal exporter parquet nightly", mode="bm25", expand_top=True)["hits"][0]
    assert hit["content"].startswith("The narwhal exporter")


@spec("memory_search: expand_top weighs the top hit against the runner-up even when max_results=1 leaves it out")
def test_search_expand_top_page_of_one(s):
    write(s, "The pangolin exporter writes csv files for the finance team")
    write(s, "The pangolin exporter writes json files for the data team")
    for n in (1, 2):  # two equal candidates: no decisive lead, whatever the page size
        hits = s.call("memory_search", query="pangolin exporter", mode="bm25", max_results=n, expand_top=True)["hits"]
        assert len(hits) == n and hits[0]["relevance"] != "high" and "content" not in hits[0]


@spec("memory_search: auto_scope filters to this repo; False is cross-project")
def test_search_auto_scope(s, place):
    store, repo = place
    other = repo.parent / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    with connect(store, other) as elsewhere:
        elsewhere.call("memory_write", content="The platypus gateway speaks grpc", scopes=["gw"])
    assert s.call("memory_search", query="platypus gateway", mode="bm25")["hits"] == []
    assert s.call("memory_search", query="platypus gateway", mode="bm25", auto_scope=False)["hits"]


@spec("memory_search: since_prior_session (this session's changes since other sessions' last activity)")
def test_search_since_prior_session(s, place):
    store, repo = place
    write(s, "The pelican uploader chunks files at 8 MB")
    with connect(store, repo) as later:
        later.call("memory_write", content="The pelican uploader retries chunks twice", scopes=["projects:shop"])
        hits = later.call("memory_search", query="pelican uploader", mode="bm25", since_prior_session=True)["hits"]
        assert [h["snippet"] for h in hits] and all("retries" in h["snippet"] for h in hits)


@spec("memory_search: mode keyword | bm25 | semantic | hybrid")
def test_search_modes(s):
    write(s, "The checkout service retries Stripe webhooks three times")  # its own, whichever worker runs it
    for mode in ("keyword", "bm25", "semantic", "hybrid"):
        assert s.call("memory_search", query="checkout stripe", mode=mode)["hits"]


@spec("memory_search: use_token; hits settle as applied automatically")
def test_search_use_token(s):
    mid = write(s, "The lemur scheduler runs in UTC")["id"]
    token = s.call("memory_search", query="lemur scheduler", mode="bm25")["use_token"]
    assert token.startswith("use_")
    report = s.call("memory_audit_turn", user_message="which timezone does the lemur scheduler use")
    assert report["auto_applied"] >= 1 and mid


# --- memory_show / list / overview ------------------------------------------------------------------

@spec("memory_show: verification.status never|stale|fresh with a recommendation, staleness_verdict")
def test_show_verification(s):
    mid = write(s, "The ibis worker pool has 8 threads")["id"]
    shown = s.call("memory_show", id=mid)
    assert shown["verification"]["status"] == "never" and shown["staleness_verdict"] == "fresh"
    assert "recommendation" in shown["verification"]


@spec("memory_show: commit_drift status clean|drift + commits_since_verify")
def test_show_commit_drift(s):
    mid = write(s, "The heron service entry point is src/app.py")["id"]
    drift = s.call("memory_show", id=mid)["commit_drift"]
    assert drift["status"] == "clean" and drift["commits_since_verify"] == 0


@spec("memory_show: forward links and reverse_links")
def test_show_links(s):
    a = write(s, "The tapir API is versioned in the path")["id"]
    b = write(s, "The tapir API v2 dropped XML", links=[{"type": "extends", "target_id": a}])["id"]
    assert s.call("memory_show", id=b)["links"][0]["target"] == a
    assert s.call("memory_show", id=a)["reverse_links"][0]["source"] == b


@spec("memory_list: one-line summaries without bodies; with_bodies=True inlines them")
def test_list(s):
    write(s, "The shop's nightly export runs at 02:00")
    rows = s.call("memory_list", scopes=["projects:shop"])["memories"]
    assert rows and "content" not in rows[0] and rows[0]["summary"]
    assert "content" in s.call("memory_list", scopes=["projects:shop"], with_bodies=True)["memories"][0]


@spec("memory_scope_overview: the spec's keys incl. proposals_pending and pending_writes")
def test_overview_keys(s):
    out = s.call("memory_scope_overview")
    assert set(out) >= {"current_repo", "current_cwd", "auto_scope", "scopes", "total", "disabled_scopes",
                        "curation_pending", "curation_pending_new_since_last_session",
                        "recently_removed_in_worktree", "proposals_pending", "pending_writes"}


@spec("memory_scope_overview: curation_pending {stale, never_verified, drifted, cold, dead, silent_misses, "
      "unique_silent_miss_memories, cold_endorsement_memories, conflicts}")
def test_overview_curation_buckets(s):
    assert set(s.call("memory_scope_overview")["curation_pending"]) >= {
        "stale", "never_verified", "drifted", "cold", "dead", "silent_misses", "unique_silent_miss_memories",
        "cold_endorsement_memories", "conflicts"}


@spec("memory_scope_overview: curation_pending_new_since_last_session null on the first session")
def test_overview_first_session(tmp_path):
    repo = tmp_path / "fresh"
    repo.mkdir()
    with connect(tmp_path / "store", repo) as first:
        assert first.call("memory_scope_overview")["curation_pending_new_since_last_session"] is None


# --- memory_write -----------------------------------------------------------------------------------

@spec("memory_write: fact commits with id and related")
def test_write_fact(s):
    out = write(s, "The gecko cron runs at 04:00 UTC")
    assert out["status"] == "committed" and out["id"] and "related" in out


@spec("memory_write: user-inference is always pending with pending_id and pending_reason")
def test_write_user_inference(s):
    out = write(s, "The user prefers short answers", scopes=["user"], category="user-inference")
    assert (out["status"], out["pending_reason"]) == ("pending", "user_inference") and out["pending_id"]


@spec("memory_write: ambient commits; >500 words attaches ambient_body_long")
def test_write_ambient(s):
    out = write(s, " ".join(["Replies stay calm and plain."] + ["context"] * 510), category="ambient")
    assert out["status"] == "committed" and any("ambient_body_long" in w for w in out["warnings"])


@spec("memory_write: claims checked now; a false claim refuses")
def test_write_claims(s):
    out = write(s, "The app port is set in src/app.py", claims=["src/app.py::PORT=9999"])
    assert out["status"] == "claim_false" and "id" not in out
    assert write(s, "The app port is set in src/app.py", claims=["src/app.py::PORT=8443"])["status"] == "committed"


@spec("memory_write: groundedness_check + source_transcript -> ungrounded {claims}; acknowledge_ungrounded")
def test_write_groundedness(s):
    transcript = "user: the parrot queue is drained every night by the janitor job"
    out = write(s, "The parrot queue is drained nightly by the janitor job. It also compresses old invoices.",
                groundedness_check=True, source_transcript=transcript)
    assert out["status"] == "ungrounded" and out["claims"] == ["It also compresses old invoices."]
    ok = write(s, "The parrot queue is drained nightly by the janitor job. It also compresses old invoices.",
               groundedness_check=True, source_transcript=transcript, acknowledge_ungrounded=True)
    assert ok["status"] == "committed"


@spec("memory_write: duplicate with corroboration_recorded (once per session)")
def test_write_duplicate(s):
    first = write(s, "The koala backup keeps 14 daily snapshots")["id"]
    dup = write(s, "the koala backup keeps 14 daily snapshots!")
    assert (dup["status"], dup["id"], dup["corroboration_recorded"]) == ("duplicate", first, True)
    assert write(s, "The koala backup keeps 14 daily snapshots.")["corroboration_recorded"] is False


@spec("memory_write: transient_warning with acknowledge_transient")
def test_write_transient(s):
    out = write(s, "We just shipped the new cart page today and the old one was deleted yesterday.")
    assert (out["status"], out["override"]) == ("transient_warning", "acknowledge_transient") and out["hint"]


@spec("memory_write: credential_warning (no override)")
def test_write_credential(s):
    out = write(s, "The deploy key is AKIA" + "Q3ZR7XKD2MPLW4NB")
    assert out["status"] == "credential_warning" and "AKIAQ3ZR7XKD2MPLW4NB" not in json.dumps(out)


@spec("memory_write: previously_removed with force=True override")
def test_write_previously_removed(s):
    mid = write(s, "The emu mailer sends through sendgrid")["id"]
    s.call("memory_remove", id=mid, reason="moved to postmark")
    out = write(s, "The emu mailer sends through sendgrid")
    assert out["status"] == "previously_removed" and out["override"] == "force"
    assert write(s, "The emu mailer sends through sendgrid", force=True)["status"] == "committed"


@spec("memory_write: scope_mismatch with acknowledge_scope_mismatch / force")
def test_write_scope_mismatch(s):
    out = write(s, "The bison service uses kafka", scopes=["projects:warehouse"])
    assert out["status"] == "scope_mismatch" and "projects:shop" in out["hint"]
    assert write(s, "The bison service uses kafka", scopes=["projects:warehouse"],
                 acknowledge_scope_mismatch=True)["status"] == "committed"


@spec("memory_write: user_claim_warning with acknowledge_user_claim")
def test_write_user_claim(s):
    out = write(s, "The user prefers tabs over spaces")
    assert (out["status"], out["override"]) == ("user_claim_warning", "acknowledge_user_claim")


@spec("memory_write: removed_matches for a similar tombstone below the duplicate threshold")
def test_write_removed_matches(s):
    mid = write(s, "The moose proxy listens on port 7000 behind haproxy")["id"]
    s.call("memory_remove", id=mid, reason="haproxy retired")
    out = write(s, "The moose proxy listens on port 7100")
    assert out["status"] == "committed" and out["removed_matches"][0]["id"] == mid
    assert out["removed_matches"][0]["reason"] == "haproxy retired"


@spec("memory_write: curation_hint block {pressure, threshold, counts, message} (passive, once per session)")
def test_write_curation_hint_shape(s):
    out = write(s, "The lynx dashboard shows p99 latency")
    assert "curation_hint" not in out or set(out["curation_hint"]) == {"pressure", "threshold", "counts", "message"}


@spec("memory_write_confirm: commits a pending write; expired vs never existed")
def test_confirm(s):
    pending = write(s, "The user is learning Go", scopes=["user"], category="user-inference")
    assert s.call("memory_write_confirm", pending_id=pending["pending_id"])["status"] == "committed"
    assert s.call("memory_write_confirm", pending_id="nope")["status"] == "not_found"


@spec("memory_write_confirm: re-gated; a refusal keeps the staged write (pending_retained)")
def test_confirm_regated(s):
    pending = write(s, "The user works at Initech", scopes=["user"], category="user-inference")
    write(s, "The user works at Initech", scopes=["user"], category="fact", acknowledge_user_claim=True)
    out = s.call("memory_write_confirm", pending_id=pending["pending_id"])
    assert out["status"] == "duplicate" and out["pending_retained"] is True


@spec("memory_write_cancel: drops a pending write; existed=False when gone")
def test_cancel(s):
    pending = write(s, "The user likes dark mode", scopes=["user"], category="user-inference")
    assert s.call("memory_write_cancel", pending_id=pending["pending_id"])["existed"] is True
    assert s.call("memory_write_cancel", pending_id=pending["pending_id"])["existed"] is False


@spec("memory_write_confirm / cancel: another session's pending write is not this one's to settle")
def test_confirm_is_the_staging_sessions(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    with connect(tmp_path / "store", repo) as a, connect(tmp_path / "store", repo) as b:
        pending = write(a, "The user prefers short answers", scopes=["user"], category="user-inference")["pending_id"]
        assert b.call("memory_scope_overview")["pending_writes"] == []
        for tool in ("memory_write_confirm", "memory_write_cancel"):
            out = b.call(tool, pending_id=pending)
            assert out["status"] == "not_found" and "another session" in out["reason"]
        assert a.call("memory_write_confirm", pending_id=pending)["status"] == "committed"


# --- memory_update ----------------------------------------------------------------------------------

@spec("memory_update: content= replaces the body and clears last_verified_at")
def test_update_content(s):
    mid = write(s, "The orca batch size is 500")["id"]
    s.call("memory_verify", id=mid)
    out = s.call("memory_update", id=mid, content="The orca batch size is 1000")
    assert out["status"] == "updated" and out["memory"]["last_verified_at"] is None


@spec("memory_update: a new body clears the verified-* attestations, commits and versions too")
def test_update_content_clears_every_attestation(s):
    mid = write(s, "The grebe client pins protobuf 4 in src/app.py")["id"]
    s.call("memory_verify", id=mid, verified_paths=["src/app.py"], verified_commits=["abc1234"],
           verified_versions=["4.25"])
    memory = s.call("memory_update", id=mid, content="The grebe client pins protobuf 5 in src/app.py")["memory"]
    assert memory["verified_paths"] == [] and not {"verified_commits", "verified_versions"} & set(memory["metadata"])
    again = s.call("memory_verify", id=mid)  # None keeps the prior attestation: there is none for this text
    assert (again["verified_paths"], again["verified_commits"], again["verified_versions"]) == ([], [], [])


@spec("memory_update: scopes / links REPLACE; links {type, target_id, note?}")
def test_update_links(s):
    a = write(s, "The puffin queue is FIFO")["id"]
    b = write(s, "The puffin queue was LIFO before 2022")["id"]
    out = s.call("memory_update", id=a, links=[{"type": "supersedes", "target_id": b, "note": "newer"}],
                 scopes=["projects:shop", "queues"])
    assert out["memory"]["links"][0]["target"] == b and out["memory"]["scopes"] == ["projects:shop", "queues"]
    assert s.call("memory_update", id=a, links=[])["memory"]["links"] == []


@spec("memory_update: category user-inference is rejected")
def test_update_category(s):
    mid = write(s, "The raven service is written in Rust")["id"]
    assert "'fact' or 'ambient'" in s.error("memory_update", id=mid, category="user-inference")


@spec("memory_update: truncation_warning with acknowledge_truncation")
def test_update_truncation(s):
    mid = write(s, "The stork pipeline loads events from kafka, enriches them with geo data and writes parquet.")["id"]
    out = s.call("memory_update", id=mid, content="The stork pipeline loads events from kafka, enriches them with")
    assert (out["status"], out["override"]) == ("truncation_warning", "acknowledge_truncation")


@spec("memory_update: user_claim_warning on a body about the user")
def test_update_user_claim(s):
    mid = write(s, "The crane module renders PDFs")["id"]
    assert s.call("memory_update", id=mid, content="The user prefers PDFs rendered in A4")["status"] == "user_claim_warning"


@spec("memory_update: status stale when another agent updated first (version token)")
def test_update_stale(s):
    mid = write(s, "The finch cache TTL is 60 seconds")["id"]
    token = s.call("memory_show", id=mid)["version"]
    s.call("memory_update", id=mid, content="The finch cache TTL is 90 seconds")
    out = s.call("memory_update", id=mid, content="The finch cache TTL is 120 seconds", version=token)
    assert out["status"] == "stale" and out["current_version"] != token
    assert s.call("memory_show", id=mid)["content"].endswith("90 seconds")


# --- remove / restore / tombstones ------------------------------------------------------------------

@spec("memory_remove: tombstone with reason and the originating session; memory_list_tombstones")
def test_remove(s):
    mid = write(s, "The dodo API is public")["id"]
    out = s.call("memory_remove", id=mid, reason="made private")
    assert out["status"] == "removed" and out["removed_by_session"]
    stone = s.call("memory_list_tombstones")["tombstones"][0]
    assert stone["memory"]["id"] == mid and stone["reason"] == "made private" and stone["removed_by_session"]


@spec("memory_restore: undo a removal")
def test_restore(s):
    mid = write(s, "The kiwi API is internal")["id"]
    s.call("memory_remove", id=mid, reason="oops")
    assert s.call("memory_restore", id=mid)["status"] == "restored"


# --- memory_verify ----------------------------------------------------------------------------------

@spec("memory_verify: bumps last_verified_at, not updated")
def test_verify_timestamps(s):
    mid = write(s, "The otter API rate limit is 100 rps")["id"]
    before = s.call("memory_show", id=mid)
    out = s.call("memory_verify", id=mid, note="checked the gateway config")
    after = s.call("memory_show", id=mid)
    assert out["status"] == "verified" and after["updated"] == before["updated"] and after["last_verified_at"]


@spec("memory_verify: verified_paths checked against the worktree; absent paths refused")
def test_verify_paths(s):
    mid = write(s, "The shop entry point is src/app.py")["id"]
    assert s.call("memory_verify", id=mid, verified_paths=["src/app.py"])["verified_paths"] == ["src/app.py"]
    assert "missing" in s.error("memory_verify", id=mid, verified_paths=["src/nope.py"])


@spec("memory_verify: verified_commits / verified_versions accepted (audit trail)")
def test_verify_audit_trail(s):
    mid = write(s, "The seal client pins protobuf 4")["id"]
    out = s.call("memory_verify", id=mid, verified_commits=["abc1234"], verified_versions=["4.25"])
    assert (out["verified_commits"], out["verified_versions"]) == (["abc1234"], ["4.25"])


@spec("memory_verify: verified_absent_paths reported as expected_absent, not missing")
def test_verify_absent(s):
    mid = write(s, "The windows installer script is win/setup.ps1")["id"]
    s.call("memory_verify", id=mid, verified_absent_paths=["win/setup.ps1"])
    drift = s.call("memory_show", id=mid)["path_drift"]
    assert drift["expected_absent"] == ["win/setup.ps1"] and drift["missing"] == []


@spec("memory_verify: status stale when another agent verified first")
def test_verify_stale(s):
    mid = write(s, "The robin job retries twice")["id"]
    token = s.call("memory_show", id=mid)["version"]
    s.call("memory_verify", id=mid)
    assert s.call("memory_verify", id=mid, version=token)["status"] == "stale"


# --- outcomes, audit, scopes ------------------------------------------------------------------------

@spec("memory_record_use: ignored/contradicted/corrected/applied with claim_excerpts; empty excerpt rejected")
def test_record_use(s):
    mid = write(s, "The bat signal uses SNS")["id"]
    out = s.call("memory_record_use", memory_ids=[mid], outcome="corrected", claim_excerpts=["SNS"])
    assert out["status"] == "recorded"
    assert "claim_excerpts" in s.error("memory_record_use", memory_ids=[mid], outcome="ignored", claim_excerpts=[""])
    both = s.error("memory_record_use", memory_ids=[mid], outcome="ignored", claim_excerpts=["SNS"], excerpts=["bat"])
    assert "give one of them" in both  # two different lists for one argument: neither is silently dropped
    uneven = s.error("memory_record_use", memory_ids=[mid, mid], outcome="ignored", claim_excerpts=["SNS"])
    assert "claim_excerpts must parallel" in uneven and "1 excerpt(s) for 2 id(s)" in uneven  # the argument named
    assert s.call("memory_record_use", memory_ids=[mid], outcome="ignored", claim_excerpts=["SNS"],
                  excerpts=["SNS"])["status"] == "recorded"


@spec("memory_audit_turn: verdict miss | ok | no_signal")
def test_audit_turn(s, place):
    store, repo = place
    write(s, "The gannet cluster runs on port 9300")
    with connect(store, repo) as later:
        assert later.call("memory_audit_turn", user_message="which port does the gannet cluster run on",
                          mode="bm25")["verdict"] == "miss"
        assert later.call("memory_audit_turn", user_message="zzz qqq unrelated", mode="bm25")["verdict"] == "no_signal"
        later.call("memory_search", query="gannet cluster port", mode="bm25")
        assert later.call("memory_audit_turn", user_message="which port does the gannet cluster run on",
                          mode="bm25")["verdict"] == "ok"


@spec("memory_disable_scope / memory_enable_scope for the session; unknown scope is an error")
def test_scopes(s):
    write(s, "The cobra service is deprecated", scopes=["projects:shop", "cobra"])
    assert s.call("memory_disable_scope", scope="cobra")["disabled_scopes"] == ["cobra"]
    assert s.call("memory_search", query="cobra deprecated", mode="bm25")["hits"] == []
    assert s.call("memory_enable_scope", scope="cobra")["disabled_scopes"] == []
    assert "no memory, tombstone or episode has scope" in s.error("memory_disable_scope", scope="nosuchscope")


@spec("memory_scope_overview: counts respect session-disabled scopes, recently_removed_in_worktree too")
def test_overview_counts_leave_disabled_scopes_out(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    with connect(tmp_path / "store", repo) as fresh:
        mid = write(fresh, "The quetzal service is deprecated", scopes=["repo", "quetzal"])["id"]
        fresh.call("memory_remove", id=mid, reason="retired")
        assert fresh.call("memory_scope_overview")["recently_removed_in_worktree"] == 1
        fresh.call("memory_disable_scope", scope="quetzal")
        assert fresh.call("memory_scope_overview")["recently_removed_in_worktree"] == 0
        assert fresh.call("memory_scope_overview", auto_scope=False)["recently_removed_in_worktree"] == 0


# --- episodes ---------------------------------------------------------------------------------------

@spec("episode_write: run-state welcome; returns {status, id, session_id, created, scopes, takeaway, swarm_id, pruned_sessions}")
def test_episode_write(s):
    out = s.call("episode_write", body="Currently blocked on the flaky upload test; next step is a retry",
                 takeaway="upload test is flaky", scopes=["projects:shop"])
    assert set(out) >= {"status", "id", "session_id", "created", "scopes", "takeaway", "swarm_id", "pruned_sessions"}


@spec("episode_handoff: prior session's takeaways, note when nothing visible")
def test_episode_handoff(place, s):
    store, repo = place
    s.call("episode_write", body="Waiting on the flaky upload test's retry", takeaway="retry the upload test")
    with connect(store, repo) as later:
        out = later.call("episode_handoff")
        assert out["prior_session_id"] and out["episodes"][-1]["takeaway"] == "retry the upload test"


@spec("episode_search: parent_session_id restricts to one session's journal; swarm_id; include_bodies")
def test_episode_search(s):
    written = s.call("episode_write", body="swarm notes", takeaway="fan-in works", swarm_id="coord-9")
    rows = s.call("episode_search", parent_session_id=written["session_id"], include_bodies=False)["episodes"]
    assert rows and all(r["session_id"] == written["session_id"] and "body" not in r for r in rows)
    assert s.call("episode_search", swarm_id="coord-9")["episodes"][0]["takeaway"] == "fan-in works"


@spec("episode_promote: through memory_write's gates; promoted_from_episode_id; refusal keeps the episode")
def test_episode_promote(s):
    ep = s.call("episode_write", body="the heron deploy takes 12 minutes", takeaway="Heron deploys take 12 minutes")
    out = s.call("episode_promote", episode_id=ep["id"], scopes=["projects:shop"])
    assert out["status"] == "committed" and out["promoted_from_episode_id"] == ep["id"]
    bad = s.call("episode_write", body="x", takeaway="Right now the heron deploy is blocked")
    refused = s.call("episode_promote", episode_id=bad["id"], scopes=["projects:shop"])
    assert refused["status"] == "transient_warning" and refused["episode_deleted"] is False


# --- the surface itself -----------------------------------------------------------------------------

@spec("surface: an unknown argument is an error naming the key and the accepted ones")
def test_unknown_argument(s):
    text = s.error("memory_write", content="x y z", scopes=["a"], tags=["b"])
    assert "unknown argument 'tags'" in text and "content" in text and "scopes" in text


@spec("surface: every bad argument of a call is named, not the first and a count")
def test_every_bad_argument_is_named(s):
    text = s.error("memory_write", content="", scopes=[])
    assert "content:" in text and "scopes:" in text and "more problem" not in text


@spec("surface: additionalProperties false on every input schema")
def test_additional_properties(s):
    assert all(t.input_schema.get("additionalProperties") is False for t in s.tools().values())


@spec("surface: tool errors are one line, name tools not CLI commands, no pydantic boilerplate")
def test_error_lines(s):
    for text in (s.error("memory_show", id="01NOPE"), s.error("memory_restore", id="01NOPE"),
                 s.error("memory_write", content="", scopes=["a"]),
                 s.error("memory_update", id="01NOPE", content="New text here")):
        assert "\n" not in text and "kenning " not in text.replace("kenning store", "")
        assert "errors.pydantic.dev" not in text and "validation error" not in text
    assert "memory_search or memory_list" in s.error("memory_show", id="01NOPE")
    # one shape whatever refused the call: the argument check or the tool's body
    for name, arguments in (("memory_show", {"id": "01NOPE"}), ("memory_show", {"idx": "1"}),
                            ("memory_restore", {"id": "01NOPE"}), ("memory_write", {"content": "", "scopes": ["a"]})):
        assert s.error(name, **arguments).startswith(f"{name}: "), name


@spec("surface: typed output schemas (not a bare object)")
def test_output_schemas(s):
    for tool in s.tools().values():
        assert tool.output_schema and tool.output_schema.get("properties"), tool.name


@spec("surface: every parameter has a description")
def test_parameter_descriptions(s):
    for tool in s.tools().values():
        for name, prop in tool.input_schema["properties"].items():
            described = "description" in prop or any("description" in x for x in prop.get("anyOf", []))
            assert described, f"{tool.name}.{name}"


@spec("memory_health: the curation report as a tool")
def test_health_tool(s):
    out = s.call("memory_health")
    assert "curation_pending" in out and "dead" in out and "cold_endorsement_memories" in out


@spec("memory_rename_scope: relabel a scope as a tool")
def test_rename_scope_tool(s):
    write(s, "The mole service is read-only", scopes=["projects:shop", "mole-old"])
    assert s.call("memory_rename_scope", old="mole-old", new="mole")["count"] == 1
    # a scope nothing carries any more (or a mistyped one) is an error, not "renamed, count 0"
    assert "no memory or tombstone carries the scope 'mole-old'" in s.error("memory_rename_scope", old="mole-old",
                                                                           new="mole")


@spec("memory_conflicts: list contradiction pairs; resolve by supersede or keep both with a note")
def test_conflicts_tool(s):
    a = write(s, "Heron deploys are approved by QA")["id"]
    b = write(s, "Heron deploys are approved by the on-call", links=[{"type": "contradicts", "target_id": a}])["id"]
    listed = s.call("memory_conflicts")
    assert any({c["id"], c["other_id"]} == {a, b} for c in listed["conflicts"])
    out = s.call("memory_conflicts", action="resolve", id=a, other_id=b, resolution="supersede", keep_id=b)
    assert out["status"] == "resolved" and out["link"]["type"] == "supersedes"


if __name__ == "__main__":
    for name, item in SPEC.items():
        print(f"{name}\t{item}")
