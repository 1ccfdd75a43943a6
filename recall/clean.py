"""``kenning clean``: remove what kenning left behind by accident, never what it knows.

Removed: abandoned lock files (their owner process is gone), temporary files of interrupted
writes (their owner is gone, or they are older than ``STALE_AFTER_S``), and folders kenning made
in a markdown mirror that are empty now (or hold only such folders). Looked at: the store's
folder (the vector index's temp files) and every folder the store exported markdown to. Never
removed: the database, the vector index, MEMORY.md / USER.md, tombstones, transcripts or anything
because it is old. Knowledge leaves only by an explicit ``remove`` (a restorable tombstone).
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import (LOCK_NAME, TEMP_MARK, abandoned, atomic_write, break_abandoned, can_break, lock_holder, pid_alive,
                    read_text, temp_owner)
from .markdown import MANIFEST_NAME, _check_rel, known_folders

if TYPE_CHECKING:
    from kenning.memory.facade import Store

STALE_AFTER_S = 3600.0
INDEX_TEMP_PREFIX = ".vectors.idx."  # retrieval/vector.py saves through mkstemp(prefix=".vectors.idx.", suffix=".tmp")
INDEX_TEMP_SUFFIX = ".tmp"


def clean(store: "Store", dry_run: bool = False, now: float | None = None) -> dict[str, Any]:
    """Remove (or with ``dry_run`` only list) abandoned locks, temp files and empty kenning folders."""
    now = time.time() if now is None else now
    found: list[dict[str, str]] = []
    for path in sorted(Path(store.directory).glob(f"{INDEX_TEMP_PREFIX}*{INDEX_TEMP_SUFFIX}")):
        if _age(path, now) > STALE_AFTER_S:
            found.append({"path": str(path), "what": "temporary file of an interrupted vector index save"})
    for folder in known_folders(store):
        if folder.is_dir():
            found.extend(_folder_leftovers(folder, now))
    if not dry_run:
        for item in found:
            path = Path(item["path"])
            if item["what"].startswith("empty folder"):
                _remove_empty(path, Path(item["root"]))
            elif path.name == LOCK_NAME:
                _remove_lock(path)
            else:
                path.unlink(missing_ok=True)
    return {"dry_run": dry_run, "removed": [{"path": f["path"], "what": f["what"]} for f in found]}


def _remove_lock(path: Path) -> None:
    """An abandoned lock whose owner was a pid on this host goes through ``break_abandoned``, so a
    writer that took it over a moment ago keeps its new lock; one abandoned for its age alone (no
    readable owner, another host's) is removed as it is."""
    holder = lock_holder(path)
    if can_break() and isinstance(holder, dict) and isinstance(holder.get("pid"), int) \
            and holder.get("host") == socket.gethostname():
        break_abandoned(path)
    else:
        path.unlink(missing_ok=True)


def _folder_leftovers(folder: Path, now: float) -> list[dict[str, str]]:
    found = []
    lock = folder / LOCK_NAME
    lock_live = False
    if lock.exists():
        if abandoned(lock_holder(lock), _age(lock, now), STALE_AFTER_S):
            found.append({"path": str(lock), "what": "abandoned lock (its kenning process is gone)"})
        else:
            lock_live = True
    for path in sorted(folder.rglob(f"*{TEMP_MARK}*")):
        pid = temp_owner(path.name)
        if path.is_file() and pid is not None and (not pid_alive(pid) or _age(path, now) > STALE_AFTER_S):
            found.append({"path": str(path), "what": "temporary file of an interrupted write"})
    if not lock_live:  # a writer at work may be about to fill a folder it just made
        going: set[Path] = set()
        for rel in _made_folders(folder):  # deepest first: a folder holding only emptied ones goes with them
            path = folder / rel
            if path.is_dir() and all(inner in going for inner in path.iterdir()):
                going.add(path)
                found.append({"path": str(path), "what": "empty folder kenning made", "root": str(folder)})
    return found


def _made_folders(folder: Path) -> list[str]:
    """Folders the mirror's manifest says kenning created, deepest first."""
    try:
        manifest = json.loads(read_text(folder / MANIFEST_NAME))
    except (OSError, ValueError):
        return []
    folders = manifest.get("folders", []) if isinstance(manifest, dict) else []
    if not isinstance(folders, list):
        return []
    return sorted((f for f in folders if _inside(folder, f)), key=lambda p: -p.count("/"))


def _inside(folder: Path, rel: object) -> bool:
    """A folder the manifest names that lies inside the export: the manifest is in a folder people edit
    and share, and one naming '../x' or an absolute path must not make clean remove a folder elsewhere."""
    try:
        _check_rel(folder, rel, file=False)
    except ValueError:
        return False
    return True


def _remove_empty(path: Path, root: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        return  # something was put there meanwhile: not empty, not ours to remove
    manifest_path = root / MANIFEST_NAME
    try:
        manifest = json.loads(read_text(manifest_path))
        manifest["folders"] = [f for f in manifest.get("folders", []) if root / f != path]
        atomic_write(manifest_path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    except (OSError, ValueError):
        pass


def _age(path: Path, now: float) -> float:
    try:
        return now - os.stat(path).st_mtime
    except OSError:
        return 0.0
