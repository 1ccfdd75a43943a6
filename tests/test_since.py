"""A ``since`` (episodes search on the library and the CLI, Store.events) at the edges of the calendar.

Within a day of year 1 or 9999, an offset takes a time outside UTC's calendar: converting it raised
OverflowError, a traceback at the command line. Such a time is refused naming it, as an import's times
are (store/plain.py in_utc reads both: a since was clamped to the calendar's edge while an import
refused), and anything that is not a time is one InvalidInput line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone

import pytest

import kenning
from kenning.errors import InvalidInput
from kenning.memory.episodes import Episodes
from clocks import ticking

START = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)

EVERYTHING = ["0001-01-01", "1969-12-31T23:59:59Z", "2026-11-30", date(2026, 11, 30),
              "2026-11-30T13:44:00+05:45", "2026-11-30T04:29:00-03:30", "2026-11-30t08:00:00z"]
NOTHING = ["9999-12-31", "2026-11-30T13:46:00+05:45", "2026-11-30T04:31-03:30",
           datetime.max]
OUTSIDE_UTC = ["0001-01-01T00:00:00+05:45", "9999-12-31T23:59:59-03:30",
               datetime(1, 1, 1, 3, tzinfo=timezone(timedelta(hours=4)))]
NOT_TIMES = ["", "  ", "garbage", "7d", "yesterday", "1700000000", "10000-01-01", "2023-02-29", "2026-11-30T25:00", 5]


@pytest.fixture
def journal(tmp_path):
    store = kenning.open_store(tmp_path / "store", clock=ticking(START), cwd=tmp_path)
    journal = Episodes(store)
    journal.write("tried the BM25 sweep", takeaway="k1=1.5 hurts scifact")
    store.log_event("note", payload={"what": "a caller's event"})
    yield journal
    store.close()


@pytest.mark.parametrize("since", EVERYTHING, ids=str)
def test_a_since_before_the_entry_finds_it(journal, since):
    assert len(journal.search(since=since)) == 1
    assert len(journal.store.events(since=since, kinds=["note"])) == 1


@pytest.mark.parametrize("since", NOTHING, ids=str)
def test_a_since_after_the_entry_finds_nothing(journal, since):
    assert journal.search(since=since) == []
    assert journal.store.events(since=since, kinds=["note"]) == []


@pytest.mark.parametrize("since", NOT_TIMES, ids=str)
def test_what_is_not_a_time_is_one_clear_error(journal, since):
    for call in (journal.search, journal.store.events):
        with pytest.raises(InvalidInput, match="^since must be an ISO-8601 time such as 2026-11-30T08:00:00Z, got "):
            call(since=since)


@pytest.mark.parametrize("since", OUTSIDE_UTC, ids=str)
def test_a_since_outside_utcs_calendar_is_refused_naming_it_as_an_imports_time_is(journal, since):
    given = since if isinstance(since, str) else since.isoformat()
    for call in (journal.search, journal.store.events):
        with pytest.raises(InvalidInput, match=f"^since {re.escape(given)} is outside UTC's calendar \\(years 1 to "
                                               "9999\\); give it in UTC$"):
            call(since=since)
    with pytest.raises(InvalidInput, match=f"^record 1: created {re.escape(given)} is outside UTC's calendar"):
        journal.store.import_records([{"content": "The billing export runs nightly at 02:00", "created": since}])


def test_the_cli_refuses_a_since_outside_utcs_calendar_in_one_line(tmp_path):
    store = tmp_path / "store"
    with kenning.open_store(store, clock=ticking(datetime.now(timezone.utc) - timedelta(days=1)), cwd=tmp_path) as s:
        Episodes(s).write("tried the BM25 sweep", takeaway="k1=1.5 hurts scifact")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)

    def search(since):
        return subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), "episodes", "search",
                               "--all-worktrees", "--json", "--since", since],
                              capture_output=True, text=True, env=env, timeout=300)

    first, edge, bad = search("0001-01-01"), search("0001-01-01T00:00:00+05:45"), search("7d")
    assert first.returncode == 0 and json.loads(first.stdout)["count"] == 1, first
    assert edge.returncode == 2 and edge.stdout == "", edge  # was: OverflowError, exit 1
    assert edge.stderr == ("error: since 0001-01-01T00:00:00+05:45 is outside UTC's calendar (years 1 to 9999); "
                           "give it in UTC\n")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == "error: since must be an ISO-8601 time such as 2026-11-30T08:00:00Z, got '7d'\n"
