"""`kenning transcripts add` killed (SIGKILL) part-way through a folder of ledgers: the next sync reads only
the ledgers the killed one had not read, each message once. A store's first index is read with the
current readers, but the store records that (READER_KEY) only when a sync ends, and each ledger read
before the kill was read again from its start at every later try. A real process, killed."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import kenning
from kenning.recall.transcripts import READER_KEY, index_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

LEDGERS, LINES = 6, 40

# `add_source` that dies (SIGKILL: nothing after it runs) once it has committed the third ledger
KILLED_ADD = textwrap.dedent("""
    import os, signal, sys
    import kenning
    from kenning.recall import transcripts
    real, read = transcripts.TranscriptIndex._read, []

    def _read(self, *args, **kwargs):
        real(self, *args, **kwargs)
        read.append(args[2])
        if len(read) == 3:
            os.kill(os.getpid(), signal.SIGKILL)

    transcripts.TranscriptIndex._read = _read
    with kenning.open_store(sys.argv[1]) as store:
        transcripts.index_for(store).add_source(sys.argv[2], project=sys.argv[2])
""")


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "ledgers"
    folder.mkdir()
    for n in range(LEDGERS):
        with open(folder / f"s{n}.jsonl", "w", encoding="utf-8") as f:
            for i in range(LINES):
                f.write(json.dumps({"session": f"s{n}", "ts": 1795989620 + i, "role": "assistant",
                                    "text": f"ledger {n} line {i}: the relay feeds queue {i % 7}"}) + "\n")
    return folder


def test_a_killed_first_add_is_resumed_not_read_again_from_the_start(tmp_path, folder):
    store = tmp_path / "s"
    killed = subprocess.run([sys.executable, "-c", KILLED_ADD, str(store), str(folder)], timeout=300,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert killed.returncode == -signal.SIGKILL

    with kenning.open_store(store) as s:
        ix = index_for(s)
        report = ix.sync()
        assert (report.new, report.reread, report.messages) == (LEDGERS - 3, 0, (LEDGERS - 3) * LINES)  # was: 3, 3, all
        assert s.db.get_meta(READER_KEY) is not None
        counted = s.db.read(lambda c: c.execute("SELECT COUNT(*), COUNT(DISTINCT text) FROM transcript_messages").fetchone())
        assert counted == (LEDGERS * LINES, LEDGERS * LINES)
        assert len(ix.search("ledger 0 line 5", all_projects=True, limit=5).hits) >= 1
        assert not ix.sync().changed
