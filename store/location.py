"""Where a store lives: an explicit path, else $KENNING_HOME, else ./.kenning/ if present, else the user data dir."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

LOCAL_DIRNAME = ".kenning"


def resolve_store_dir(explicit: str | os.PathLike | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("KENNING_HOME")
    if env:
        return Path(env).expanduser()
    local = Path.cwd() / LOCAL_DIRNAME
    if local.is_dir():
        return local
    return Path(platformdirs.user_data_dir("kenning", appauthor=False))
