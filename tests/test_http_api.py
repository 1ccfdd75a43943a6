"""The HTTP API in process (Starlette's test client over the real app and a real SQLite store).

Status codes: 400 for a caller's mistake with the library's one-line message, 404 for a missing
id, 409/422 for a refused write with gate and hint; no bad input reaches a 500.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from fastapi.testclient import TestClient

import kenning
from kenning.serve.http import create_app

BASE = "http://127.0.0.1:8765"


@pytest.fixture
def client(store):
    store.configure(default_mode="bm25")  # no test waits for the embedding model
    with TestClient(create_app(store), base_url=BASE, raise_server_exceptions=False) as c:
        yield c


def _write(client, content="The auth service listens on port 8443", scopes=("projects:auth",), **extra):
    response = client.post("/memories", json={"content": content, "scopes": list(scopes), **extra})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_write_search_show_update_round_trip(client):
    mid = _write(client)
    hits = client.get("/search", params={"q": "auth port"}).json()["hits"]
    assert [h["id"] for h in hits] == [mid]
    assert {"matched_leg", "relevance", "staleness_verdict", "snippet"} <= set(hits[0])

    shown = client.get(f"/memories/{mid}").json()
    assert shown["content"] == "The auth service listens on port 8443" and "staleness_verdict" in shown

    updated = client.patch(f"/memories/{mid}", json={"text": "The auth service listens on port 9443"})
    assert updated.status_code == 200 and updated.json()["memory"]["content"].endswith("9443")
    assert client.get("/search", params={"q": "9443"}).json()["hits"][0]["id"] == mid
    assert client.get("/search", params={"q": "8443"}).json()["hits"] == []


def test_search_parameters_reach_the_library(client):
    _write(client, "The auth service listens on port 8443", ["projects:auth"])
    _write(client, "The billing service listens on port 7000", ["projects:billing"], category="ambient")
    scoped = client.get("/search", params={"q": "service port", "scopes": ["projects:billing"], "mode": "keyword"})
    assert scoped.json()["mode"] == "keyword"
    assert [h["scopes"] for h in scoped.json()["hits"]] == [["projects:billing"]]
    only_ambient = client.get("/search", params={"q": "service port", "category": "ambient", "all": "true"}).json()
    assert [h["category"] for h in only_ambient["hits"]] == ["ambient"]
    assert len(client.get("/search", params={"q": "service port", "limit": 1}).json()["hits"]) == 1


def test_list_pages_through_memories(client):
    ids = [_write(client, f"Service number {i} listens on port {8000 + i}", ["s"]) for i in range(5)]
    first = client.get("/memories", params={"limit": 2}).json()
    assert first["next_offset"] == 2 and len(first["memories"]) == 2
    seen = [m["id"] for m in first["memories"]]
    offset = first["next_offset"]
    while offset is not None:
        page = client.get("/memories", params={"limit": 2, "offset": offset}).json()
        seen += [m["id"] for m in page["memories"]]
        offset = page["next_offset"]
    assert sorted(seen) == sorted(ids) and len(seen) == 5
    assert "content" in client.get("/memories", params={"body": "true", "limit": 1}).json()["memories"][0]
    assert client.get("/memories", params={"category": "ambient"}).json()["memories"] == []


def test_list_pages_on_after_skip_nothing_when_a_memory_is_removed_between_pages(client):
    """By offset, removing a memory listed already shifts the rest up: the next page starts one too
    far and one memory is never listed. ``next_after`` goes on from the last one listed."""
    ids = [_write(client, f"Service number {i} listens on port {8000 + i}", ["s"]) for i in range(5)]
    first = client.get("/memories", params={"limit": 2}).json()
    seen = [m["id"] for m in first["memories"]]
    assert client.delete(f"/memories/{seen[0]}", params={"reason": "retired service"}).status_code == 200
    after = first["next_after"]
    while after is not None:
        page = client.get("/memories", params={"limit": 2, "after": after}).json()
        seen += [m["id"] for m in page["memories"]]
        after = page["next_after"]
    assert sorted(seen) == sorted(ids)
    bad = client.get("/memories", params={"after": "2"})
    assert bad.status_code == 400 and "cursor" in bad.json()["error"]


def test_tombstones_page_on_next_after(client):
    ids = [_write(client, f"Service number {i} listens on port {8000 + i}", ["s"]) for i in range(3)]
    for mid in ids:
        assert client.delete(f"/memories/{mid}", params={"reason": "retired service"}).status_code == 200
    first = client.get("/tombstones", params={"limit": 2}).json()
    rest = client.get("/tombstones", params={"limit": 2, "after": first["next_after"]}).json()
    assert rest["next_after"] is None
    assert [t["memory"]["id"] for t in first["tombstones"] + rest["tombstones"]] == ids[::-1]


def test_remove_needs_a_reason_then_tombstone_and_restore(client):
    mid = _write(client)
    missing_reason = client.delete(f"/memories/{mid}")
    assert missing_reason.status_code == 400 and "reason is required" in missing_reason.json()["error"]
    removed = client.delete(f"/memories/{mid}", params={"reason": "moved to 9443"})
    assert removed.status_code == 200 and removed.json()["tombstone"]["reason"] == "moved to 9443"
    assert client.get(f"/memories/{mid}").status_code == 404
    assert client.get("/search", params={"q": "auth port"}).json()["hits"] == []
    assert [t["memory"]["id"] for t in client.get("/tombstones").json()["tombstones"]] == [mid]
    assert client.post(f"/memories/{mid}/restore").json()["status"] == "restored"
    assert client.post(f"/memories/{mid}/restore").status_code == 400  # not removed any more
    assert client.get("/tombstones").json()["tombstones"] == []
    assert client.get("/search", params={"q": "auth port"}).json()["hits"][0]["id"] == mid


def test_verify_records_the_check(client):
    mid = _write(client)
    verified = client.post(f"/memories/{mid}/verify", json={"note": "read the config"})
    assert verified.status_code == 200 and verified.json()["verification_note"] == "read the config"
    assert client.post(f"/memories/{mid}/verify").json()["status"] == "verified"  # no body at all
    assert client.get(f"/memories/{mid}").json()["last_verified_at"] is not None


def test_verify_takes_the_audit_lists_as_the_mcp_tool_does(client):
    mid = _write(client)
    verified = client.post(f"/memories/{mid}/verify", json={"verified_commits": ["abc1234", "abc1234"],
                                                            "verified_versions": ["v2.1.0"]})
    assert verified.status_code == 200, verified.text
    assert verified.json()["verified_commits"] == ["abc1234"] and verified.json()["verified_versions"] == ["v2.1.0"]
    kept = client.post(f"/memories/{mid}/verify", json={"note": "again"}).json()  # omitted: the list is kept
    assert kept["verified_commits"] == ["abc1234"] and kept["verified_versions"] == ["v2.1.0"]
    cleared = client.post(f"/memories/{mid}/verify", json={"verified_commits": []}).json()
    assert cleared["verified_commits"] == [] and cleared["verified_versions"] == ["v2.1.0"]
    for bad in (["x" * 201], [""], ["a\nb"], [f"c{i}" for i in range(65)], "abc1234"):
        refused = client.post(f"/memories/{mid}/verify", json={"verified_commits": bad})
        assert refused.status_code == 400, (bad, refused.text)
        assert "verified_commits" in refused.json()["error"]


def test_pending_writes_are_listed_confirmed_and_cancelled(client):
    client.patch("/config", json={"require_write_confirmation": True})
    first = client.post("/memories", json={"content": "The queue is RabbitMQ on port 5672", "scopes": ["q"]})
    second = client.post("/memories", json={"content": "The cache is Redis on port 6379", "scopes": ["q"]})
    assert first.status_code == second.status_code == 202
    listed = {p["pending_id"] for p in client.get("/pending").json()["pending"]}
    assert listed == {first.json()["pending_id"], second.json()["pending_id"]}

    confirmed = client.post(f"/pending/{first.json()['pending_id']}/confirm")
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "committed"
    assert client.post(f"/pending/{second.json()['pending_id']}/cancel").json()["status"] == "cancelled"
    again = client.post(f"/pending/{second.json()['pending_id']}/cancel")
    assert again.status_code == 404 and "no pending write has this id" in again.json()["error"]
    assert again.json()["existed"] is False
    missing = client.post("/pending/nope/confirm")
    assert missing.status_code == 404 and missing.json()["error"] and missing.json()["status"] == "not_found"
    assert client.get("/pending").json()["pending"] == []
    assert client.get(f"/memories/{confirmed.json()['id']}").status_code == 200


def test_gate_refusals_are_422_with_gate_and_hint(client):
    refused = client.post("/memories", json={"content": "Today I'm refactoring the search engine.", "scopes": ["x"]})
    assert refused.status_code == 422
    body = refused.json()
    assert (body["status"], body["gate"]) == ("transient_warning", "durability") and "episode" in body["hint"]
    assert body["error"] == body["reason"]  # every error body has "error", a refused write's too
    mid = _write(client)
    duplicate = client.post("/memories", json={"content": "The auth service listens on port 8443", "scopes": ["x"]})
    assert duplicate.status_code == 409 and duplicate.json()["status"] == "duplicate"
    assert "already says this" in duplicate.json()["error"]
    update = client.patch(f"/memories/{mid}", json={"text": "WIP: the exporter skips archived rows."})
    assert update.status_code == 422
    assert update.json()["gate"] == "durability" and update.json()["hint"]
    assert client.get(f"/memories/{mid}").json()["content"] == "The auth service listens on port 8443"


def test_health_reports_the_curation_lists(client):
    _write(client)
    health = client.get("/health", params={"all": "true"}).json()
    assert health["total"] == 1 and health["curation_pending"]["never_verified"] == 1
    assert [r["verification"] for r in health["oldest_unverified"]] == ["never"]
    assert {"drifted", "contradicted", "conflicts"} <= set(health)


def test_config_patch_names_one_setting_and_leaves_the_others(client, store):
    before = client.get("/config").json()
    assert before == {"search_enabled": True, "write_enabled": True, "default_mode": "bm25",
                      "require_write_confirmation": False}
    after = client.patch("/config", json={"write_enabled": False}).json()
    assert after == {**before, "write_enabled": False}
    assert kenning.open_store(store.directory).config.write_enabled is False  # stored, not only in memory
    assert client.patch("/config", json={"default_mode": "keyword"}).json() == {
        **before, "write_enabled": False, "default_mode": "keyword"}


@pytest.mark.parametrize("body, message", [
    ({"serch_enabled": False}, "unknown setting 'serch_enabled'; the live settings are: search_enabled"),
    ({"bm25_k1": 2.0}, "unknown setting 'bm25_k1'"),
    ({"write_enabled": "off"}, "write_enabled must be true or false"),
    ({"default_mode": "fuzzy"}, "default_mode"),
    ({}, "name at least one setting"),
])
def test_config_patch_refuses_unknown_or_bad_settings(client, body, message):
    response = client.patch("/config", json=body)
    assert response.status_code == 400 and message in response.json()["error"]
    assert client.get("/config").json()["write_enabled"] is True


def test_toggles_switch_search_and_writes_off(client, store):
    mid = _write(client)
    client.patch("/config", json={"search_enabled": False})
    off = client.get("/search", params={"q": "auth"})
    assert off.status_code == 409 and off.json()["error"].startswith("search is disabled")
    client.patch("/config", json={"search_enabled": True, "write_enabled": False})
    count = store.count()
    write = client.post("/memories", json={"content": "The cache is Redis on port 6379", "scopes": ["x"]})
    assert write.status_code == 409
    assert (write.json()["gate"], write.json()["code"]) == ("write_enabled", "writes_disabled")
    assert "writes are disabled" in write.json()["error"]
    for response in (client.patch(f"/memories/{mid}", json={"text": "The auth service listens on port 1"}),
                     client.delete(f"/memories/{mid}", params={"reason": "x"}),
                     client.post(f"/memories/{mid}/verify")):
        assert response.status_code == 409, response.text
        assert "writes are disabled" in response.json()["error"] and response.json()["gate"] == "write_enabled"
    assert store.count() == count and store.get(mid).content == "The auth service listens on port 8443"
    assert client.get("/search", params={"q": "auth"}).status_code == 200  # reads still work


@pytest.mark.parametrize("method, url, kwargs", [
    ("get", "/search", {"params": {"q": ""}}),
    ("get", "/search", {"params": {"q": "x", "limit": "many"}}),
    ("get", "/search", {"params": {"q": "x", "limit": 0}}),
    ("get", "/search", {"params": {"q": "x", "mode": "fuzzy"}}),
    ("get", "/search", {"params": {"q": "x", "category": "rumour"}}),
    ("get", "/search", {"params": {"q": "x", "scopes": [""]}}),
    ("get", "/search", {"params": {"q": "x", "all": "perhaps"}}),
    ("get", "/memories", {"params": {"limit": -1}}),
    ("get", "/memories", {"params": {"category": "rumour"}}),
    ("post", "/memories", {"json": {"content": "", "scopes": ["x"]}}),
    ("post", "/memories", {"json": {"content": "x" * 10, "scopes": []}}),
    ("post", "/memories", {"json": {"content": "fine text here", "scopes": ["x"], "category": "gossip"}}),
    ("post", "/memories", {"json": {"content": "fine text here", "scopes": ["x"], "links": [{"kind": "likes"}]}}),
    ("post", "/memories", {"json": {"content": "fine text here", "scopes": ["x"], "surprise": 1}}),
    ("post", "/memories", {"json": ["not", "an", "object"]}),
    ("post", "/memories", {"content": b"{broken", "headers": {"content-type": "application/json"}}),
    ("post", "/memories", {"content": b"content=x", "headers": {"content-type": "application/x-www-form-urlencoded"}}),
    ("patch", "/memories/ID", {"json": {}}),
    ("patch", "/memories/ID", {"json": {"confidence": "certain"}}),
    ("patch", "/memories/ID", {"json": {"category": "user-inference"}}),
    ("post", "/memories/ID/verify", {"json": {"note": "\x07bell"}}),
    ("post", "/memories/ID/verify", {"json": {"claims": ["../../etc/passwd::x"]}}),
    ("patch", "/config", {"json": "write_enabled"}),
])
def test_bad_input_is_400_with_one_line(client, method, url, kwargs):
    mid = _write(client)
    response = getattr(client, method)(url.replace("ID", mid), **kwargs)
    assert response.status_code == 400, (response.status_code, response.text)
    message = response.json()["error"]
    assert message and "\n" not in message and "Traceback" not in message


@pytest.mark.parametrize("method, url", [
    ("get", "/memories/01NOSUCHMEMORY"), ("patch", "/memories/01NOSUCHMEMORY"),
    ("delete", "/memories/01NOSUCHMEMORY?reason=x"), ("post", "/memories/01NOSUCHMEMORY/restore"),
    ("post", "/memories/01NOSUCHMEMORY/verify"), ("get", "/no/such/route"),
])
def test_missing_ids_are_404(client, method, url):
    kwargs = {"json": {"text": "The port is 1"}} if method == "patch" else {}
    response = getattr(client, method)(url, **kwargs)
    assert response.status_code == 404 and response.json()["error"]


def test_openapi_and_docs_work_offline(client):
    schema = client.get("/openapi.json").json()
    assert {"/search", "/memories", "/memories/{id}", "/config", "/pending", "/health", "/tombstones"} <= set(
        schema["paths"])
    docs = client.get("/docs")
    assert docs.status_code == 200 and "/memories/{id}/restore" in docs.text
    assert "http://" not in docs.text.replace("http://127.0.0.1", "") and "https://" not in docs.text
    assert client.get("/redoc").status_code == 404


def test_search_with_transcripts_recalls_every_tier_and_obeys_search_enabled(client):
    mid = _write(client)
    recalled = client.get("/search", params={"q": "auth port", "transcripts": "true", "all": "true"})
    assert recalled.status_code == 200, recalled.text
    assert [(h["role"], h["id"]) for h in recalled.json()["hits"]] == [("memory", mid)]
    assert client.get("/search", params={"q": "auth", "transcripts": "true", "category": "fact"}).status_code == 400
    client.patch("/config", json={"search_enabled": False})
    off = client.get("/search", params={"q": "auth port", "transcripts": "true"})
    assert off.status_code == 409 and off.json()["error"].startswith("search is disabled")


def test_recall_over_http_leaves_out_the_session_the_caller_names(client, store, tmp_path):
    """An agent talking HTTP has no environment the server reads: it names its own session, whose
    messages are already in its context, and the recall leaves them out (as session_search does)."""
    import json as _json

    from kenning.recall.transcripts import index_for

    ledger = tmp_path / "sessions.jsonl"
    ledger.write_text("".join(_json.dumps({"session": sid, "ts": "2026-11-30T10:00:00Z", "role": "assistant",
                                            "text": f"the ibex deploy note from {sid}"}) + "\n"
                              for sid in ("sess-old", "sess-now")))
    index_for(store).add_source(ledger, project=tmp_path)
    params = {"q": "ibex deploy note", "transcripts": "true", "all": "true"}
    both = client.get("/search", params=params)
    assert sorted(h["session"] for h in both.json()["hits"]) == ["sess-now", "sess-old"], both.text
    mine = client.get("/search", params={**params, "exclude_session": "sess-now"})
    assert mine.status_code == 200 and mine.json()["excluded_session"] == "sess-now"
    assert [h["session"] for h in mine.json()["hits"]] == ["sess-old"]
    wrong = client.get("/search", params={"q": "ibex", "exclude_session": "sess-now"})
    assert wrong.status_code == 400 and "transcripts=true" in wrong.json()["error"]


def test_an_imported_id_with_slashes_is_reachable_on_every_memory_route(client, store):
    (mid,) = store.import_records([{"id": "wiki/ops/7", "content": "The ops wiki says backups run at 02:00", "scopes": ["ops"]}])
    assert mid == "wiki/ops/7"
    for path in ("/memories/wiki/ops/7", "/memories/wiki%2Fops%2F7"):  # raw, and as page.js encodes it
        shown = client.get(path)
        assert shown.status_code == 200 and shown.json()["id"] == mid, shown.text
    assert client.patch("/memories/wiki/ops/7", json={"text": "The ops wiki says backups run at 03:00"}).status_code == 200
    verified = client.post("/memories/wiki%2Fops%2F7/verify", json={})
    assert verified.status_code == 200, verified.text
    assert client.delete("/memories/wiki/ops/7", params={"reason": "moved to the runbook"}).status_code == 200
    assert client.get("/memories/wiki/ops/7").status_code == 404
    restored = client.post("/memories/wiki/ops/7/restore")
    assert restored.status_code == 200 and restored.json()["memory"]["content"].endswith("03:00")
    page = client.get("/ui/memories/wiki/ops/7")
    assert page.status_code == 200 and "03:00" in page.text
    assert "/memories/{id}" in client.get("/openapi.json").json()["paths"]  # the schema names it plainly


def test_the_page_marks_a_superseded_or_contradicted_memory(client, store):
    """The page showed a superseded hit with nothing but its fresh badge, as if it were current (the
    CLI prints 'superseded by', the API superseded_by), and never a user's recent contradiction."""
    old = store.write("The staging VPN gateway is vpn-1.internal", scopes=["ops"]).id
    new = store.write("The staging VPN gateway moved to vpn-2.internal", scopes=["ops"],
                      links=[{"kind": "supersedes", "target": old}]).id
    store.record_use([old], "contradicted", note="the user says it moved")
    page = client.get("/", params={"q": "staging VPN gateway"}).text
    hit = page[page.index(f'data-id="{old}"'):].split("</li>")[0]
    assert f'class="badge superseded" title="superseded by {new}"' in hit and 'class="badge contradicted"' in hit
    assert "badge superseded" not in page[page.index(f'data-id="{new}"'):].split("</li>")[0]
    shown = client.get(f"/ui/memories/{old}").text
    assert 'id="superseded"' in shown and f'<a href="/ui/memories/{new}"><code>{new}</code></a>' in shown
    assert "recently contradicted: the user says it moved" in shown


@pytest.mark.parametrize("mid", ["wiki/ops#7", "faq?id=3", "notes 100% done", "a&b=c/d"])
def test_the_page_links_to_a_memory_whose_id_holds_url_characters(client, store, mid):
    """An imported id may hold '#', '?', '%', '&' or a space: the page's links encode it, so following a
    search hit or a health row opens that memory (not a missing one cut at the '#' or '?')."""
    store.configure(default_mode="bm25")
    store.import_records([{"id": mid, "content": "The staging VPN gateway rotates its keys every Sunday night",
                           "scopes": ["ops"]}])
    for page in (client.get("/", params={"q": "VPN gateway keys"}), client.get("/ui/health")):
        links = re.findall(r'href="(/ui/memories/[^"]*)"', page.text)
        assert links, page.text
        for link in links:
            opened = client.get(link.replace("&amp;", "&"))
            assert opened.status_code == 200 and "rotates its keys every Sunday" in opened.text, (link, opened.text[:300])


@pytest.mark.sqlite_only
def test_a_store_the_server_may_only_read_answers_writes_with_403_not_a_callers_mistake(tmp_path):
    """A write to a store whose files the server may not write is the server's condition, not a bad
    request: 403 with code read_only (a 400 tells a client its request was wrong), and reads still work."""
    from unprivileged import run_unprivileged

    directory = tmp_path / "store"
    with kenning.open_store(directory) as store:
        store.configure(default_mode="bm25")
        mid = store.write("The auth service listens on port 8443", scopes=["ops"]).id
    (directory / "kenning.sqlite3").chmod(0o444)
    directory.chmod(0o555)

    def use():
        with kenning.open_store(directory) as store, \
                TestClient(create_app(store), base_url=BASE, raise_server_exceptions=False) as client:
            return [(r.status_code, r.json()) for r in (
                client.post("/memories", json={"content": "The billing job runs nightly at 02:00", "scopes": ["ops"]}),
                client.patch(f"/memories/{mid}", json={"content": "The auth service listens on port 9443"}),
                client.patch("/config", json={"write_enabled": False}),
                client.get("/search", params={"q": "auth port"}))]

    try:
        *writes, (status, found) = run_unprivileged(use)
    finally:
        directory.chmod(0o755)
        (directory / "kenning.sqlite3").chmod(0o644)
    for code, body in writes:
        assert code == 403 and body["code"] == "read_only" and "read-only" in body["error"], (code, body)
    assert status == 200 and [h["id"] for h in found["hits"]] == [mid]


def test_every_override_a_refusal_names_is_a_field_the_api_takes(client):
    """A refusal's ``override`` names the field that accepts the risk; sending it must work."""
    text = "The billing service runs nightly reconciliation at 02:00 UTC and writes its report to the finance bucket."
    mid = _write(client, content=text, scopes=("projects:billing",))
    duplicate = client.post("/memories", json={"content": text, "scopes": ["projects:billing"]})
    assert duplicate.status_code == 409 and duplicate.json()["status"] == "duplicate"
    forced = client.post("/memories", json={"content": text, "scopes": ["projects:billing"], "force": True})
    assert forced.status_code == 201, forced.text
    cut = {"text": "The billing service runs nightly reconciliation at"}
    truncated = client.patch(f"/memories/{mid}", json=cut)
    assert truncated.status_code == 422 and truncated.json()["override"] == "acknowledge_truncation"
    acked = client.patch(f"/memories/{mid}", json={**cut, "acknowledge_truncation": True})
    assert acked.status_code == 200, acked.text
    for field in ("acknowledge_scope_mismatch", "acknowledge_ungrounded", "acknowledge_transient",
                  "acknowledge_user_claim"):
        taken = client.post("/memories", json={"content": f"The {field} probe service listens on port 7000",
                                               "scopes": ["x"], field: True})
        assert taken.status_code == 201, (field, taken.text)


def test_an_update_with_an_old_version_is_a_409_and_writes_nothing(client):
    mid = _write(client)
    version = client.get(f"/memories/{mid}").json()["version"]
    assert client.patch(f"/memories/{mid}", json={"text": "The auth service listens on port 9443",
                                                  "version": version}).status_code == 200
    stale = client.patch(f"/memories/{mid}", json={"text": "The auth service listens on port 7443", "version": version})
    assert stale.status_code == 409 and stale.json()["code"] == "stale" and "changed since" in stale.json()["error"]
    assert client.get(f"/memories/{mid}").json()["content"].endswith("9443")


def test_messages_and_hints_are_worded_for_an_http_client(client):
    """No CLI option or MCP tool name in what the API answers: routes and JSON fields instead."""
    mid = _write(client)
    duplicate = client.post("/memories", json={"content": "The auth service listens on port 8443", "scopes": ["x"]})
    hint = duplicate.json()["hint"]
    assert f"PATCH /memories/{mid}" in hint and '"force": true' in hint and "memory_update" not in hint, hint
    no_reason = client.delete(f"/memories/{mid}").json()["error"]
    assert "reason=" in no_reason and "--reason" not in no_reason, no_reason
    unknown = client.get("/memories/01M91DG228HV3WV7D6SH392VG0").json()["error"]
    assert "GET /memories" in unknown and "kenning list" not in unknown, unknown
    truncated = client.patch(f"/memories/{mid}", json={"text": "The auth service listens on"}).json()
    assert '"acknowledge_truncation": true' in truncated["hint"], truncated
    run_state = client.post("/memories", json={"content": "I am going to run the tests now", "scopes": ["x"]}).json()
    assert "episode_write" not in run_state["hint"] and '"acknowledge_transient": true' in run_state["hint"]
    for text in (hint, no_reason, unknown, truncated["hint"], truncated["error"], run_state["hint"]):
        assert not re.search(r"--[a-z]|`kenning |memory_[a-z]+", text), text


def test_update_takes_content_as_a_write_does_and_text_for_older_callers(client):
    """POST /memories names the body ``content``; PATCH refused that name and took only ``text``."""
    mid = _write(client)
    updated = client.patch(f"/memories/{mid}", json={"content": "The auth service listens on port 9443"})
    assert updated.status_code == 200, updated.text
    assert client.get(f"/memories/{mid}").json()["content"] == "The auth service listens on port 9443"
    older = client.patch(f"/memories/{mid}", json={"text": "The auth service listens on port 7443"})
    assert older.status_code == 200 and older.json()["memory"]["content"].endswith("7443")

    both = client.patch(f"/memories/{mid}", json={"content": "The auth service listens on port 1443",
                                                  "text": "The auth service listens on port 2443"})
    assert both.status_code == 400
    assert both.json() == {"error": "give the new body as content or as text, not two different ones"}
    assert client.get(f"/memories/{mid}").json()["content"].endswith("7443")  # nothing written
    same = "The auth service listens on port 3443"  # the same body twice is one body, as on MCP
    assert client.patch(f"/memories/{mid}", json={"content": same, "text": same}).status_code == 200

    fields = client.get("/openapi.json").json()["components"]["schemas"]["UpdateBody"]["properties"]
    assert "content" in fields and "give one of the two" in fields["text"]["description"]


def test_verify_with_an_old_version_is_a_409_and_records_nothing(client):
    """As PATCH does: the library answers stale as a status, which must not come back as a 200."""
    mid = _write(client)
    version = client.get(f"/memories/{mid}").json()["version"]
    current = client.post(f"/memories/{mid}/verify", json={"note": "read the config", "version": version})
    assert current.status_code == 200 and current.json()["status"] == "verified", current.text

    client.patch(f"/memories/{mid}", json={"content": "The auth service listens on port 9443"})  # clears verification
    stale = client.post(f"/memories/{mid}/verify", json={"note": "checked again", "version": version})
    assert stale.status_code == 409, stale.text
    assert stale.json()["code"] == "stale" and "changed since" in stale.json()["error"]
    shown = client.get(f"/memories/{mid}").json()
    assert shown["last_verified_at"] is None and shown["verification_note"] is None
    again = client.post(f"/memories/{mid}/verify", json={"version": shown["version"]})
    assert again.status_code == 200 and again.json()["status"] == "verified"


@pytest.mark.parametrize("url", ["/search?q=service+port&all=true", "/memories?all=true", "/tombstones?"])
def test_scopes_joined_by_a_comma_are_a_400_not_an_empty_answer(client, url):
    """A comma is a legal scope character, so "infra,other" is one scope that nothing carries: the
    caller meant two and got nothing back, silently. Repeating the parameter is the way."""
    ids = {_write(client, "The infra service listens on port 7000", ["infra"]),
           _write(client, "The other service listens on port 7001", ["other"])}
    if url.startswith("/tombstones"):
        for mid in ids:
            client.delete(f"/memories/{mid}", params={"reason": "moved"})
    joined = client.get(url + "&scopes=infra,other")
    assert joined.status_code == 400, joined.text
    assert "comma" in joined.json()["error"] and "scopes=infra&scopes=other" in joined.json()["error"]
    repeated = client.get(url + "&scopes=infra&scopes=other").json()
    rows = repeated.get("hits") or repeated.get("memories") or [t["memory"] for t in repeated["tombstones"]]
    assert {row["id"] for row in rows} == ids


def test_the_readme_names_each_read_routes_parameters(client):
    """The README's route list is a newcomer's reference: it left out /search's expand_top and /memories'
    all and body, so listing another repository's memories over HTTP looked impossible."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    routes = re.search(r"^Routes, each one library call: (.*?)Errors are", readme, re.M | re.S).group(1)
    schema = client.get("/openapi.json").json()["paths"]
    for path in ("/search", "/memories", "/tombstones", "/health"):
        said = re.search(rf"`GET {path}` \(([^)]*)\)", routes).group(1)
        named = set(re.findall(r"`([a-z_]+)(?:=[a-z]+)?`", said))
        assert named == {p["name"] for p in schema[path]["get"]["parameters"]}, path


def test_a_body_of_another_content_type_or_a_null_list_says_what_is_wrong(client):
    """A JSON body sent as text/plain answered "request: Input should be a valid dictionary or object to
    extract fields from", and "scopes": null "scopes.list[str]: Input should be a valid list"."""
    body = '{"content": "The cache is Redis on port 6379", "scopes": ["x"]}'
    for kind in ("text/plain", "application/x-www-form-urlencoded"):
        answer = client.post("/memories", content=body, headers={"content-type": kind})
        assert answer.status_code == 400
        assert answer.json()["error"] == f"body: send a JSON object with content-type: application/json (got {kind})"
    answer = client.post("/memories", json={"content": "The cache is Redis on port 6379", "scopes": None})
    assert answer.status_code == 400 and answer.json()["error"].startswith("scopes: "), answer.json()
    assert client.post("/memories", content=body, headers={"content-type": "application/json"}).status_code == 201


def test_a_very_long_id_is_not_echoed_whole(client):
    for method, path in (("get", "/memories/"), ("post", "/memories/{}/restore"), ("delete", "/memories/")):
        target = path.format("x" * 50_000) if "{}" in path else path + "x" * 50_000
        answer = getattr(client, method)(target, **({"params": {"reason": "why"}} if method == "delete" else {}))
        assert answer.status_code == 404 and len(answer.text) < 300, (method, answer.status_code, len(answer.text))


def test_clean_over_http_lists_then_removes_only_what_kenning_left_behind(client, store, tmp_path):
    """The recall design's admin "cleanup controls": `kenning clean` as a route, dry run first."""
    from kenning.recall import markdown
    from kenning.recall.files import LOCK_NAME, TEMP_MARK

    store.write("The auth service listens on port 8443", scopes=["projects:auth"])
    folder = tmp_path / "notes"
    markdown.export(store, folder)
    dead = 2**22 + 4321  # above the default pid_max: no live process has it
    lock = folder / LOCK_NAME
    lock.write_text(json.dumps({"pid": dead, "host": os.uname().nodename, "at": 0}))
    leftover = folder / "projects" / f".MEMORY.md{TEMP_MARK}{dead}-1"
    leftover.write_text("half a file")
    listed = client.post("/clean", params={"dry_run": "true"})
    assert listed.status_code == 200 and listed.json()["dry_run"] is True
    assert {item["path"] for item in listed.json()["removed"]} == {str(lock), str(leftover)}
    assert lock.exists() and leftover.exists()
    done = client.post("/clean").json()
    assert not done["dry_run"] and len(done["removed"]) == 2 and not lock.exists() and not leftover.exists()
    assert (folder / "projects/auth/MEMORY.md").exists() and store.count() == 1
