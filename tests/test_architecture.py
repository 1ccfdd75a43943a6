"""The import contracts in pyproject.toml ([tool.importlinter]) hold: dependencies point one way.

Surfaces (cli, commands, serve, eval) -> memory (facade -> lifecycle) -> store -> retrieval;
retrieval and the error types import nothing of kenning's. docs/architecture.md explains why.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _lint_imports() -> str:
    found = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(found).exists():
        pytest.fail("lint-imports is missing; it comes with the dev extra: pip install -e '.[dev]'")
    return found


def test_import_contracts_are_kept():
    result = subprocess.run([_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert " kept, 0 broken." in report, report


def test_the_facade_stays_thin():
    lines = (ROOT / "memory" / "facade.py").read_text().count("\n")
    assert lines <= 300, f"memory/facade.py has {lines} lines; move logic into a lifecycle module"
