"""The repository as a package (issue 13, item 17): license, metadata, and every data file in the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_license_is_an_spdx_string_with_its_file():
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert not any(c.startswith("License ::") for c in PROJECT["classifiers"])  # the SPDX field says it (PEP 639)
    assert "Programming Language :: Python :: 3 :: Only" in PROJECT["classifiers"]


@pytest.mark.slow
def test_the_wheel_builds_without_warnings_and_carries_its_data(tmp_path):
    import shutil

    source = tmp_path / "kenning"  # a copy: building in place would leave build/ and egg-info in the tree
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".ci-cache"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-v",
         "-w", str(tmp_path)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-2000:]
    log = build.stdout + build.stderr
    assert "absent from the `packages` configuration" not in log
    assert "as a TOML table is deprecated" not in log
    wheel = zipfile.ZipFile(next(tmp_path.glob("kenning-*.whl")))
    names = set(wheel.namelist())
    for data in ("kenning/eval/baselines/builtin.json", "kenning/eval/builtin/corpus.jsonl",
                 "kenning/serve/http/templates/index.html", "kenning/serve/http/static/page.js"):
        assert data in names, data
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata and "Classifier: Intended Audience :: Developers" in metadata
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
