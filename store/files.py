"""The store's files on disk: owner-only, never reached through a dangling link, never committed.

Memories and the logged queries are private: a new store folder is 0700 and its files 0600
(SQLite gives the -wal and -shm files the database file's mode). A ``kenning.sqlite3`` that is a
symlink is resolved deliberately: to a file it is followed (the WAL lives beside the target), a
dangling one is refused instead of silently creating a new store at the link's target. A store
folder inside a git work tree gets its own ``.gitignore`` so memories are not committed by accident.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kenning.errors import InvalidInput

DIR_MODE = 0o700
FILE_MODE = 0o600
GITIGNORE = "# kenning's memory store: private, never commit it\n*\n"
_COMPANIONS = ("", "-wal", "-shm", "-journal")


def prepare_directory(directory: Path, local_name: str = ".kenning") -> Path:
    """Create the store folder owner-only (or tighten one that holds a store); add a .gitignore when
    it lies in a git work tree and was created here or is the repo-local ``.kenning``."""
    created = not directory.exists()
    try:
        directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise InvalidInput(f"the store path {directory} exists and is not a folder") from exc
    except OSError as exc:
        raise InvalidInput(f"cannot create the store directory {directory}: {exc.strerror}") from exc
    if not directory.is_dir():
        raise InvalidInput(f"the store path {directory} exists and is not a folder")
    if created:
        _chmod(directory, DIR_MODE)
    if (created or directory.name == local_name) and _in_git_work_tree(directory):
        ignore = directory / ".gitignore"
        if not ignore.exists():
            try:
                ignore.write_text(GITIGNORE)
            except OSError:
                pass  # a read-only folder: nothing can be written there anyway
    return directory


def database_file(directory: Path, name: str) -> Path:
    """The database path to open: a symlink to a file is followed; a dangling one, or one that
    points at something other than a file, is refused."""
    path = directory / name
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if not target.exists():
            raise InvalidInput(f"{path} is a symlink to {target}, which does not exist; "
                               "fix or remove the link (kenning will not create a store behind it)")
        if not target.is_file():
            raise InvalidInput(f"{path} is a symlink to {target}, which is not a file")
        return target
    if path.exists() and not path.is_file():
        raise InvalidInput(f"{path} is not a file; move it away so kenning can create its database there")
    if not path.exists():
        try:
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, FILE_MODE))
        except FileExistsError:
            pass  # another process created it meanwhile
        except OSError:
            pass  # unwritable: SQLite reports it in its own words
    return path


def tighten(database: Path) -> None:
    """Owner-only modes on the database and its companions (a store made by an older kenning)."""
    for suffix in _COMPANIONS:
        _chmod(database.with_name(database.name + suffix), FILE_MODE)


def _chmod(path: Path, mode: int) -> None:
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & ~mode == 0:
            return
        os.chmod(path, stat.S_IMODE(info.st_mode) & mode)
    except (OSError, AttributeError):
        pass  # missing, not ours, or a platform without modes


def _in_git_work_tree(directory: Path) -> bool:
    for parent in [directory, *directory.parents]:
        if (parent / ".git").exists():
            return True
    return False
