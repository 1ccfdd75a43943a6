"""``kenning recall``, ``kenning transcripts add|list|remove``: parse, call recall/, print.

Mounted by cli.py. The store directory comes from the root command's ``--store`` /
``KENNING_HOME`` (``obj["store_dir"]`` in the root context).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from kenning.commands.support import JSON_HELP, emit_json, err, one_line_errors, out

transcripts_app = typer.Typer(
    name="transcripts",
    help="The agent session ledgers kenning indexes for recall (Claude Code, Codex CLI, generic JSONL).",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
handle_errors = one_line_errors()


def _store(ctx: typer.Context):
    from kenning import open_store

    root = ctx.find_root().obj
    state = root if isinstance(root, dict) else {}
    if state.get("store") is None:
        state["store"] = open_store(state.get("store_dir"))
        ctx.call_on_close(state["store"].close)
    return state["store"]


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@transcripts_app.command("add", epilog="Example: kenning transcripts add ~/.claude/projects   (or ~/.codex/sessions)")
@handle_errors
def add(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="A ledger file (.jsonl) or a folder searched for them."),
    project: Optional[Path] = typer.Option(
        None, help="Project of ledgers that name no working directory (default: this directory's project)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Register a transcript source and index it now; later appends are picked up at each search."""
    from kenning.recall.transcripts import index_for

    index = index_for(_store(ctx))
    with Progress(TextColumn("indexing ledgers"), BarColumn(), MofNCompleteColumn(), console=err,
                  transient=True, disable=as_json) as bar:
        task = bar.add_task("index", total=None)
        added = index.add_source(path, project=project, progress=lambda done, total: bar.update(task, completed=done, total=total))
    if as_json:
        emit_json(added)
        return
    verb = "already registered" if added["already_registered"] else "added"
    out.print(f"{verb} {added['path']}: {added['ledgers']} ledger(s), {added['messages_added']} new message(s)"
              + (f", {added['malformed_lines']} malformed line(s) skipped" if added["malformed_lines"] else ""),
              highlight=False)


@transcripts_app.command("list", epilog="Example: kenning transcripts list --json")
@handle_errors
def list_(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """The registered sources, with how many ledgers and messages each holds now."""
    from kenning.recall.transcripts import index_for

    sources = index_for(_store(ctx)).sources()
    if as_json:
        emit_json({"count": len(sources), "sources": sources})
        return
    if not sources:
        out.print("no transcript sources; add one with `kenning transcripts add ~/.claude/projects`", highlight=False)
        return
    table = Table("path", "project", "ledgers", "messages", "malformed", "exists")
    for s in sources:
        table.add_row(escape(s["path"]), escape(s["project"] or ""), str(s["ledgers"]), str(s["messages"]),
                      str(s["malformed_lines"]), "yes" if s["exists"] else "no")
    out.print(table)


@transcripts_app.command("remove", epilog="Example: kenning transcripts remove ~/.codex/sessions")
@handle_errors
def remove(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="A registered source, as `kenning transcripts list` shows it."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stop indexing a source and drop its messages from the index (the files are left alone)."""
    from kenning.recall.transcripts import index_for

    removed = index_for(_store(ctx)).remove_source(path)
    if as_json:
        emit_json(removed)
    else:
        out.print(f"removed {removed['path']}: {removed['ledgers_dropped']} ledger(s), "
                  f"{removed['messages_dropped']} message(s) dropped from the index", highlight=False)


@handle_errors
def recall_command(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="Words a memory, a profile note or a past message would contain."),
    limit: int = typer.Option(8, help="How many hits, 1-50."),
    all_projects: bool = typer.Option(False, "--all", help="Every project's memories and transcripts, not just this one's."),
    exclude_session: Optional[str] = typer.Option(
        None, "--exclude-session", help="Leave out this session's own ledger (default: $KENNING_CURRENT_SESSION)."),
    mode: Optional[str] = typer.Option(None, help="keyword | bm25 | semantic | hybrid (memories; transcripts rank lexically)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Recall memories, profile notes and past sessions together, each hit labelled by its role."""
    from kenning.recall.recall import recall

    result = recall(_store(ctx), query, limit=limit, all_projects=all_projects, exclude_session=exclude_session, mode=mode)
    if as_json:
        emit_json(result)
        return
    if result["degraded"]:
        err.print(f"[yellow]note:[/yellow] {escape(result['degraded']['message'])}", highlight=False, soft_wrap=True)
    if not result["hits"]:
        out.print("nothing matches that query in memories, profile notes or transcripts", highlight=False)
        return
    table = Table(title=f"{len(result['hits'])} hit(s) · {'all projects' if all_projects else 'this project'}")
    for column in ("#", "role", "where", "relevance", "snippet"):
        table.add_column(column, overflow="fold")
    for i, hit in enumerate(result["hits"], 1):
        if hit["role"] == "transcript":
            where = f"{hit['speaker']} · {(hit['timestamp'] or '')[:16]} · {(hit['session'] or '')[:8]}"
        else:
            where = f"{hit['id']} · {', '.join(hit['scopes'])}"
        table.add_row(str(i), hit["role"], escape(where), hit["relevance"], escape(_short(hit["snippet"], 110)))
    out.print(table)


@handle_errors
def sync_command(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., help="A folder written by `kenning export --markdown`."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Read edits to MEMORY.md / USER.md back: an edited body updates, a deleted block removes (restorable),
    a new paragraph writes, all through the write gates. A mangled block is reported, never guessed at."""
    from kenning.recall.markdown import sync

    report = sync(_store(ctx), directory)
    if as_json:
        emit_json(report)
        return
    labels = (("updated", "updated"), ("written", "written"), ("pending", "staged for confirmation"),
              ("removed", "removed (tombstoned)"), ("refused", "refused"), ("conflicts", "conflict"),
              ("mangled", "mangled, left as is"), ("held", "removal held"), ("missing_files", "file missing"))
    quiet = True
    for key, label in labels:
        for item in report[key]:
            quiet = False
            if isinstance(item, str):
                out.print(f"{label}: {escape(item)}", highlight=False)
                continue
            where = f"{item.get('file')}" + (f":{item['line']}" if item.get("line") else "")
            what = item.get("id") or item.get("pending_id") or ""
            why = item.get("why") or item.get("problem") or ""
            out.print(f"{label}: {escape(where)} {what} {escape(why)}".rstrip(), highlight=False)
    if quiet:
        out.print("no edits to take in", highlight=False)
    if report["mangled"] or report["refused"] or report["conflicts"]:
        raise typer.Exit(1)


@handle_errors
def export_command(
    ctx: typer.Context,
    markdown: Path = typer.Option(..., "--markdown", help="Folder for one MEMORY.md per scope and USER.md (created if missing)."),
    force: bool = typer.Option(False, "--force", help="Overwrite edits in the folder that were not synced yet."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Write every memory as markdown a person can read and edit (then `kenning sync` takes the edits back)."""
    from kenning.recall.markdown import export

    report = export(_store(ctx), markdown, force=force)
    if as_json:
        emit_json(report)
        return
    out.print(f"{report['memories']} memories in {report['folder']}: {len(report['written'])} file(s) written, "
              f"{len(report['unchanged'])} unchanged, {len(report['removed'])} removed", highlight=False)


@handle_errors
def clean_command(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would be removed."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Remove abandoned lock files, temporary files of interrupted writes and empty folders kenning made.
    Never deletes memories, tombstones or anything because of its age."""
    from kenning.recall.clean import clean

    report = clean(_store(ctx), dry_run=dry_run)
    if as_json:
        emit_json(report)
        return
    verb = "would remove" if dry_run else "removed"
    for item in report["removed"]:
        out.print(f"{verb} {escape(item['path'])} ({item['what']})", highlight=False)
    if not report["removed"]:
        out.print("nothing to clean", highlight=False)
