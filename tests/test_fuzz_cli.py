"""Hypothesis over the CLI's arguments (typer's runner, in process): every command line ends with
exit 0, 1 (nothing written) or 2 (a usage or input error), never an uncaught exception or a traceback."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from kenning.cli import app

pytestmark = pytest.mark.slow
runner = CliRunner()

COMMANDS = [["write"], ["search"], ["show"], ["list"], ["update"], ["remove"], ["restore"], ["tombstones"],
            ["import"], ["verify"], ["record-use"], ["confirm"], ["cancel"], ["pending"], ["scopes"],
            ["rename-scope"], ["health"], ["check"], ["rebuild"]]
OPTIONS = ["--scope", "--limit", "--mode", "--json", "--reason", "--text", "--note", "--outcome", "--batch-size",
           "--category", "--link", "--claim", "--confidence", "--no-auto-scope", "-s"]
# text the shell can pass (no NUL, no lone surrogate: argv cannot carry them)
words = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40),
    st.sampled_from(["0", "-1", "100000000000000000000", "abc", "bm25", "hybrid", "ops", "x:y:z", "supersedes:x",
                     "my password is hunter2", "\x1b[2J", "applied", "lexical", "-", "--", "nonexistent.jsonl"]),
    st.sampled_from(OPTIONS))


@settings(max_examples=500, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(command=st.sampled_from(COMMANDS), args=st.lists(words, max_size=5))
def test_any_command_line_exits_cleanly(tmp_path_factory, command, args):
    store = tmp_path_factory.getbasetemp() / "fuzz-cli-store"
    result = runner.invoke(app, ["--store", str(store), *command, *args, *(["--mode", "bm25"] if command == ["search"] else [])])
    assert result.exception is None or isinstance(result.exception, SystemExit), (command, args, repr(result.exception))
    assert result.exit_code in (0, 1, 2), (command, args, result.exit_code, result.output[-500:])
    assert "Traceback" not in result.output
