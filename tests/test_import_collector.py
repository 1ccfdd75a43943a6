"""An import runs with Python's cyclic collector off (memory/collector.py) and leaves it as it found it:
on again after the import, after a refused one, after two imports overlapping in threads, and
still off when the caller had turned it off."""

from __future__ import annotations

import gc
import threading

import pytest

import kenning
from kenning.errors import InvalidInput
from kenning.memory import collector


def _records(n: int, prefix: str = "r") -> list[dict]:
    return [{"id": f"{prefix}{i}", "content": f"nightly deploy {i} warms the cache"} for i in range(n)]


@pytest.fixture(autouse=True)
def collector_on():
    assert gc.isenabled()
    yield
    gc.enable()


def test_the_collector_is_off_while_an_import_writes_and_on_after(tmp_path):
    during: list[bool] = []
    with kenning.open_store(tmp_path / "s") as store:
        store.import_records(_records(30), batch_size=10, progress=lambda done: during.append(gc.isenabled()))
        assert during == [False, False, False]
        assert gc.isenabled()
        with pytest.raises(InvalidInput):
            store.import_records([*_records(3, "x"), {"content": " "}])
        assert gc.isenabled()
        fresh = [{"id": f"g{i}", "content": f"the {word} service listens on port {i}"}
                 for i, word in enumerate(["billing", "search", "mail", "auth", "queue"])]
        report = store.import_checked(fresh, batch_size=2,
                                      progress=lambda done: during.append(gc.isenabled()))
        assert [line.status for line in report.lines] == ["committed"] * 5
        assert during[3:] == [False] * 3 and gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off(tmp_path):
    gc.disable()
    with kenning.open_store(tmp_path / "s") as store:
        store.import_records(_records(10))
    assert not gc.isenabled()


def test_overlapping_pauses_restore_the_collector_once_the_last_ends():
    inside, release = threading.Event(), threading.Event()

    def hold():
        with collector.paused():
            inside.set()
            release.wait(10)

    other = threading.Thread(target=hold)
    other.start()
    inside.wait(10)
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread's import still runs
    release.set()
    other.join(10)
    assert gc.isenabled()
