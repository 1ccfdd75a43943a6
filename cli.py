"""The kenning command line: parse, call the library, print plain lines or --json. No logic of its own.

Start-up stays cheap (``kenning --help`` and ``--version`` never import pydantic, numpy or the
store): the library, sub-apps' heavy parts and rich's tables load inside the commands that use them.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer

from kenning.commands import support as ui
from kenning.commands.search import check_mode, short, show_search
from kenning.commands.support import CONTEXT, JSON_HELP, emit_json, note, one_line_errors, plural, say_error, table, when
from kenning.errors import INSTALL_EMBEDDINGS, InvalidInput, KenningError, StorageError
from kenning.memory import notices

app = typer.Typer(
    name="kenning",
    help="Long-term memory for AI agents: write memories, search them with hybrid retrieval, "
         "see why each hit matched.",
    epilog="Example: kenning write \"The staging database is pg-stage-2\" --scope projects:api\n\n"
           "Example: kenning search \"staging database\"",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
    add_completion=False,
)
STDIN = "-"
INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it
# commands that may create the store; every other command needs one that exists
CREATING = frozenset({"write", "import", "serve", "set", "add"})


def _mount_subcommands() -> None:
    """Sub-apps live beside their concern (commands/, eval/commands.py); mount them here."""
    from kenning.commands.config import config_app
    from kenning.commands.episodes import episodes_app, serve
    from kenning.commands.recall import clean_command, export_command, recall_command, sync_command, transcripts_app
    from kenning.eval.commands import eval_app

    app.add_typer(eval_app, name="eval")
    app.add_typer(transcripts_app, name="transcripts")
    app.command("recall", epilog="Example: kenning recall 'deadlock reconciliation job' --all")(recall_command)
    app.command("clean", epilog="Example: kenning clean --dry-run")(clean_command)
    app.command("export", epilog="Example: kenning export --markdown ~/notes/kenning")(export_command)
    app.command("sync", epilog="Example: kenning sync ~/notes/kenning   (after editing its MEMORY.md files)")(sync_command)
    app.add_typer(episodes_app, name="episodes")
    app.add_typer(config_app, name="config")
    app.command("serve", epilog="Example: kenning --store ~/.kenning serve   (MCP over stdio)")(serve)
    from kenning.commands.integrity import check, rebuild

    app.command("check", epilog="Example: kenning check --json   (exit 1 when something is damaged)")(check)
    app.command("rebuild", epilog="Example: kenning rebuild lexical   (or vectors, or all)")(rebuild)
    from kenning.commands.conflicts import conflicts_command, resolve_command

    app.command("conflicts", epilog="Example: kenning conflicts --json")(conflicts_command)
    app.command("resolve", epilog="Example: kenning resolve 01JD0Q6ZP3M2W9X8Y7V6T5S4R3 01JD0Q7A9B8C7D6E5F4G3H2J1K "
                "--keep 01JD0Q6ZP3M2W9X8Y7V6T5S4R3")(resolve_command)
    from kenning.commands.migrate import migrate_command

    app.command("migrate", epilog="Example: kenning migrate ~/.kenning postgresql://kenning:secret@db.internal/kenning"
                )(migrate_command)


handle_errors = one_line_errors()


def _version(value: bool) -> None:
    if value:
        from kenning import __version__

        ui.out.print(f"kenning {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    store: Optional[str] = typer.Option(
        None, "--store", metavar="DIR|URL",
        help="Store directory or postgresql:// URL (default: $KENNING_URL, else $KENNING_HOME, else ./.kenning "
             "if present, else the user data dir; `kenning info` says which).",
    ),
    version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_version,
                                 help="Print the version and exit."),
) -> None:
    ctx.obj = {"store_dir": store, "store": None}


def open_cli_store(ctx: typer.Context, create: bool | None = None):
    """The store for this command, opened once per invocation (``ui.open_located``: unless the
    command creates stores (write, import, serve, config set), one that does not exist is an error)."""
    root = ctx.find_root()
    if not isinstance(root.obj, dict):  # a sub-app invoked on its own (tests): no root options
        root.obj = {"store_dir": None, "store": None}
    state = root.obj
    if state["store"] is None:
        if create is None:
            create = ctx.info_name in CREATING
        state["store"] = ui.open_located(state["store_dir"], create)
        root.call_on_close(state["store"].close)
    return state["store"]


_store = open_cli_store


def _store_if_any(ctx: typer.Context):
    """(the store, its location), the store None when none exists there: for a command about the
    model cache, which is global, a missing store is not an error."""
    from kenning.store.backend import exists
    from kenning.store.location import locate_store

    root = ctx.find_root()
    directory, _ = locate_store(root.obj["store_dir"] if isinstance(root.obj, dict) else None)
    return (open_cli_store(ctx) if exists(directory) else None), directory


def _read_stdin(what: str) -> str:
    """All of stdin as text, decoded as UTF-8 here rather than by the locale's codec (which would let a
    stray byte through as a lone surrogate): a leading byte-order mark dropped, line ends as \\n."""
    data = _stdin_bytes(what)
    try:
        return _utf8_text(data)
    except UnicodeDecodeError as exc:
        line, column = _where_in(data, exc.start)
        raise InvalidInput(f"{what} read from stdin is not valid UTF-8 (byte 0x{data[exc.start]:02x} at line "
                           f"{line}, column {column}); send UTF-8 text") from None


def _stdin_bytes(what: str) -> bytes:
    if sys.stdin is None or sys.stdin.isatty():
        note(f"reading {what} from stdin; end with Ctrl-D")
    if sys.stdin is None:
        return b""
    if hasattr(sys.stdin, "buffer"):
        return sys.stdin.buffer.read()
    text = sys.stdin.read()  # a text-only stream: its bytes back (a stray byte it let through stays one)
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


_BOM = b"\xef\xbb\xbf"


def _utf8_text(data: bytes) -> str:
    """UTF-8 bytes as text with a leading byte-order mark dropped and \\r\\n or \\r line ends as \\n (what
    text-mode reading did); UnicodeDecodeError at the first byte that is not UTF-8."""
    text = data[len(_BOM):].decode("utf-8") if data.startswith(_BOM) else data.decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _where_in(data: bytes, offset: int) -> tuple[int, int]:
    """The line and column (1-based, in characters) of byte ``offset``, all of whose bytes before it are UTF-8."""
    before = _utf8_text(data[:offset])
    return before.count("\n") + 1, len(before) - before.rfind("\n")


def default_scope(store) -> str:
    """The scope a write gets without --scope: the current repository's project, else ``global``."""
    here = store.here()
    return f"projects:{Path(here.repo).name}" if here else "global"


@app.command(epilog="Example: kenning write 'The auth service listens on port 8443' --scope projects:auth\n\n"
                    "Example: git log -1 --format=%B | kenning write -")
@handle_errors
def write(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="The memory text; - reads it from stdin."),
    scope: Optional[list[str]] = typer.Option(
        None, "--scope", "-s", help="A scope tag (repeatable), e.g. projects:kenning. Default: projects:<repo> "
                                    "inside a git repository, else global."),
    category: str = typer.Option("fact", help="fact | user-inference | ambient."),
    confidence: str = typer.Option("medium", help="low | medium | high."),
    source: str = typer.Option("explicit-statement", help="explicit-statement | inferred."),
    claim: Optional[list[str]] = typer.Option(
        None, "--claim", help="A checkable claim about this repository (repeatable): path, path:N-M (the file "
                              "has those lines), path::symbol or path::NAME=literal. Checked now; a false claim "
                              "refuses the write."),
    link: Optional[list[str]] = typer.Option(
        None, "--link", help="KIND:ID[:NOTE] (repeatable); KIND is supersedes, contradicts, extends or depends_on."),
    ack_transient: bool = typer.Option(False, "--ack-transient", help="The wording sounds temporary but the fact is durable."),
    ack_user_claim: bool = typer.Option(False, "--ack-user-claim", help="It reads as a claim about the user but is about someone else."),
    ack_scope_mismatch: bool = typer.Option(
        False, "--ack-scope-mismatch", help="A projects: scope names another project than this repository's, "
                                            "and the fact really is about that project."),
    force: bool = typer.Option(False, "--force", help="Write it even though it duplicates a live memory, resembles "
                                                      "a removed one, or its scope names another project."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Remember something durable. Gates refuse secrets, run-state wording, unconfirmed claims about the
    user, false claims and duplicates; a user-inference is staged until `kenning confirm`."""
    from kenning.commands.hints import for_cli

    if text == STDIN:
        text = _read_stdin("the memory text").strip()
    links = [_parse_link(v) for v in link or []]
    store = _store(ctx)
    defaulted = not scope
    if defaulted:
        scope = [default_scope(store)]
    result = store.write(text, scopes=scope, category=category, confidence=confidence, source=source,
                         claims=claim, links=links, acknowledge_transient=ack_transient,
                         acknowledge_user_claim=ack_user_claim, acknowledge_scope_mismatch=ack_scope_mismatch,
                         force=force)
    # the gates' hints name the MCP tools' arguments: restated as this command's options, in the JSON
    # too (its reader drives the CLI); the machine fields (status, gate, override) stay the library's
    if result.hint:
        result = result.model_copy(update={"hint": for_cli(result.hint)})
    if result.curation_hint and result.curation_hint.get("message"):
        result = result.model_copy(update={"curation_hint": {**result.curation_hint,
                                                             "message": for_cli(result.curation_hint["message"])}})
    if as_json:
        emit_json(result.to_dict())
    else:
        ui.print_write_result(result)
        if defaulted and result.status in ("committed", "pending"):
            where = "inside this git repository" if scope[0] != "global" else "outside a git repository"
            note(f"scope {scope[0]}: the default {where}; choose another with --scope")
    _exit_unless_written(result)


def _parse_link(value: str) -> dict:
    kind, _, rest = value.partition(":")
    target, _, note_text = rest.partition(":")
    if not kind or not target:
        raise InvalidInput(f"--link {value!r}: use KIND:ID or KIND:ID:NOTE, e.g. supersedes:01JD0Q6ZP3M2W9X8Y7V6T5S4R3")
    from typing import get_args

    from kenning.store.models import LinkKind

    kinds = get_args(LinkKind)
    if kind not in kinds:  # was pydantic's "kind: Input should be ...", which named no option
        raise InvalidInput(f"--link {value!r}: unknown KIND {kind!r}; KIND is {', '.join(kinds[:-1])} or {kinds[-1]}")
    return {"kind": kind, "target": target, "note": note_text or None}


def _exit_unless_written(result) -> None:
    """Exit 1 when nothing was written or staged (a gate refused it, a duplicate, an expired
    pending write), so scripts can tell; 0 for committed and pending."""
    if result.status not in ("committed", "pending"):
        raise typer.Exit(1)


def _entry(first: str, text: str) -> None:
    """One record: a head line that starts with the id (never wrapped), then the text indented."""
    ui.out.print(first, overflow="ignore", crop=False, no_wrap=True)
    ui.out.print("   " + text)


@app.command(epilog="Example: kenning search 'auth port' --mode hybrid --limit 3 --json")
@handle_errors
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="Words a matching memory would contain."),
    mode: Optional[str] = typer.Option(None, help="keyword | bm25 | semantic | hybrid (default: `kenning config get default_mode`)."),
    scope: Optional[list[str]] = typer.Option(None, "--scope", "-s", help="Only these scopes (repeatable)."),
    category: Optional[str] = typer.Option(None, help="Only this category."),
    limit: int = typer.Option(5, help="How many hits, 1-50."),
    no_auto_scope: bool = typer.Option(False, "--no-auto-scope", help="Search every project, not just this repository's (and global) memories."),
    expand_top: bool = typer.Option(False, "--expand-top", help="Print the full body of the top hit when it is clearly the answer."),
    since_prior_session: bool = typer.Option(False, "--since-prior-session", help="Only memories changed since another session was last active."),
    why: bool = typer.Option(False, "--why", help="Under each hit, its rank and score in every leg and the query words it holds."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Search memories; each hit says which leg matched it, how much of the query it contains and whether it may be stale."""
    check_mode(mode)
    result = _store(ctx).search(query, mode=mode, scopes=scope, limit=limit, category=category, expand_top=expand_top,
                                auto_scope=not no_auto_scope, since_prior_session=since_prior_session)
    show_search(result, as_json, why=why)


def _plain(value) -> str:
    """A field value as a reader wants it: lists joined, times in the CLI's one format."""
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_plain(v)}" for k, v in value.items() if v not in (None, [], {}))
    if isinstance(value, str) and len(value) >= 20 and value[4:5] == "-" and value[10:11] == "T" and value.endswith("Z"):
        return when(value)
    return str(value)


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
            ui.out.print(f"{key}: {_plain(value)}")
    ui.out.print()
    ui.out.print(content)


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
    store = _store(ctx)
    memories = store.list(scopes=scope, category=category, limit=limit, auto_scope=not no_auto_scope)
    more = len(memories) == limit and bool(store.list(scopes=scope, category=category, limit=1, record=False,
                                                      auto_scope=not no_auto_scope, after=memories[-1].cursor))
    if as_json:
        emit_json([m.model_dump(mode="json") for m in memories])
        if more:  # a `list --json` piped into an import, as a copy, held the newest 50 and said nothing
            note(f"only the newest {limit} memories: more match (--limit to list more)")
        return
    if not memories:
        hidden = not no_auto_scope and _store(ctx).list(scopes=scope, category=category, limit=1, auto_scope=False,
                                                        record=False)
        ui.out.print("no memories" + (f" with scope {', '.join(scope)}" if scope else "") + (
            " in this repository; other repositories' are hidden by auto-scope (--no-auto-scope lists them)" if hidden
            else " here (--no-auto-scope lists every project)" if not no_auto_scope and not scope else ""))
        origin = hidden[0].origin if hidden else None
        if origin is not None and not os.path.exists(origin.worktree):
            ui.out.print(f"the newest of them was written in {origin.worktree}, which no longer exists: if this "
                         f"checkout moved from there, `kenning rehome {origin.worktree}` gives its memories this folder")
        return
    ui.out.print(plural(len(memories), "memory", "memories") + ", newest first"
                 + ("; more match (--limit to list more)" if more else ""))
    for m in memories:
        _entry(f"{m.id}  {when(m.updated)}  {m.category}  {', '.join(m.scopes)}", short(m.content))


@app.command(epilog="Example: kenning update 01JD0Q6ZP3M2W9X8Y7V6T5S4R3 --text 'The auth service now listens on 9443'")
@handle_errors
def update(
    ctx: typer.Context,
    id: str = typer.Argument(..., help="The memory id."),
    text: Optional[str] = typer.Option(None, help="New text (clears its verification); - reads it from stdin."),
    scope: Optional[list[str]] = typer.Option(None, "--scope", "-s", help="Replace the scopes (repeatable)."),
    confidence: Optional[str] = typer.Option(None, help="low | medium | high."),
    category: Optional[str] = typer.Option(None, help="fact | ambient."),
    ack_transient: bool = typer.Option(False, "--ack-transient", help="The new wording sounds temporary but the fact is durable."),
    ack_user_claim: bool = typer.Option(False, "--ack-user-claim", help="It reads as a claim about the user but is about someone else."),
    ack_truncation: bool = typer.Option(
        False, "--ack-truncation", help="The new text is shorter and ends mid-sentence on purpose (not cut off)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Change a memory's text, scopes, confidence or category (new text passes the write gates)."""
    from kenning.commands.hints import for_cli
    from kenning.memory.gates import GateRefused

    if text is None and not scope and confidence is None and category is None:  # the library's message names
        raise InvalidInput("nothing to update; give --text, --scope, --confidence or --category")  # its links too
    if text == STDIN:
        text = _read_stdin("the new text").strip()
    try:
        memory = _store(ctx).update(id, text=text, scopes=scope or None, confidence=confidence, category=category,
                                    acknowledge_transient=ack_transient, acknowledge_user_claim=ack_user_claim,
                                    acknowledge_truncation=ack_truncation)
    except GateRefused as exc:  # its hint names the tools' arguments: restated as this command's options
        raise GateRefused(exc.refusal.model_copy(update={"hint": for_cli(exc.refusal.hint)})) from None
    if as_json:
        emit_json(memory.model_dump(mode="json"))
    else:
        ui.out.print(f"updated {memory.id}")


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
        ui.out.print(f"removed {tomb.memory.id}")


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
        ui.out.print(f"restored {memory.id}")


@app.command(epilog="Example: kenning tombstones --scope projects:kenning --json")
@handle_errors
def tombstones(
    ctx: typer.Context,
    scope: Optional[list[str]] = typer.Option(None, "--scope", "-s", help="Only these scopes (repeatable)."),
    limit: int = typer.Option(50, help="At most this many, most recently removed first."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List removed memories with why and when."""
    store = _store(ctx)
    tombs = store.tombstones(scopes=scope, limit=limit)
    more = len(tombs) == limit and bool(store.tombstones(scopes=scope, limit=1, after=tombs[-1].cursor))
    if as_json:
        emit_json([t.model_dump(mode="json") for t in tombs])
        if more:
            note(f"only the {limit} most recently removed: more match (--limit to list more)")
        return
    if not tombs:
        ui.out.print("no removed memories")
        return
    ui.out.print(plural(len(tombs), "removed memory", "removed memories") + ", most recent first"
                 + ("; more match (--limit to list more)" if more else ""))
    for t in tombs:
        _entry(f"{t.memory.id}  removed {when(t.removed_at)}  {', '.join(t.memory.scopes)}",
               f"{short(t.memory.content, 120)}\n   reason: {t.reason}")


NO_GATES_SKIPS = ("credentials (secrets), durability (run-state wording), user claims and near-duplicates; "
                  "a record already in the store (same id, or same text) is still skipped, so a re-run resumes")


@app.command("import", epilog="Example: kenning import notes.jsonl --scope imported:notes\n\n"
                              "Example: jq -c '.[]' notes.json | kenning import -")
@handle_errors
def import_(
    ctx: typer.Context,
    file: str = typer.Argument(..., metavar="FILE", help="JSON Lines: one {\"content\" or \"text\", \"scopes\"?, \"id\"?} "
                                                         "object a line; - reads stdin."),
    scope: list[str] = typer.Option(["imported"], "--scope", "-s", help="Scopes for lines that carry none."),
    no_gates: bool = typer.Option(False, "--no-gates", help="Trusted bulk load: skip the write gates ("
                                  + NO_GATES_SKIPS + ")."),
    batch_size: int = typer.Option(2000, help="Memories per transaction."),
    embed: bool = typer.Option(False, "--embed", help="Also embed them now, with a progress bar and the rate "
                                                      "(else `kenning index` or a server does it)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Import memories in bulk through the same gates as `write`: each line is committed, refused (and
    why) or skipped as a duplicate, and a second import of the same file adds nothing. A line that is
    not a valid memory (bad JSON, empty text) stops the import before anything is written. Exits 1 when
    a gate refused a line (the others are committed), as a refused `write` does.
    With --embed, KENNING_BULK_RUNTIME=openvino embeds ~3.5x faster on a CPU with bfloat16 units (see `index`)."""
    from rich.progress import Progress


    records, labels = _read_jsonl(file)
    store = _store(ctx)
    with Progress(console=ui.err, transient=True, disable=ui.no_bar(as_json)) as progress:
        task = progress.add_task("importing", total=len(records))
        committed = [0]

        def tick(n: int) -> None:
            committed[0] = n
            progress.update(task, completed=n)

        try:
            if no_gates:
                report = store.import_bulk(records, batch_size=batch_size, default_scopes=scope, labels=labels,
                                           progress=tick)
            else:
                report = store.import_checked(records, batch_size=batch_size, default_scopes=scope, labels=labels,
                                              progress=tick)
        except InvalidInput as exc:
            if getattr(getattr(exc, "refusal", None), "status", None) == "writes_disabled":  # a status, as `write` says it
                raise
            raise InvalidInput(f"{exc}; nothing was imported") from None
        except KeyboardInterrupt:  # exit 130 with nothing said, though whole batches were in the store
            progress.stop()
            ui.err.print(f"interrupted after {committed[0]:,} of {len(records):,} lines (each batch of "
                         f"{batch_size:,} is committed whole); run the same import again to resume: what is already "
                         "in the store is skipped")
            raise typer.Exit(INTERRUPTED) from None
        except StorageError as exc:  # a full disk, say, after some batches were committed
            resume = ("" if "is damaged" in str(exc) else
                      ": run the same import again to resume (what is already in the store is skipped)")
            raise StorageError(f"the import stopped after committing {plural(committed[0], 'memory', 'memories')}: "
                               f"the next batch failed ({exc}). What was committed is kept{resume}") from None
    embedding = _embed_pending(store, as_json) if embed else None
    if as_json:
        from kenning.commands.hints import for_cli

        payload = report.to_dict()
        for line in payload["lines"]:  # worded for the CLI, as `write --json`'s hint is
            if line.get("reason"):
                line["reason"] = for_cli(line["reason"])
        emit_json({**payload, **({"embedding": embedding} if embed else {})})
        if embedding is not None:
            _embedding_exit(embedding)
        _exit_if_refused(report)
        return
    if no_gates:
        note(f"--no-gates: did not check {NO_GATES_SKIPS}")
    _print_skipped_lines(report)
    skipped = [f"{report.count(s)} {s.replace('_', ' ')}" for s in ("already_present", "refused", "duplicate",
                                                                     "previously_removed")
               if report.count(s)]
    ui.out.print(f"imported {plural(report.count('committed'), 'memory', 'memories')} from "
                 f"{plural(len(report.lines), 'line')}" + (f"; {', '.join(skipped)}" if skipped else ""))
    if embedding is not None:
        _print_embedding(embedding)
    if report.ignored_keys:  # read past, but perhaps meant: one line for the whole file
        ignored = ", ".join(f"{key} ({plural(n, 'line')})" for key, n in report.ignored_keys.items())
        note(f"ignored keys not in a memory: {ignored}", label="warning")
    _exit_if_refused(report)


SHOWN_PER_STATUS = 20  # lines of each kind printed; a resumed 30k import is not 24,000 lines of "duplicate"


def _print_skipped_lines(report) -> None:
    """Each line not committed, with why - at most ``SHOWN_PER_STATUS`` of each kind, then how many more."""
    from kenning.commands.hints import for_cli

    shown: dict[str, int] = {}
    for line in report.lines:
        if line.status in ("committed", "already_present"):
            continue
        shown[line.status] = shown.get(line.status, 0) + 1
        if shown[line.status] <= SHOWN_PER_STATUS:  # a reason quoting a long value from the line shows its start
            ui.out.print(f"{line.label} {line.status} ({line.gate}): {ui.clip_values(for_cli(line.reason))}")
    for status, count in shown.items():
        if count > SHOWN_PER_STATUS:
            ui.out.print(f"... and {count - SHOWN_PER_STATUS} more {status.replace('_', ' ')} lines "
                         "(`kenning import --json` lists every line)")


def _exit_if_refused(report) -> None:
    """Exit 1 when a gate refused a line, so a script can tell (duplicates and lines already in the
    store are what a re-run is for, not failures)."""
    if report.count("refused"):
        raise typer.Exit(1)


def _embed_pending(store, as_json: bool) -> dict:
    """Embed the queue with a progress bar and the rate: {pending_before, embedded, pending, seconds,
    per_second, runtime, runtimes}, plus degraded and fix when the encoder cannot run, and interrupted
    after a Ctrl-C. ``runtimes`` counts the texts each runtime encoded in this drain, and ``runtime``
    says it in words (the encoder's describe_runs: the main one, the others with counts, why any ran on
    onnxruntime when OpenVINO was asked for); null and {} when nothing was encoded."""
    import threading
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    pending = store.semantic.pending_count()
    report = {"pending_before": pending, "embedded": 0, "seconds": 0.0, "per_second": None, "runtime": None,
              "runtimes": {}}
    if not pending:
        return {**report, "pending": 0}
    availability = store.semantic.availability()
    if not availability.working:
        return {**report, "pending": pending, "degraded": availability.cause,
                "fix": availability.fix or INSTALL_EMBEDDINGS}
    from kenning.retrieval.onnx_encoder import counting_runs

    encoder = store.semantic.encoder()
    started = time.monotonic()
    columns = (TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
               TimeRemainingColumn())
    with Progress(*columns, console=ui.err, transient=True, disable=ui.no_bar(as_json)) as progress:
        task = progress.add_task("embedding", total=pending, rate="")

        def advance(n: int) -> None:
            progress.advance(task, n)
            done = progress.tasks[0].completed
            progress.update(task, rate=f"{done / max(time.monotonic() - started, 1e-9):.0f} memories/s")

        stop = threading.Event()
        with _interrupt_sets(stop), counting_runs(encoder) as ran:  # nothing else encodes in this process
            done = store.semantic.embed_pending(progress=advance, stop=stop)
    store.semantic.save()
    seconds = time.monotonic() - started
    return {**report, "embedded": done, "pending": store.semantic.pending_count(), "seconds": round(seconds, 2),
            "per_second": round(done / seconds, 1) if seconds > 0 and done else None,
            "runtime": encoder.describe_runs(ran), "runtimes": dict(ran),
            **({"interrupted": True} if stop.is_set() else {})}


@contextmanager
def _interrupt_sets(stop) -> Iterator[None]:
    """Ctrl-C sets ``stop`` instead of raising wherever the main thread is (inside an encode whose
    batches run on onnxruntime's threads, or the index update): the drain ends after the batch in
    progress, committed, and nothing is half done. Every Ctrl-C does only that: one often arrives
    twice (``timeout -s INT`` signals the command and then its process group), and a second one
    raising would abandon the batch halfway after all."""
    import signal

    def interrupted(signum, frame) -> None:
        # set first: a second Ctrl-C arriving while this one prints (rich's first print imports
        # modules) returns at once instead of printing into a half-imported module and raising
        if stop.is_set():
            return
        stop.set()
        ui.err.print("interrupting: finishing the batch in progress")

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _print_embedding(report: dict) -> None:
    if "degraded" in report:
        raise InvalidInput(f"{plural(report['pending'], 'memory waits', 'memories wait')} for embeddings, but "
                           f"{report['degraded']}; fix: {report['fix']}")
    if report.get("interrupted"):
        ui.err.print(f"interrupted: embedded {report['embedded']}, {report['pending']} still pending; "
                     "run kenning index again to finish")
        raise typer.Exit(INTERRUPTED)
    rate = ""
    if report["per_second"]:
        rate = f" in {report['seconds']:.1f} s ({report['per_second']:.0f} memories/s)"
        rate += f" on {report['runtime']}" if report["runtime"] else ""
    ui.out.print(f"embedded {report['embedded']}{rate}; {report['pending']} pending")


def _embedding_exit(report: dict) -> None:
    """``--json`` exits as the plain form does: 2 when the encoder could not run, 130 when interrupted."""
    if "degraded" in report:
        raise typer.Exit(2)
    if report.get("interrupted"):
        raise typer.Exit(INTERRUPTED)


def _read_jsonl(file: str) -> tuple[list, list[str]]:
    """The JSON objects of a JSON Lines file (or stdin for ``-``) and a ``where:line`` label for each."""
    if file == STDIN:
        name, data = "stdin", _stdin_bytes("JSON Lines")
    else:
        path = Path(file)
        if not file.strip():  # was "error:  is not a file", naming nothing
            raise InvalidInput("the file name is empty; give a JSON Lines file, or - to read stdin")
        if not path.is_file():
            raise InvalidInput(f"{file} is not a file")
        try:
            name, data = file, path.read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {file}: {exc}") from None
    try:
        text = _utf8_text(data)  # a byte-order mark before the first line is dropped, as utf-8-sig does
    except UnicodeDecodeError as exc:
        line, column = _where_in(data, exc.start)
        raise InvalidInput(f"{name}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {column}); "
                           "save the file as UTF-8; nothing was imported") from None
    records, labels = [], []
    # lines end at \\n only: JSON text may hold U+2028, U+0085 ... raw inside a string, which splitlines() splits at
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{name}:{number}: not valid JSON ({exc.msg}); nothing was imported") from None
        except ValueError as exc:  # valid JSON Python will not read (a number of over 4,300 digits): was a traceback
            why = str(exc).split(";")[0]
            raise InvalidInput(f"{name}:{number}: cannot read it ({why}); nothing was imported") from None
        except RecursionError:  # arrays or objects nested thousands deep: was a traceback too
            raise InvalidInput(f"{name}:{number}: cannot read it (nested too deeply); nothing was imported") from None
        problem = _record_problem(record)
        if problem:
            raise InvalidInput(f"{name}:{number}: {problem}; nothing was imported")
        records.append(record)
        labels.append(f"{name}:{number}")
    return records, labels


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "true or false", type(None): "null"}


def _record_problem(record: object) -> str | None:
    """What makes a JSON Lines record no memory at all, in the file's own terms (the store's checks,
    which follow, speak of a write's arguments): not an object, no text field, text or scopes that
    are not strings."""
    if not isinstance(record, dict):
        return f'a line must be a JSON object such as {{"content": "..."}}, not {_JSON_TYPES.get(type(record), "that")}'
    key = "content" if "content" in record or "text" not in record else "text"
    if key not in record:
        return 'no `content` field (nor `text`): give the memory text as {"content": "..."}'
    if not isinstance(record[key], str):
        return f"`{key}` must be a string (the memory text), not {_JSON_TYPES.get(type(record[key]), 'that')}"
    scopes = record.get("scopes")
    if isinstance(scopes, list):
        for scope in scopes:
            if not isinstance(scope, str):
                shown = ui.clip(json.dumps(scope))  # a 4,000-digit number was echoed whole
                return f"`scopes` must be strings, not {_JSON_TYPES.get(type(scope), 'that')} ({shown})"
    elif scopes is not None and not isinstance(scopes, str):
        return f"`scopes` must be a list of strings, not {_JSON_TYPES.get(type(scopes), 'that')}"
    return None


@app.command(epilog="Example: kenning index   (embed what is pending, with a progress bar and the rate)")
@handle_errors
def index(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Embed every memory still waiting for a vector (bulk imports queue theirs; searches never wait for them).

    Exits 2 when the encoder cannot run (with --json too). Ctrl-C stops after the batch in progress
    (a few seconds at most): what is embedded stays, the rest stays queued for the next run (exit 130).
    On a CPU with bfloat16 units, KENNING_BULK_RUNTIME=openvino (pip install "kenning[openvino]")
    embeds ~3.5x faster, at cosine >= 0.9999 to the float vectors."""
    report = _embed_pending(_store(ctx), as_json)
    if as_json:
        emit_json(report)
        _embedding_exit(report)
    else:
        _print_embedding(report)


@app.command(epilog="Example: kenning models --convert   (convert the configured model to ONNX once, with progress; "
                    "with KENNING_ENCODER=onnx-q8 or onnx-rows8 also that 8-bit variant)")
@handle_errors
def models(
    ctx: typer.Context,
    convert: bool = typer.Option(False, "--convert", help="Convert the configured model to ONNX now (again, if it was)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List the embedding models a name can resolve to, their ONNX conversions (in the model cache, shared
    by every store) and, when there is a store, which model it is configured with and indexed by.
    It also says what runs long encodes (index, import --embed, eval): KENNING_BULK_RUNTIME=openvino
    runs them in bfloat16, ~3.5x faster on a CPU with bfloat16 units."""
    from kenning.retrieval import embeddings, onnx_export

    store, location = _store_if_any(ctx)
    configured = (store.config.model if store else None) or embeddings.DEFAULT_MODEL
    backend = embeddings.backend()
    if convert:
        _convert(embeddings.resolve_model(configured), "onnx" if backend == "torch" else backend, as_json)
    info = store.semantic.model_info() if store else None
    rows = [{"name": spec.name, "model_id": spec.model_id, "source": spec.source, "path": str(spec.path),
             "configured": spec.name == configured,
             "store_indexed_with": info is not None and embeddings.encoder_id(spec, backend) == info["model_id"],
             "onnx": str(onnx_export.onnx_file(spec)) if onnx_export.problem(spec) is None else None,
             "onnx_q8": str(onnx_export.onnx_file(spec, "onnx-q8")) if onnx_export.problem(spec, "onnx-q8") is None else None,
             "onnx_rows8": (str(onnx_export.onnx_file(spec, "onnx-rows8"))
                            if onnx_export.problem(spec, "onnx-rows8") is None else None)}
            for spec in embeddings.list_models()]
    long_encodes = _long_encodes(backend)
    payload = {"configured": configured, "backend": backend, "long_encodes": long_encodes, "store": info, "models": rows}
    if as_json:
        emit_json(payload)
        return
    if info is None:
        ui.out.print(f"no kenning store at {location}; configured: {configured} (the default); encoder: {backend}")
    else:
        ui.out.print(f"store uses {info['model_id'] or 'no model yet'} (dim {info['dim'] or '-'}, "
                     f"{info['pending']} pending); configured: {configured}; encoder: {backend}")
    if not rows:
        ui.out.print('no model available; install one with: pip install "kenning[embeddings]"')
        return
    ui.out.print(f"long encodes (index, import --embed, eval): {long_encodes}")
    for row in rows:
        marks = ", ".join(m for m, on in (("configured", row["configured"]), ("indexed", row["store_indexed_with"])) if on)
        _entry(f"{row['name']}  {row['source']}" + (f"  ({marks})" if marks else ""),
               f"{row['path']}  ·  ONNX: {row['onnx'] or 'not converted yet (kenning models --convert)'}"
               + (f"  ·  8-bit: {row['onnx_q8'] or 'not made yet (kenning models --convert)'}" if backend == "onnx-q8" else "")
               + (f"  ·  int8 rows: {row['onnx_rows8'] or 'not made yet (kenning models --convert)'}"
                  if backend == "onnx-rows8" else ""))


def _long_encodes(backend: str) -> str:
    """What runs long encodes for this backend (retrieval/openvino_bulk.py serves the float graph)."""
    from kenning.retrieval import openvino_bulk

    try:
        setting = openvino_bulk.setting()
    except InvalidInput as exc:  # a KENNING_BULK_RUNTIME typo: every encoder refuses to load (embeddings.probe)
        return f"none, the encoder does not load: {exc}"
    if backend != "onnx":
        only = " (KENNING_BULK_RUNTIME=openvino serves the onnx encoder only)"
        return backend + (only if setting == "openvino" else "")
    chosen = openvino_bulk.plan()
    return chosen if chosen != "onnxruntime" else (
        "onnxruntime (float32; KENNING_BULK_RUNTIME=openvino runs them in bfloat16, ~3.5x faster on a CPU "
        "with bfloat16 units)")


def _convert(spec, variant: str, as_json: bool) -> None:
    """Export spec to ONNX (and quantise it, for the onnx-q8 and onnx-rows8 encoders), showing each step."""
    import time

    from kenning.retrieval import onnx_export

    missing = onnx_export.missing_for(None if variant == "onnx" else spec, variant)
    if missing:
        raise InvalidInput(f"converting needs {', '.join(missing)}, not installed: pip install {' '.join(missing)}")
    started = time.monotonic()
    try:
        onnx_export.check_writable(spec)
        with ui.err.status(f"converting {spec.name} to ONNX", spinner="dots") as status:
            def step(message: str) -> None:
                status.update(f"{message} ({time.monotonic() - started:.0f} s)")
                if not as_json:
                    ui.err.print(f"  {message}")

            onnx_export.ensure(spec, variant, step=step, force=True)
    except onnx_export.CacheNotWritable as exc:
        raise KenningError(f"{exc}; {exc.fix}") from None
    except OSError as exc:  # a full disk, say: the partial files are removed, the old conversion stays
        raise KenningError(f"converting {spec.name} failed: {exc}") from None
    if not as_json:
        ui.out.print(f"converted {spec.name} in {time.monotonic() - started:.0f} s: {onnx_export.converted_dir(spec)}")


@app.command(epilog="Example: kenning verify 01JD0Q6ZP3M2W9X8Y7V6T5S4R3 --verified-path src/app.py --note 'port still 8443'")
@handle_errors
def verify(
    ctx: typer.Context,
    id: str = typer.Argument(..., help="The memory id."),
    note_text: Optional[str] = typer.Option(None, "--note", help="What you checked (max 500 characters)."),
    verified_path: Optional[list[str]] = typer.Option(
        None, "--verified-path", metavar="PATH", help="A path you checked exists in the memory's worktree (repeatable; replaces the last list)."),
    verified_absent_path: Optional[list[str]] = typer.Option(
        None, "--verified-absent-path", metavar="PATH", help="A path meant to be absent there, e.g. another platform's (repeatable)."),
    claim: Optional[list[str]] = typer.Option(
        None, "--claim", help="A claim to check and store: path, path:N-M, path::symbol or path::NAME=literal "
                              "(repeatable)."),
    version: Optional[str] = typer.Option(
        None, "--version", metavar="VERSION", help="The version you checked (from show or search --json): a memory "
                                                 "changed since is not verified (exit 1)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Record that you spot-checked a memory and it still holds (its text and `updated` stay as they are).
    With --version, exits 1 and records nothing when the memory changed since you read it."""
    report = _store(ctx).verify(id, note=note_text, verified_paths=verified_path,
                                verified_absent_paths=verified_absent_path, claims=claim, version=version)
    if as_json:
        emit_json(report)
    elif report["status"] == "stale":
        ui.out.print(f"not verified: {report['id']} changed since version {report['version']} (it is "
                     f"{report['current_version']} now); read it again, re-check, then verify that version")
    else:
        ui.out.print(f"verified {report['id']} at {when(report['last_verified_at'])}: {report['staleness_verdict']}")
    if report["status"] == "stale":
        raise typer.Exit(1)


@app.command("record-use", epilog="Example: kenning record-use 01JD0Q6ZP3M2W9X8Y7V6T5S4R3 --outcome contradicted --note 'moved to 9443'")
@handle_errors
def record_use(
    ctx: typer.Context,
    ids: list[str] = typer.Argument(..., help="The memory ids that were used."),
    outcome: str = typer.Option(..., help="applied | ignored | contradicted | corrected."),
    note_text: Optional[str] = typer.Option(None, "--note", help="Free-form context (max 500 characters)."),
    excerpt: Optional[str] = typer.Option(None, help="The phrase that mattered, e.g. the claim that was wrong."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Record what happened with memories that were shown; ignored and contradicted ride on later hits."""
    report = _store(ctx).record_use(ids, outcome, note=note_text, excerpt=excerpt)
    if as_json:
        emit_json(report)
    else:
        ui.out.print(f"recorded {outcome} for {plural(len(report['memory_ids']), 'memory', 'memories')}")


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
        ui.print_write_result(result)
    _exit_unless_written(result)


@app.command(epilog="Example: kenning cancel 01JD0Q6ZP3M2W9X8Y7V6T5S4R3")
@handle_errors
def cancel(
    ctx: typer.Context,
    pending_id: str = typer.Argument(..., help="The pending_id a write returned."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Drop a pending write without committing it. Exits 1 when there was none to drop (expired, never
    there, or already confirmed or cancelled), as `kenning confirm` does."""
    report = _store(ctx).cancel_write(pending_id)
    if as_json:
        emit_json(report)
    elif report["existed"]:
        ui.out.print(f"{report['status']} {pending_id}")
    else:
        why = ("it expired (nothing was written)" if report["status"] == "expired" else
               "no pending write has this id: it never existed, or was already confirmed or cancelled")
        ui.out.print(f"{report['status']} {pending_id or '(empty id)'}: {why}")
    if not report["existed"]:
        raise typer.Exit(1)


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
    if not rows:
        ui.out.print("no pending writes")
        return
    ui.out.print(plural(len(rows), "pending write"))
    for row in rows:
        _entry(f"{row['pending_id']}  expires {when(row['expires'])}  {row['pending_reason']}  "
               f"{', '.join(row['scopes'] or [])}", row["summary"])


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
    ui.out.print(f"{plural(overview['total'], 'memory', 'memories')} visible from {where}")
    if overview["scopes"]:
        t = table(None, "scope", "memories")
        for scope, count in overview["scopes"].items():
            t.add_row(scope, str(count))
        ui.out.print(t)
    ui.out.print("curation: " + ", ".join(f"{k} {v}" for k, v in overview["curation_pending"].items()))
    for moved in overview["moved_checkouts"]:
        ui.out.print(f"hidden: {plural(moved['memories'], 'memory', 'memories')} written in {moved['worktree']}, "
                     f"which no longer exists (`kenning rehome {moved['worktree']}` here, if this checkout moved)")


@app.command("rename-scope", epilog="Example: kenning rename-scope projects:kenning-old projects:kenning")
@handle_errors
def rename_scope(
    ctx: typer.Context,
    old: str = typer.Argument(..., help="The scope to rename."),
    new: str = typer.Argument(..., help="Its new name (merged if a memory already carries it)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Rename a scope on every memory and tombstone that carries it."""
    store = _store(ctx)
    with ui.busy(f"renaming {old} to {new}", as_json):
        changed = store.rename_scope(old, new)
    if not changed:  # most often a mistyped name: "renamed ... on 0 memories" read as done
        raise InvalidInput(f"no memory or tombstone carries the scope {old!r}, so nothing was renamed; "
                           "`kenning scopes --no-auto-scope` lists the scopes in use")
    if as_json:
        emit_json({"old": old, "new": new, "changed": changed})
    else:
        ui.out.print(f"renamed {old} to {new} on {plural(changed, 'memory', 'memories')}")


@app.command(epilog="Example (inside the checkout's new folder): kenning rehome ~/src/old-name")
@handle_errors
def rehome(
    ctx: typer.Context,
    old: str = typer.Argument(..., help="The folder the checkout was in when its memories were written."),
    new: Optional[str] = typer.Argument(None, help="Where it is now (default: this directory's checkout)."),
    force: bool = typer.Option(False, "--force", help="Move them even if OLD still exists or NEW lacks their commits."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Give the memories of a moved or renamed checkout its new folder.

    Memories are shown to the checkout they were written in (auto_scope), named by its folder, so
    moving the folder hides them; this moves them, with their journal entries, to the new one."""
    store = _store(ctx)
    moved = store.rehome(old, new, force=force)
    if as_json:
        emit_json(moved)
    else:
        ui.out.print(f"moved {plural(moved['moved'], 'memory', 'memories')} from {moved['old']} to {moved['new']}")


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
    ui.out.print(f"{plural(report['total'], 'memory', 'memories')}, {plural(report['tombstones'], 'tombstone')}, "
              f"{plural(report['pending_writes'], 'pending write')}")
    ui.out.print("curation: " + ", ".join(f"{k} {v}" for k, v in report["curation_pending"].items()))
    if report["oldest_unverified"]:
        ui.out.print("oldest unverified:")
    for row in report["oldest_unverified"]:
        _entry(f"{row['id']}  {row['age_days']} days  {row['verification']}  {', '.join(row['scopes'])}",
               row["summary"])
    for row in report["drifted"]:
        ui.out.print(f"drifted {row['id']}: missing {', '.join(row['missing'] + row['claim_anchored_missing'])}")
    for row in report["conflicts"]:
        ui.out.print(f"conflict: {row['id']} contradicts {row['contradicts']} (`kenning conflicts` shows both; "
                     f"`kenning resolve` settles it)")


@app.command(epilog="Example: kenning info --json")
@handle_errors
def info(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Which store this is and why (--store, $KENNING_HOME, ./.kenning or the default), its schema and counts."""
    from kenning.store.backend import exists
    from kenning.store.location import locate_store

    directory, why = locate_store(ctx.find_root().obj["store_dir"])
    report = {"store": ui.shown_location(directory), "chosen_because": why, "exists": exists(directory)}
    if report["exists"]:
        report.update(_store(ctx, create=False).stats())
    if as_json:
        emit_json(report)
        return
    ui.out.print(f"store: {report['store']}")
    ui.out.print(f"  why: {why}")
    if not report["exists"]:
        ui.out.print("  no store here yet; the first `kenning write` creates it")
        return
    ui.out.print(f"  schema version {report['schema_version']}"
              + (" (read-only: reads work, writes are refused)" if report["read_only"] else ""))
    ui.out.print(f"  {plural(report['memories'], 'memory', 'memories')}, {plural(report['tombstones'], 'tombstone')}, "
              f"{plural(report['pending_writes'], 'pending write')}, {plural(report['episodes'], 'episode')}")
    from kenning.retrieval.embeddings import installed

    fix = "`kenning index`" if installed() else f"they need the embeddings extra: {INSTALL_EMBEDDINGS}"
    ui.out.print(f"  {plural(report['embedded'], 'memory', 'memories')} embedded, {report['embed_pending']} waiting "
              f"({fix}); default mode {report['default_mode']}")
    ui.out.print(f"  {report['size_bytes'] / 1e6:.1f} MB on disk")


_mount_subcommands()


def _usage_error(exc, root=None, args: list[str] = ()) -> int:
    """A usage mistake as one line plus a hint, instead of click's usage box (bare ``kenning``: the help)."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        ui.out.print(exc.ctx.get_help())
        return 0
    command = exc.ctx.command_path if exc.ctx is not None else _command_path(root, args)
    say_error(exc.format_message(), hint=f"see `{command} --help`")
    return 2


def _command_path(root, args: list[str]) -> str:
    """The command ``args`` reach from ``root`` (``kenning episodes list``), for a usage error click
    raises without its context: an option missing its value (``search tabs --limit``) hinted
    ``kenning --help``, the root's help, though the option is the subcommand's."""
    path, words = ["kenning"], iter(args)
    for word in words:
        commands = getattr(root, "commands", None)
        if commands is None:  # a command, not a group: the words left are its own
            break
        if word.startswith("-"):  # a group's option; one that takes a value takes the next word too
            option = next((p for p in root.params if word.split("=", 1)[0] in p.opts), None)
            if option is not None and not getattr(option, "is_flag", True) and "=" not in word:
                next(words, None)
            continue
        if word not in commands:
            break
        path.append(word)
        root = commands[word]
    return " ".join(path)


def _plain_metavars(command) -> None:
    """Help reads as Unix tools' does: ``show [OPTIONS] ID``, ``record-use IDS...``, ``rebuild [WHAT]``,
    and an option's value named after the option (argparse's rule: ``--batch-size BATCH_SIZE``), not
    typer's ``{ID}`` / ``ID <str>`` or the Python parameter's name (``--note NOTE_TEXT``). A metavar
    given where the option is declared wins."""
    for param in getattr(command, "params", []):
        if param.param_type_name == "argument":
            param.__class__ = _plain_argument(type(param))
            param.metavar = param.metavar or (param.name or "value").upper()  # "Missing argument 'ID'" too
        elif param.metavar is None and not getattr(param, "is_flag", False):
            param.metavar = max(param.opts, key=len).lstrip("-").replace("-", "_").upper()
    for sub in getattr(command, "commands", {}).values():
        _plain_metavars(sub)


@functools.cache
def _plain_argument(kind: type) -> type:
    """``kind`` (typer's argument class) shown by its bare name: through click's own two hooks, the
    usage line's piece and the help list's row, so it does not depend on typer's internals."""

    class PlainArgument(kind):
        def _bare(self) -> str:
            return self.metavar

        def get_usage_pieces(self, ctx) -> list[str]:
            return [(self._bare() if self.required else f"[{self._bare()}]") + ("..." if self.nargs != 1 else "")]

        def get_help_record(self, ctx):
            record = super().get_help_record(ctx)
            return None if record is None else (self._bare() + ("..." if self.nargs != 1 else ""), record[1])

    return PlainArgument


def _lean_app(args: list[str]) -> typer.Typer:
    """The app with only the command ``args`` invoke registered: typer reads the signature and
    type hints of every registered command to build the click group (~20 ms for ~40 commands),
    and one command runs per process. The same Typer objects, so that command parses and answers
    exactly as in the whole app; the root's help, and an unknown or misspelt command, get it whole."""
    name = ui.invoked(args)
    commands = [c for c in app.registered_commands
                if (c.name or typer.main.get_command_name(c.callback.__name__)) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if len(commands) + len(groups) != 1:
        return app
    lean = copy.copy(app)
    lean.registered_commands, lean.registered_groups = commands, groups
    return lean


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``kenning`` executable and ``python -m kenning``."""
    # typer may vendor click (typer._click) or use the click package: take the exception types from
    # wherever its own BadParameter lives
    click = sys.modules[typer.BadParameter.__module__]
    args = list(sys.argv[1:] if argv is None else argv)
    ui.quick_process_defaults(args)
    if ui.current_folder_gone(args):
        sys.exit(2)
    notices.listen(ui.note)  # the library's notice of a wait (an index rebuilt at open), on stderr
    command = typer.main.get_command(_lean_app(args))
    _plain_metavars(command)
    try:
        code = command.main(args, prog_name="kenning", standalone_mode=False)
    except click.UsageError as exc:
        code = _usage_error(exc, command, args)
    except click.ClickException as exc:
        say_error(exc.format_message())
        code = exc.exit_code
    except typer.Abort:
        ui.err.print()
        code = INTERRUPTED
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
