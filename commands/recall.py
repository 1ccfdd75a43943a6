"""``kenning recall``, ``kenning transcripts add|list|index|remove``, ``export --markdown``, ``sync``, ``clean``:
parse, call recall/, print.

Mounted by cli.py. The store directory comes from the root command's ``--store`` /
``KENNING_HOME`` (``obj["store_dir"]`` in the root context).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kenning.commands import support as ui
from kenning.commands.support import JSON_HELP, cli_store, emit_json, note, one_line_errors, plural, sub_app, when

transcripts_app = sub_app(
    "transcripts",
    "The agent session ledgers kenning indexes for recall (Claude Code, Codex CLI, generic JSONL).",
    "kenning transcripts add ~/.claude/projects")
handle_errors = one_line_errors()


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@transcripts_app.command("add", epilog="Example: kenning transcripts add ~/.claude/projects   (or ~/.codex/sessions)")
@handle_errors
def add(
    ctx: typer.Context,
    # a str, not a Path: typer makes "" into Path("."), and an empty path must not mean this directory
    path: str = typer.Argument(..., help="A ledger file (.jsonl) or a folder searched for them."),
    project: Optional[Path] = typer.Option(
        None, help="Project of ledgers that name no working directory (default: this directory's project)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Register a transcript source and index it now; later appends are picked up at each search."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from kenning.recall.transcripts import index_for

    index = index_for(cli_store(ctx))
    with Progress(TextColumn("indexing ledgers"), BarColumn(), MofNCompleteColumn(), console=ui.err,
                  transient=True, disable=ui.no_bar(as_json)) as bar:
        task = bar.add_task("index", total=None)
        added = index.add_source(path, project=project, progress=lambda done, total: bar.update(task, completed=done, total=total))
    if as_json:
        emit_json(added)
        return
    verb = "already registered" if added["already_registered"] else "added"
    ui.out.print(f"{verb} {added['path']}: {plural(added['ledgers'], 'ledger')}, "
                 f"{plural(added['messages_added'], 'new message')}"
                 + (f", {plural(added['malformed_lines'], 'malformed line')} skipped" if added["malformed_lines"] else "")
                 + (f"; {plural(added['ledgers_under_other_sources'], 'ledger')} already indexed under another source"
                    if added["ledgers_under_other_sources"] else "")
                 + (f"; {plural(added['links_skipped'], 'link')} to a ledger listed already skipped"
                    if added["links_skipped"] else ""))
    unreadable = added["unreadable_ledgers"]
    if unreadable:  # a folder's ledger this user may not read was left out with nothing said
        first, more = unreadable[0], len(unreadable) - 1
        note(f"{plural(len(unreadable), 'ledger')} could not be read and {'were' if more else 'was'} left out: "
             f"{first['path']}: {first['why']}" + (f" (and {more} more)" if more else ""), label="warning")
    if added["malformed_lines"] and not added["messages_added"] and not added["already_registered"]:
        # every line skipped: most often a file that is not a transcript at all (`transcripts add /etc/passwd`)
        note(f"no line of {added['path']} reads as a transcript message; if it is not one, "
             f"`kenning transcripts remove {added['path']}` unregisters it", label="warning")
    if added["messages_added"]:
        note("words find them now; for the vector leg (embeddings extra) run `kenning transcripts index`, "
             "or leave it to a running `kenning serve`, which embeds them in the background")


@transcripts_app.command("list", epilog="Example: kenning transcripts list --json")
@handle_errors
def list_(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """The registered sources, with how many ledgers and messages each holds now."""
    from kenning.recall.transcripts import index_for

    listing = index_for(cli_store(ctx)).listing()
    if as_json:
        emit_json(listing)
        return
    if listing.get("note"):
        note(listing["note"])
    sources = listing["sources"]
    if not sources:
        ui.out.print("no transcript sources; add one with `kenning transcripts add ~/.claude/projects`")
        return
    for s in sources:
        ui.out.print(s["path"] + ("" if s["exists"] else "  (missing)"))
        ui.out.print(f"   project {s['project'] or '-'}: {plural(s['ledgers'], 'ledger')}, "
                     f"{plural(s['messages'], 'message')}, {plural(s['malformed_lines'], 'malformed line')}")


@transcripts_app.command("index", epilog="Example: kenning transcripts index   (after adding a large folder)")
@handle_errors
def index_(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Embed every transcript message that has no vector yet, so the vector leg can find it (needs the
    embeddings extra). No search embeds; a running server embeds new messages in the background.

    KENNING_BULK_RUNTIME=openvino (with kenning[openvino]) runs these long encodes on OpenVINO bf16,
    about three times faster on a CPU with bfloat16 units; the report says which runtime ran them."""
    from contextlib import nullcontext

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from kenning.recall.transcripts import index_for
    from kenning.retrieval.onnx_encoder import counting_runs

    index = index_for(cli_store(ctx))
    index.sync()
    encoder = index.vectors.semantic.encoder() if index.vectors.pending() else None
    with Progress(TextColumn("embedding messages"), BarColumn(), MofNCompleteColumn(), console=ui.err,
                  transient=True, disable=ui.no_bar(as_json)) as bar, \
            (counting_runs(encoder) if encoder is not None else nullcontext({})) as ran:
        task = bar.add_task("embed", total=None)
        done = index.vectors.embed_pending(progress=lambda n, total: bar.update(task, completed=n, total=total))
    left = index.vectors.pending()
    runtime = encoder.describe_runs(ran) if encoder is not None else None
    if as_json:
        emit_json({"embedded": done, "pending": left, "runtime": runtime, "runtimes": dict(ran)})
    else:
        ui.out.print(f"embedded {plural(done, 'message')}" + (f" on {runtime}" if runtime else "")
                     + f"; {left} without a vector")


@transcripts_app.command("remove", epilog="Example: kenning transcripts remove ~/.codex/sessions")
@handle_errors
def remove(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="A registered source, as `kenning transcripts list` shows it."),  # "" is no "."
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stop indexing a source and drop its messages from the index (the files are left alone)."""
    from kenning.recall.transcripts import index_for

    removed = index_for(cli_store(ctx)).remove_source(path)
    if as_json:
        emit_json(removed)
    else:
        ui.out.print(f"removed {removed['path']}: {plural(removed['ledgers_dropped'], 'ledger')}, "
                     f"{plural(removed['messages_dropped'], 'message')} dropped from the index"
                     + (f"; {plural(removed['ledgers_kept'], 'ledger')} ({plural(removed['messages_kept'], 'message')}) "
                        f"kept in the index under {', '.join(removed['kept_under'])}, which also lists "
                        + ("it" if removed["ledgers_kept"] == 1 else "them") if removed["ledgers_kept"] else ""))


@handle_errors
def recall_command(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="Words a memory, a profile note or a past message would contain."),
    limit: int = typer.Option(8, help="How many hits, 1-50."),
    all_projects: bool = typer.Option(False, "--all", help="Every project's memories and transcripts, not just this one's."),
    exclude_session: Optional[str] = typer.Option(
        None, "--exclude-session", metavar="SESSION", help="Leave out this session's own messages (default: $KENNING_CURRENT_SESSION)."),
    mode: Optional[str] = typer.Option(None, help="keyword | bm25 | semantic | hybrid (default from the store config)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Recall memories, profile notes and past sessions together, each hit labelled by its role."""
    from kenning.recall.recall import recall

    result = recall(cli_store(ctx), query, limit=limit, all_projects=all_projects, exclude_session=exclude_session, mode=mode)
    if as_json:
        emit_json(result)
        return
    if result.get("note"):
        note(result["note"])
    degraded = result["degraded"]
    if degraded:  # with its fix, as search's note: the library's warning, which named it, is not printed too
        note(f"{degraded['message']} ({degraded['fix'] or degraded['install']})")
    waiting = result["pending_embeddings"] or {}
    if waiting.get("transcript"):
        note(f"{plural(waiting['transcript'], 'past message')} without a vector yet, found by words only; "
             "`kenning transcripts index` embeds them")
    if waiting.get("memory") and not result["degraded"]:  # degraded: the note above says why none was seen
        note(f"{plural(waiting['memory'], 'memory', 'memories')} without a vector yet; `kenning index` embeds them")
    if not result["hits"]:
        where = "" if all_projects else f" of this project ({result['scope']}); --all searches every project"
        ui.out.print(f"nothing matches that query in memories, profile notes or transcripts{where}")
        return
    ui.out.print(f"{plural(len(result['hits']), 'hit')} · {'all projects' if all_projects else 'this project'}")
    for i, hit in enumerate(result["hits"], 1):
        if hit["role"] == "transcript":
            where = f"{hit['speaker']}  {_said_at(hit['timestamp'])}  session {(hit['session'] or '')[:8]}"
        else:
            where = f"{hit['id']}  {', '.join(hit['scopes'])}"
        ui.out.print(f"{i:>2}. {hit['role']}  {hit['relevance']}  {where}", overflow="ignore", crop=False, no_wrap=True)
        ui.out.print("   " + _short(hit["snippet"], 200))


def _said_at(timestamp: str | None) -> str:
    """A past message's time in UTC, as the CLI prints every time: a ledger's "08:00:00+05:45" printed as
    "08:00" was 02:15 UTC. A text no time can be read from is shown as the ledger wrote it."""
    try:
        return when(timestamp)
    except (ValueError, OverflowError):  # "last tuesday"; year 1 with an offset is before UTC's calendar
        return (timestamp or "")[:16].replace("T", " ")


def _say_taken_over(report: dict) -> None:
    """One line on stderr (with --json too) when the folder's lock was left by a process that is gone."""
    dead = report.get("lock_taken_over")
    if dead:
        ui.note(f"took over the lock in {report['folder']} left by pid {dead.get('pid')}, which is no longer "
                "running on this host (an interrupted export or sync)")


@handle_errors
def sync_command(
    ctx: typer.Context,
    # a str, not a Path: typer makes "" into Path("."), and an empty folder must not mean this directory
    directory: str = typer.Argument(..., help="A folder written by `kenning export --markdown`."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Read edits to MEMORY.md / USER.md back: an edited body updates, a deleted block removes (restorable),
    a new paragraph writes, all through the write gates. A mangled block is reported, never guessed at."""
    from kenning.commands.hints import for_cli
    from kenning.recall.markdown import sync

    report = sync(cli_store(ctx), directory)
    _say_taken_over(report)
    for item in report["refused"]:  # the gates' hints name tool arguments: said as kenning's options here
        if item.get("hint"):
            item["hint"] = for_cli(item["hint"])
    if as_json:
        emit_json(report)
        return
    labels = (("updated", "updated"), ("written", "written"), ("pending", "staged for confirmation"),
              ("withdrawn", "staged write withdrawn"), ("repeats", "repeat dropped"), ("removed", "removed (tombstoned)"), ("refused", "refused"), ("conflicts", "conflict"),
              ("mangled", "mangled, left as is"), ("held", "removal held"), ("missing_files", "file missing"))
    quiet = True
    for key, label in labels:
        for item in report[key]:
            quiet = False
            if isinstance(item, str):
                ui.out.print(f"{label}: {item}")
                continue
            where = f"{item.get('file')}" + (f":{item['line']}" if item.get("line") else "")
            what = item.get("id") or item.get("pending_id") or ""
            why = item.get("why") or item.get("problem") or ""
            ui.out.print(" ".join(part for part in (f"{label}: {where}", what, for_cli(why)) if part))
            if key == "refused" and item.get("hint"):
                instead = (f"change it with `kenning update {item['id']}` and those options, then export"
                           if item.get("id") else "write it with `kenning write` and those options and delete the paragraph")
                no_override = (f" Sync itself passes no overrides: edit the text in the file and sync again, or {instead}."
                               if item.get("override") else "")
                ui.out.print(f"  hint: {item['hint']}{no_override}")
    if quiet:
        ui.out.print("no edits to take in")
    if report["mangled"] or report["refused"] or report["conflicts"]:
        raise typer.Exit(1)


@handle_errors
def export_command(
    ctx: typer.Context,
    markdown: str = typer.Option(..., "--markdown", metavar="DIR", help="Folder for one MEMORY.md per scope and USER.md (created if missing)."),
    force: bool = typer.Option(False, "--force", help="Overwrite edits in the folder that were not synced yet."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Write every memory as markdown a person can read and edit (then `kenning sync` takes the edits back)."""
    from kenning.recall.markdown import export

    store = cli_store(ctx)
    with ui.busy(f"exporting to {markdown}", as_json):
        report = export(store, markdown, force=force)
    _say_taken_over(report)
    if as_json:
        emit_json(report)
        return
    ui.out.print(f"{plural(report['memories'], 'memory', 'memories')} in {report['folder']}: "
                 f"{plural(len(report['written']), 'file')} written, {len(report['unchanged'])} unchanged, "
                 f"{len(report['removed'])} removed")


@handle_errors
def clean_command(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would be removed."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Remove abandoned lock files, temporary files of interrupted writes and empty folders kenning made.
    Never deletes memories, tombstones or anything because of its age."""
    from kenning.recall.clean import clean

    report = clean(cli_store(ctx), dry_run=dry_run)
    if as_json:
        emit_json(report)
        return
    verb = "would remove" if dry_run else "removed"
    for item in report["removed"]:
        ui.out.print(f"{verb} {item['path']} ({item['what']})")
    if not report["removed"]:
        ui.out.print("nothing to clean")
