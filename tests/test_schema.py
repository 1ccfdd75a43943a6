"""The schema a store ends up with is the committed one (tests/data/schema.sql), whether it was created
fresh or upgraded from any past version. Released migration steps must never be edited: a change to
the schema is a new step appended to MIGRATIONS, and then this snapshot is updated with it (print
``schema_of(...)`` of a fresh store)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kenning.store.db import DB_FILENAME, MIGRATIONS, SCHEMA_VERSION, Database

SNAPSHOT = Path(__file__).parent / "data" / "schema.sql"


def schema_of(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
                           "ORDER BY type, name").fetchall()
        version = con.execute("PRAGMA user_version").fetchone()[0]
    finally:
        con.close()
    return f"-- user_version {version}\n" + "".join(f"-- {kind} {name}\n{sql};\n" for kind, name, sql in rows)


def test_a_fresh_store_has_the_committed_schema(tmp_path):
    Database(tmp_path / DB_FILENAME).close()
    assert schema_of(tmp_path / DB_FILENAME) == SNAPSHOT.read_text()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_an_upgraded_store_has_the_committed_schema(tmp_path, version):
    path = tmp_path / DB_FILENAME
    con = sqlite3.connect(path)
    for step in MIGRATIONS[:version]:
        con.executescript(step)
    con.execute(f"PRAGMA user_version = {version}")
    con.close()
    Database(path).close()
    assert schema_of(path) == SNAPSHOT.read_text()


def test_one_connection_serves_every_thread_and_keeps_meta(tmp_path):
    """A server's threads share one Database; meta values round-trip; a writable store says so."""
    import threading

    db = Database(tmp_path / DB_FILENAME)
    try:
        seen = []
        worker = threading.Thread(target=lambda: seen.append(db.read(
            lambda c: c.execute("PRAGMA user_version").fetchone()[0])))
        worker.start()
        worker.join()
        assert seen == [SCHEMA_VERSION] and db.read_only is False and db.path == tmp_path / DB_FILENAME
        assert db.get_meta("absent", "fallback") == "fallback"
        with db.transaction() as c:
            Database.set_meta(c, "colour", "teal")
        assert db.get_meta("colour") == "teal"
    finally:
        db.close()


@pytest.mark.sqlite_only  # opens the SQLite file by its folder
def test_a_failing_migration_is_an_error_and_changes_nothing(tmp_path):
    """A step that cannot run (here a version-1 file already holding a table step 2 creates) is reported,
    not mistaken for a store this user may only read; the file keeps its version."""
    from kenning import open_store
    from kenning.errors import InvalidInput

    path = tmp_path / DB_FILENAME
    con = sqlite3.connect(path)
    con.executescript(MIGRATIONS[0])
    con.execute("CREATE TABLE embeddings (x)")
    con.execute("PRAGMA user_version = 1")
    con.close()
    with pytest.raises(sqlite3.OperationalError, match="^table embeddings already exists$"):
        Database(path)
    with pytest.raises(InvalidInput) as failed:
        open_store(tmp_path)
    assert str(failed.value) == f"{path} is not a kenning store (table embeddings already exists)"
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    assert "events" not in {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    con.close()


def test_a_failed_read_names_the_store_file(tmp_path):
    from kenning.errors import StorageError

    db = Database(tmp_path / DB_FILENAME)
    try:
        missing = tmp_path / "missing" / "other.sqlite3"
        with pytest.raises(StorageError) as failed:
            db.read(lambda c: c.execute("ATTACH DATABASE ? AS other", (str(missing),)))
        assert str(failed.value).startswith(f"{tmp_path / DB_FILENAME} could not be read or written (unable to open")
    finally:
        db.close()
