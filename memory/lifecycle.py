"""The lifecycle modules a Store method delegates to that a search never calls, each imported on the
first call that needs it.

Importing writes.py pulls in every write gate (dozens of regular expressions, pydantic models); a
`kenning search` process, or an MCP server until its first write, never pays for that. The names
stand in for the modules: ``writes.write(...)`` imports ``kenning.memory.writes`` once, then calls it.
Type checkers and import-linter read the real imports below.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["conflicts", "curation", "maintenance", "overview", "scoping", "writes"]


class LazyModule:
    """A module imported on first attribute access (the import lock makes that safe from any thread)."""

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


if TYPE_CHECKING:
    from . import conflicts, curation, maintenance, overview, scoping, writes
else:
    conflicts, curation, maintenance, overview, scoping, writes = (LazyModule(f"{__package__}.{name}") for name in __all__)
