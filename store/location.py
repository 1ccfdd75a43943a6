"""Where a store lives: an explicit path or postgresql:// URL, else $KENNING_URL, else $KENNING_HOME, else
./.kenning/ if present, else the user data dir."""

from __future__ import annotations

import os
from pathlib import Path

LOCAL_DIRNAME = ".kenning"


URL_PREFIXES = ("postgresql://", "postgres://")


def locate_store(explicit: str | os.PathLike | None = None) -> tuple[Path | str, str]:
    """The store directory (or server URL) and why it was chosen (so a front end can say which store it uses)."""
    if explicit:
        if isinstance(explicit, str) and explicit.startswith(URL_PREFIXES):
            return explicit, "given with --store"
        return Path(explicit).expanduser(), "given with --store"
    url = os.environ.get("KENNING_URL")
    if url:
        if not url.startswith(URL_PREFIXES):
            from kenning.errors import InvalidInput

            raise InvalidInput(f"$KENNING_URL must be a postgresql:// URL, not {url.split(':')[0]!r}")
        return url, "set by $KENNING_URL"
    env = os.environ.get("KENNING_HOME")
    if env:
        return Path(env).expanduser(), "set by $KENNING_HOME"
    local = Path.cwd() / LOCAL_DIRNAME
    if local.is_dir():
        return local, f"found {LOCAL_DIRNAME}/ in the current directory"
    import platformdirs  # only this branch needs it

    default = Path(platformdirs.user_data_dir("kenning", appauthor=False))
    return default, "the default (no --store, no $KENNING_HOME, no ./.kenning)"


def resolve_store_dir(explicit: str | os.PathLike | None = None) -> Path | str:
    return locate_store(explicit)[0]
