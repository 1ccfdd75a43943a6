"""A store file that is damaged, or is not kenning's, gets one line that says so and what to do: never
a traceback, never kenning's tables written into another program's database, and a write that
committed is never reported as failed. Real SQLite files, the real CLI in a subprocess."""

import hashlib
import json
import os
import subprocess
import sys

import pytest

import kenning
from kenning.errors import InvalidInput, StorageError
from kenning.store.db import SCHEMA_VERSION

pytestmark = pytest.mark.sqlite_only  # the SQLite file itself: its pages, its header, another program's file

RECORDS = [{"content": f"memory number {i} about topic {i % 37} and detail {i * 7 % 101} with words",
            "scopes": ["bulk"]} for i in range(2000)]


def cli(store, *args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    return subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args], capture_output=True,
                          text=True, env=env, timeout=300)


def one_line(done):
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done.stderr.strip()


def damage_pages(path, first_third=True):
    """Overwrite part of ten pages a third of the way into the file (the memories' rows), as a bad disk would."""
    size = path.stat().st_size
    with open(path, "r+b") as f:
        for offset in range(size // 3, size // 3 + 10 * 4096, 4096):
            f.seek(offset + 100)
            f.write(b"\xab" * 600)


@pytest.fixture
def damaged(tmp_path):
    folder = tmp_path / "s"
    with kenning.open_store(folder) as store:
        store.import_bulk(RECORDS)
    damage_pages(folder / "kenning.sqlite3")
    return folder


def test_check_reports_a_damaged_database_and_exits_1(damaged):
    done = cli(damaged, "check")
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert done.stdout.startswith("sqlite: the store file ") and "restore it from a backup" in done.stdout


def test_reading_damaged_pages_is_one_line_naming_the_file_and_the_fix(damaged):
    done = cli(damaged, "list", "--limit", "5000", "--no-auto-scope")
    assert done.returncode != 0
    message = one_line(done)
    assert f"the store file {damaged / 'kenning.sqlite3'} is damaged" in message and "restore it from a backup" in message


def test_a_committed_write_is_never_reported_as_failed(damaged):
    """Its curation check reads the old memories after the commit: a damaged page there is a warning."""
    with kenning.open_store(damaged) as store:
        result = store.write("giraffes sleep standing up in the savanna", scopes=["x"])
        assert result.status == "committed"
        assert all("is damaged" in w for w in result.warnings if "curation check" in w)
        assert store.get(result.id).content == "giraffes sleep standing up in the savanna"


def test_a_truncated_store_file_is_damaged_and_check_says_so(tmp_path):
    with kenning.open_store(tmp_path / "whole") as store:
        store.import_bulk(RECORDS)
    (tmp_path / "cut").mkdir()
    data = (tmp_path / "whole" / "kenning.sqlite3").read_bytes()
    (tmp_path / "cut" / "kenning.sqlite3").write_bytes(data[:30000])
    done = cli(tmp_path / "cut", "check")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done
    assert "cannot be opened (database disk image is malformed)" in done.stdout and "restore it from a backup" in done.stdout
    with pytest.raises(StorageError, match="is damaged"):
        kenning.open_store(tmp_path / "cut")


def test_a_file_that_is_no_database_is_named_so(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "kenning.sqlite3").write_bytes(bytes(range(256)) * 80)
    message = one_line(cli(tmp_path / "s", "search", "anything"))
    assert "is not a SQLite database" in message
    done = cli(tmp_path / "s", "check", "--json")  # the finding, reported as check reports damage
    assert done.returncode == 1 and json.loads(done.stdout)["problems"][0]["part"] == "sqlite"


@pytest.mark.parametrize("version", [0, 1, 42])  # many programs set a schema version of their own
@pytest.mark.parametrize("args", [("info",), ("search", "users"), ("check",),
                                  ("write", "A memory for the wrong file", "-s", "x")])
def test_another_programs_sqlite_file_is_refused_and_left_byte_for_byte(tmp_path, args, version):
    import sqlite3

    (tmp_path / "s").mkdir()
    path = tmp_path / "s" / "kenning.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users(name)")
    conn.execute("INSERT INTO users VALUES ('ada')")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    done = cli(tmp_path / "s", *args)
    assert done.returncode == 2
    assert f"is a SQLite database of another program (tables: users, schema version {version})" in one_line(done)
    with pytest.raises(InvalidInput, match="another program"):
        kenning.open_store(tmp_path / "s")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(os.listdir(tmp_path / "s")) == ["kenning.sqlite3"]  # no -wal or -shm beside it either


def test_a_full_database_during_a_bulk_import_keeps_the_batches_before_it(tmp_path):
    """A StorageError that says the disk is full, and what was committed stays. (SQLite's max_page_count
    leaves the cleanup's checkpoint room; the file-size-limited import below makes it fail too.)"""
    with kenning.open_store(tmp_path / "s") as store:
        store.import_bulk(RECORDS[:200])
        pages = store.db.conn.execute("PRAGMA page_count").fetchone()[0]
        store.db.conn.execute(f"PRAGMA max_page_count = {pages + 40}")  # SQLite's own "disk full", deterministic
        with pytest.raises(StorageError, match="is full; the change under way was not written "
                                                r"\(what was committed before it stays\)"):
            store.import_bulk(RECORDS[200:], batch_size=200)
        assert 200 <= store.count() < len(RECORDS)  # the batches before the full one are kept


# ---------------------------------------------------------------- the repair story names the real file
def test_check_names_the_damaged_file_and_its_salvage_in_one_line(damaged):
    """Not a ``FILE`` placeholder nor SQLite's multi-line quick_check dump: one line a problem, naming the file."""
    done = cli(damaged, "check")
    path = damaged / "kenning.sqlite3"
    assert done.returncode == 1 and "Traceback" not in done.stderr, done
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout
    assert f"the store file {path} is damaged" in lines[0] and "FILE" not in lines[0]
    assert f"sqlite3 {path} .recover" in lines[0] and "restore" in lines[0]
    report = json.loads(cli(damaged, "check", "--json").stdout)
    assert [p["part"] for p in report["problems"]] == ["sqlite"] and str(path) in report["problems"][0]["repair"]


def test_check_of_a_store_too_damaged_to_open_names_the_file(tmp_path):
    with kenning.open_store(tmp_path / "whole") as store:
        store.import_bulk(RECORDS)
    (tmp_path / "cut").mkdir()
    path = tmp_path / "cut" / "kenning.sqlite3"
    path.write_bytes((tmp_path / "whole" / "kenning.sqlite3").read_bytes()[:30000])
    done = cli(tmp_path / "cut", "check")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done
    assert len(done.stdout.strip().splitlines()) == 1
    assert f"the store file {path} is damaged and cannot be opened" in done.stdout
    assert f"sqlite3 {path} .recover" in done.stdout and "FILE" not in done.stdout


def test_a_store_copied_without_its_schema_version_is_named_so_and_left_as_it_is(tmp_path):
    """``sqlite3 FILE .dump`` (a salvage) loses PRAGMA user_version: kenning's own tables at version 0 are
    not "another program's", and the message says how to give the version back; nothing is written."""
    import sqlite3

    with kenning.open_store(tmp_path / "whole") as store:
        store.import_bulk(RECORDS[:50])
    source = sqlite3.connect(tmp_path / "whole" / "kenning.sqlite3")
    script = "\n".join(source.iterdump())
    source.close()
    (tmp_path / "s").mkdir()
    path = tmp_path / "s" / "kenning.sqlite3"
    copy = sqlite3.connect(path)
    copy.executescript(script)
    copy.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    done = cli(tmp_path / "s", "search", "memory")
    assert done.returncode == 2
    message = one_line(done)
    assert "kenning's tables but no schema version" in message and f"sqlite3 {path} 'PRAGMA user_version = {SCHEMA_VERSION}'" in message
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    copy = sqlite3.connect(path)
    copy.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # what the message says to do
    copy.close()
    with kenning.open_store(tmp_path / "s") as store:
        assert store.count() == 50


@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE (the resource module)")
def test_a_write_failure_during_a_cli_import_reports_what_was_committed_not_the_cleanup_checkpoint(tmp_path):
    """A file-size limit below the store's size (the process may not grow any file further: a full disk
    for it): the batches fail, and so does the checkpoint the import's cleanup runs. The one line is the
    import's own, saying how many memories were committed; never the checkpoint's OperationalError."""
    import resource
    import signal

    with kenning.open_store(tmp_path / "s") as store:
        store.import_bulk(RECORDS)
    size = (tmp_path / "s" / "kenning.sqlite3").stat().st_size
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps({"content": f"another memory {i} on subject {i % 53} with text {i * 11}"}) + "\n"
                            for i in range(4000)))

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (size - 64 * 1024, resource.RLIM_INFINITY))

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    done = subprocess.run([sys.executable, "-m", "kenning", "--store", str(tmp_path / "s"), "import", str(more),
                           "--no-gates", "--batch-size", "500"], capture_output=True, text=True, env=env,
                          timeout=300, preexec_fn=limited)
    assert done.returncode == 2, done
    message = one_line(done)
    assert "wal_checkpoint" not in message and len(message.splitlines()) == 1, message
    assert message.startswith("error: the import stopped after committing ") and "What was committed is kept" in message
    with kenning.open_store(tmp_path / "s") as store:
        assert len(RECORDS) <= store.count() < len(RECORDS) + 4000


@pytest.mark.embeddings
def test_an_index_entry_of_a_memory_deleted_behind_kennings_back_is_left_out_and_check_names_it(tmp_path):
    """A row deleted with another SQLite client leaves its embedding (an orphan the vector leg still
    ranks): searches answer with the memories that exist, check reports the orphan with its fix, and
    the fix clears it."""
    import sqlite3

    store = kenning.open_store(tmp_path)
    texts = ["the deploy script uses blue green rollout", "postgres backups run nightly at two",
             "the deploy script needs the VPN for staging"]
    ids = [store.write(t, scopes=["p"], category="fact").id for t in texts]
    store.close()
    assert cli(tmp_path, "index").returncode == 0
    with sqlite3.connect(tmp_path / "kenning.sqlite3") as db:
        db.execute("DELETE FROM memories WHERE id = ?", (ids[0],))
    for mode in ("hybrid", "semantic"):
        done = cli(tmp_path, "search", "deploy script", "--mode", mode, "--json")
        assert done.returncode == 0, one_line(done)
        found = [h["id"] for h in json.loads(done.stdout)["hits"]]
        assert ids[2] in found and ids[0] not in found
    with kenning.open_store(tmp_path) as again:
        for explain in (True, False):
            ranked = [h.id for h in again.rank("deploy script", mode="semantic", explain=explain).hits]
            assert ids[2] in ranked and ids[0] not in ranked
    done = cli(tmp_path, "check")
    assert done.returncode == 1 and "kenning rebuild vectors" in done.stdout + done.stderr
    assert cli(tmp_path, "rebuild", "vectors").returncode == 0
    assert cli(tmp_path, "check").returncode == 0
