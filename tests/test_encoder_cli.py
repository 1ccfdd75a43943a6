"""The encoder's failures as a user meets them, through the real `kenning` command (and the MCP server):
a bad setting, an onnxruntime that does not import, a read-only or shared model cache, a missing runtime
at conversion, an interrupted index. Each must name its real cause and fix, and never cost a conversion.

The conversion is linked from this test session's cache (test_encoder_units.link_conversion), never copied.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kenning.retrieval import onnx_encoder

from test_cli_first_hour import _as_unprivileged
from test_encoder_units import link_conversion, reference, spec  # noqa: F401

pytestmark = [pytest.mark.embeddings, pytest.mark.slow]  # every test starts real processes

KENNING = [sys.executable, "-m", "kenning"]
LIBSTDCXX = "libstdc++.so.6: cannot open shared object file: No such file or directory"


@pytest.fixture
def cache(spec, tmp_path, monkeypatch) -> Path:
    """A model cache of this test holding the session's conversion, linked."""
    cache = tmp_path / "cache"
    link_conversion(spec, cache)
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    return cache


def kenning(*args: str, store: Path, env: dict | None = None, prelude: str | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """``kenning --store store args`` in a subprocess; ``prelude`` runs first in the same interpreter."""
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", **(env or {})}
    command = KENNING if prelude is None else [sys.executable, "-c", f"{prelude}\nfrom kenning.cli import main; main()"]
    return subprocess.run([*command, "--store", str(store), *args], capture_output=True, text=True, env=environ,
                          timeout=timeout)


def broken_runtime(tmp_path: Path) -> dict:
    """The environment of an onnxruntime whose import fails the way a missing shared library makes it fail."""
    package = tmp_path / "shadow" / "onnxruntime"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise ImportError({LIBSTDCXX!r})\n")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(package.parent), os.environ.get("PYTHONPATH")]))}


def snapshot(cache: Path) -> dict:
    """Every entry of the cache and what it is (a link's target, a file's size and time): a conversion changes it."""
    return {str(p.relative_to(cache)): (os.readlink(p) if p.is_symlink() else (p.stat().st_size, p.stat().st_mtime_ns))
            for p in sorted(cache.rglob("*")) if p.name != ".lock"}


def write(store: Path, *texts: str, env: dict | None = None) -> None:
    for text in texts:
        done = kenning("write", text, "--scope", "x", store=store, env=env)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", ["KENNING_ONNX_THREADS", "KENNING_ONNX_BATCH_WORKERS"])
def test_a_bad_onnx_setting_answers_lexically_names_the_setting_and_converts_nothing(cache, tmp_path, name):
    store = tmp_path / "store"
    write(store, "The auth service listens on port 8443")
    before = snapshot(cache)
    started = time.monotonic()
    found = kenning("search", "auth port", "--json", store=store, env={name: "two"})
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["legs_run"] == ["bm25"] and "8443" in result["hits"][0]["snippet"]
    assert result["degraded"]["reason"] == "embeddings_broken" and result["degraded"]["fix"] == f"unset {name}"
    assert result["degraded"]["message"].startswith(f"{name}='two' is not a whole number; set it to a count of 1 or more")
    assert "convert" not in found.stderr and snapshot(cache) == before and time.monotonic() - started < 8


def test_an_onnxruntime_that_does_not_import_is_named_with_the_reinstall_and_converts_nothing(cache, tmp_path):
    """The import error does not name onnxruntime: it is still the import's, not a damaged file's."""
    store = tmp_path / "store"
    env = broken_runtime(tmp_path)
    write(store, "The auth service listens on port 8443", "Nightly backups are kept thirty days", env=env)
    before = snapshot(cache)
    found = kenning("search", "auth port", "--json", store=store, env=env)
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["degraded"] == {"reason": "embeddings_broken", "install": 'pip install "kenning[embeddings]"',
                                  "message": f"importing onnxruntime failed: ImportError: {LIBSTDCXX}",
                                  "fix": "pip install --force-reinstall onnxruntime"}
    assert result["pending_embeddings"] == 2  # known from the store, though the leg could not run
    assert "convert" not in found.stderr and snapshot(cache) == before
    plain = kenning("search", "auth port", store=store, env=env)
    assert f"note: importing onnxruntime failed: ImportError: {LIBSTDCXX} (pip install --force-reinstall onnxruntime)" \
        in plain.stderr and "no vector yet" not in plain.stderr  # the semantic leg did not run: one note says why
    recalled = kenning("recall", "auth port", "--json", store=store, env=env)
    assert json.loads(recalled.stdout)["pending_embeddings"]["memory"] == 2
    assert "without a vector yet" not in kenning("recall", "auth port", store=store, env=env).stderr
    indexed = kenning("index", store=store, env=env)
    assert indexed.returncode == 2 and indexed.stdout == ""
    assert indexed.stderr.splitlines()[-1] == (f"error: 2 memories wait for embeddings, but importing onnxruntime "
                                               f"failed: ImportError: {LIBSTDCXX}; fix: pip install --force-reinstall "
                                               "onnxruntime")
    as_json = kenning("index", "--json", store=store, env=env)
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["pending"] == 2  # the body as before, the exit as plain
    assert snapshot(cache) == before


def test_a_bad_batch_workers_setting_stops_index_with_one_line_naming_it(cache, tmp_path):
    store = tmp_path / "store"
    env = {"KENNING_ONNX_BATCH_WORKERS": "x"}
    write(store, "The auth service listens on port 8443", env=env)  # queued: the encoder cannot run
    done = kenning("index", store=store, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: 1 memory waits for embeddings, but KENNING_ONNX_BATCH_WORKERS='x' is not a whole number; set it to "
        f"a count of 1 or more (default {onnx_encoder.DEFAULT_BATCH_WORKERS}), or unset it; fix: unset "
        "KENNING_ONNX_BATCH_WORKERS")
    assert kenning("index", "--json", store=store).returncode == 0  # unset, the same queue embeds


@pytest.mark.parametrize("encoder", ["onnx", "torch"])
def test_a_bulk_runtime_typo_is_refused_by_every_encoder_with_the_settings_fix_not_an_install(cache, tmp_path, encoder):
    """KENNING_BULK_RUNTIME is checked in one place (the probe) whichever encoder KENNING_ENCODER picks: the
    torch encoder, which runs no bulk runtime, once loaded and searched as if nothing were wrong. The
    degraded answer's hint is the setting's fix; it once also carried the embeddings install command."""
    store = tmp_path / "store"
    env = {"KENNING_ENCODER": encoder, "KENNING_BULK_RUNTIME": "openvnio"}
    write(store, "The auth service listens on port 8443", env=env)  # queued: the encoder cannot run
    before = snapshot(cache)
    found = kenning("search", "auth port", "--json", store=store, env=env)
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    typo = ("KENNING_BULK_RUNTIME='openvnio' is not a runtime; set it to one of onnxruntime, openvino (default "
            "onnxruntime), or unset it")
    assert result["legs_run"] == ["bm25"] and "8443" in result["hits"][0]["snippet"]
    assert result["degraded"] == {"reason": "embeddings_broken", "message": typo, "install": "",
                                  "fix": "unset KENNING_BULK_RUNTIME"}
    plain = kenning("search", "auth port", store=store, env=env)
    assert f"note: {typo} (unset KENNING_BULK_RUNTIME)" in plain.stderr, plain.stderr
    indexed = kenning("index", store=store, env=env)
    assert indexed.returncode == 2 and indexed.stderr.splitlines()[-1] == (
        f"error: 1 memory waits for embeddings, but {typo}; fix: unset KENNING_BULK_RUNTIME")
    models = json.loads(kenning("models", "--json", store=store, env=env).stdout)
    assert models["long_encodes"] == f"none, the encoder does not load: {typo}"
    assert "convert" not in found.stderr + indexed.stderr and snapshot(cache) == before


def test_one_pending_memory_is_one_memory_that_has_no_vector(cache, tmp_path):
    store = tmp_path / "store"
    lines = tmp_path / "one.jsonl"
    lines.write_text(json.dumps({"content": "The auth service listens on port 8443"}) + "\n")
    assert kenning("import", str(lines), "--no-gates", "--scope", "x", store=store).returncode == 0  # queued
    found = kenning("search", "auth port", store=store)
    assert ("note: 1 memory has no vector yet, so the semantic leg could not see it (`kenning index` embeds it)"
            in found.stderr), found.stderr


def test_models_works_without_a_store_and_says_there_is_none(cache, tmp_path):
    nowhere = tmp_path / "no-store"
    listed = kenning("models", "--json", store=nowhere)
    assert listed.returncode == 0, listed.stderr
    payload = json.loads(listed.stdout)
    assert payload["store"] is None and payload["configured"] == "all-MiniLM-L6-v2"
    assert [row["onnx"] for row in payload["models"]] == [str(next(cache.glob("onnx/*/model.onnx")))]
    assert not any(row["store_indexed_with"] for row in payload["models"])
    plain = kenning("models", store=nowhere)
    assert plain.returncode == 0 and plain.stdout.startswith(
        f"no kenning store at {nowhere}; configured: all-MiniLM-L6-v2 (the default); encoder: onnx\n")
    assert not nowhere.exists()


def test_convert_without_onnxruntime_says_so_before_any_export(tmp_path, monkeypatch):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    started = time.monotonic()
    done = kenning("models", "--convert", store=tmp_path / "no-store",
                   prelude="import sys; sys.modules['onnxruntime'] = None  # not installed")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["error: converting needs onnxruntime, not installed: pip install onnxruntime"]
    assert time.monotonic() - started < 8 and not (tmp_path / "cache").exists()  # no torch export ran


def test_a_read_only_cache_is_one_line_naming_the_directory_and_kenning_cache_dir(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    store = tmp_path / "store"
    write(store, "The auth service listens on port 8443", env={"KENNING_ENCODER": "nothing"})  # queued, no conversion
    cache.chmod(0o555)
    prefix = _as_unprivileged()
    try:
        converted = subprocess.run([*prefix, *KENNING, "--store", str(store), "models", "--convert"], text=True,
                                   capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)
        found = subprocess.run([*prefix, *KENNING, "--store", str(store), "search", "auth port", "--json"], text=True,
                               capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)
    finally:
        cache.chmod(0o755)
    fix = f"make {cache} writable, or set KENNING_CACHE_DIR to a writable directory"
    assert converted.returncode == 2 and converted.stderr.splitlines() == [
        f"error: the model cache directory {cache} is not writable (Permission denied); {fix}"]
    degraded = json.loads(found.stdout)["degraded"]
    assert degraded["reason"] == "embeddings_broken" and degraded["fix"] == fix
    assert degraded["message"].endswith(f"and the model cache directory {cache} is not writable (Permission denied)")
    assert list(cache.iterdir()) == []


def test_a_conversion_is_readable_by_other_users_of_a_shared_cache(cache, tmp_path):
    """The optimised copy a load makes (and the files a conversion writes, test_onnx_export_tiny) follow the umask."""
    store = tmp_path / "store"
    folder = next(cache.glob("onnx/*"))
    optimized = onnx_encoder.optimized_dir(folder / "model.onnx")
    if optimized.is_symlink():
        optimized.unlink()  # made here by the load below
    write(store, "The auth service listens on port 8443")
    umask = os.umask(0o022)
    os.umask(umask)  # the command's, inherited
    assert optimized.stat().st_mode & 0o777 == 0o777 & ~umask
    assert {p.name: p.stat().st_mode & 0o777 for p in optimized.iterdir()} == {
        "model.onnx": 0o666 & ~umask, "weights.bin": 0o666 & ~umask, "stamp.json": 0o666 & ~umask}


def test_ctrl_c_during_index_commits_what_is_done_and_says_what_is_left(cache, tmp_path):
    store = tmp_path / "store"
    total = 12000  # more than either runtime embeds in the 6 s before the signal
    lines = tmp_path / "many.jsonl"
    lines.write_text("".join(json.dumps({"content": f"note {i}: the build agent {i} rotates its logs at {i % 24}:00 "
                                                    f"and keeps {i % 9} days of them"}) + "\n" for i in range(total)))
    assert kenning("import", str(lines), "--no-gates", "--scope", "x", store=store).returncode == 0
    environ = {**os.environ, "HF_HUB_OFFLINE": "1"}
    running = subprocess.Popen([*KENNING, "--store", str(store), "index"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=environ)
    time.sleep(6)  # the model loaded, some batches committed
    running.send_signal(signal.SIGINT)
    time.sleep(0.05)
    running.send_signal(signal.SIGINT)  # twice, as `timeout -s INT` does (the command, then its process group)
    out, err = running.communicate(timeout=120)
    assert running.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted: embedded ") and last.endswith(" still pending; run kenning index again to finish")
    embedded, pending = _counts(last)
    assert embedded > 0 and pending > 0 and embedded + pending == total
    assert "terminate called" not in err and "Traceback" not in err and out == ""
    checked = kenning("check", store=store)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    again = json.loads(kenning("index", "--json", store=store).stdout)
    assert again["pending_before"] == pending and again["embedded"] == pending and again["pending"] == 0


def _counts(line: str) -> tuple[int, int]:
    """N and M of ``interrupted: embedded N, M still pending; ...``."""
    head = line.split(";")[0]
    embedded, pending = head.split(", ")
    return int(embedded.split()[-1]), int(pending.split()[0])


def test_a_search_through_the_mcp_server_reports_the_pending_count_of_a_broken_encoder(cache, tmp_path, monkeypatch):
    from test_server import connect

    store, repo = tmp_path / "store", tmp_path / "repo"
    repo.mkdir()
    env = broken_runtime(tmp_path)
    write(store, "The auth service listens on port 8443", "Nightly backups are kept thirty days", env=env)
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])  # the server is started with it (child_env.passed_on)
    with connect(store, repo) as server:
        result = server.call("memory_search", query="auth port", auto_scope=False)
    assert result["degraded"]["reason"] == "embeddings_broken"
    assert result["degraded"]["fix"] == "pip install --force-reinstall onnxruntime"
    assert result["pending_embeddings"] == 2


def test_a_second_ctrl_c_arriving_while_the_first_prints_returns_at_once(monkeypatch):
    """The handler `kenning index` installs: a second SIGINT can land while the first one's message is
    printing (rich imports its emoji table on a first print; CI saw the re-entered print raise
    ImportError from the half-imported module, ending the drain with a traceback). The re-entered
    handler must return without printing, and the drain is stopped once."""
    import threading

    from kenning import cli

    stop = threading.Event()
    printed = []

    def slow_print(*args, **kwargs):
        printed.append(args[0])
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)  # the second Ctrl-C, mid-print

    monkeypatch.setattr(cli.ui.err, "print", slow_print)
    before = signal.getsignal(signal.SIGINT)
    with cli._interrupt_sets(stop):
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
    assert stop.is_set() and printed == ["interrupting: finishing the batch in progress"]
    assert signal.getsignal(signal.SIGINT) is before


def test_the_ctrl_c_that_ends_a_server_exits_130_even_when_its_line_fails_to_print(monkeypatch):
    """`kenning serve` in a terminal ends at the first Ctrl-C; should printing "stopped" fail (a second
    Ctrl-C landing in rich's first emoji import), it still exits 130 rather than with a traceback."""
    from kenning.commands import episodes

    exits = []

    def broken_print(*args, **kwargs):
        raise ImportError("cannot import name 'EMOJI' from partially initialized module")

    monkeypatch.setattr(episodes.ui.err, "print", broken_print)
    monkeypatch.setattr(os, "_exit", exits.append)
    before = signal.getsignal(signal.SIGINT)
    try:
        episodes._exit_on_first_interrupt()
        handler = signal.getsignal(signal.SIGINT)
        with pytest.raises(ImportError):
            handler(signal.SIGINT, None)
    finally:
        signal.signal(signal.SIGINT, before)
    assert exits == [130]
