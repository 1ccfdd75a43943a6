"""A process forked from one holding an open store (multiprocessing's fork start, a preforking
server) uses that store safely: the child gets a connection of its own instead of sharing the
parent's (SQLite forbids using a connection across fork; a PostgreSQL socket shared by two
processes interleaves their messages), and locks another parent thread held at the fork are not
held in the child."""

from __future__ import annotations

import multiprocessing
import threading

import pytest


def _child(store, conn) -> None:
    try:
        written = store.write("the payments worker retries every 30 seconds", scopes=["ops"])
        found = [hit.id for hit in store.search("payments worker retries", mode="bm25").hits]
        older = [hit.id for hit in store.search("auth service port", mode="bm25").hits]
        conn.send(("ok", written.status, written.id, found, older))
    except BaseException as exc:  # the parent reports it
        conn.send(("error", repr(exc)))


@pytest.mark.slow
def test_a_forked_child_writes_and_searches_while_a_parent_thread_is_mid_transaction(store):
    first = store.write("the auth service listens on port 8443", scopes=["ops"])
    assert store.search("auth service port", mode="bm25").hits[0].id == first.id  # the parent's caches are warm
    inside, release = threading.Event(), threading.Event()

    def parent_writer() -> None:  # holds the store's lock and a write transaction across the fork
        with store.db.transaction():
            inside.set()
            release.wait(60)

    thread = threading.Thread(target=parent_writer)
    thread.start()
    assert inside.wait(30)
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("fork").Process(target=_child, args=(store, theirs))
    child.start()
    release.set()  # the parent's transaction ends; the child's write waits for it as for any writer
    thread.join(30)
    answered = ours.poll(60)  # without a lock of its own the child waits on the inherited one forever
    child.join(60)
    if child.is_alive():
        child.kill()
    assert answered, "the forked child hung on the store's lock its parent's thread held at the fork"
    result = ours.recv()
    assert result[0] == "ok", result
    _, status, child_id, found, older = result
    assert status == "committed" and found[:1] == [child_id] and older[:1] == [first.id]
    # the parent sees the child's write, and the store is sound
    assert store.search("payments worker retries", mode="bm25").hits[0].id == child_id
    assert store.count() == 2
    assert store.check()["problems"] == []


def _write_after_the_parent_closed(store, closed, wrote, done) -> None:
    closed.wait(60)
    store.write("the payments worker retries every 30 seconds", scopes=["ops"])
    wrote.set()
    done.wait(60)  # still open while another process reads the store


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_a_forked_childs_write_survives_its_parent_closing_the_store_first(store, tmp_path):
    """With the parent's connection carried into the child, SQLite in the child believed it held the
    parent's lock on the file; the parent, closing, found no other process holding one, and deleted
    the write-ahead log the child then committed to: another process saw 1 memory, and after the
    child closed the store held 1, its committed write gone, and `check` said clean."""
    import subprocess
    import sys

    import kenning

    store.write("the auth service listens on port 8443", scopes=["ops"])
    context = multiprocessing.get_context("fork")
    closed, wrote, done = context.Event(), context.Event(), context.Event()
    child = context.Process(target=_write_after_the_parent_closed, args=(store, closed, wrote, done))
    child.start()
    store.close()
    closed.set()
    assert wrote.wait(60)
    seen = subprocess.run([sys.executable, "-c", "import sys, kenning; s = kenning.open_store(sys.argv[1]); "
                           "print(s.count()); s.close()", str(tmp_path / "store")],
                          capture_output=True, text=True, timeout=120)
    done.set()
    child.join(60)
    assert seen.stdout.strip() == "2", seen.stderr
    reopened = kenning.open_store(tmp_path / "store")
    try:
        assert reopened.count() == 2 and reopened.check()["problems"] == []
    finally:
        reopened.close()


FORK_AND_EXIT = """
import os, sys
for extra in ("onnxruntime", "openvino", "sentence_transformers", "torch"):
    sys.modules[extra] = None  # a lexical install: a forked child of a process that loaded onnxruntime
    # hangs in onnxruntime's own exit handlers, unless it ends with os._exit as multiprocessing's do
import kenning

store = kenning.open_store(sys.argv[1])
store.write("the auth service listens on port 8443", scopes=["ops"])
pid = os.fork()
if pid == 0:  # a worker that reads, then ends as a program does (finalizers, exit handlers)
    print("child", store.count(), flush=True)
    sys.exit(0)
os.waitpid(pid, 0)
written = store.write("the payments worker retries every 30 seconds", scopes=["ops"])
print("parent", written.status, store.count(), store.search("payments worker", mode="bm25").hits[0].id == written.id)
store.close()
"""


@pytest.mark.slow
def test_a_forked_child_ending_normally_leaves_its_parents_store_working(tmp_path):
    """On PostgreSQL the child's copies of the parent's pooled connections were the parent's own
    sessions: the child's exit ended them, and the parent's next call failed."""
    import subprocess
    import sys

    script = tmp_path / "fork_and_exit.py"
    script.write_text(FORK_AND_EXIT, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "store")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["child 1", "parent committed 2 True"], done.stdout + done.stderr[-2000:]
