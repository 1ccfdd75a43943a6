"""The package tells type checkers it is typed (PEP 561), so mypy and pyright check code that uses it."""

import re
from pathlib import Path

import kenning

ROOT = Path(kenning.__file__).parent


def test_the_package_ships_a_py_typed_marker():
    """Without py.typed an installed kenning is 'missing library stubs or py.typed marker' to mypy
    and every annotation of Store is ignored."""
    assert (ROOT / "py.typed").is_file()
    package_data = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools.package-data]")[1].split("\n[")[0]
    assert re.search(r'^"kenning" = \[[^\]]*"py\.typed"', package_data, re.M)
