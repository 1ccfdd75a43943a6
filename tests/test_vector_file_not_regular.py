"""A FIFO where the vector index file belongs (vectors.idx) is refused by its type, not read: reading
one blocks until something writes to it, which hung every semantic search and `kenning check`."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from kenning.store import integrity

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")

CHILD = """
import sys
import numpy as np
from kenning.retrieval.vector import VectorIndex, read_header
print(VectorIndex.load(sys.argv[1], 4, {}), read_header(sys.argv[1]))
"""


def test_loading_an_index_from_a_fifo_gives_none_instead_of_blocking(tmp_path):
    fifo = tmp_path / "vectors.idx"
    os.mkfifo(fifo)
    # in a child, so a regression hangs that process (and fails on the timeout), not the suite
    run = subprocess.run([sys.executable, "-c", CHILD, str(fifo)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["None", "None"]


def test_a_saved_index_still_loads(tmp_path):
    from kenning.retrieval.vector import VectorIndex

    index = VectorIndex(4)
    index.add([1, 2], np.eye(4, dtype=np.float32)[:2])
    index.save(tmp_path / "vectors.idx", {"model_id": "m"})
    loaded = VectorIndex.load(tmp_path / "vectors.idx", 4, {"model_id": "m"})
    assert loaded is not None and sorted(loaded.keys().tolist()) == [1, 2]


def test_check_names_a_fifo_and_the_rebuild_clears_it(tmp_path):
    fifo = tmp_path / "vectors.idx"
    os.mkfifo(fifo)
    problems = integrity.check_vector_index(None, fifo)  # decided by the path's type, before the database
    assert [p.repair for p in problems] == ["kenning rebuild vectors"] and "FIFO" in problems[0].what
    assert integrity.remove_index_file(fifo) == "removed vectors.idx (not a regular file)"
    assert not os.path.lexists(fifo)
