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
