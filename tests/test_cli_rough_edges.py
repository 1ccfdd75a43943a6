"""Rough edges a hostile tester found at the command line, through the real `kenning` command in a
subprocess (the fast search path included): a huge value echoed whole in a one-line error, the
encoder's break said twice, a usage hint naming the wrong help, a count setting below 1 taken
silently, import lines that made a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kenning.retrieval import onnx_encoder

# every test starts real processes (a second or more each on a busy machine)
pytestmark = pytest.mark.slow

KENNING = [sys.executable, "-m", "kenning"]
HUGE = 100_000


def kenning(*args: str, store: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", **(env or {})}
    return subprocess.run([*KENNING, "--store", str(store), *args], capture_output=True, text=True, env=environ,
                          timeout=300)


def seeded(tmp_path: Path) -> Path:
    """A store holding two memories whose vectors are still queued (an import without --embed loads no model)."""
    store = tmp_path / "store"
    lines = tmp_path / "seed.jsonl"
    lines.write_text("".join(json.dumps({"content": text}) + "\n" for text in
                             ("The auth service listens on port 8443", "Nightly backups are kept thirty days")))
    done = kenning("import", str(lines), "--no-gates", "--scope", "x", store=store)
    assert done.returncode == 0, done.stderr
    return store


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[:2000]
    return lines[0]


# ---------------------------------------------------------------- a huge value echoed in an error
def test_an_import_line_with_a_huge_id_is_echoed_as_its_start_and_length(tmp_path):
    lines = tmp_path / "huge-id.jsonl"
    lines.write_text(json.dumps({"content": "The auth service listens on port 8443", "id": "x" * HUGE}) + "\n")
    store = tmp_path / "store"
    for extra in ((), ("--json",)):
        done = kenning("import", str(lines), *extra, store=store)
        line = one_error_line(done)
        assert line == (f"error: {lines}:1: id must be a short non-blank string, got '{'x' * 60}…' "
                        "(100,000 characters); nothing was imported"), line[:500]
        assert done.stdout == ""
    assert json.loads(kenning("list", "--json", store=store).stdout) == []  # nothing was written


@pytest.mark.parametrize("args", [("config", "get", "k" * HUGE), ("show", "q" * HUGE),
                                  ("search", "hello", "--mode", "m" * HUGE)])
def test_other_one_line_errors_cut_a_huge_value_too(tmp_path, args):
    line = one_error_line(kenning(*args, store=seeded(tmp_path)))
    assert len(line) < 400 and "…" in line and "(100,000 characters)" in line, line[:500]


def test_a_huge_setting_value_in_the_encoders_note_is_cut(tmp_path):
    store = seeded(tmp_path)
    found = kenning("search", "auth port", store=store, env={"KENNING_ONNX_THREADS": "t" * 5000})
    assert found.returncode == 0 and "8443" in found.stdout
    assert found.stderr.splitlines() == [
        f"note: KENNING_ONNX_THREADS='{'t' * 60}…' (5,000 characters) is not a whole number; set it to a count of 1 "
        f"or more (default {onnx_encoder.DEFAULT_THREADS}), or unset it (unset KENNING_ONNX_THREADS)"]


@pytest.mark.parametrize("line, why", [
    ('{"content": %s}' % ("1" * 5000), "cannot read it (Exceeds the limit (4300 digits) for integer string "
                                       "conversion: value has 5000 digits)"),
    ("[" * 100_000 + "]" * 100_000, "cannot read it (nested too deeply)"),
    ('{"content": "ok text here", "scopes": [%s]}' % ("1" * 4000),
     f"`scopes` must be strings, not a number ({'1' * 60}… (4,000 characters))"),
])
def test_an_import_line_python_cannot_read_is_one_line_not_a_traceback(tmp_path, line, why):
    lines = tmp_path / "odd.jsonl"
    lines.write_text(line + "\n")
    assert one_error_line(kenning("import", str(lines), store=tmp_path / "store")) == (
        f"error: {lines}:1: {why}; nothing was imported")


# ---------------------------------------------------------------- the encoder's break, said once
def test_an_encoder_that_cannot_run_is_said_once_by_each_command(tmp_path):
    """KENNING_CACHE_DIR naming a file: no conversion can be made or found. The library logs the break
    once a process, and search, recall and index report it themselves: their line is the only one.
    A command that does not report it (search --json, write) still gets the warning, once."""
    store = seeded(tmp_path)
    cache_file = tmp_path / "cachefile"
    cache_file.touch()
    env = {"KENNING_CACHE_DIR": str(cache_file)}
    cause = f"the model cache directory {cache_file} is not writable (Not a directory)"
    fix = f"make {cache_file} writable, or set KENNING_CACHE_DIR to a writable directory"
    for args in (("search", "auth port"), ("search", "auth port", "--mode", "semantic"), ("recall", "auth port")):
        done = kenning(*args, store=store, env=env)
        assert done.returncode == 0 and "8443" in done.stdout, done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("note: ") and lines[0].endswith(f"{cause} ({fix})"), args
    indexed = kenning("index", store=store, env=env)
    assert one_error_line(indexed).endswith(f"{cause}; fix: {fix}")
    as_json = kenning("search", "auth port", "--json", store=store, env=env)
    assert json.loads(as_json.stdout)["degraded"]["fix"] == fix
    lines = as_json.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("embeddings are broken: ") and cause in lines[0], as_json.stderr
    written = kenning("write", "Deploys run from the release branch", "--scope", "x", store=store, env=env)
    assert written.returncode == 0 and written.stdout.startswith("committed")
    assert written.stderr.count(cause) == 1 and written.stderr.startswith("embeddings are broken: "), written.stderr


# ---------------------------------------------------------------- the usage hint names the subcommand
def test_an_option_missing_its_value_hints_its_own_commands_help(tmp_path):
    """click raises "requires an argument" without its context, and the hint fell back to the root's
    help; the root's own --store still hints it."""
    store = ["--store", str(tmp_path / "store")]
    for args, hint in (([*store, "search", "tabs", "--limit"], "kenning search --help"),
                       ([*store, "search", "--limit"], "kenning search --help"),
                       ([*store, "episodes", "list", "--limit"], "kenning episodes list --help"),
                       ([*store, "write", "--scope"], "kenning write --help"),
                       (["--store"], "kenning --help")):
        done = subprocess.run([*KENNING, *args], capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stdout == ""
        lines = done.stderr.splitlines()
        assert len(lines) == 2 and lines[0].endswith("requires an argument."), done.stderr
        assert lines[1] == f"hint: see `{hint}`", args


# ---------------------------------------------------------------- count settings below 1
@pytest.mark.parametrize("name, value", [("KENNING_ONNX_THREADS", "-3"), ("KENNING_ONNX_THREADS", "0"),
                                         ("KENNING_ONNX_BATCH_WORKERS", "0"), ("KENNING_ONNX_BATCH_WORKERS", "-1")])
def test_a_count_setting_below_one_gets_the_note_a_word_gets(tmp_path, name, value):
    """-3 threads once ran as 1 without a word while "abc" got a note; both are the setting's mistake."""
    store = seeded(tmp_path)
    default = {"KENNING_ONNX_THREADS": onnx_encoder.DEFAULT_THREADS,
               "KENNING_ONNX_BATCH_WORKERS": onnx_encoder.DEFAULT_BATCH_WORKERS}[name]
    said = f"{name}={value!r} is below 1; set it to a count of 1 or more (default {default}), or unset it"
    found = kenning("search", "auth port", store=store, env={name: value})
    assert found.returncode == 0 and "8443" in found.stdout
    assert found.stderr.splitlines() == [f"note: {said} (unset {name})"]
    degraded = json.loads(kenning("search", "auth port", "--json", store=store, env={name: value}).stdout)["degraded"]
    assert degraded == {"reason": "embeddings_broken", "message": said, "install": "", "fix": f"unset {name}"}
    assert one_error_line(kenning("index", store=store, env={name: value})) == (
        f"error: 2 memories wait for embeddings, but {said}; fix: unset {name}")


@pytest.mark.parametrize("value, why", [("0", "is below 1"), ("-1", "is below 1"), ("abc", "is not a whole number"),
                                        ("2000", "is over 1024")])
def test_a_bad_torch_thread_count_is_one_line_and_exit_2_as_the_onnx_one_is(tmp_path, value, why):
    """KENNING_TORCH_THREADS=0 ran as 1 silently, 2000 was taken, and a word failed the model's load."""
    store = seeded(tmp_path)
    env = {"KENNING_ENCODER": "torch", "KENNING_TORCH_THREADS": value}
    said = one_error_line(kenning("index", store=store, env=env))
    assert said.startswith(f"error: 2 memories wait for embeddings, but KENNING_TORCH_THREADS={value!r} {why}; ")
    assert said.endswith("; fix: unset KENNING_TORCH_THREADS")
    found = kenning("search", "auth port", store=store, env=env)
    assert found.returncode == 0 and "8443" in found.stdout
    assert found.stderr.splitlines() == [f"note: {said.split(', but ', 1)[1].split('; fix: ')[0]} "
                                         "(unset KENNING_TORCH_THREADS)"]


def test_a_path_with_a_name_longer_than_the_file_system_allows_is_one_line(tmp_path):
    """A --store or a transcript path with a component over 255 bytes raised ENAMETOOLONG from a
    stat deep in the open: a traceback on every command."""
    long = tmp_path / ("x" * 300)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for args in (["--store", str(long), "list"], ["--store", str(long), "write", "a fact", "--scope", "s"],
                 ["--store", str(tmp_path / "s"), "transcripts", "add", str(long / "ledger.jsonl")]):
        run = subprocess.run([sys.executable, "-m", "kenning.cli", *args], capture_output=True, text=True, env=env,
                             timeout=120)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) <= 2 and "x" * 250 not in run.stderr
