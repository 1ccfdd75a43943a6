"""The lifecycle commands through typer's runner, from inside a real temporary git repository."""

from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from kenning.cli import app

runner = CliRunner()


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("PORT = 8443\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    monkeypatch.chdir(repo)
    store_dir = str(tmp_path / "store")

    def invoke(*args):
        return runner.invoke(app, ["--store", store_dir, *args])

    return invoke


def as_json(result, exit_code=0):
    assert result.exit_code == exit_code, result.output
    return json.loads(result.stdout)


def test_write_options_gates_and_pending_round_trip(cli):
    refused = as_json(cli("write", "We are currently migrating to postgres", "--scope", "db", "--json"), exit_code=1)
    assert (refused["status"], refused["gate"], refused["override"]) == ("transient_warning", "durability", "acknowledge_transient")
    assert as_json(cli("write", "We are currently migrating to postgres", "--scope", "db", "--ack-transient",
                       "--json"))["status"] == "committed"
    claimed = as_json(cli("write", "The port is set in src/app.py", "--scope", "x", "--claim", "src/app.py::PORT=8443",
                          "--json"))
    assert claimed["status"] == "committed"
    newer = as_json(cli("write", "The port is configured in the src/app.py module", "--scope", "x",
                        "--link", f"supersedes:{claimed['id']}:reworded", "--json"))
    shown = as_json(cli("show", claimed["id"], "--json"))
    assert shown["reverse_links"][0]["source"] == newer["id"] and shown["claims"] == [{"spec": "src/app.py::PORT=8443"}]
    assert "staleness_verdict" in shown and shown["verification"]["status"] == "never"

    pending = as_json(cli("write", "The user prefers tabs over spaces", "--scope", "user", "--category",
                          "user-inference", "--json"))
    assert pending["status"] == "pending"
    assert [p["pending_id"] for p in as_json(cli("pending", "--json"))] == [pending["pending_id"]]
    assert as_json(cli("confirm", pending["pending_id"], "--json"))["status"] == "committed"
    assert as_json(cli("cancel", pending["pending_id"], "--json"), exit_code=1)["status"] == "not_found"
    gone = cli("cancel", pending["pending_id"])  # a script can tell a cancel that dropped nothing
    assert gone.exit_code == 1 and "no pending write has this id" in gone.stdout, gone.output
    staged = as_json(cli("write", "The user prefers dark mode", "--scope", "user", "--category", "user-inference",
                         "--json"))
    assert as_json(cli("cancel", staged["pending_id"], "--json"))["status"] == "cancelled"
    assert "not_found" in cli("confirm", pending["pending_id"]).stdout


def test_verify_record_use_search_options_scopes_and_health(cli):
    mid = as_json(cli("write", "The service port is 8443, see src/app.py", "--scope", "ops", "--json"))["id"]
    verified = as_json(cli("verify", mid, "--verified-path", "src/app.py", "--note", "read it", "--json"))
    assert verified["status"] == "verified" and verified["verified_paths"] == ["src/app.py"]
    failed = cli("verify", mid, "--verified-path", "gone.py")
    assert failed.exit_code == 2 and "gone.py" in failed.stderr
    absolute = cli("verify", mid, "--verified-path", "/etc/app.py")  # no claim was given: say what was
    assert absolute.exit_code == 2 and "verified path '/etc/app.py' is absolute" in absolute.stderr, absolute.stderr
    assert cli("list", "--scope", "nope:x").stdout.strip() == "no memories with scope nope:x"
    blank = cli("verify", mid, "--verified-path", "")
    assert blank.exit_code == 2 and "a verified path is empty" in blank.stderr, blank.stderr
    assert as_json(cli("record-use", mid, "--outcome", "ignored", "--json"))["status"] == "recorded"
    hit = as_json(cli("search", "service port", "--mode", "bm25", "--expand-top", "--json"))["hits"][0]
    assert hit["id"] == mid and hit["content"].startswith("The service port") and hit["recent_negative_outcomes"]
    assert as_json(cli("search", "service port", "--mode", "bm25", "--no-auto-scope", "--json"))["hits"]
    # each CLI run is its own session: the memory predates the previous run's activity
    assert as_json(cli("search", "service port", "--mode", "bm25", "--since-prior-session", "--json"))["hits"] == []
    overview = as_json(cli("scopes", "--json"))
    assert overview["scopes"] == {"ops": 1} and overview["total"] == 1
    assert as_json(cli("rename-scope", "ops", "operations", "--json"))["changed"] == 1
    assert as_json(cli("list", "--no-auto-scope", "--json"))[0]["scopes"] == ["operations"]
    report = as_json(cli("health", "--json"))
    assert report["total"] == 1 and report["curation_pending"]["never_verified"] == 0
    table = cli("health")
    assert table.exit_code == 0 and "curation:" in table.stdout


def test_verify_with_the_version_read_refuses_a_memory_changed_since(cli):
    mid = as_json(cli("write", "The service port is 8443, see src/app.py", "--scope", "ops", "--json"))["id"]
    read = as_json(cli("show", mid, "--json"))["version"]
    as_json(cli("update", mid, "--text", "The service port is 9443, see src/app.py", "--json"))
    # the CLI had no --version: a check of the 8443 text was stamped on the 9443 one
    stale = cli("verify", mid, "--version", read)
    assert stale.exit_code == 1 and f"not verified: {mid} changed since version {read}" in stale.stdout
    assert as_json(cli("verify", mid, "--version", read, "--json"), exit_code=1)["status"] == "stale"
    assert as_json(cli("show", mid, "--json"))["verification"]["status"] == "never"
    current = as_json(cli("show", mid, "--json"))["version"]
    assert as_json(cli("verify", mid, "--version", current, "--json"))["status"] == "verified"


def test_lifecycle_commands_have_help_with_an_example(cli):
    for command in ("verify", "record-use", "confirm", "cancel", "pending", "scopes", "rename-scope", "health"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Example: kenning" in result.stdout, command


def test_conflicts_are_listed_and_settled_at_the_command_line(cli):
    old = as_json(cli("write", "The staging database host is pg-stage-2", "--scope", "db", "--json"))["id"]
    new = as_json(cli("write", "The staging database host is pg-stage-9 since the move", "--scope", "db",
                      "--link", f"contradicts:{old}", "--json"))["id"]
    assert "`kenning resolve`" in cli("health").stdout
    (pair,) = as_json(cli("conflicts", "--no-auto-scope", "--json"))
    assert {pair["id"], pair["other_id"]} == {old, new} and pair["summary"] and pair["other_summary"]
    assert f"kenning resolve {pair['id']} {pair['other_id']}" in cli("conflicts", "--no-auto-scope").stdout
    for args, said in ((), "give --keep ID"), (("--keep-both",), "needs --note"), (("--keep", "nope"), "--keep needs"):
        refused = cli("resolve", old, new, *args)
        assert refused.exit_code == 2 and said in refused.stderr, refused.output
    settled = as_json(cli("resolve", old, new, "--keep", new, "--json"))
    assert (settled["id"], settled["other_id"]) == (new, old)
    assert as_json(cli("conflicts", "--no-auto-scope", "--json")) == []
    again = cli("resolve", old, new, "--keep", new)
    assert again.exit_code == 2 and "`kenning conflicts` lists the pairs" in again.stderr, again.stderr
    assert as_json(cli("show", new, "--json"))["links"][0]["kind"] == "supersedes"


def test_a_link_of_an_unknown_kind_names_the_option_and_the_kinds(cli):
    target = as_json(cli("write", "The auth service listens on port 8443", "--scope", "x", "--json"))["id"]
    result = cli("write", "The auth service listens on port 9443", "--scope", "x", "--link", f"supersede:{target}")
    assert result.exit_code == 2
    assert result.stderr.strip() == (f"error: --link 'supersede:{target}': unknown KIND 'supersede'; "
                                     "KIND is supersedes, contradicts, extends or depends_on")
    assert [m["id"] for m in as_json(cli("list", "--no-auto-scope", "--json"))] == [target]  # nothing was written
