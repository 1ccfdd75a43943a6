"""`kenning migrate SOURCE DESTINATION`: copy a store between backends (a folder's SQLite file, a PostgreSQL URL)."""

from __future__ import annotations

import typer

from kenning.commands import support as ui
from kenning.commands.support import JSON_HELP, emit_json, one_line_errors, plural


@one_line_errors()
def migrate_command(
    source: str = typer.Argument(..., help="the store to copy: a folder, or postgresql://user:pass@host/db"),
    destination: str = typer.Argument(..., help="where to copy it: a new folder, or an empty PostgreSQL database"),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Copy every memory, tombstone, link, event, episode, pending write, verification and embedding
    from SOURCE into DESTINATION, which must hold no store yet. SOURCE is left as it was."""
    from rich.progress import Progress

    from kenning.store.transfer import migrate

    with Progress(console=ui.err, transient=True, disable=ui.no_bar(as_json)) as bar:
        task = bar.add_task("copying", total=None)

        def step(table: str, copied: int, total: int) -> None:
            bar.update(task, description=f"copying {table}", completed=copied, total=total)

        # given as typed: migrate refuses an empty one, or a URL other than postgresql://, as --store does
        report = migrate(source, destination, progress=step)
    if as_json:
        emit_json(report)
        return
    for table, n in report["rows"].items():
        ui.out.print(f"  {table}: {plural(n, 'row')}")
    total = sum(report["rows"].values())
    ui.out.print(f"copied {plural(report['rows']['memories'], 'memory', 'memories')} and {plural(total, 'row')} "
                 f"in all from {report['source']} to {report['destination']}")
