"""The one seam between kenning and where its tables live: a SQLite file or a PostgreSQL database.

``open_backend(location)`` takes what a user gives (a directory, or a ``postgresql://`` URL) and
returns the ``Database`` the rest of kenning works through, with the local directory its derived
files (the vector index) live in. Both databases offer the same surface: ``transaction()`` and
``read(fn)`` hand out a connection that speaks kenning's SQL dialect (SQLite's, restricted to what
``store/postgres/dialect.py`` translates), ``data_version()`` changes when another process
committed (asked once for a whole search inside ``one_generation()``), ``get_meta``/``set_meta``
and ``close``. Nothing above this module asks which one it has.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kenning.errors import InvalidInput, StorageError, says_damaged
from kenning.retrieval.env_folder import env_folder

from . import files
from .db import DB_FILENAME, Database, damage_message
from .location import URL_PREFIXES as URL_SCHEMES


def is_url(location: object) -> bool:
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


@dataclass
class Opened:
    db: Any  # Database | PostgresDatabase: the same surface
    directory: Path  # where derived files live (the store folder; for a server, a local cache folder)
    path: Path | str  # what to call the store in messages: the SQLite file, or the URL without password


def open_backend(location: str | os.PathLike) -> Opened:
    """The store at ``location``: a ``postgresql://`` URL, else a directory holding the SQLite file."""
    if is_url(location):
        return open_postgres(str(location), cache_directory(str(location)))
    if isinstance(location, str):
        from .location import refuse_other_schemes

        refuse_other_schemes(location, "the store location")
    directory = Path(location)
    if os.environ.get(TEST_SERVER):
        files.prepare_directory(directory)
        return open_postgres(_test_database(directory, create=True), directory)
    _refuse_unenterable(directory)
    files.prepare_directory(directory)
    path = files.database_file(directory, DB_FILENAME)
    try:
        db = Database(path)
    except sqlite3.DatabaseError as exc:
        if not path.exists():
            raise InvalidInput(f"cannot create a store in {directory} ({exc})") from exc
        if says_damaged(exc) and _sqlite_header(path):
            raise StorageError(damage_message(path, exc)) from exc
        if says_damaged(exc):
            raise StorageError(f"{path} is not a SQLite database (another kind of file, or damaged from its first "
                               f"page: {exc}); restore the store from a backup, or give another store folder") from exc
        if "full" in str(exc).lower() or ("disk i/o" in str(exc).lower() and _disk_full(directory)):
            # SQLite could not make room for the -shm / -wal files beside the database
            raise StorageError(f"the disk holding {path} is full, so the store cannot be opened "
                               f"({exc}); free space and retry") from exc
        if "disk i/o" in str(exc).lower():
            raise StorageError(f"{path} could not be read or written ({exc}); check the disk and permissions") from exc
        raise InvalidInput(f"{path} is not a kenning store ({exc})") from exc
    files.tighten(path)
    return Opened(db, directory, path)


def _disk_full(directory: Path) -> bool:
    """Whether the file system holding ``directory`` has no room for SQLite's 32 KiB -shm file."""
    try:
        stats = os.statvfs(directory)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return False
    return stats.f_bavail * stats.f_frsize < 64 * 1024


def _refuse_unenterable(directory: Path) -> None:
    """A store folder this user may not enter (no search permission on it or above it) is named as an
    unreadable store file is, instead of failing at the first look inside it with a PermissionError."""
    try:
        os.stat(directory / DB_FILENAME)
    except PermissionError as exc:
        raise StorageError(f"the store folder {directory} cannot be opened: not even for reading "
                           "(check its permissions)") from exc
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise InvalidInput(f"the store path {str(directory)[:200]}… is longer than the file system allows "
                               "(a name of at most 255 bytes between slashes)") from None
        # missing (a store to create) or not a folder: opening says so in its own words


def _sqlite_header(path: Path) -> bool:
    """Whether the file starts as every SQLite database does (so a read error means damage inside)."""
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def open_postgres(url: str, directory: Path) -> Opened:
    """A PostgreSQL store, its derived files kept in ``directory`` on this host."""
    from .postgres.database import PostgresDatabase

    directory.mkdir(mode=files.DIR_MODE, parents=True, exist_ok=True)
    db = PostgresDatabase(url)
    return Opened(db, directory, db.path)


def exists(location: str | os.PathLike) -> bool:
    """Whether a store is already there (a command that only reads must not create one); a folder this
    user may not enter is a StorageError, not an answer."""
    if is_url(location):
        # kenning's tables in the database (schema) the URL names; asking creates nothing, and a
        # server that cannot be reached, or a schema that does not exist, is said in one line
        from .postgres.database import holds_store

        return holds_store(str(location))
    if os.environ.get(TEST_SERVER):
        return _test_database(Path(location), create=False) is not None
    _refuse_unenterable(Path(location))
    path = Path(location) / DB_FILENAME
    if os.path.lexists(path):  # a folder or a dangling link there: said as a write says it, not "no store yet"
        files.database_file(Path(location), DB_FILENAME)
    return path.is_file()


# The test suites' switch (tests/conftest.py, KENNING_TEST_BACKEND=postgres): with a server URL here,
# every directory store opens as its own database on that server, named after the directory, so
# the same tests, CLI subprocesses and MCP servers run unchanged against PostgreSQL.
TEST_SERVER = "KENNING_TEST_POSTGRES"
TEST_TEMPLATE = "kenning_template"


def _test_database(directory: Path, create: bool) -> str | None:
    import psycopg
    from urllib.parse import urlsplit, urlunsplit

    server = os.environ[TEST_SERVER]
    name = "k" + hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:24]
    with psycopg.connect(server, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if found is None:
            if not create:
                return None
            template = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TEST_TEMPLATE,)).fetchone()
            try:
                conn.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {TEST_TEMPLATE}" if template else ""))
            except psycopg.errors.DuplicateDatabase:
                pass  # another process made it first
    return urlunsplit(urlsplit(server)._replace(path="/" + name))


def cache_directory(url: str) -> Path:
    """This host's folder for a server store's derived files, one per URL (without its password)."""
    from .postgres.database import display_url

    root = env_folder("KENNING_CACHE_DIR")
    if root is None:
        import platformdirs

        root = Path(platformdirs.user_cache_dir("kenning", appauthor=False))
    return root / "servers" / hashlib.sha256(display_url(url).encode()).hexdigest()[:16]
