"""Every command's --help names its arguments and option values as Unix tools do: ``show [OPTIONS] ID``,
``--note NOTE``, never typer's ``{ID}`` / ``ID <str>`` or a Python parameter's name (``NOTE_TEXT``)."""

from __future__ import annotations

import re

import typer

from kenning import cli


def _every_command():
    """(path, command, context) for the root and every sub-command, as `kenning ... --help` builds them."""
    root = typer.main.get_command(cli.app)
    cli._plain_metavars(root)
    todo = [(["kenning"], root, None)]
    while todo:
        path, command, parent = todo.pop()
        context = typer.Context(command, info_name=path[-1], parent=parent)
        yield " ".join(path), command, context
        todo += [([*path, name], sub, context) for name, sub in getattr(command, "commands", {}).items()]


NAME = r"[A-Z][A-Z0-9_]*"
PIECE = re.compile(rf"^(?:{NAME}|\[{NAME}\])(?:\.\.\.)?$")  # ID, [WHAT], IDS..., [CASES]...


def test_usage_lines_and_help_rows_read_plainly():
    seen = 0
    for path, command, context in _every_command():
        for param in command.get_params(context):
            record = param.get_help_record(context)
            if param.param_type_name == "argument":
                seen += 1
                assert all(PIECE.match(piece) for piece in param.get_usage_pieces(context)), (path, param.name)
                assert re.fullmatch(rf"{NAME}(\.\.\.)?", record[0]), (path, record[0])  # no "<str>" after it
            elif not param.is_flag and record is not None:
                value = record[0].rsplit(" ", 1)[-1]
                assert not re.search(r"[<>{}]", value), (path, record[0])
                flag = max(param.opts, key=len).lstrip("-").replace("-", "_").upper()
                # the option's own name (argparse's rule) unless one was chosen where it is declared
                assert value == flag or value in ("DIR|URL", "FILE|none", "URL", "STORE", "PATH", "DIR",
                                                  "ID", "SESSION", "BYTES"), (path, record[0])
    assert seen > 20


def test_the_commands_a_tester_named():
    helps = {path: command.get_help(context) for path, command, context in _every_command()}
    assert "Usage: kenning show [OPTIONS] ID\n" in helps["kenning show"]
    assert re.search(r"^  ID\s+The memory id\.", helps["kenning show"], re.M)
    assert "Usage: kenning record-use [OPTIONS] IDS...\n" in helps["kenning record-use"]
    assert "Usage: kenning rebuild [OPTIONS] [WHAT]\n" in helps["kenning rebuild"]
    assert "Usage: kenning migrate [OPTIONS] SOURCE DESTINATION\n" in helps["kenning migrate"]
    assert "SRC" not in helps["kenning migrate"] and "DST" not in helps["kenning migrate"]
    verify = helps["kenning verify"]
    assert "--note NOTE " in verify and "--verified-path PATH " in verify and "NOTE_TEXT" not in verify
    assert "--keep ID " in helps["kenning resolve"] and "--max-body BYTES " in helps["kenning serve"]
    everything = "\n".join(helps.values())
    assert not re.search(r"\{[A-Z_]+\}|<(str|path|int|list\[str\])>", everything)


def test_each_example_starts_a_line_of_its_own():
    """Lines of a docstring's paragraph are joined when help is wrapped: examples one under the other ran
    together into one paragraph ("... --port 8765 Example: kenning ...") unless a blank line parts them."""
    for path, command, context in _every_command():
        for line in command.get_help(context).splitlines():
            assert "Example" not in line.lstrip()[1:], (path, line)
