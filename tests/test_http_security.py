"""Who may reach the HTTP server and with what: the bind refusal, the token, the body limit, no CORS,
no cross-site writes, no files from outside the package. In process where the app is enough, with
a real server process (raw sockets, the CLI, KENNING_TOKEN) where the wire matters.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import httpx
import pytest
from fastapi.testclient import TestClient
from http_server import http_server

import kenning
from kenning import InvalidInput
from kenning.serve.http import create_app
from kenning.serve.http.security import check_bind, is_loopback

BASE = "http://127.0.0.1:8765"
TOKEN = "s3cret-token-for-tests"
EVERY_ROUTE = [
    ("get", "/"), ("get", "/static/page.js"), ("get", "/docs"), ("get", "/openapi.json"),
    ("get", "/search?q=auth"), ("get", "/memories"), ("post", "/memories"), ("get", "/memories/X"),
    ("patch", "/memories/X"), ("delete", "/memories/X?reason=x"), ("post", "/memories/X/restore"),
    ("post", "/memories/X/verify"), ("get", "/tombstones"), ("get", "/pending"), ("post", "/pending/X/confirm"),
    ("post", "/pending/X/cancel"), ("get", "/health"), ("get", "/config"), ("patch", "/config"),
    ("get", "/ui/tombstones"), ("get", "/no/such/route"),
]


@pytest.fixture
def guarded(store):
    store.configure(default_mode="bm25")
    with TestClient(create_app(store, token=TOKEN, max_body=4096), base_url=BASE,
                    raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"])
def test_loopback_binds_need_no_token(host):
    assert is_loopback(host)
    check_bind(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.org", ""])
def test_other_binds_are_refused_without_a_token(host):
    with pytest.raises(InvalidInput, match="without a token"):
        check_bind(host, None)
    check_bind(host, TOKEN)


def test_a_blank_token_is_no_token_and_the_blanks_around_one_are_not_part_of_it(store):
    """KENNING_TOKEN=" " (a config whose secret was never filled in) opened a public bind, and then the
    cookie kenning_token=%20 let anyone read and write; a token ending in a blank could never be
    sent, as a header's value loses its blanks."""
    for blank in ("", " ", "\t \n"):
        with pytest.raises(InvalidInput, match="without a token"):
            check_bind("0.0.0.0", blank)
    outside = "http://203.0.113.9:8765"  # a public bind's address: only a token lets a request in
    with TestClient(create_app(store, token=" "), base_url=outside, raise_server_exceptions=False) as c:
        c.cookies.set("kenning_token", "%20")
        assert c.get("/config").status_code == 403
        assert c.get("/config", headers={"Authorization": "Bearer  "}).status_code == 403
    with TestClient(create_app(store, token=f" {TOKEN}\n"), base_url=outside, raise_server_exceptions=False) as c:
        assert c.get("/config").status_code == 401
        assert c.get("/config", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_the_cli_refuses_a_public_bind_without_a_token(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k != "KENNING_TOKEN"}
    run = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(tmp_path / "s"), "serve", "--http",
                          "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in run.stderr and "Traceback" not in run.stderr


def test_a_port_in_use_is_one_line_and_no_start_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(tmp_path / "s"), "serve", "--http",
                              "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    assert f"port {port} on 127.0.0.1 is in use" in run.stderr and "--port 0" in run.stderr
    assert "serving on" not in run.stderr and "Traceback" not in run.stderr


def test_port_zero_serves_on_the_free_port_its_start_line_names(tmp_path):
    with http_server(tmp_path / "store") as base:  # the helper starts it with --port 0 and reads the line
        port = int(base.rsplit(":", 1)[1])
        assert port > 0
        assert httpx.get(f"{base}/health", timeout=10).status_code == 200


def test_the_start_line_comes_once_connections_are_taken(tmp_path):
    """A client that connects on reading the start line is answered, not refused while the server
    is still starting (the line named a port that was bound but not yet listening)."""
    server = subprocess.Popen([sys.executable, "-m", "kenning.cli", "--store", str(tmp_path / "s"), "serve", "--http",
                               "--port", "0"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        line = server.stderr.readline()
        port = int(re.search(r"serving on http://\S+:(\d+)/", line).group(1))
        with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:  # at once: no retry
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert conn.recv(64).startswith(b"HTTP/1.1 200")
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:  # as tests/http_server.py: a first model export may hold the shutdown
            server.kill()
            server.wait()


@pytest.mark.parametrize("method, url", EVERY_ROUTE)
def test_with_a_token_every_route_needs_the_bearer(guarded, method, url):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"},
                    {"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": "Bearer"}):
        response = guarded.request(method.upper(), url, headers=headers)
        assert response.status_code == 401, (headers, response.status_code)
        assert response.headers["www-authenticate"].startswith("Bearer")
    ok = guarded.request(method.upper(), url, headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code != 401


def test_with_a_token_a_wrong_one_writes_nothing(guarded, store):
    refused = guarded.post("/memories", json={"content": "The auth service listens on port 8443", "scopes": ["x"]},
                           headers={"Authorization": "Bearer guess"})
    assert refused.status_code == 401 and store.count() == 0
    ok = guarded.post("/memories", json={"content": "The auth service listens on port 8443", "scopes": ["x"]},
                      headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 201 and store.count() == 1


@pytest.mark.parametrize("method, url", EVERY_ROUTE)
def test_every_answer_forbids_framing_sniffing_and_scripts_from_elsewhere(guarded, method, url):
    """A browser without Sec-Fetch-* headers framed the page inside another site's (its Remove button
    under a click meant for something else): every answer, refusals included, now says no frame, no
    type sniffing, and the page's own script only; the login page's one inline script by its hash."""
    import base64
    import hashlib

    for headers in ({}, {"Authorization": f"Bearer {TOKEN}"}):
        response = guarded.request(method.upper(), url, headers={"Accept": "text/html", **headers})
        policy = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy, (url, policy)
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
    login = guarded.get("/", headers={"Accept": "text/html"})
    script = login.text.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in login.headers["content-security-policy"]
    page = guarded.get("/", headers={"Authorization": f"Bearer {TOKEN}"})
    assert "script-src 'self';" in page.headers["content-security-policy"] and "<script>" not in page.text


def test_the_page_accepts_the_token_as_a_cookie(guarded):
    login = guarded.get("/", headers={"Accept": "text/html"})
    assert login.status_code == 401 and "<form" in login.text and "kenning_token" in login.text
    guarded.cookies.set("kenning_token", "wrong")
    assert guarded.get("/").status_code == 401
    guarded.cookies.set("kenning_token", TOKEN)
    assert guarded.get("/").status_code == 200 and guarded.get("/config").status_code == 200


def test_a_body_over_the_limit_is_413_and_writes_nothing(guarded, store):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    big = guarded.post("/memories", json={"content": "word " * 2000, "scopes": ["x"]}, headers=auth)
    assert big.status_code == 413 and "larger than the limit of 4096 bytes" in big.json()["error"]
    lying = guarded.post("/memories", content=b"{}", headers={**auth, "content-length": "-5",
                                                              "content-type": "application/json"})
    assert lying.status_code in (400, 413)
    assert store.count() == 0


@pytest.fixture
def client(store):
    store.configure(default_mode="bm25")
    with TestClient(create_app(store), base_url=BASE, raise_server_exceptions=False) as c:
        yield c


def test_cors_is_off(client):
    preflight = client.options("/memories", headers={"Origin": "http://evil.example",
                                                     "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers
    read = client.get("/config", headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in read.headers


def test_cross_site_writes_are_refused(client, store):
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999"):
        response = client.post("/memories", json={"content": "The auth service listens on port 8443", "scopes": ["x"]},
                               headers={"Origin": origin})
        assert response.status_code == 403 and "cross-site" in response.json()["error"]
    assert client.patch("/config", json={"write_enabled": False}, headers={"Origin": "http://evil.example"}
                        ).status_code == 403
    assert store.count() == 0 and store.config.write_enabled is True
    same = client.post("/memories", json={"content": "The auth service listens on port 8443", "scopes": ["x"]},
                       headers={"Origin": BASE})
    assert same.status_code == 201


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_another_site_s_page_cannot_make_the_browser_search(client, store, site):
    """An <img src="http://127.0.0.1:8765/search?q=..."> on any page passes the Host check and needs no
    Origin, yet a search writes: it is logged and its hits settle as applied (the outcome loop). A browser
    marks such requests with Sec-Fetch-Site; they are refused. A person following a link still gets the page."""
    store.write("The auth service listens on port 8443", scopes=["x"])
    before = len(store.events())
    for url, dest, mode in (("/search?q=auth+port", "image", "no-cors"), ("/?q=auth+port", "iframe", "navigate"),
                            ("/search?q=auth+port", "empty", "cors"), ("/config", "script", "no-cors")):
        response = client.get(url, headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": mode, "Sec-Fetch-Dest": dest})
        assert response.status_code == 403 and "another site" in response.json()["error"], (url, response.text)
    assert len(store.events()) == before  # nothing was logged
    followed = client.get("/", headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate",
                                        "Sec-Fetch-Dest": "document"})
    assert followed.status_code == 200 and "<html" in followed.text
    own = client.get("/search?q=auth+port", headers={"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors",
                                                     "Sec-Fetch-Dest": "empty"})
    assert own.status_code == 200 and own.json()["hits"]
    typed = client.get("/", headers={"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"})
    assert typed.status_code == 200


def test_without_a_token_only_loopback_host_names_are_answered(store):
    with TestClient(create_app(store), base_url="http://rebound.example:8765") as rebound:
        assert rebound.get("/config").status_code == 403  # a DNS-rebinding page's request
    with TestClient(create_app(store), base_url="http://localhost:8765") as local:
        assert local.get("/config").status_code == 200


def _raw(base: str, request: bytes) -> tuple[int, bytes]:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


@pytest.mark.slow
def test_the_real_server_serves_nothing_outside_the_package_and_limits_chunked_bodies(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not serve me")
    with http_server(tmp_path / "store", "--max-body", "1000") as base:
        host = base.removeprefix("http://")
        for path in ("/static/../pyproject.toml", "/static/%2e%2e/%2e%2e/pyproject.toml", "/static/..%2f..%2fcli.py",
                     "/static//etc/passwd", "/static/%2fetc%2fpasswd", f"/static/{secret}", "/../../etc/passwd",
                     "/static/../templates/base.html", "/templates/base.html"):
            status, body = _raw(base, f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            assert status in (400, 404), (path, status)
            assert b"root:" not in body and b"do not serve me" not in body and b"[project]" not in body
        status, body = _raw(base, f"GET /static/page.js HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        assert status == 200 and b"fetch" in body

        chunk = b'{"content": "' + b"x" * 1500 + b'", "scopes": ["x"]}'
        chunked = (f"POST /memories HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                   f"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n{len(chunk):x}\r\n").encode() + chunk + b"\r\n0\r\n\r\n"
        status, body = _raw(base, chunked)
        assert status == 413 and b"larger than the limit" in body
        assert httpx.get(f"{base}/memories").json()["memories"] == []


@pytest.mark.slow
def test_the_real_server_takes_its_token_from_the_environment(tmp_path):
    with http_server(tmp_path / "store", token=TOKEN, host="0.0.0.0") as base:
        assert httpx.get(f"{base}/config").status_code == 401
        assert httpx.get(f"{base}/config", headers={"Authorization": "Bearer nope"}).status_code == 401
        answer = httpx.get(f"{base}/config", headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200 and answer.json()["write_enabled"] is True


@pytest.mark.slow
def test_settings_cross_between_the_server_and_another_process(tmp_path):
    path = tmp_path / "store"
    kenning.open_store(path).configure(default_mode="bm25")
    with http_server(path) as base:
        written = httpx.post(f"{base}/memories", json={"content": "The auth service listens on port 8443",
                                                       "scopes": ["x"]})
        assert written.status_code == 201
        warm = kenning.open_store(path)  # this test process: a second, already-running process
        assert warm.search("auth port").hits

        subprocess.run([sys.executable, "-c", f"import kenning; kenning.open_store({str(path)!r})"
                        ".configure(search_enabled=False)"], check=True)
        assert httpx.get(f"{base}/search", params={"q": "auth"}).status_code == 409
        assert httpx.get(f"{base}/config").json()["search_enabled"] is False

        assert httpx.patch(f"{base}/config", json={"search_enabled": True, "write_enabled": False}).status_code == 200
        assert warm.search("auth port").hits  # the server's change reached this process
        assert warm.write("The cache is Redis on port 6379", scopes=["x"]).status == "writes_disabled"
        assert httpx.post(f"{base}/memories", json={"content": "The queue is RabbitMQ", "scopes": ["x"]}
                          ).status_code == 409
        assert warm.count() == 1


def test_an_empty_host_is_named_in_the_refusal():
    """--host "" listens on every interface; the refusal read "refusing to listen on  without a token"."""
    from kenning.errors import InvalidInput
    from kenning.serve.http.security import check_bind

    with pytest.raises(InvalidInput, match=r"listen on every interface \(an empty host\) without a token"):
        check_bind("", None)
