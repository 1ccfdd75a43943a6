"""The times an import record carries (created, updated, last_verified_at), in every form a file holds them.

A date-only or zone-less time is UTC, as everywhere in kenning: it was naive, and comparing it with
now refused the whole import with "TypeError: can't compare offset-naive and offset-aware datetimes".
An offset is converted to UTC; a time an offset takes outside UTC's calendar is refused naming it (it
was an OverflowError or a PydanticSerializationError); a record changed before it was written is
refused, and a default (now) never lands on the wrong side of the one time a record gives.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

import kenning
from kenning.errors import InvalidInput
from clocks import Clock

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=timezone.utc)
TEXT = "The billing export runs nightly at 02:00"


@pytest.fixture
def store(tmp_path):
    with kenning.open_store(tmp_path / "store", clock=Clock(NOW)) as s:
        yield s


@pytest.mark.parametrize("given,stored", [
    ("2026-11-30", datetime(2026, 11, 30, tzinfo=timezone.utc)),
    ("2026-11-30T08:00:00", datetime(2026, 11, 30, 8, tzinfo=timezone.utc)),
    ("2026-11-30T08:00:00+05:45", datetime(2026, 11, 30, 2, 15, tzinfo=timezone.utc)),
    ("2026-11-30T08:00:00-03:30", datetime(2026, 11, 30, 11, 30, tzinfo=timezone.utc)),
    ("2024-02-29T23:59:59Z", datetime(2024, 2, 29, 23, 59, 59, tzinfo=timezone.utc)),
    ("0001-01-01", datetime(1, 1, 1, tzinfo=timezone.utc)),
    (0, datetime(1970, 1, 1, tzinfo=timezone.utc)),
], ids=str)
@pytest.mark.parametrize("key", ["created", "last_verified_at"])
def test_a_time_is_stored_in_utc_whatever_its_form(store, key, given, stored):
    [mid] = store.import_records([{"content": TEXT, key: given}])
    memory = store.get(mid)
    assert getattr(memory, key) == stored and getattr(memory, key).tzinfo == timezone.utc
    assert memory.updated >= memory.created
    assert store.show(mid)["verification"]["age_days"] >= 0


@pytest.mark.parametrize("given", ["0001-01-01T00:00:00+05:45", "9999-12-31T23:59:59-03:30"])
@pytest.mark.parametrize("key", ["created", "updated", "last_verified_at"])
def test_a_time_outside_utcs_calendar_is_refused_naming_it(store, key, given):
    with pytest.raises(InvalidInput, match=f"^record 1: {key} {re.escape(given)} is outside UTC's calendar"):
        store.import_records([{"content": TEXT, key: given}])
    assert store.count() == 0


def test_updated_before_created_is_refused_and_a_default_keeps_their_order(store):
    with pytest.raises(InvalidInput, match="^record 1: updated 2026-11-01T08:00:00.000000Z is before created "
                                           "2026-11-30T08:00:00.000000Z"):
        store.import_records([{"content": TEXT, "created": "2026-11-30T08:00Z", "updated": "2026-11-01T08:00Z"}])
    assert store.count() == 0
    only_updated, null_created, ahead = store.import_records([
        {"content": TEXT, "updated": "2026-01-05T10:00:00Z"},  # created was now, eleven months after it
        {"content": "The reports job writes to the archive bucket", "created": None},
        {"content": "The ledger sync runs hourly", "created": (NOW + timedelta(hours=6)).isoformat()}])
    first = store.get(only_updated)
    assert first.created == first.updated == datetime(2026, 1, 5, 10, tzinfo=timezone.utc)
    assert store.get(null_created).created == NOW  # null is no time given, not a missing field
    later = store.get(ahead)  # another machine's clock a little ahead: updated was now, before it
    assert later.updated == later.created == NOW + timedelta(hours=6)


def test_the_cli_imports_a_date_only_file(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    lines = json.dumps({"content": TEXT, "scopes": ["ops"], "created": "2026-11-30"}) + "\n"
    done = subprocess.run([sys.executable, "-m", "kenning", "--store", str(tmp_path / "s"), "import", "-", "--json"],
                          input=lines, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr  # was: exit 2, "bad argument to import_records: TypeError: ..."
    listed = subprocess.run([sys.executable, "-m", "kenning", "--store", str(tmp_path / "s"), "list", "--json"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert [m["created"] for m in json.loads(listed.stdout)] == ["2026-11-30T00:00:00.000000Z"]
