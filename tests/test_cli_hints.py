"""The CLI's gate refusals speak CLI: `kenning restore X`, `--force`, `--ack-transient`, never the
MCP tools' `memory_restore X` / `force=True` (issue: hints in MCP terms). Real `kenning` processes
on a store in tmp_path; the last tests read every hint the gates can give straight from their source."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kenning

pytestmark = pytest.mark.slow  # real processes

PACKAGE = Path(kenning.__file__).resolve().parent
TOOL_TERMS = re.compile(r"=True|=False|\b(?:memory|episode)_[a-z_]+|\w+='|\w+=\"")


def kenning_cli(store: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    env.pop("KENNING_HOME", None)
    if cwd is not None:
        env["GIT_CEILING_DIRECTORIES"] = str(cwd.parent)
    return subprocess.run([sys.executable, "-m", "kenning", "--store", str(store), *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300, input="")


def written_id(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)["id"]


def hint_line(result: subprocess.CompletedProcess) -> str:
    lines = [line for line in result.stdout.splitlines() if line.strip().startswith("hint:")]
    assert len(lines) == 1, result.stdout + result.stderr
    return lines[0]


def assert_cli_terms(text: str) -> None:
    assert not TOOL_TERMS.search(text), text


# ------------------------------------------------------------------ write: the refusals a person meets
def test_previously_removed_hint_names_kenning_restore_and_force(tmp_path):
    store = tmp_path / "s"
    text = "The cache service evicts entries after ten minutes"
    mid = written_id(kenning_cli(store, "write", text, "--scope", "x", "--json"))
    assert kenning_cli(store, "remove", mid, "--reason", "wrong ttl").returncode == 0
    refused = kenning_cli(store, "write", text, "--scope", "x")
    assert refused.returncode == 1 and refused.stdout.startswith("previously_removed")
    hint = hint_line(refused)
    assert f"`kenning restore {mid}`" in hint and "--force" in hint
    assert_cli_terms(hint)
    forced = kenning_cli(store, "write", text, "--scope", "x", "--force")
    assert forced.returncode == 0 and forced.stdout.startswith("committed"), forced.stdout + forced.stderr


def test_duplicate_hint_names_kenning_update_in_plain_and_json(tmp_path):
    store = tmp_path / "s"
    text = "The koala backup keeps 14 daily snapshots"
    mid = written_id(kenning_cli(store, "write", text, "--scope", "x", "--json"))
    hint = hint_line(kenning_cli(store, "write", text, "--scope", "x"))
    assert f"kenning update {mid}" in hint and "--force" in hint
    assert_cli_terms(hint)
    as_json = kenning_cli(store, "write", text, "--scope", "x", "--json")
    out = json.loads(as_json.stdout)
    # the library's machine fields stay as they are; the prose a reader acts on speaks CLI
    assert (as_json.returncode, out["status"], out["override"], out["id"]) == (1, "duplicate", "force", mid)
    assert f"kenning update {mid}" in out["hint"] and "--force" in out["hint"]
    assert_cli_terms(out["hint"])
    assert kenning_cli(store, "write", text, "--scope", "x", "--force").returncode == 0


def test_transient_hint_names_ack_transient_and_says_the_cli_writes_no_episode(tmp_path):
    store = tmp_path / "s"
    refused = kenning_cli(store, "write", "I am going to run the tests now", "--scope", "x")
    assert refused.returncode == 1 and refused.stdout.startswith("transient_warning")
    hint = hint_line(refused)
    assert "--ack-transient" in hint and "episode" in hint and "CLI" in hint
    assert_cli_terms(hint)
    out = json.loads(kenning_cli(store, "write", "I am going to run the tests now", "--scope", "x", "--json").stdout)
    assert out["override"] == "acknowledge_transient" and "--ack-transient" in out["hint"]
    assert_cli_terms(out["hint"])


def test_an_import_refusal_speaks_cli_too(tmp_path):
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps({"content": "I am going to run the tests now", "scopes": ["x"]}) + "\n")
    done = kenning_cli(tmp_path / "s", "import", str(lines))
    refusal = [line for line in done.stdout.splitlines() if "refused" in line]
    assert refusal and "episode" in refusal[0], done.stdout + done.stderr
    assert_cli_terms(refusal[0])
    reported = json.loads(kenning_cli(tmp_path / "s", "import", str(lines), "--json").stdout)
    assert reported["lines"][0]["status"] == "refused" and "--ack-transient" in reported["lines"][0]["reason"]
    assert_cli_terms(reported["lines"][0]["reason"])


def test_user_claim_hint_names_category_option_and_ack_user_claim(tmp_path):
    hint = hint_line(kenning_cli(tmp_path / "s", "write", "The user prefers tabs over spaces", "--scope", "x"))
    assert "--category user-inference" in hint and "--ack-user-claim" in hint
    assert_cli_terms(hint)


def test_scope_mismatch_has_a_cli_override(tmp_path):
    repo = tmp_path / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    store = tmp_path / "s"
    refused = kenning_cli(store, "write", "The bison service uses kafka", "--scope", "projects:warehouse", cwd=repo)
    assert refused.returncode == 1 and refused.stdout.startswith("scope_mismatch"), refused.stdout + refused.stderr
    hint = hint_line(refused)
    assert "--ack-scope-mismatch" in hint and "--force" in hint and "projects:shop" in hint
    assert_cli_terms(hint)
    acked = kenning_cli(store, "write", "The bison service uses kafka", "--scope", "projects:warehouse",
                        "--ack-scope-mismatch", cwd=repo)
    assert acked.returncode == 0 and acked.stdout.startswith("committed"), acked.stdout + acked.stderr
    forced = kenning_cli(store, "write", "The yak service reads from a kafka topic", "--scope", "projects:warehouse",
                         "--force", cwd=repo)
    assert forced.returncode == 0 and forced.stdout.startswith("committed"), forced.stdout + forced.stderr


# ------------------------------------------------------------------ update: a refusal is a status, as write's
def test_update_refusals_speak_cli_and_truncation_can_be_acknowledged(tmp_path):
    """A gate's refusal of an update was an error line and exit 2, which the README keeps for requests that
    were wrong; it is now the status `write` gives a refusal (stdout, exit 1; with --json the same object)."""
    store = tmp_path / "s"
    body = "The billing service sends invoices on the first day of the month. It retries failed charges twice."
    mid = written_id(kenning_cli(store, "write", body, "--scope", "x", "--json"))
    cut = kenning_cli(store, "update", mid, "--text", "The billing service sends invoices on the first day of")
    assert cut.returncode == 1 and cut.stderr == "", cut.stderr
    assert cut.stdout.startswith("truncation_warning") and "--ack-truncation" in cut.stdout, cut.stdout
    assert_cli_terms(cut.stdout)
    transient = kenning_cli(store, "update", mid, "--text", "I am going to run the billing tests now")
    assert transient.returncode == 1 and "--ack-transient" in transient.stdout, transient.stdout
    assert_cli_terms(transient.stdout)
    as_json = kenning_cli(store, "update", mid, "--text", "I am going to run the billing tests now", "--json")
    said = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and said["status"] == "transient_warning" and said["gate"] == "durability"
    assert "--ack-transient" in said["hint"]
    assert json.loads(kenning_cli(store, "show", mid, "--json").stdout)["content"] == body  # nothing written
    acked = kenning_cli(store, "update", mid, "--text", "The billing service sends invoices on the first day of",
                        "--ack-truncation")
    assert acked.returncode == 0 and acked.stdout.startswith("updated"), acked.stdout + acked.stderr


def test_an_update_into_a_user_claim_says_how_to_file_one_since_update_cannot(tmp_path):
    store = tmp_path / "s"
    mid = written_id(kenning_cli(store, "write", "Deploys go through the staging host first", "--scope", "x", "--json"))
    refused = kenning_cli(store, "update", mid, "--text", "The user prefers tabs over spaces")
    assert refused.returncode == 1 and "user_claims" in refused.stdout, refused.stdout + refused.stderr
    for said in ("`kenning write`", "--category user-inference", "`kenning remove`", "--ack-user-claim"):
        assert said in refused.stdout, refused.stdout
    assert_cli_terms(refused.stdout)
    followed = kenning_cli(store, "update", mid, "--text", "The user prefers tabs over spaces", "--category",
                           "user-inference")  # what the old hint said, which update refuses
    assert followed.returncode != 0
    acked = kenning_cli(store, "update", mid, "--text", "The user prefers tabs over spaces", "--ack-user-claim")
    assert acked.returncode == 0 and acked.stdout.startswith("updated"), acked.stdout + acked.stderr


def test_a_sync_refusal_gives_the_gates_hint_in_cli_terms_and_says_sync_passes_no_overrides(tmp_path):
    store, folder = tmp_path / "s", tmp_path / "notes"
    mid = written_id(kenning_cli(store, "write", "The on-call rota changes every Monday at 09:00 UTC", "--scope",
                                 "ops", "--json"))
    assert kenning_cli(store, "export", "--markdown", str(folder)).returncode == 0
    notes = folder / "ops" / "MEMORY.md"
    notes.write_text(notes.read_text().replace("Monday", "Monday, and I am going to run the tests now")
                     + "\nThe user prefers tabs over spaces\n")
    done = kenning_cli(store, "sync", str(folder))
    assert done.returncode == 1, done.stdout + done.stderr
    hints = [line for line in done.stdout.splitlines() if line.startswith("  hint: ")]
    assert len(hints) == 2 and all("Sync itself passes no overrides" in h for h in hints), done.stdout
    assert "--ack-transient" in hints[0] and f"`kenning update {mid}`" in hints[0]
    assert "USER.md" in hints[1] and "--ack-user-claim" in hints[1] and "`kenning write`" in hints[1]
    assert_cli_terms(done.stdout)
    reported = json.loads(kenning_cli(store, "sync", str(folder), "--json").stdout)
    assert [r["override"] for r in reported["refused"]] == ["acknowledge_transient", "acknowledge_user_claim"]
    assert_cli_terms(" ".join(r["hint"] for r in reported["refused"]))


def test_help_describes_the_overrides(tmp_path):
    write_help = kenning_cli(tmp_path / "s", "write", "--help").stdout
    for option in ("--force", "--ack-scope-mismatch", "--ack-transient", "--ack-user-claim"):
        assert option in write_help
    assert "--ack-truncation" in kenning_cli(tmp_path / "s", "update", "--help").stdout


# ------------------------------------------------------------------ every hint the gates can give
ID = "01M917B2M2KXJ5S81BRGP4Y75E"


def _render(node: ast.expr) -> str | None:
    """The text of a hint expression, with an id in place of every interpolated value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else ID for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _render(node.left), _render(node.right)
        return None if left is None or right is None else left + right
    return None


def gate_hints() -> list[tuple[str, str]]:
    """(file, hint) for every literal ``hint=`` a refusal is built with in memory/gates/, and every
    module constant named ``…_HINT`` (a hint another module puts in a refusal, e.g. update's)."""
    found = []
    for path in sorted((PACKAGE / "memory" / "gates").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.endswith("_HINT")
                                                    for t in node.targets):
                text = _render(node.value)
                if text is not None:
                    found.append((path.name, text))
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg == "hint":
                        text = _render(keyword.value)
                        if text is not None:
                            found.append((path.name, text))
    return found


HINTS = gate_hints()


def test_the_hint_scan_finds_every_gate():
    files = {name for name, _ in HINTS}
    assert {"durability.py", "user_claims.py", "scope_match.py", "pipeline.py", "truncation.py",
            "groundedness.py", "credentials.py", "claims.py", "write_enabled.py"} <= files
    assert len(HINTS) >= 11
    from kenning.commands.hints import for_cli

    assert_cli_terms(" ".join(for_cli(hint) for _, hint in HINTS))


@pytest.mark.parametrize("where,hint", HINTS, ids=[f"{name}-{i}" for i, (name, _) in enumerate(HINTS)])
def test_every_gate_hint_restated_for_the_cli(where, hint, cli_options):
    from kenning.commands.hints import for_cli

    restated = for_cli(hint)
    assert_cli_terms(restated)
    for option in re.findall(r"--[a-z][a-z-]*", restated):  # every option a hint names exists
        assert option in cli_options, (option, restated)


@pytest.fixture(scope="module")
def cli_options(tmp_path_factory):
    store = tmp_path_factory.mktemp("help") / "s"
    text = kenning_cli(store, "write", "--help").stdout + kenning_cli(store, "update", "--help").stdout
    return set(re.findall(r"--[a-z][a-z-]*", text))


def test_renaming_a_scope_no_memory_carries_is_refused_naming_the_listing(tmp_path):
    store = tmp_path / "s"
    kenning_cli(store, "write", "The staging port is 9443", "--scope", "projects:alpha")
    for args in (("rename-scope", "projects:alpah", "projects:beta"),
                 ("rename-scope", "projects:alpah", "projects:beta", "--json")):
        done = kenning_cli(store, *args)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "nothing was renamed" in done.stderr and "kenning scopes" in done.stderr
        assert "Traceback" not in done.stderr
    with kenning.open_store(store) as s:
        assert [m.scopes for m in s.list(auto_scope=False)] == [["projects:alpha"]]


def test_an_update_with_nothing_to_change_names_this_commands_options(tmp_path):
    """The library's message offered links and metadata, which `kenning update` has no option for."""
    store = tmp_path / "s"
    mid = written_id(kenning_cli(store, "write", "The billing service sends invoices monthly", "--scope", "x", "--json"))
    done = kenning_cli(store, "update", mid)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "nothing to update; give --text, --scope, --confidence or --category" in done.stderr, done.stderr
    assert "links" not in done.stderr and "metadata" not in done.stderr
