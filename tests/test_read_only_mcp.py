"""An MCP server on a store it may only read answers memory_search (the README: a read-only store
serves every read command). Such a store logs no search, so the answer carries no use_token; the
tool's output schema required one, and every search failed as an unexpected tool error."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from unprivileged import run_unprivileged

from kenning import open_store

pytestmark = pytest.mark.sqlite_only

FACT = "The auth service listens on port 8443"


@pytest.fixture
def read_only_store(tmp_path):
    directory = tmp_path / "store"
    with open_store(directory) as store:
        store.write(FACT, scopes=["ops"])
    (directory / "kenning.sqlite3").chmod(0o400)
    directory.chmod(0o500)
    yield directory
    directory.chmod(0o700)
    for path in directory.iterdir():
        path.chmod(0o600)


def test_a_read_only_search_fits_the_search_tools_output_schema(read_only_store):
    from pydantic import TypeAdapter

    from kenning.serve.outputs import SearchOut

    def search():
        with open_store(read_only_store) as store:
            return store.search("auth service port", mode="bm25", auto_scope=False).to_dict()

    found = run_unprivileged(search)
    assert found["use_token"] is None and found["hits"]
    TypeAdapter(SearchOut).validate_python(found)  # was: use_token "Input should be a valid string"


# the server as a process that file permissions bind: root drops its override capabilities first
SERVER = """
import os, sys
sys.path.insert(0, {tests!r})
if os.geteuid() == 0:
    from unprivileged import _drop_overrides
    _drop_overrides()  # before any thread starts: every thread of the server inherits it
from kenning.__main__ import main
sys.argv = ["kenning", "--store", {store!r}, "serve"]
main()
"""


@pytest.mark.slow
def test_an_mcp_server_on_a_read_only_store_answers_searches(read_only_store, tmp_path):
    if os.geteuid() == 0 and not sys.platform.startswith("linux"):
        pytest.skip("running as root outside Linux: file permissions cannot be made to bind")
    from mcp import ClientSession, StdioServerParameters, stdio_client

    code = SERVER.format(tests=str(Path(__file__).parent), store=str(read_only_store))
    params = StdioServerParameters(command=sys.executable, args=["-c", code], cwd=str(tmp_path),
                                   env={**os.environ, "HF_HUB_OFFLINE": "1"})

    async def talk():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                searched = await session.call_tool("memory_search", {"query": "auth service port",
                                                                     "auto_scope": False, "mode": "bm25"})
                written = await session.call_tool("memory_write", {"content": "The cache TTL is 300 seconds",
                                                                   "scopes": ["ops"]})
                return searched, written

    searched, written = asyncio.run(talk())
    assert not searched.is_error, searched.content[0].text
    assert [h["snippet"] for h in json.loads(searched.content[0].text)["hits"]] == [FACT]
    assert written.is_error and "read-only" in written.content[0].text
