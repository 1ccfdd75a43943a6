"""What a test passes on to an MCP server it starts: the MCP SDK gives the child only a few variables."""

from __future__ import annotations

import os

# PYTHONPATH: a worktree tests its own code; KENNING_TEST_POSTGRES: under KENNING_TEST_BACKEND=postgres
# a store named by directory is a database on the session's server (store/backend.py), in the child too;
# KENNING_CACHE_DIR: the session's model cache (conftest.py), so a server never reads or fills the user's
PASSED_ON = ("PYTHONPATH", "KENNING_TEST_POSTGRES", "KENNING_CACHE_DIR")


def passed_on() -> dict[str, str]:
    """The variables of this process the server must see as well."""
    return {name: os.environ[name] for name in PASSED_ON if name in os.environ}
