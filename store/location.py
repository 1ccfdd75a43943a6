"""Where a store lives: an explicit path, else $KENNING_HOME, else ./.kenning/ if present, else the user data dir."""

from __future__ import annotations

import os
from pathlib import Path

LOCAL_DIRNAME = ".kenning"


def locate_store(explicit: str | os.PathLike | None = None) -> tuple[Path, str]:
    """The store directory and why it was chosen (so a front end can say which store it uses)."""
    if explicit:
        return Path(explicit).expanduser(), "given with --store"
    env = os.environ.get("KENNING_HOME")
    if env:
        return Path(env).expanduser(), "set by $KENNING_HOME"
    local = Path.cwd() / LOCAL_DIRNAME
    if local.is_dir():
        return local, f"found {LOCAL_DIRNAME}/ in the current directory"
    import platformdirs  # only this branch needs it

    default = Path(platformdirs.user_data_dir("kenning", appauthor=False))
    return default, "the default (no --store, no $KENNING_HOME, no ./.kenning)"


def resolve_store_dir(explicit: str | os.PathLike | None = None) -> Path:
    return locate_store(explicit)[0]
