"""What every command-line module shares: the consoles, the --json help text and one-line errors."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, Callable

import typer
from rich.console import Console
from rich.markup import escape

from kenning.errors import KenningError

out = Console()
err = Console(stderr=True)
JSON_HELP = "Print machine-readable JSON instead of a table."


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
                message = str(exc)
            except ImportError as exc:
                if missing_extra is None:
                    raise
                message = (f"the {missing_extra} extra is missing ({exc.name or exc}); "
                           f'install it with: pip install "kenning[{missing_extra}]"')
            err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
            raise typer.Exit(2)

        return wrapper

    return decorate


def emit_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
