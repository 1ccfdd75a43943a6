"""Where a store may live, said by URL: a PostgreSQL database (or schema) that holds no store is not
made into one by a command that only reads, nor by `kenning migrate` reading it as its source; a
set-up mistake on the server (a schema not created, a foreign table named like one of kenning's) is
one clear error; and a URL of another kind (mysql://, sqlite:///...) or an empty migrate
destination is refused instead of becoming a local folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kenning
from kenning.errors import InvalidInput, StorageError
from kenning.store.transfer import migrate

CLI = [sys.executable, "-m", "kenning"]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    return lines[0]


def _tables(url: str, schema: str | None = None) -> list[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        where = "table_schema = %s" if schema else "table_schema NOT IN ('pg_catalog', 'information_schema')"
        return [r[0] for r in conn.execute(f"SELECT table_name FROM information_schema.tables WHERE {where}",
                                           (schema,) if schema else ()).fetchall()]


def _sql(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def _in_schema(url: str, name: str) -> str:
    from kenning.store.postgres.database import in_schema

    return in_schema(url, name)


# ---------------------------------------------------------------- 1. reading creates nothing


def test_exists_asks_the_database_and_creates_nothing(postgres_url):
    from kenning.store.backend import exists

    assert exists(postgres_url) is False
    assert _tables(postgres_url) == []
    kenning.open_store(postgres_url).close()  # the library's open (a writer's) still creates the store
    assert exists(postgres_url) is True


def test_read_commands_on_a_database_without_a_store_say_so_and_create_nothing(postgres_url, tmp_path):
    info = _run("--store", postgres_url, "info", cwd=tmp_path)
    assert info.returncode == 0, info.stderr
    assert "no store here yet" in info.stdout and "0 memories" not in info.stdout
    for command in (["list"], ["search", "auth port"], ["search", "auth port", "--mode", "bm25"]):
        line = _one_error_line(_run("--store", postgres_url, *command, cwd=tmp_path))
        assert "no kenning store at postgresql://" in line, line
    assert _tables(postgres_url) == []
    done = _run("--store", postgres_url, "write", "The auth service listens on port 8443",
                "--scope", "projects:auth", cwd=tmp_path)  # a writing command still creates it
    assert done.returncode == 0, done.stderr
    assert "memories" in _tables(postgres_url)


def test_migrate_from_a_database_without_a_store_refuses_and_leaves_it_as_it_was(postgres_url, tmp_path):
    line = _one_error_line(_run("migrate", postgres_url, str(tmp_path / "copy"), cwd=tmp_path))
    assert "no kenning store at postgresql://" in line, line
    assert _tables(postgres_url) == []
    assert not (tmp_path / "copy").exists()
    with pytest.raises(InvalidInput, match="no kenning store at postgresql://"):
        migrate(postgres_url, tmp_path / "copy2")
    assert _tables(postgres_url) == []


# ---------------------------------------------------------------- 2. set-up mistakes in one line


def test_a_schema_that_does_not_exist_is_one_clear_error(postgres_url, tmp_path):
    url = _in_schema(postgres_url, "team_a")
    with pytest.raises(StorageError, match=r"schema team_a does not exist in .*CREATE SCHEMA team_a"):
        kenning.open_store(url)
    for command in (["info"], ["list"], ["write", "The auth service listens on port 8443", "--scope", "projects:auth"]):
        line = _one_error_line(_run("--store", url, *command, cwd=tmp_path))
        assert "schema team_a does not exist" in line, line
    with kenning.open_store(tmp_path / "src") as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
    line = _one_error_line(_run("migrate", str(tmp_path / "src"), url, cwd=tmp_path))
    assert "schema team_a does not exist" in line, line
    assert _tables(postgres_url) == []
    _sql(postgres_url, "CREATE SCHEMA team_a")  # as the error says: then the store is made there
    kenning.open_store(url).close()
    assert "memories" in _tables(postgres_url, "team_a") and _tables(postgres_url, "public") == []


def test_a_missing_schema_never_puts_the_store_in_pgvectors_schema(postgres_url):
    # with pgvector installed in public, the search path gains public to find it: the store's
    # tables must still not land there when the schema the URL names is missing
    _sql(postgres_url, "CREATE EXTENSION IF NOT EXISTS vector")
    with pytest.raises(StorageError, match="schema team_b does not exist"):
        kenning.open_store(_in_schema(postgres_url, "team_b"))
    assert _tables(postgres_url, "public") == []


def test_a_foreign_table_named_like_kennings_is_one_clear_error(postgres_url, tmp_path):
    _sql(postgres_url, "CREATE TABLE memories (x int)")
    with pytest.raises(StorageError, match="already holds a table named memories that is not kenning's"):
        kenning.open_store(postgres_url)
    with kenning.open_store(tmp_path / "src") as s:
        s.write("The auth service listens on port 8443", scopes=["projects:auth"])
    line = _one_error_line(_run("migrate", str(tmp_path / "src"), postgres_url, cwd=tmp_path))
    assert "already holds a table named memories that is not kenning's" in line, line
    assert sorted(_tables(postgres_url)) == ["memories"]  # nothing else was created beside it


# ---------------------------------------------------------------- 3. other URL schemes, empty destinations


@pytest.mark.parametrize("location", ["mysql://db.internal/kenning", "sqlite:///tmp/x.db", "redis://cache:6379/0"])
def test_other_url_schemes_are_refused_not_made_into_folders(location, tmp_path):
    from kenning.store.location import locate_store

    with pytest.raises(InvalidInput, match=r"postgresql://"):
        locate_store(location)
    with pytest.raises(InvalidInput, match=r"postgresql://"):
        kenning.open_store(location)
    line = _one_error_line(_run("--store", location, "write", "hello there general world", "--scope", "global",
                                cwd=tmp_path))
    assert location.split(":")[0] + "://" in line and "postgresql://" in line, line
    assert list(tmp_path.iterdir()) == []


def test_migrate_refuses_an_unknown_scheme_or_an_empty_destination(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    with kenning.open_store(tmp_path / "src") as s:
        s.write("seed memory for migrate", scopes=["global"])
    for destination, said in (("mysql://db.internal/kenning", "mysql://"), ("", "empty"), ("  ", "empty")):
        line = _one_error_line(_run("migrate", str(tmp_path / "src"), destination, cwd=work))
        assert said in line and "postgresql://" in line, line
        with pytest.raises(InvalidInput, match=said):
            migrate(tmp_path / "src", destination)
    line = _one_error_line(_run("migrate", "mysql://db.internal/kenning", str(tmp_path / "dst"), cwd=work))
    assert "mysql://" in line, line
    assert list(work.iterdir()) == [] and not (tmp_path / "dst").exists()


def test_a_read_command_on_an_empty_database_never_prints_the_password(postgres_url, tmp_path):
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(postgres_url)
    user = parts.username or "postgres"
    host = parts.netloc.rsplit("@", 1)[-1]
    with_password = urlunsplit(parts._replace(netloc=f"{user}:Sup3rSecretPw@{host}"))  # trust auth ignores it
    line = _one_error_line(_run("--store", with_password, "list", cwd=tmp_path))
    assert "no kenning store at" in line and "Sup3rSecretPw" not in line, line
