"""The library's refusal hints restated for a person at the command line.

The write gates (memory/gates/) phrase their hints for the MCP tools, the surface most writes come
through: ``memory_restore X``, ``force=True``, ``acknowledge_transient=True``. serve/surface.py's
``for_tools`` goes the other way for the few library messages written in CLI terms. ``for_cli`` is its
mirror: one table, applied wherever the CLI prints a gate's hint (``kenning write``, ``kenning update``).
tests/test_cli_hints.py restates every hint the gates' source holds and fails on any tool term left.
"""

from __future__ import annotations

import re

from kenning.store.ids import ID_IN_TEXT as _ID

_TOOLS_TO_CLI: list[tuple[re.Pattern[str], str]] = [
    # durability: there is no CLI command that writes an episode; say so instead of naming the tool
    (re.compile(r"Write run-state as an episode \(episode_write\) instead\."),
     "Run-state belongs in the episodes journal, which the CLI cannot write (agents write episodes through "
     "the MCP server; `kenning episodes list` reads them)."),
    (re.compile(r"\(?\bepisode_write\b\)?"), "(the MCP server's episode tool; the CLI cannot write episodes)"),
    # user claims
    (re.compile(r"category='([\w-]+)'"), r"--category \1"),
    # duplicates
    (re.compile(rf"Rely on {_ID}, or memory_update it"), r"Rely on \1, or change it with `kenning update \1 --text …`"),
    (re.compile(rf"memory_update {_ID}"), r"`kenning update \1`"),
    (re.compile(rf"memory_restore {_ID}"), r"`kenning restore \1`"),
    # groundedness: only a library or MCP write with a source transcript runs it, never the CLI
    (re.compile(r"pass acknowledge_ungrounded=True"),
     "acknowledge them (the CLI never runs this check; a library or MCP write given a source transcript does)"),
    # claims
    (re.compile(r"leave the claims out"), "leave the --claim options out"),
    # the overrides, as the options of `kenning write` / `kenning update`
    (re.compile(r"\backnowledge_transient=True"), "--ack-transient"),
    (re.compile(r"\backnowledge_user_claim=True"), "--ack-user-claim"),
    (re.compile(r"\backnowledge_scope_mismatch=True"), "--ack-scope-mismatch"),
    (re.compile(r"\backnowledge_truncation=True"), "--ack-truncation"),
    (re.compile(r"\bforce=True"), "--force"),
    # tool names without an id (e.g. the curation nudge a commit carries)
    (re.compile(r"\bmemory_conflicts\b"), "`kenning conflicts`"),
    (re.compile(r"supersede needs keep_id"), "--keep needs"),
    (re.compile(r"\bmemory_write\b"), "`kenning write`"),
    (re.compile(r"\bmemory_health\b"), "`kenning health`"),
    (re.compile(r"\bmemory_remove\b"), "`kenning remove`"),
    (re.compile(r"\bmemory_verify\b"), "`kenning verify`"),
    (re.compile(r"\bmemory_update\b"), "`kenning update`"),
    (re.compile(r"\bmemory_restore\b"), "`kenning restore`"),
    (re.compile(r"\bmemory_search\b"), "`kenning search`"),
    (re.compile(r"\bmemory_list\b"), "`kenning list`"),
]


def for_cli(text: str) -> str:
    """A library hint restated for the command line: commands and options instead of tool calls, one line."""
    for pattern, replacement in _TOOLS_TO_CLI:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())
