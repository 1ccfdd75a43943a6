"""``kenning config get|set``: read and change the store's persisted settings (``Store.settings`` /
``Store.configure``), the same ones a running server reads live. Parse, call the library, print."""

from __future__ import annotations

import json
from typing import Any, Optional

import typer

from kenning.commands import support as ui
from kenning.commands.support import JSON_HELP, cli_store, emit_json, one_line_errors, sub_app
from kenning.errors import InvalidInput

config_app = sub_app(
    "config",
    "Read or change this store's settings: default search mode, write confirmation, switches.",
    "kenning config set default_mode bm25")
_one_line_errors = one_line_errors()


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (dict, list)) or value is None else str(value).lower() \
        if isinstance(value, bool) else str(value)


@config_app.command("get", epilog="Example: kenning config get default_mode")
@_one_line_errors
def get(
    ctx: typer.Context,
    key: Optional[str] = typer.Argument(None, help="One setting; without it, every setting."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Print the store's settings (or one of them) as they are stored now."""
    settings = cli_store(ctx).config.model_dump(mode="json")
    if key is not None:
        if key not in settings:
            raise InvalidInput(f"unknown setting {key!r}; the settings are: {', '.join(settings)}")
        settings = {key: settings[key]}
    if as_json:
        emit_json(settings if key is None else settings[key])
    elif key is not None:
        ui.out.print(_shown(settings[key]))
    else:
        from kenning.store.models import LIVE_SETTINGS

        for name, value in settings.items():
            live = "    # live: running servers follow a change at their next call" if name in LIVE_SETTINGS else ""
            ui.out.print(f"{name} = {_shown(value)}{live}")


@config_app.command("set", epilog="Example: kenning config set default_mode bm25\n\n"
                                  "Example: kenning config set require_write_confirmation true\n\n"
                                  "Example: kenning config set weights '{\"keyword\": 0.5}'   (bm25 and vector keep "
                                  "their weights)\n\n"
                                  "Example: kenning config set evidence_cos_floor -0.2   (a negative number is a value)",
                   # a negative number (-60, -0.2) is the value, not an unknown option
                   context_settings={"ignore_unknown_options": True})
@_one_line_errors
def set_(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The setting, e.g. default_mode, search_enabled, write_enabled, "
                                        "require_write_confirmation."),
    value: str = typer.Argument(..., help="Its new value: text, a number, true/false, null, or JSON for a table. "
                                          "A weights table is merged into the current one: legs it does not name "
                                          "(keyword, bm25, vector) keep their weight. model: a name `kenning models` "
                                          "lists, or null for the default."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Change one setting; it is stored in the store itself and read live by running servers. A value
    out of its range (bm25_b 0-1, leg_depth 1 or more, ...) or an unknown model is refused (exit 2)."""
    config = cli_store(ctx).configure(**{key: _parse(value)})
    new = config.model_dump(mode="json")[key]
    if as_json:
        emit_json({key: new})
    else:
        ui.out.print(f"{key} = {_shown(new)}")


def _parse(value: str) -> Any:
    """JSON when the text is JSON (numbers, true/false, null, objects), else the text itself."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
