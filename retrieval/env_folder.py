"""A folder named by an environment variable ($KENNING_HOME, $KENNING_CACHE_DIR, $KENNING_MODELS_DIR),
read alike wherever kenning reads one.

A blank value reads as unset, as an empty one does: ``KENNING_CACHE_DIR=" "`` put a 90 MB model
conversion in a folder named " " in the current directory. A leading ``~`` is the home folder: an
MCP client's ``env`` block expands nothing, unlike a shell, and $KENNING_HOME read ``~`` so while
the cache and models folders took it as the name of a folder inside the current one.
"""

from __future__ import annotations

import os
from pathlib import Path


def env_folder(name: str) -> Path | None:
    """The folder ``$name`` names, or None when it is unset, empty or blank."""
    value = os.environ.get(name, "")
    return Path(value).expanduser() if value.strip() else None
