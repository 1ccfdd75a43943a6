"""``kenning episodes list|search|prune`` and ``kenning serve``: parse, call the library, print.

Mounted by cli.py (``app.add_typer(episodes_app, name="episodes")``, ``app.command("serve")(serve)``).
The store directory comes from the root command's ``--store`` / ``KENNING_HOME``, which cli.py
keeps in the root context as ``obj["store_dir"]``. Cheap to import: the MCP SDK loads only when
``serve`` runs.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer

from kenning.commands import support as ui
from kenning.commands.support import JSON_HELP, emit_json, one_line_errors, plural, say_error, sub_app, when

episodes_app = sub_app(
    "episodes",
    "The episodes journal: per-session run-state notes (30-day TTL), never part of memory search.",
    "kenning episodes list --limit 10")
INSTALL_MCP = 'pip install "kenning[mcp]"'


_one_line_errors = one_line_errors()


def _store_dir(ctx: typer.Context) -> Optional[str]:
    root = ctx.find_root().obj
    return root.get("store_dir") if isinstance(root, dict) else None


def _journal(ctx: typer.Context):
    from kenning.cli import open_cli_store
    from kenning.memory.episodes import Episodes

    return Episodes(open_cli_store(ctx))


def _print(episodes: list, with_bodies: bool, as_json: bool) -> None:
    rows = [e.to_dict(include_body=with_bodies) for e in episodes]
    if as_json:
        emit_json({"count": len(rows), "episodes": rows})
        return
    if not rows:
        ui.out.print("no episodes", highlight=False)
        return
    ui.out.print(plural(len(rows), "episode") + ", oldest first")
    for row in rows:
        ui.out.print(f"{row['id']}  {when(row['created'])}  session …{row['session_id'][-8:]}  {', '.join(row['scopes'])}",
                  overflow="ignore", crop=False, no_wrap=True)
        ui.out.print(f"   {row['takeaway']}")
        if with_bodies:
            ui.out.print(row["body"])
            ui.out.print()


@episodes_app.command("list", epilog="Example: kenning episodes list --limit 10")
@_one_line_errors
def list_(
    ctx: typer.Context,
    limit: int = typer.Option(20, min=1, max=200, help="The most recent N (1-200), printed oldest first."),
    all_worktrees: bool = typer.Option(False, "--all-worktrees", help="Include episodes written in other checkouts."),
    bodies: bool = typer.Option(False, "--bodies", help="Print full bodies, not just takeaways."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """The latest journal entries of this worktree (and of sessions outside any git checkout)."""
    _print(_journal(ctx).search(auto_scope=not all_worktrees, max_results=limit), bodies, as_json)


@episodes_app.command(epilog="Example: kenning episodes search --swarm 01JD… --since 2026-11-01")
@_one_line_errors
def search(
    ctx: typer.Context,
    scope: Optional[list[str]] = typer.Option(None, "--scope", "-s", help="Episodes with any of these scopes (repeatable)."),
    session: Optional[str] = typer.Option(None, help="Only episodes written by this session id."),
    parent: Optional[str] = typer.Option(None, help="Only episodes whose session continued or was spawned by this session id."),
    swarm: Optional[str] = typer.Option(None, help="Only episodes tagged with this swarm (cohort) id."),
    since: Optional[str] = typer.Option(None, help="Only episodes created at or after this ISO-8601 time."),
    episode_id: Optional[list[str]] = typer.Option(None, "--id", help="Only these episode ids (repeatable)."),
    all_worktrees: bool = typer.Option(False, "--all-worktrees", help="Do not drop episodes from other checkouts."),
    limit: int = typer.Option(20, min=1, max=200, help="The most recent N (1-200), printed oldest first."),
    bodies: bool = typer.Option(False, "--bodies", help="Print full bodies, not just takeaways."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Filter the journal by scope, session, parent session, swarm, time or id (chronological, not ranked)."""
    found = _journal(ctx).search(
        scopes=scope or None, session_id=session, parent_session_id=parent, swarm_id=swarm, since=since,
        ids=episode_id or None, auto_scope=not all_worktrees, max_results=limit,
    )
    _print(found, bodies, as_json)


@episodes_app.command(epilog="Example: kenning episodes prune")
@_one_line_errors
def prune(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Delete expired episodes now (writes also do this) and name the sessions they came from."""
    sessions = _journal(ctx).prune()
    if as_json:
        emit_json({"pruned_sessions": sessions})
    else:
        ui.out.print(f"pruned expired episodes of {plural(len(sessions), 'session')}")
        for s in sessions:
            ui.out.print(f"  {s}")


@_one_line_errors
def serve(
    ctx: typer.Context,
    http: bool = typer.Option(False, "--http", help="Serve the HTTP API and the curation page instead of MCP over stdio."),
    host: str = typer.Option("127.0.0.1", help="With --http: the address to listen on (beyond loopback needs a token)."),
    port: int = typer.Option(8765, min=0, max=65535, help="With --http: the port (0: any free one, named on start)."),
    token: Optional[str] = typer.Option(None, envvar="KENNING_TOKEN", show_default=False,
                                        help="With --http: require Authorization: Bearer <token> on every request."),
    max_body: int = typer.Option(2 * 1024 * 1024, min=1, metavar="BYTES", help="With --http: the largest request body in bytes."),
) -> None:
    """Run the MCP server over stdio (one session per process) for an agent client to launch,
    or with --http the HTTP API and the page at http://127.0.0.1:8765/.
    It embeds a backlog (an import without --embed) in the background: KENNING_BULK_RUNTIME=openvino
    does that ~3.5x faster on a CPU with bfloat16 units (see `kenning index --help`).

    Example client entry: {"command": "kenning", "args": ["serve"], "env": {"KENNING_HOME": "~/.kenning"}}

    Example: kenning --store ~/.kenning serve --http --port 8765

    Example: kenning --store ~/.kenning serve --http --port 0   (any free port; the start line names it)
    """
    if http:
        _serve_http(ctx, host, port, token, max_body)
        return
    try:
        from kenning.serve.mcp import serve as run_server
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("mcp"):
            raise
        say_error(f"the MCP server needs the mcp extra; install it with: {INSTALL_MCP}")
        raise typer.Exit(2) from None
    from kenning.store.location import locate_store

    directory, why = locate_store(_store_dir(ctx))
    if sys.stdin.isatty():
        _exit_on_first_interrupt()
        ui.err.print(f"kenning MCP server (store {ui.shown_location(directory)}, {why}): waiting for an MCP client on stdin. "
                  "An agent client starts this command itself; press Ctrl-C to stop.", soft_wrap=True)
    run_server(directory)


def _exit_on_first_interrupt() -> None:
    """In a terminal, Ctrl-C ends the server at once (the stdio reader would otherwise swallow it).
    Every write is its own committed SQLite transaction, so nothing is lost by not unwinding."""
    import os
    import signal

    def stop(signum: int, frame: object) -> None:
        try:  # exits even when the print fails (a second Ctrl-C landing inside rich's first import)
            ui.err.print("stopped")
        finally:
            os._exit(130)

    signal.signal(signal.SIGINT, stop)


@one_line_errors(missing_extra="http")
def _serve_http(ctx: typer.Context, host: str, port: int, token: Optional[str], max_body: int) -> None:
    from kenning.serve.http import serve as run_http

    run_http(_store_dir(ctx), host=host, port=port, token=token or None, max_body=max_body)
