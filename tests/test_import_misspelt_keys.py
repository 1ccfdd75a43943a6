"""An import line whose key reads as a misspelt field ("scope" for ``scopes``) is refused, naming
the field meant, and nothing is imported. Ignored, it sent the memory to the default scope
``imported`` without a word (a user's `{"content": ..., "scope": "projects:x"}`). The keys
kenning's own ``show --json`` adds are still read past, so its output imports as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import kenning
from kenning.errors import InvalidInput


@pytest.mark.parametrize("record, meant", [
    ({"content": "The QA port is 9555", "scope": "projects:x"}, "scopes"),
    ({"content": "The QA port is 9555", "categroy": "ambient"}, "category"),
    ({"conten": "The QA port is 9555"}, "content"),
])
def test_a_misspelt_key_is_refused_and_nothing_is_written(tmp_path, record, meant):
    with kenning.open_store(tmp_path / "s") as store:
        ok = {"content": "The staging port is 9443", "scopes": ["projects:x"]}
        with pytest.raises(InvalidInput, match=rf"record 2: unknown key '\w+': did you mean '{meant}'"):
            store.import_checked([ok, record])
        assert store.list(auto_scope=False) == []


def test_show_json_output_still_imports(tmp_path):
    with kenning.open_store(tmp_path / "a") as a:
        written = a.write("The staging port is 9443", scopes=["projects:x"])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "KENNING_ENCODER": "none"}
    shown = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(tmp_path / "a"), "show",
                            written.id, "--json"], capture_output=True, text=True, env=env, timeout=120, check=True)
    record = json.loads(shown.stdout)
    assert {"verification", "version", "verification_note", "summary"} <= record.keys()
    with kenning.open_store(tmp_path / "b") as b:
        report = b.import_checked([record])
        assert [line.status for line in report.lines] == ["committed"]
        assert b.get(written.id).scopes == ["projects:x"]


def test_the_cli_says_it_in_one_line(tmp_path):
    lines = tmp_path / "bad.jsonl"
    lines.write_text(json.dumps({"content": "The QA port is 9555", "scope": "projects:x"}) + "\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "KENNING_ENCODER": "none"}
    done = subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(tmp_path / "s"), "import", str(lines)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert "bad.jsonl:1: unknown key 'scope': did you mean 'scopes'?; nothing was imported" in " ".join(done.stderr.split())
