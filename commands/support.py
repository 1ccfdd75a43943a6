"""What every command-line module shares: the consoles, the --json help text, one-line errors and
the small formatting rules (plurals, times, id columns) that keep the output the same everywhere.

typer is imported where it is used, not here: the fast search path (commands/search.py) uses this
module without loading typer.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from kenning.errors import KenningError

if TYPE_CHECKING:
    import typer

JSON_HELP = "Print machine-readable JSON instead of a table."
CONTEXT = {"help_option_names": ["-h", "--help"]}


def sub_app(name: str, help: str, example: str) -> typer.Typer:
    """A command group set up as all of kenning's are: its help when called bare, with an example,
    plain help text (no rich markup), and no rich traceback for an error the one-line handler did
    not catch."""
    import typer

    return typer.Typer(name=name, help=help, epilog=f"Example: {example}", no_args_is_help=True,
                       rich_markup_mode=None, pretty_exceptions_enable=False, context_settings=CONTEXT)


def cli_store(ctx: typer.Context) -> Any:
    """The store the root command's --store / KENNING_HOME names, opened once per invocation."""
    from kenning.cli import open_cli_store

    return open_cli_store(ctx)


def open_located(store_dir: str | None, create: bool) -> Any:
    """The store ``--store`` (or $KENNING_URL / $KENNING_HOME, ...) names, opened."""
    directory = located(store_dir, create)
    from kenning.memory.facade import Store

    return Store(directory)


def located(store_dir: str | None, create: bool) -> Any:
    """The directory or URL of the store ``--store`` (or $KENNING_URL / $KENNING_HOME, ...) names.
    Unless ``create``, a store that does not exist is an error that names the path and why it was
    chosen, and nothing is created: a typo in --store or $KENNING_HOME must not make a new empty store."""
    from kenning.store.backend import exists
    from kenning.store.location import locate_store

    directory, why = locate_store(store_dir)
    if not create and not exists(directory):
        raise KenningError(f"no kenning store at {shown_location(directory)} ({why}); check the path, "
                           "or write a memory to create it")
    return directory


def shown_location(location: Any) -> str:
    """A store's location as it may be printed: a server URL loses its password."""
    from kenning.store.backend import is_url

    if is_url(location):
        from kenning.store.postgres.database import display_url

        return display_url(location)
    return str(location)


# commands that run long or do bulk numeric work, where OpenBLAS's threads may pay for themselves
LONG_RUNNING = frozenset({"eval", "serve", "index", "import", "rebuild", "transcripts", "models", "migrate"})


def quick_process_defaults(args: list[str]) -> None:
    """Defaults for a short command's process (a user's own setting wins): no pydantic plugin scan
    (it reads every installed package's entry points, ~15 ms; kenning's models use no plugin), and
    one OpenBLAS thread (numpy starts one per core at import, ~20 ms of CPU, for matrix sizes a
    search never reaches). Also where the encoder's warning is held (``hold_encoder_warning``)."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if LONG_RUNNING.isdisjoint(args) and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    hold_encoder_warning(args)


def current_folder_gone(args: list[str]) -> bool:
    """Whether the command cannot run because its current folder was deleted (or moved) under the
    shell, said in one line: every command looks there (./.kenning, the repository a write is scoped
    to) and met FileNotFoundError in a traceback. Help needs no folder and is not refused."""
    if invoked(args) is None or "--help" in args or "-h" in args:
        return False
    from kenning.store.location import current_folder

    try:
        current_folder()
    except KenningError as exc:
        say_error(str(exc))
        return True
    return False


def invoked(args: list[str]) -> str | None:
    """The top-level command ``args`` name, read past the root's ``--store``; None when the root
    itself answers (no command, --help, --version) or an unknown option comes first."""
    words = iter(args)
    for word in words:
        if word == "--store":
            next(words, None)
        elif not word.startswith("--store="):
            return None if word.startswith("-") else word
    return None


# commands whose own output says why the encoder cannot run (a search's or recall's note, the error of
# index, import --embed and transcripts index, --json's degraded): the library's warning would say it again
SAY_THE_ENCODER_BREAK = frozenset({"search", "recall", "index", "import", "transcripts"})
# retrieval/embeddings.py's once-per-process warning (_log_break); its first argument is the cause
_BREAK_WARNING = "embeddings are broken"
_held: list[Any] = []
_holding = False


def hold_encoder_warning(args: list[str]) -> None:
    """Hold the library's "embeddings are broken" warning until the process ends, and drop it once a
    ``note`` or ``say_error`` of this command has named its cause: printed as it happens, a search
    said the same cause twice (the warning, then its degraded note). A warning no line named (an
    unreported path) still prints, at exit. Only for the commands that report the break themselves,
    and not for a lexical search, which never loads the encoder: installing costs ``import logging``
    (~5 ms); any other command prints the warning as it happens, as before."""
    if invoked(args) not in SAY_THE_ENCODER_BREAK or _lexical_search(args):
        return
    import atexit
    import logging

    class Holder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if str(record.msg).startswith(_BREAK_WARNING) and isinstance(record.args, tuple) and record.args:
                _held.append(record)
            else:  # anything else the encoder logs prints as logging's last-resort handler would
                sys.stderr.write(record.getMessage() + "\n")

    global _holding
    if not _holding:  # once a process (a test may run main twice)
        _holding = True
        logging.getLogger("kenning.retrieval.embeddings").addHandler(Holder(logging.WARNING))
        atexit.register(_release_held)


def _lexical_search(args: list[str]) -> bool:
    """A search whose --mode is keyword or bm25: it runs no vector leg, so no warning to hold."""
    words = iter(args)
    for word in words:
        if word == "--mode":
            return next(words, None) in ("keyword", "bm25")
        if word.startswith("--mode="):
            return word[len("--mode="):] in ("keyword", "bm25")
    return False


def _said(message: str) -> None:
    """Drop each held warning whose cause ``message`` names: the command has said it."""
    shown = " ".join(message.split())
    _held[:] = [r for r in _held if " ".join(str(r.args[0]).split()) not in shown]


def _release_held() -> None:
    """At exit: the held warnings no line of the command named, as logging would have printed them."""
    try:
        for record in _held:
            sys.stderr.write(record.getMessage() + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed or gone: nothing to tell
        pass
    _held.clear()


def __getattr__(name: str) -> Any:
    """``out`` and ``err``, the stdout and stderr consoles, are made on first use: importing rich's
    console costs more than the rest of ``kenning --help``.

    Markup and emoji codes are off: memory text, paths and messages such as
    'pip install "kenning[embeddings]"' or "use :x: to reject" print as written (stored text is shown
    as stored, as --json shows it); styled words are built with rich Text objects, never with [tags].
    No print looks an emoji up either, so none imports rich's emoji table, which a second Ctrl-C
    could interrupt halfway.
    """
    if name in ("out", "err"):
        from rich.console import Console

        class SafeConsole(Console):
            """Sanitises every string it renders (prints, table cells), so memory text cannot
            drive the reader's terminal."""

            def render_str(self, text: str, **kwargs: Any):  # type: ignore[override]
                return super().render_str(sanitize(text), **kwargs)

            # the stream is looked up at each write (rich's own rule, which a test's swapped stdout
            # relies on) and wrapped, so text it cannot encode prints escaped, never a traceback
            @property  # type: ignore[override]
            def file(self) -> Any:
                return Tolerant(Console.file.fget(self))  # type: ignore[attr-defined]

            @file.setter
            def file(self, new_file: Any) -> None:
                Console.file.fset(self, new_file)  # type: ignore[attr-defined]

        # soft_wrap: long lines are left for the terminal to wrap, so no newline lands inside an id,
        # a path or a message that someone copies or greps
        console = SafeConsole(stderr=name == "err", markup=False, emoji=False, highlight=False, soft_wrap=True,
                              width=_columns_unset_when_zero())
        globals()[name] = console
        return console
    raise AttributeError(name)


def _columns_unset_when_zero() -> int | None:
    """The width rich would take from $COLUMNS, unless that is 0: rich then rendered every line to
    nothing (`kenning list` printed nothing, exit 0). Python's shutil reads COLUMNS=0 as unset, and
    so does this: the terminal's width, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if not (columns.isdigit() and int(columns) == 0):
        return None  # rich's own reading
    import shutil

    return shutil.get_terminal_size().columns


class OutputFailed(KenningError):
    """The command's output could not be written (stdout on a full disk, ``> /dev/full``, an I/O error):
    one line on stderr instead of a traceback. A closed pipe (EPIPE) is not this: it ends quietly."""


class Tolerant:
    """A text stream whose ``write`` never fails on a character its encoding lacks (a cp1252 or ASCII
    stdout, PYTHONIOENCODING=ascii): that text is written as a backslash escape (``\\u6771``) instead.
    A write or flush the stream fails (other than a closed pipe) is OutputFailed. No stream at all
    (stdout closed, ``>&-``: Python's sys.stdout is None) takes the text and shows nothing, as print()
    and rich do; it was an AttributeError traceback. Everything else is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:
            return len(text)
        with _output_errors(self._stream):
            try:
                return self._stream.write(text)
            except UnicodeEncodeError:  # nothing was written: a text stream encodes all of it first
                encoding = getattr(self._stream, "encoding", None) or "ascii"
                return self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))

    def flush(self) -> None:
        if self._stream is None:
            return
        with _output_errors(self._stream):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def _output_errors(stream: Any) -> Iterator[None]:
    """A failing write to ``stream`` as OutputFailed, so every command says it in one line."""
    import errno

    try:
        yield
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
            raise  # the reader went away (| head): each front end ends quietly, exit 1
        name = getattr(stream, "name", None)
        where = {"<stdout>": "stdout", "<stderr>": "stderr"}.get(name, str(name or "the output"))
        raise OutputFailed(f"the output could not be written to {where} ({exc.strerror or exc}); "
                           "what the command did is done, only its output was lost") from None


_KEEP = {"\n", "\t"}
# bidi embeddings, overrides and isolates: the rest of the line is shown in another order than it is
# stored ("Trojan Source"), so a memory would read as something it does not say
_REORDERING = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def sanitize(text: str) -> str:
    """Control characters from stored text shown as visible escapes (ESC as \\x1b), so a memory
    cannot move the cursor, retitle the window, hide itself or reorder its line in the reader's terminal."""
    if text.isprintable():
        return text
    return "".join(ch if ch in _KEEP or (unicodedata.category(ch) not in ("Cc", "Cs") and ch not in _REORDERING)
                   else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for ch in text)


def say_error(message: str, hint: str | None = None) -> None:
    """``error: message`` (one line) on stderr, and ``hint: …`` below it when there is one."""
    from rich.text import Text

    _said(message)
    err = __getattr__("err")
    # a Text is printed as built, past SafeConsole's sanitize: the message is sanitised here
    err.print(Text.assemble(("error:", "red"), " ", " ".join(sanitize(clip_values(message)).split())), soft_wrap=True)
    if hint:
        err.print(f"hint: {hint}", soft_wrap=True)


def note(message: str, label: str = "note") -> None:
    """A yellow ``note:`` line on stderr: something the reader should know, not a failure."""
    from rich.text import Text

    _said(message)
    __getattr__("err").print(Text.assemble((f"{label}:", "yellow"), " ", sanitize(clip_values(message))), soft_wrap=True)


CLIP_OVER = 100  # a value echoed in a message is cut when longer than this ...
CLIP_KEEP = 60  # ... to its first CLIP_KEEP characters, "…" and its length

# a quoted value (Python's repr, JSON): its opening quote starts the message or follows a space, a bracket,
# "=", ":" or ",", its closing one precedes no letter, so neither the apostrophes of "store's" and "don't"
# nor the closing quote of a short value ('-' or a stray symbol) pair up with a later quote; only a long
# value matches
_QUOTED = r"""(?<![^\s(\[{=:,])(['"])((?:\\.|(?!\1)[^\\]){%d,})\1(?!\w)""" % (CLIP_OVER + 1)  # re caches it compiled


def clip(value: str) -> str:
    """``value`` as a one-line message may echo it: whole up to CLIP_OVER characters, else its start,
    "…" and its length. A 100,000-character id or key echoed whole was 100 KB on stderr."""
    if len(value) <= CLIP_OVER:
        return value
    return f"{value[:CLIP_KEEP]}… ({len(value):,} characters)"


def clip_values(message: str) -> str:
    """``message`` with each quoted value longer than CLIP_OVER cut as ``clip`` cuts one (``'abc…'
    (100,000 characters)``): the library's errors quote what they were given, and say_error and note
    print whatever they are handed."""
    if len(message) <= CLIP_OVER:
        return message
    return re.sub(_QUOTED, lambda m: f"{m[1]}{m[2][:CLIP_KEEP]}…{m[1]} ({len(m[2]):,} characters)", message,
                  flags=re.S)


def one_line_errors(missing_extra: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator: a caller's mistake becomes one line on stderr and exit code 2, never a traceback.

    With ``missing_extra``, an ImportError (a lazily imported optional package) is reported the
    same way, naming the extra to install.
    """

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except KenningError as exc:
                refusal = getattr(exc, "refusal", None)  # a GateRefused (memory/gates), not imported for every command
                if refusal is not None:
                    gate_refused(refusal, bool(kwargs.get("as_json")))
                message = str(exc)
            except ImportError as exc:
                if missing_extra is None:
                    raise
                message = (f"the {missing_extra} extra is missing ({exc.name or exc}); "
                           f'install it with: pip install "kenning[{missing_extra}]"')
            say_error(message)
            import typer

            raise typer.Exit(2)

        return wrapper

    return decorate


def gate_refused(refusal: Any, as_json: bool) -> None:
    """A gate refused the change (writes turned off, run-state wording in an update's text, a secret in a
    reason): every command that changes memories (update, remove, restore, verify, record-use,
    rename-scope, resolve, ...) answers as `kenning write` does, a status and not an error: the same
    lines (or, with --json, the same object, e.g. ``status: writes_disabled``) on stdout, exit 1."""
    from types import SimpleNamespace
    from typing import get_args

    import typer

    from kenning.memory.gates.pipeline import refused
    from kenning.store.models import WriteStatus

    if refusal.status in get_args(WriteStatus):
        result: Any = refused(refusal)
        payload = result.to_dict()
    else:  # truncation_warning: update's own gate, a status no write has
        payload = {"status": refusal.status, "gate": refusal.gate, "code": refusal.status, "reason": refusal.reason,
                   "hint": refusal.hint, "matched": refusal.matched, "override": refusal.override}
        result = SimpleNamespace(id=None, pending_id=None, related=[], warnings=[], **payload)
    if as_json:
        emit_json(payload)
    else:
        print_write_result(result)
    raise typer.Exit(1)


def print_write_result(result: Any) -> None:
    """A WriteResult: one line with the status and id, then what the caller needs to act on it."""
    out = __getattr__("out")
    out.print(f"{result.status} {result.id or result.pending_id or ''}".strip())
    if result.status == "pending":
        out.print(f"  staged ({result.pending_reason}) until {when(result.expires)} UTC: "
                  f"`kenning confirm {result.pending_id}` or `kenning cancel {result.pending_id}`")
    if result.reason:
        out.print(f"  {result.gate or result.status}: {result.reason}")
    if result.hint:  # `confirm`'s too: the gates word their hints for the MCP tools (commands/hints.py)
        from kenning.commands.hints import for_cli

        out.print(f"  hint: {for_cli(result.hint)}")
    if result.related:
        out.print(f"  related: {', '.join(result.related)}")
    for warning in result.warnings:
        out.print(f"  warning: {warning}")


def emit_json(payload: Any) -> None:
    """The payload as indented JSON on stdout: non-ASCII text as itself where stdout can encode it,
    else (an ASCII or cp1252 stdout, or text holding a lone surrogate) as \\u escapes, still valid JSON."""
    text = json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
    if not text.isascii():
        try:
            text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
        except (UnicodeEncodeError, LookupError):
            text = json.dumps(payload, ensure_ascii=True, indent=2) + "\n"
    out = Tolerant(sys.stdout)
    out.write(text)
    out.flush()  # now, not at exit, where a failure could only be a traceback-like "Exception ignored"


def no_bar(as_json: bool) -> bool:
    """Whether a progress bar stays off: under --json, and when stderr is no terminal (a log or a pipe
    gets no frames of it, and no blank line where it stopped)."""
    return as_json or not (globals().get("err") or __getattr__("err")).is_terminal


def busy(message: str, as_json: bool) -> Any:
    """A spinner on stderr while one long call runs that reports no steps (check, export, rename-scope:
    seconds of silence at 100k memories); nothing under --json or off a terminal, as no_bar says."""
    from contextlib import nullcontext

    from rich.text import Text  # not markup: a scope or folder name is shown as typed

    return nullcontext() if no_bar(as_json) else (globals().get("err") or __getattr__("err")).status(Text(message))


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``1 memory``, ``2 memories``: the count with the right form of the noun."""
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


def when(value: datetime | str | None) -> str:
    """Every time the CLI prints, in one form: ``YYYY-MM-DD HH:MM`` UTC (JSON keeps full ISO-8601)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    return value.strftime("%Y-%m-%d %H:%M")


def table(title: str | None, *columns: str, ids: tuple[str, ...] = ("id",)) -> Any:
    """A table whose id columns never wrap (an id must stay copyable) and whose other columns fold."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for name in columns:
        if name in ids:
            t.add_column(name, no_wrap=True, overflow="ignore", min_width=26 if name.endswith("id") else None)
        else:
            t.add_column(name, overflow="fold")
    return t
