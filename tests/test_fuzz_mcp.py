"""Hypothesis over the MCP server as a client sees it: raw JSON-RPC lines into one real server
process. Every request gets exactly one response with its id (tools/call with fuzzed arguments,
malformed params, lone surrogates, garbage lines), and the server never dies."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pipe_lines import PipeLines

pytestmark = pytest.mark.slow
TOOLS = ["memory_search", "memory_show", "memory_list", "memory_scope_overview", "memory_list_tombstones",
         "memory_write", "memory_write_confirm", "memory_write_cancel", "memory_update", "memory_remove",
         "memory_restore", "memory_verify", "memory_record_use", "memory_audit_turn", "memory_disable_scope",
         "memory_enable_scope", "memory_health", "nonexistent_tool"]
KEYS = ["query", "id", "text", "content", "scopes", "limit", "mode", "reason", "note", "outcome", "ids",
        "messages", "pending_id", "scope", "category", "metadata", "excerpt", "claims"]

wild = st.text(alphabet=st.characters(blacklist_categories=()), max_size=60)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.just(10**20), st.floats(allow_nan=False), wild,
                    st.sampled_from(["", "auth", "ops", "bm25", "my password is hunter2", "\x1b[2J"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(wild, inner, max_size=3)), max_leaves=6)
arguments = st.one_of(st.dictionaries(st.sampled_from(KEYS), values, max_size=4), values)


class Server:
    def __init__(self, store_dir, initialize: bool = True):
        self.stderr = tempfile.TemporaryFile()  # a pipe nobody read would stall a server that wrote 64 KB to it
        self.proc = subprocess.Popen([sys.executable, "-m", "kenning.server", "--store", str(store_dir)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        self.lines = PipeLines(self.proc.stdout)
        self.next_id = 100
        if initialize:
            self.initialize()

    def initialize(self) -> None:
        self.request({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}})
        self.send_line(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def send_line(self, line: str) -> None:
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> dict:
        line = self.lines.next(timeout)
        assert line is not None, f"no response within {timeout}s; server alive: {self.proc.poll() is None}"
        assert line, f"the server closed stdout: {self.said()[-2000:]}"
        return json.loads(line)

    def said(self) -> str:
        """What the server wrote on stderr so far."""
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def request(self, message: dict) -> dict:
        self.send_line(json.dumps(message))
        return self.receive()

    def call(self, line: str, rid) -> dict:
        self.send_line(line)
        response = self.receive()
        assert response.get("id") == rid, (line[:200], response)
        assert ("result" in response) != ("error" in response)
        return response

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.stderr.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("mcp"))
    yield s
    assert s.proc.poll() is None, "the server died during the fuzzing"
    s.close()


SETTINGS = settings(max_examples=500, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@SETTINGS
@given(tool=st.sampled_from(TOOLS), args=arguments)
def test_tool_calls_with_fuzzed_arguments_always_get_one_answer(server, tool, args):
    server.next_id += 1
    line = json.dumps({"jsonrpc": "2.0", "id": server.next_id, "method": "tools/call",
                       "params": {"name": tool, "arguments": args}}, ensure_ascii=True)
    response = server.call(line, server.next_id)
    if "result" in response:
        assert isinstance(response["result"].get("content"), list)
        if response["result"].get("isError"):
            text = " ".join(c.get("text", "") for c in response["result"]["content"])
            assert "Traceback" not in text


@SETTINGS
@given(params=values, method=st.sampled_from(["tools/call", "tools/list", "resources/list", "bogus", ""]))
def test_malformed_requests_get_an_error_with_their_id(server, params, method):
    server.next_id += 1
    line = json.dumps({"jsonrpc": "2.0", "id": server.next_id, "method": method, "params": params})
    server.call(line, server.next_id)


@SETTINGS
@given(junk=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80)
       .filter(lambda s: s.strip() and "\n" not in s and "\r" not in s))
def test_a_line_that_is_not_json_gets_a_parse_error(server, junk):
    try:
        json.loads(junk)
        return  # valid JSON (a number, a string …): covered above
    except ValueError:
        pass
    server.send_line(junk)
    response = server.receive()
    assert response["id"] is None and response["error"]["code"] == -32700


def test_the_issue_cases(server):
    assert server.call('{"jsonrpc":"2.0","id":"a","method":"tools/call","params":"x"}', "a")["error"]["code"] == -32602
    line = '{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"memory_search","arguments":{"query":"a \\ud800"}}}'
    assert server.call(line, "b")["error"]["code"] == -32602


@pytest.mark.parametrize("depth", [500, 990, 1000, 5000, 100_000])
def test_a_deeply_nested_line_gets_an_error_and_the_server_stays(server, depth):
    """The guard's walk and json's own decoder stop at Python's recursion limit: either is an error answer."""
    line = ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":'
            + "[" * depth + "]" * depth + "}}}")
    server.send_line(line)
    response = server.receive()
    assert "error" in response or response.get("result", {}).get("isError"), response
    assert response["id"] in (7, None)
    server.next_id += 1
    assert "result" in server.request({"jsonrpc": "2.0", "id": server.next_id, "method": "tools/list"})


@pytest.mark.parametrize("rid", ["null", "1.5", "[1]", "true"])
def test_a_request_whose_id_is_no_string_or_integer_is_answered(server, rid):
    server.send_line('{"jsonrpc":"2.0","id":' + rid + ',"method":"tools/list"}')
    response = server.receive(timeout=30)
    assert response["id"] is None and response["error"]["code"] == -32600


def test_a_request_that_is_not_utf8_is_refused_not_stored_altered(server):
    before = server.request({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
                             "params": {"name": "memory_list", "arguments": {}}})
    server.proc.stdin.write(b'{"jsonrpc":"2.0","id":901,"method":"tools/call","params":{"name":"memory_write",'
                            b'"arguments":{"content":"The build cache lives in \xff\xfe bucket nine","scopes":["a"]}}}\n')
    server.proc.stdin.flush()
    response = server.receive()
    assert response["id"] == 901 and response["error"]["code"] == -32602 and "UTF-8" in response["error"]["message"]
    after = server.request({"jsonrpc": "2.0", "id": 902, "method": "tools/call",
                            "params": {"name": "memory_list", "arguments": {}}})
    assert "bucket nine" not in json.dumps(after) and after["result"] == before["result"]


def test_a_batch_is_answered_message_by_message(server):
    """Protocol 2025-03-26 requires a server to take a JSON-RPC batch: each request in it gets its own
    answer with its own id (a notification none), so a client waiting on those ids never hangs."""
    server.send_line('[{"jsonrpc":"2.0","id":"b1","method":"tools/list"},'
                     '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}},'
                     '{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"memory_list","arguments":{}}},'
                     '{"jsonrpc":"2.0","id":"b3","method":"tools/call","params":"x"}, 5]')
    answers = {}
    for _ in range(4):
        response = server.receive()
        answers[response["id"]] = response
    assert set(answers) == {"b1", "b2", "b3", None}
    assert "tools" in answers["b1"]["result"] and "memories" in answers["b2"]["result"]["structuredContent"]
    assert answers["b3"]["error"]["code"] == -32602 and answers[None]["error"]["code"] == -32600
    server.next_id += 1
    assert "result" in server.request({"jsonrpc": "2.0", "id": server.next_id, "method": "ping"})


def test_a_huge_value_a_tool_error_quotes_is_cut_to_its_start_and_length(server):
    """A tool error goes into the model's context: a 1 MB link target it quotes was echoed whole."""
    server.next_id += 1
    target = "x" * (1 << 20)
    response = server.request({"jsonrpc": "2.0", "id": server.next_id, "method": "tools/call", "params": {
        "name": "memory_write", "arguments": {"content": "The billing cache is flushed nightly by cron",
                                              "scopes": ["infrastructure"],
                                              "links": [{"type": "extends", "target_id": target}]}}})
    text = " ".join(c["text"] for c in response["result"]["content"])
    assert response["result"]["isError"] and len(text) < 500, len(text)
    assert "(1,048,576 characters)" in text and "is not a memory in this store" in text


def test_a_request_before_initialize_is_told_to_send_initialize_first(tmp_path):
    """The SDK refused a request ahead of the handshake with "Invalid request parameters" and empty
    data: nothing in it said the handshake was missing. The answer now names what to send first, and
    the session then starts as usual."""
    server = Server(tmp_path / "store", initialize=False)
    try:
        for rid, method, params in ((1, "tools/list", {}),
                                    (2, "tools/call", {"name": "memory_list", "arguments": {}})):
            error = server.request({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})["error"]
            assert error["code"] == -32602
            assert error["message"].startswith(f"{method} before initialize: ") and "first request must be initialize" \
                in error["message"], error
        assert "result" in server.request({"jsonrpc": "2.0", "id": 3, "method": "ping"})  # allowed before it
        server.initialize()
        listed = server.request({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
        assert "memory_search" in {tool["name"] for tool in listed["result"]["tools"]}
        bad = server.request({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "memory_list",
                                                                                            "arguments": "x"}})
        assert "before initialize" not in json.dumps(bad)  # after the handshake a bad request reads as before
    finally:
        server.close()
