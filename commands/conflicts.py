"""`kenning conflicts` and `kenning resolve`: the contradiction pairs `kenning health` counts, and
settling one, at the command line as the MCP tools (memory_conflicts, memory_resolve_conflict) do."""

from __future__ import annotations

from typing import Optional

import typer

from kenning.commands import support as ui
from kenning.commands.support import JSON_HELP, emit_json, one_line_errors


def _store(ctx: typer.Context):
    from kenning.cli import open_cli_store

    return open_cli_store(ctx)


@one_line_errors()
def conflicts_command(
    ctx: typer.Context,
    limit: int = typer.Option(50, "--limit", min=1, max=1000, help="At most this many pairs."),
    no_auto_scope: bool = typer.Option(False, "--no-auto-scope", help="Every project's pairs, not just this repository's."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List pairs of live memories marked as contradicting each other (a `contradicts` link), with both
    summaries and the command that settles each."""
    pairs = _store(ctx).conflicts(auto_scope=not no_auto_scope, limit=limit)
    if as_json:
        emit_json(pairs)
        return
    if not pairs:
        ui.out.print("no conflicts" + ("" if no_auto_scope else " here (--no-auto-scope lists every project's)"))
        return
    for pair in pairs:
        ui.out.print(f"{pair['id']}  {pair['summary']}")
        ui.out.print(f"  contradicts {pair['other_id']}  {pair['other_summary']}" +
                     (f"  ({pair['note']})" if pair.get("note") else ""))
        ui.out.print(f"  settle: kenning resolve {pair['id']} {pair['other_id']} --keep ID   "
                     f"or --keep-both --note 'how both hold'")


@one_line_errors()
def resolve_command(
    ctx: typer.Context,
    id: str = typer.Argument(..., help="One memory of the pair."),
    other_id: str = typer.Argument(..., help="The other memory of the pair."),
    keep: Optional[str] = typer.Option(None, "--keep", metavar="ID", help="The id that stays true: it supersedes the other."),
    keep_both: bool = typer.Option(False, "--keep-both", help="Both hold in their own contexts (needs --note)."),
    note: Optional[str] = typer.Option(None, "--note", help="How both hold, or why one wins."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Settle a contradiction: --keep ID makes that memory supersede the other; --keep-both links them
    as holding in different contexts. Nothing is removed, and the contradicts links go."""
    from kenning.commands.hints import for_cli
    from kenning.errors import InvalidInput

    if (keep is None) == (not keep_both):
        raise InvalidInput("give --keep ID (one of the pair wins) or --keep-both with --note (both hold)")
    if keep_both and not note:
        raise InvalidInput("--keep-both needs --note saying how both hold (e.g. which context each is for)")
    try:
        result = _store(ctx).resolve_conflict(id, other_id, "keep_both" if keep_both else "supersede",
                                              keep_id=keep, note=note)
    except InvalidInput as exc:
        if getattr(getattr(exc, "refusal", None), "status", None) == "writes_disabled":  # a status, as `write` says it
            raise
        raise InvalidInput(for_cli(str(exc))) from None
    if as_json:
        emit_json(result)
    elif keep_both:
        ui.out.print(f"resolved: {result['id']} and {result['other_id']} both hold (linked as extends)")
    else:
        ui.out.print(f"resolved: {result['id']} supersedes {result['other_id']}")
