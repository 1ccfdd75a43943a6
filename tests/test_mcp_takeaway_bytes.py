"""An episode's takeaway is capped in one unit on every surface: the journal's, UTF-8 bytes after the
surrounding whitespace is trimmed. The MCP tool declared a pydantic max_length (characters) beside the
journal's byte check, so a takeaway of multi-byte text under 4,096 characters was refused in bytes,
one of 4,097 ASCII characters in characters, and one padded with blanks was refused over MCP though
the library takes it. Driven through the real MCP stdio client against a server subprocess."""

from __future__ import annotations

import subprocess

import pytest

import kenning
from kenning.errors import InvalidInput
from kenning.memory.episodes import MAX_TAKEAWAY_BYTES, Episodes

pytestmark = pytest.mark.slow  # one server process


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    return path


FITS = {
    "at the limit in two-byte characters": "é" * (MAX_TAKEAWAY_BYTES // 2),
    "at the limit in ASCII, then blanks the journal trims": "t" * MAX_TAKEAWAY_BYTES + " " * 200,
}
TOO_LONG = {
    "one ASCII byte over": ("t" * (MAX_TAKEAWAY_BYTES + 1), MAX_TAKEAWAY_BYTES + 1),
    "under the limit in characters, over it in bytes": ("é" * 3000, 6000),
}


def test_the_mcp_tool_and_the_library_refuse_the_same_takeaways_in_bytes(tmp_path, repo):
    from test_server import connect  # the MCP tests' real stdio client

    with connect(tmp_path / "store", repo) as server:
        schema = server.tools()["episode_write"].input_schema["properties"]["takeaway"]
        assert "maxLength" not in str(schema) and f"{MAX_TAKEAWAY_BYTES:,} bytes" in schema["description"]
        for name, takeaway in FITS.items():
            written = server.call("episode_write", body="tried the sweep", takeaway=takeaway)
            assert written["status"] == "committed", name
            assert written["takeaway"] == takeaway.strip(), name
        for name, (takeaway, size) in TOO_LONG.items():
            said = server.fails("episode_write", body="tried the sweep", takeaway=takeaway)
            # was, for the ASCII one: "takeaway: String should have at most 4096 characters"
            assert f"longer than {MAX_TAKEAWAY_BYTES:,} bytes (it is {size:,} bytes of UTF-8)" in said, (name, said)
            assert "character" not in said, (name, said)
    with kenning.open_store(tmp_path / "library", cwd=repo) as store:  # the library draws the same line
        journal = Episodes(store)
        for name, takeaway in FITS.items():
            assert journal.write("tried the sweep", takeaway=takeaway)["takeaway"] == takeaway.strip(), name
        for name, (takeaway, size) in TOO_LONG.items():
            with pytest.raises(InvalidInput, match=f"it is {size:,} bytes of UTF-8"):
                journal.write("tried the sweep", takeaway=takeaway)
