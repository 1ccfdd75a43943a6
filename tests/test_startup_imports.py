"""Start-up stays cheap: a search imports none of the write path (gates, writes) and no model runtime.

Each check runs a fresh process and reads its sys.modules at exit, so a new top-level import
anywhere on the search path shows up here as a failure, not as a slower `kenning search`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# what a lexical search must not import: the write side's modules and every model runtime
WRITE_SIDE = {"kenning.memory.writes", "kenning.memory.curation", "kenning.memory.conflicts",
              "kenning.memory.overview", "kenning.memory.scoping", "kenning.memory.gates.durability",
              "kenning.memory.gates.user_claims", "kenning.memory.gates.pipeline", "kenning.memory.gates.batch"}
RUNTIMES = {"onnxruntime", "tokenizers", "hnswlib", "torch", "sentence_transformers"}
WATCHED = sorted(WRITE_SIDE | RUNTIMES)

CLI = """
import atexit, sys
watched = {watched!r}
atexit.register(lambda: sys.stderr.write("LOADED " + " ".join(m for m in watched if m in sys.modules) + "\\n"))
sys.argv = ["kenning", *sys.argv[1:]]
from kenning.__main__ import main
main()
"""

LIBRARY = """
import json, sys
import kenning
watched = {watched!r}
store = kenning.open_store({store!r})
hits = len(store.search("auth port", mode="bm25").hits)
after_search = [m for m in watched if m in sys.modules]
refused = store.write("The auth service listens on port 8443 until tomorrow", scopes=["x"]).status
print(json.dumps({{"hits": hits, "after_search": after_search, "refused": refused,
                  "after_write": [m for m in watched if m in sys.modules]}}))
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("startup-home")
    done = subprocess.run([sys.executable, "-m", "kenning", "write", "The auth service listens on port 8443",
                           "--scope", "x"], capture_output=True, text=True, env=_env(home), timeout=300)
    assert done.returncode == 0, done.stderr
    return home


def _env(home: Path) -> dict[str, str]:
    """No model to load (an empty models folder): a write does not embed, so each process stays short."""
    (home / "no-models").mkdir(exist_ok=True)
    return {**os.environ, "KENNING_HOME": str(home), "KENNING_MODELS_DIR": str(home / "no-models")}


def _loaded(home: Path, *args: str) -> set[str]:
    env = _env(home)
    done = subprocess.run([sys.executable, "-c", CLI.format(watched=WATCHED), *args], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED")][-1]
    return set(line.split()[1:])


def test_a_lexical_search_imports_no_write_gate_and_no_model_runtime(home):
    for mode in ("bm25", "keyword"):
        assert _loaded(home, "search", "auth port", "--mode", mode).isdisjoint(WRITE_SIDE | RUNTIMES), mode


def test_the_probe_sees_the_write_side_when_a_command_writes(home):
    """The same probe on a write: the gates it skipped for a search are there, so the test above can fail."""
    loaded = _loaded(home, "write", "The billing job runs nightly at 02:00 UTC", "--scope", "x")
    assert {"kenning.memory.writes", "kenning.memory.gates.durability", "kenning.memory.gates.user_claims"} <= loaded
    assert loaded.isdisjoint({"torch", "sentence_transformers"})


def test_the_library_loads_the_gates_on_the_first_write_and_they_still_refuse(home, tmp_path):
    store = tmp_path / "store"
    env = _env(home)
    subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), "write",
                    "The auth service listens on port 8443", "--scope", "x"], env=env, check=True,
                   capture_output=True, timeout=300)
    done = subprocess.run([sys.executable, "-c", LIBRARY.format(watched=WATCHED, store=str(store))],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["hits"] == 1
    assert set(report["after_search"]).isdisjoint(WRITE_SIDE | {"torch"}), report["after_search"]
    assert report["refused"] == "transient_warning"  # the durability gate, imported on this first write
    assert {"kenning.memory.writes", "kenning.memory.gates.durability"} <= set(report["after_write"])


def test_a_lazy_lifecycle_module_is_the_real_module_on_first_use():
    from kenning.memory import lifecycle, writes

    assert lifecycle.writes.write is writes.write
    assert "kenning.memory.writes" in repr(lifecycle.LazyModule("kenning.memory.writes"))
    with pytest.raises(AttributeError):
        lifecycle.LazyModule("kenning.memory.writes").no_such_function
