"""The CLI through typer's runner, and once as a real subprocess."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from kenning.cli import app

runner = CliRunner()


@pytest.fixture
def cli(tmp_path):
    store_dir = str(tmp_path / "store")

    def invoke(*args):
        return runner.invoke(app, ["--store", store_dir, *args])

    return invoke


def _json(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_write_search_show_update_remove_restore(cli):
    written = _json(cli("write", "The auth service listens on port 8443", "--scope", "projects:auth", "--json"))
    mid = written["id"]
    assert written["status"] == "committed"
    found = _json(cli("search", "auth port", "--json"))
    assert found["hits"][0]["id"] == mid and found["hits"][0]["relevance"] == "high"
    assert found["mode"] == "hybrid" and found["legs_run"] in (["keyword", "bm25", "vector"], ["bm25"])
    assert _json(cli("show", mid, "--json"))["content"].startswith("The auth service")
    assert _json(cli("update", mid, "--text", "The auth service listens on port 9443", "--json"))["content"].endswith("9443")
    assert [m["id"] for m in _json(cli("list", "--scope", "projects:auth", "--json"))] == [mid]
    assert _json(cli("remove", mid, "--reason", "moved", "--json"))["reason"] == "moved"
    assert _json(cli("search", "auth port", "--json"))["hits"] == []
    assert [t["memory"]["id"] for t in _json(cli("tombstones", "--json"))] == [mid]
    assert _json(cli("restore", mid, "--json"))["id"] == mid


def test_tables_without_json(cli):
    cli("write", "Alice prefers tabs over spaces", "--scope", "people:alice")
    result = cli("search", "tabs")
    assert result.exit_code == 0 and "Alice" in result.stdout and "1 hit ·" in result.stdout
    assert "tabs" in cli("list").stdout


@pytest.mark.parametrize("args,message", [
    (["write", "   ", "--scope", "x"], "empty"),
    (["write", "text", "--scope", "a\x01b"], "control"),
    (["search", ""], "empty"),
    (["search", "x", "--limit", "0"], "between 1 and 50"),
    (["search", "x", "--mode", "fuzzy"], "mode"),
    (["show", "01NOPE"], "no memory"),
    (["remove", "01NOPE", "--reason", "r"], "no memory"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, message):
    assert cli("write", "a memory so that the store exists", "--scope", "x").exit_code == 0
    result = cli(*args)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_import_all_or_nothing(cli, tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text('{"text": "alpha memory"}\n\n{"content": "beta memory", "scopes": ["s"], "id": "b1"}\n')
    assert _json(cli("import", str(good), "--json"))["committed"] == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "gamma memory"}\n{"text": "delta"\n')
    result = cli("import", str(bad))
    assert result.exit_code == 2 and "bad.jsonl:2" in result.stderr and "nothing was imported" in result.stderr
    bad.write_text('{"text": "gamma memory"}\n{"text": ""}\n')
    assert "bad.jsonl:2" in cli("import", str(bad)).stderr
    assert len(_json(cli("list", "--json"))) == 2


def test_every_command_has_an_example_in_its_help(cli):
    for command in ("write", "search", "show", "list", "update", "remove", "restore", "tombstones", "import"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Example: kenning" in result.stdout, command


def test_real_subprocess(tmp_path):
    env = {**os.environ, "KENNING_HOME": str(tmp_path / "home")}
    cmd = [sys.executable, "-m", "kenning.cli"]
    subprocess.run([*cmd, "write", "subprocess memory about kites", "--scope", "x"], env=env, check=True,
                   capture_output=True)
    done = subprocess.run([*cmd, "search", "kites", "--mode", "bm25", "--json"], env=env, check=True,
                          capture_output=True, text=True)
    assert json.loads(done.stdout)["hits"][0]["snippet"] == "subprocess memory about kites"
    failed = subprocess.run([*cmd, "search", " "], env=env, capture_output=True, text=True)
    assert failed.returncode == 2 and failed.stderr.startswith("error:")


@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_a_superseded_hit_says_so_and_follows_what_replaced_it(cli, mode):
    old = _json(cli("write", "The production database is hosted on pg-prod-1", "--scope", "p", "--json"))["id"]
    new = _json(cli("write", "The production database moved to pg-prod-2 last quarter", "--scope", "p",
                    "--link", f"supersedes:{old}", "--json"))["id"]
    shown = cli("search", "production database host", "--mode", mode, "--expand-top")
    lines = shown.stdout.splitlines()
    assert shown.exit_code == 0 and lines[1].startswith(f" 1. {new}") and lines[3].startswith(f" 2. {old}")
    assert f"superseded by {new}" in lines[3] and "high" not in lines[3]
    assert "pg-prod-1" not in "\n".join(lines[5:])  # the old text is never inlined as the answer


def test_a_hit_the_user_recently_rejected_says_so(cli):
    mid = _json(cli("write", "Deploys run through deploy.sh at the repository root", "--scope", "ops", "--json"))["id"]
    cli("record-use", mid, "--outcome", "contradicted", "--note", "moved to CI")
    [line] = [x for x in cli("search", "deploys", "--mode", "bm25").stdout.splitlines() if mid in x]
    assert "recently contradicted" in line  # --json carried it, the table said nothing


@pytest.mark.embeddings  # hybrid's bm25 leg runs with feedback beside the vector leg; without it, plain fusion
def test_why_says_a_hit_holding_none_of_the_words_was_found_by_feedback(cli):
    cli("write", "The billing service uses Adyen for payments", "--scope", "p")
    cli("write", "The auth service listens on port 8443", "--scope", "p")
    lines = cli("search", "billing payments", "--mode", "hybrid", "--why").stdout.splitlines()
    assert lines[0].endswith("· legs keyword, bm25, vector (bm25 with feedback)")  # its scores are not bm25 mode's
    auth = lines.index(next(line for line in lines if "auth service" in line))
    assert "bm25 #" in lines[auth + 1]  # found through a feedback word ("service"), not the query's own
    assert "holds none of the query's words (bm25 found it by feedback words, which the query's best matches hold: " \
           "service" in lines[auth + 1]


def test_an_empty_list_or_search_names_auto_scope_when_it_hid_the_matches(tmp_path):
    """Inside repository a, memories written in repository b are hidden (auto-scope): an explicit
    --scope projects:b finds nothing, and says why instead of 'no such memory'."""
    store = str(tmp_path / "store")
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        subprocess.run(["git", "init", "-q"], cwd=tmp_path / name, check=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GIT_CEILING_DIRECTORIES": str(tmp_path)}

    def kenning(cwd, *args):
        return subprocess.run([sys.executable, "-m", "kenning.cli", "--store", store, *args], cwd=tmp_path / cwd,
                              capture_output=True, text=True, env=env, timeout=120)

    assert kenning("b", "write", "Repo B uses poetry for packaging", "--scope", "projects:b").returncode == 0
    listed = kenning("a", "list", "--scope", "projects:b")
    assert listed.returncode == 0 and "hidden by auto-scope (--no-auto-scope lists them)" in listed.stdout
    found = kenning("a", "search", "poetry", "--scope", "projects:b", "--mode", "bm25")
    assert found.returncode == 0 and "auto_scope hides them" in found.stdout
    assert "Repo B uses poetry" in kenning("a", "search", "poetry", "--no-auto-scope", "--mode", "bm25").stdout


def test_a_listing_cut_at_its_limit_says_more_match(tmp_path):
    """`kenning list --json` (what `kenning import` reads back) and `tombstones` held the newest 50 and said
    nothing of the rest, so a listing piped into an import as a copy lost every older memory in silence.
    The JSON stays a list of memories; a note on stderr (and the table's first line) says more match."""
    import kenning

    store = tmp_path / "store"
    with kenning.open_store(store) as s:
        ids = s.import_records([{"content": f"The pump station {i} is serviced every {i + 2} weeks", "scopes": ["ops"]}
                                for i in range(6)])
        for mid in ids[:3]:
            s.remove(mid, reason="decommissioned")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)

    def run(*args):
        done = subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args], capture_output=True,
                              text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return done

    for command, noun in (("list", "memories"), ("tombstones", "removed memories")):
        cut, whole = run(command, "--limit", "2", "--json"), run(command, "--limit", "3", "--json")
        assert len(json.loads(cut.stdout)) == 2 and "more match (--limit to list more)" in cut.stderr
        assert len(json.loads(whole.stdout)) == 3 and whole.stderr == ""
        assert run(command, "--limit", "2").stdout.startswith(f"2 {noun}, ") and \
            "; more match (--limit to list more)\n" in run(command, "--limit", "2").stdout.splitlines(True)[0]
        assert "more match" not in run(command, "--limit", "3").stdout
