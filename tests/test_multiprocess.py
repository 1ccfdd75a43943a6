"""Several processes on one store: a write in one is seen by the next search in another; races lose nothing."""

import subprocess
import sys
import textwrap

import kenning

WRITER = textwrap.dedent("""
    import sys, kenning
    store = kenning.open_store(sys.argv[1])
    for i in range(int(sys.argv[3])):
        store.write(f"{sys.argv[2]} wrote memory {i} about zebra crossings", scopes=[sys.argv[2]])
""")


def _run_writer(path, name, n):
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(n)])


def test_write_in_another_process_is_seen_by_a_warm_store(tmp_path):
    path = tmp_path / "shared"
    warm = kenning.open_store(path)
    warm.write("local memory about giraffes", scopes=["local"])
    assert warm.search("zebra", mode="bm25").hits == []  # caches the doc table and "zebra"'s postings
    assert _run_writer(path, "other", 1).wait() == 0
    hits = warm.search("zebra crossings", mode="bm25").hits
    assert len(hits) == 1 and hits[0].scopes == ["other"]
    warm.write("another local zebra", scopes=["local"])  # own write on top of a foreign one
    assert len(warm.search("zebra", mode="keyword", limit=10).hits) == 2
    removed = hits[0].id
    subprocess.run([sys.executable, "-c",
                    f"import kenning; kenning.open_store({str(path)!r}).remove({removed!r}, reason='x')"], check=True)
    assert [h.scopes for h in warm.search("zebra", mode="bm25", limit=10).hits] == [["local"]]


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "race"
    kenning.open_store(path).close()
    procs = [_run_writer(path, f"w{i}", 60) for i in range(3)]
    assert [p.wait() for p in procs] == [0, 0, 0]
    store = kenning.open_store(path)
    assert store.count() == 180
    for i in range(3):
        assert len(store.search("zebra", scopes=[f"w{i}"], limit=50).hits) == 50
    assert len(store.rank("zebra crossings", depth=500).hits) == 180
