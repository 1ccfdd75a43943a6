"""`kenning check` and `kenning rebuild`: verify a store and its derived data, rebuild what is damaged."""

from __future__ import annotations

import typer

from kenning.commands import support as ui
from kenning.commands.support import JSON_HELP, emit_json, one_line_errors


def _store(ctx: typer.Context):
    from kenning.cli import open_cli_store

    return open_cli_store(ctx)


@one_line_errors()
def check(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Verify the database, its memory and episode rows, the lexical index, the embedding rows and the vector index
    file; exit 1 on damage."""
    from kenning.errors import StorageError

    try:
        store = _store(ctx)
        with ui.busy("checking the store and everything derived from it", as_json):
            report = store.check()
    except StorageError as exc:  # too damaged to open: that is the finding, not a failure of the check
        report = _unopenable(ctx, exc)
        if report is None:  # a full disk, a lock, permissions: no finding about the store, an error
            raise
    if as_json:
        emit_json(report)
    elif report["ok"]:
        ui.out.print(f"ok: {report['store']} and everything derived from it check clean")
    else:
        for problem in report["problems"]:
            ui.out.print(f"{problem['part']}: {problem['what']} (fix: {problem['repair']})")
    if not report["ok"]:
        raise typer.Exit(1)


def _unopenable(ctx: typer.Context, exc: Exception) -> dict | None:
    """The report of a store file SQLite cannot even open for damage: the file, SQLite's words, and how
    to salvage it. None when the failure is not damage to a local file (that stays an error)."""
    import sqlite3
    from pathlib import Path

    from kenning.errors import says_damaged
    from kenning.store.db import DB_FILENAME, salvage_advice
    from kenning.store.location import resolve_store_dir

    if not (isinstance(exc.__cause__, sqlite3.DatabaseError) and says_damaged(exc.__cause__)):
        return None
    root = ctx.find_root()
    where = resolve_store_dir(root.obj["store_dir"] if isinstance(root.obj, dict) else None)
    if not isinstance(where, Path):
        return None
    path = where / DB_FILENAME
    what = str(exc.__cause__ or exc)  # SQLite's own words; the repair says what to do
    return {"ok": False, "store": str(where),
            "problems": [{"part": "sqlite", "what": f"the store file {path} is damaged and cannot be opened ({what})",
                          "repair": salvage_advice(path)}]}


@one_line_errors()
def rebuild(
    ctx: typer.Context,
    what: str = typer.Argument("all", help="lexical | vectors | all"),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Rebuild derived data from the memories' text: the lexical index, the vectors, or both."""
    from rich.progress import Progress

    store = _store(ctx)
    with Progress(console=ui.err, transient=True, disable=ui.no_bar(as_json)) as progress:
        tasks: dict[str, int] = {}

        def step(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(f"rebuilding {stage}", total=total or None)
            progress.update(tasks[stage], completed=done, total=total or None)

        report = store.rebuild(what, progress=step)
    if as_json:
        emit_json(report)
        return
    if "lexical" in report:
        ui.out.print(f"lexical index rebuilt from {report['lexical']['documents']} memories")
    if "vectors" in report:
        v = report["vectors"]
        line = f"vectors: {v['rows_dropped']} bad embedding rows dropped, {v['embedded']} memories embedded"
        if v["index_file"]:
            line += f"; {v['index_file']}"
        ui.out.print(line)
        if v["note"]:
            ui.out.print(v["note"])
