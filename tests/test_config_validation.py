"""`kenning config set` (and Store.configure, where the check lives) refuses values the search cannot
use: one line naming the key, the value and what is accepted, exit 2, nothing stored. A store whose
config already holds such a value still opens. Real stores in tmp_path, the real CLI in a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kenning
from kenning.errors import InvalidInput
from kenning.store.db import Database

pytestmark = pytest.mark.slow  # real processes


def kenning_cli(store: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1", **(env or {})}
    environ.pop("KENNING_HOME", None)
    return subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args], capture_output=True,
                          text=True, env=environ, timeout=300, input="")


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        s.write("The gateway terminates TLS for the auth service", scopes=["x"])
    return path


def stored_config(path: Path) -> dict:
    with kenning.open_store(path) as s:
        return s.config.model_dump(mode="json")


@pytest.mark.parametrize("key,value,accepted", [
    ("bm25_k1", "0", "above 0"),
    ("bm25_k1", "1000", "10"),
    ("bm25_b", "7", "0 to 1"),
    ("bm25_b", "-0.1", "0 to 1"),
    ("vector_floor", "5", "-1 to 1"),
    ("leg_depth", "0", "from 1 to 100,000"),
    ("leg_depth", "99999999999999999999", "from 1 to 100,000"),  # else every hybrid search overflowed
    ("leg_depth", "2.5", "whole number"),
    ("rrf_k", "0", "above 0"),
    ("evidence_alpha", "1.5", "0 to 1"),
    ("evidence_cos_floor", "1", "-1"),
    ("evidence_power", "0", "above 0"),
    ("verification_stale_days", "0", "from 1 to 36,500"),
    ("verification_stale_days", "1000000000", "from 1 to 36,500"),  # else health and scopes overflowed
    ("bm25_b", "NaN", "0 to 1"),
    ("bm25_k1", "true", "a number"),
])
def test_out_of_range_values_are_refused_in_one_line(store, key, value, accepted):
    before = stored_config(store)
    result = kenning_cli(store, "config", "set", key, "--", value) if value.startswith("-") else \
        kenning_cli(store, "config", "set", key, value)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert key in lines[0] and value.lower() in lines[0].lower() and accepted in lines[0], lines[0]
    assert stored_config(store) == before


def test_in_range_values_still_pass(store):
    for key, value in (("bm25_k1", "1.5"), ("bm25_b", "0"), ("vector_floor", "0.2"), ("leg_depth", "50"),
                       ("evidence_cos_floor", "-1"), ("vector_floor", "null")):
        result = kenning_cli(store, "config", "set", key, value)
        assert result.returncode == 0, result.stderr
    config = stored_config(store)
    assert (config["bm25_k1"], config["bm25_b"], config["leg_depth"], config["vector_floor"]) == (1.5, 0.0, 50, None)


def test_a_negative_number_is_a_value_not_an_option(store):
    refused = kenning_cli(store, "config", "set", "rrf_k", "-60")
    assert refused.returncode == 2
    assert "rrf_k" in refused.stderr and "-60" in refused.stderr and "No such option" not in refused.stderr
    assert "above 0" in refused.stderr, refused.stderr
    ok = kenning_cli(store, "config", "set", "evidence_cos_floor", "-0.5")
    assert ok.returncode == 0 and ok.stdout.strip() == "evidence_cos_floor = -0.5", ok.stdout + ok.stderr


def test_a_partial_weights_table_is_merged(store):
    result = kenning_cli(store, "config", "set", "weights", '{"keyword": 0.5}')
    assert result.returncode == 0, result.stderr
    assert json.loads(kenning_cli(store, "config", "get", "weights", "--json").stdout) == \
        {"keyword": 0.5, "bm25": 1.0, "vector": 1.0}
    assert "merged" in kenning_cli(store, "config", "set", "--help").stdout


@pytest.mark.parametrize("value,says", [
    ('{"keywrd": 0.5}', "keywrd"),
    ('{"bm25": -1}', "-1"),
    ('{"bm25": "heavy"}', "heavy"),
    ('{"keyword": 0, "bm25": 0, "vector": 0}', "above 0"),
    ('[1, 2]', "table"),
])
def test_bad_weights_are_refused(store, value, says):
    result = kenning_cli(store, "config", "set", "weights", value)
    assert result.returncode == 2 and "weights" in result.stderr and says in result.stderr, result.stderr
    assert stored_config(store)["weights"] == {"keyword": 0.2, "bm25": 1.0, "vector": 1.0}


def test_an_unknown_model_is_refused_with_the_known_ones(store, tmp_path):
    models = tmp_path / "models"
    (models / "mini64").mkdir(parents=True)
    (models / "mini64" / "config.json").write_text("{}")
    env = {"KENNING_MODELS_DIR": str(models)}
    result = kenning_cli(store, "config", "set", "model", "all-MiniLM-L6-v3", env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert "all-MiniLM-L6-v3" in line and "all-MiniLM-L6-v2" in line and "mini64" in line and "null" in line, line
    assert stored_config(store)["model"] is None
    assert kenning_cli(store, "config", "set", "model", "mini64", env=env).returncode == 0
    assert kenning_cli(store, "config", "set", "model", "null", env=env).returncode == 0
    assert kenning_cli(store, "config", "set", "model", "all-MiniLM-L6-v2", env=env).returncode == 0


def test_the_library_refuses_the_same(store):
    with kenning.open_store(store) as s:
        with pytest.raises(InvalidInput, match="bm25_b"):
            s.configure(bm25_b=7)
        with pytest.raises(InvalidInput, match="leg_depth"):
            s.configure(persist=False, leg_depth=0)
        assert s.configure(persist=False, weights={"vector": 2.0}).weights == {"keyword": 0.2, "bm25": 1.0,
                                                                              "vector": 2.0}
        assert s.config.bm25_b == 0.5 and s.config.leg_depth == 100


def test_a_store_already_holding_a_bad_value_still_opens(store):
    with kenning.open_store(store) as s:
        raw = json.loads(s.db.get_meta("config") or "{}")
        raw.update(bm25_b=7.0, leg_depth=0, model="all-MiniLM-L6-v3")
        with s.db.transaction() as c:
            Database.set_meta(c, "config", json.dumps(raw))
    assert kenning_cli(store, "config", "get", "bm25_b").stdout.strip() == "7.0"
    assert kenning_cli(store, "search", "gateway", "--mode", "bm25").returncode == 0
    fixed = kenning_cli(store, "config", "set", "bm25_b", "0.5")  # the other bad values do not block a fix
    assert fixed.returncode == 0, fixed.stderr
    assert kenning_cli(store, "config", "set", "model", "null").returncode == 0
    assert kenning_cli(store, "config", "set", "leg_depth", "0").returncode == 2  # a new bad value is not
