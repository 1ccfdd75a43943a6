"""A store this process may read but not write: it serves reads and refuses writes by naming the
cause, whichever of its file and folder is read-only; one it cannot even read, or that needs an
upgrade it cannot write, is a clear error. Run as a process that file permissions bind
(tests/unprivileged.py): an ordinary user as is, root in a thread without its override capabilities."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from unprivileged import run_unprivileged

from kenning import open_store
from kenning.errors import InvalidInput, KenningError, ReadOnlyStore
from kenning.store.db import DB_FILENAME, MIGRATIONS, SCHEMA_VERSION, Database

pytestmark = pytest.mark.sqlite_only

FACT = "The auth service listens on port 8443"


@pytest.fixture
def store_dir(tmp_path):
    """A store holding one memory, closed; its modes restored afterwards so the folder can be deleted."""
    directory = tmp_path / "store"
    with open_store(directory) as store:
        store.write(FACT, scopes=["ops"])
    yield directory
    directory.chmod(0o700)
    for path in directory.iterdir():
        path.chmod(0o600)


def digest(directory) -> str:
    return hashlib.sha256((directory / DB_FILENAME).read_bytes()).hexdigest()


def refusal(directory) -> str:
    return (f"the store {directory} is read-only for this user (its file or folder is not writable): "
            "reads work, but nothing can be written there")


@pytest.mark.parametrize("file_mode, folder_mode", [(0o400, 0o700), (0o400, 0o500), (0o600, 0o500)],
                         ids=["file", "file-and-folder", "folder"])
def test_a_read_only_store_serves_reads_and_refuses_writes_naming_the_cause(store_dir, file_mode, folder_mode):
    before = digest(store_dir)
    (store_dir / DB_FILENAME).chmod(file_mode)
    store_dir.chmod(folder_mode)

    def use():
        with open_store(store_dir) as store:
            seen = {"read_only": store.db.read_only, "count": store.count(),
                    "hits": [store.get(h.id).content for h in store.search("auth port", mode="bm25").hits],
                    "version": store.db.read(lambda c: c.execute("PRAGMA user_version").fetchone()[0])}
            for attempt in (lambda: store.write("Another durable fact about kites", scopes=["ops"]),
                            lambda: store.configure(default_mode="bm25")):
                with pytest.raises(ReadOnlyStore) as refused:
                    attempt()
                assert str(refused.value) == refusal(store_dir)
            return seen

    assert run_unprivileged(use) == {"read_only": True, "count": 1, "hits": [FACT], "version": SCHEMA_VERSION}
    assert digest(store_dir) == before


def test_the_database_itself_refuses_a_transaction_and_still_reads(store_dir):
    (store_dir / DB_FILENAME).chmod(0o400)
    store_dir.chmod(0o500)

    def use():
        db = Database(store_dir / DB_FILENAME)
        try:
            with pytest.raises(ReadOnlyStore) as refused, db.transaction():
                pass
            return (str(refused.value), db.read_only, db.get_meta("tokenizer") is not None,
                    db.get_meta("absent", "fallback"), db.tables() == sorted(db.tables()), "memories" in db.tables())
        finally:
            db.close()

    assert run_unprivileged(use) == (refusal(store_dir), True, True, "fallback", True, True)


def test_a_store_file_it_cannot_even_read_is_an_error_naming_permissions(store_dir):
    (store_dir / DB_FILENAME).chmod(0o000)
    expected = f"{store_dir / DB_FILENAME} cannot be opened: not even for reading (check its permissions)"
    for opening in (lambda: Database(store_dir / DB_FILENAME), lambda: open_store(store_dir)):
        with pytest.raises(KenningError) as failed:
            run_unprivileged(opening)
        assert str(failed.value) == expected and not isinstance(failed.value, InvalidInput)


def test_a_read_only_store_of_an_older_schema_asks_to_be_opened_once_with_write_access(tmp_path):
    directory = tmp_path / "old"
    directory.mkdir()
    path = directory / DB_FILENAME
    con = sqlite3.connect(path)
    for step in MIGRATIONS[:SCHEMA_VERSION - 1]:
        con.executescript(step)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    con.close()
    path.chmod(0o400)
    with pytest.raises(KenningError) as failed:
        run_unprivileged(lambda: Database(path))
    assert str(failed.value) == (f"{path} is read-only and has schema {SCHEMA_VERSION - 1}, this kenning needs "
                                 f"{SCHEMA_VERSION}; open it once with write access to upgrade it")
    path.chmod(0o600)
    with open_store(directory) as store:  # with write access it upgrades
        assert store.db.read_only is False and store.count() == 0
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_new_store_cannot_be_created_in_a_read_only_folder(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(sqlite3.OperationalError, match="unable to open"):
            run_unprivileged(lambda: Database(folder / DB_FILENAME))
        with pytest.raises(InvalidInput, match=f"^cannot create a store in {folder} "):
            run_unprivileged(lambda: open_store(folder))
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_a_reader_without_write_access_sees_what_the_owner_writes_afterwards(store_dir):
    """A read-only file in a writable folder is read through SQLite's shared memory, not as a frozen
    (immutable) file: the owner's later writes show up. The store also serves any thread."""
    (store_dir / DB_FILENAME).chmod(0o400)
    reader = run_unprivileged(lambda: open_store(store_dir))
    try:
        assert reader.db.read_only is True and reader.count() == 1
        (store_dir / DB_FILENAME).chmod(0o600)
        with open_store(store_dir) as owner:
            owner.write("The zebra crossing sensor reports every minute", scopes=["ops"])
        hits = reader.search("zebra crossing sensor", mode="bm25").hits
        assert [reader.get(h.id).content for h in hits] == ["The zebra crossing sensor reports every minute"]
        assert reader.count() == 2
    finally:
        reader.close()


def test_a_write_ahead_log_it_cannot_read_is_an_error_naming_the_log(store_dir):
    """The newest commits may live only in the -wal file: reading the store without it would hide
    them, so a log this user cannot read is an error that names it, not a read-only store."""
    owner = open_store(store_dir)  # while it is open, its last commit stays in the log
    try:
        owner.write("The zebra crossing sensor reports every minute", scopes=["ops"])
        log = store_dir / (DB_FILENAME + "-wal")
        assert log.stat().st_size > 0
        log.chmod(0o000)
        with pytest.raises(KenningError) as failed:
            run_unprivileged(lambda: open_store(store_dir))
        assert str(failed.value) == (f"{log} (the store's write-ahead log) cannot be read by this user; "
                                     f"give it the same owner and permissions as {DB_FILENAME}")
        log.chmod(0o600)
    finally:
        owner.close()


def test_a_markdown_export_of_a_read_only_store_is_written(store_dir, tmp_path):
    """An export only reads the store; remembering its folder (for `kenning clean`) is a write the store
    refuses, which made the export fail with ReadOnlyStore (after writing its files, later before)."""
    from kenning.recall import markdown

    (store_dir / DB_FILENAME).chmod(0o400)
    store_dir.chmod(0o500)
    folder = tmp_path / "md"

    def export():
        with open_store(store_dir) as store:
            return markdown.export(store, folder)

    done = run_unprivileged(export)
    assert done["memories"] == 1 and FACT in (folder / "ops" / "MEMORY.md").read_text()
