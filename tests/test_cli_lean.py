"""The CLI builds only the command it runs (cli._lean_app): typer reads every registered command's
signature to build the click group, and one command runs per process. The command built alone
must be the one the whole app holds: same options, same help, same parsing."""

from __future__ import annotations

import pytest
import typer

from kenning import cli
from kenning.commands import support


def built(args: list[str]):
    command = typer.main.get_command(cli._lean_app(args))
    cli._plain_metavars(command)
    return command


def help_of(group, name: str) -> str:
    root = typer.Context(group, info_name="kenning")
    sub = group.commands[name]
    return sub.get_help(typer.Context(sub, info_name=name, parent=root))


@pytest.mark.parametrize("args, name", [
    (["search", "q"], "search"), (["--store", "/x", "search", "q"], "search"), (["--store=/x", "list"], "list"),
    (["eval", "run"], "eval"), ([], None), (["--help"], None), (["-V"], None), (["--version"], None),
    (["--store", "/x"], None), (["--bogus", "search"], None),
])
def test_the_invoked_command_is_read_past_the_roots_store_option(args, name):
    assert support.invoked(args) == name


def test_every_command_built_alone_matches_the_whole_apps():
    whole = built([])
    assert len(whole.commands) > 20
    for name in whole.commands:
        alone = built([name, "x"])
        assert list(alone.commands) == [name]
        assert help_of(alone, name) == help_of(whole, name)
        assert [p.name for p in alone.commands[name].params] == [p.name for p in whole.commands[name].params]
    assert [p.name for p in built(["search"]).params] == [p.name for p in whole.params]  # the root's options


@pytest.mark.parametrize("args", [[], ["--help"], ["serch", "q"], ["--bogus"]])
def test_the_root_and_an_unknown_command_get_the_whole_app(args):
    assert cli._lean_app(args) is cli.app
