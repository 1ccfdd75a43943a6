"""A first-use conversion whose child process dies without answering (the kernel's out-of-memory killer,
a crash, a user's kill): the user is told how it ended and what runs it again, a running process takes
up the conversion that command makes, and what the dead child was writing does not stay in the model
cache. The children here are real processes that really die."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kenning.retrieval import embeddings, onnx_export
from kenning.retrieval.conversion_process import ConversionFailed, convert_in_child

from test_encoder_units import fresh_caches, link_conversion, reference, spec  # noqa: F401

SPEC = SimpleNamespace(name="tiny", path=Path("/nonexistent"), source="test", model_id="tiny-0")


def dying_python(tmp_path: Path, monkeypatch, body: str) -> None:
    """Make ``sys.executable`` (what starts the conversion child) a script that runs ``body``."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(script))


@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for the interpreter")
def test_a_child_killed_by_a_signal_is_named_and_given_the_repair_command(tmp_path, monkeypatch):
    dying_python(tmp_path, monkeypatch, 'echo \'{"step": "loading tiny"}\'; kill -KILL $$')
    steps: list[str] = []
    with pytest.raises(ConversionFailed) as failed:
        convert_in_child(SPEC, "onnx", False, steps.append)
    assert steps == ["loading tiny"]
    assert failed.value.cause == ("the converting process was killed by SIGKILL (out of memory?) before it finished; "
                                  "nothing was kept")
    assert failed.value.fix == embeddings.REPAIR_COMMAND == "kenning models --convert"
    assert not failed.value.cache


@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for the interpreter")
@pytest.mark.parametrize("body, ending", [("exit 3", "ended with exit code 3"),
                                          ("kill -SEGV $$", "was killed by SIGSEGV"),
                                          ("echo not json; exit 0", "ended with exit code 0")])
def test_a_child_that_ends_without_an_answer_says_how_it_ended(tmp_path, monkeypatch, body, ending):
    dying_python(tmp_path, monkeypatch, body)
    with pytest.raises(ConversionFailed) as failed:
        convert_in_child(SPEC, "onnx", False, lambda message: None)
    assert failed.value.cause == f"the converting process {ending} before it finished; nothing was kept"
    assert failed.value.fix == embeddings.REPAIR_COMMAND


@pytest.mark.embeddings
@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for the interpreter")
def test_a_killed_conversion_breaks_the_encoder_with_the_repair_command(fresh_caches, tmp_path, monkeypatch, capsys):  # noqa: F811
    """Through the path a first search takes: broken, the cause names the signal, the fix the command
    (before, a dead child's break carried no fix, and the user was told to install the extra)."""
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    dying_python(tmp_path, monkeypatch, "kill -KILL $$")
    availability = embeddings.probe()
    assert availability.state == "broken"
    assert availability.cause == (f"converting {embeddings.DEFAULT_MODEL} to ONNX failed: the converting process was "
                                  "killed by SIGKILL (out of memory?) before it finished; nothing was kept")
    assert availability.fix == "kenning models --convert"
    assert embeddings.degraded_note(availability)["fix"] == "kenning models --convert"
    assert "converting all-MiniLM-L6-v2 to ONNX once" in capsys.readouterr().err


@pytest.mark.skipif(os.name != "posix", reason="the folder lock is POSIX's flock")
def test_taking_the_folder_lock_removes_what_a_killed_conversion_left(tmp_path):
    folder = tmp_path / "onnx" / "tiny-0-e3"
    folder.mkdir(parents=True)
    kept = [folder / "model.onnx", folder / "manifest.json", folder / "model.optimized"]
    kept[0].write_bytes(b"onnx")
    kept[1].write_text("{}")
    kept[2].mkdir()
    left = [folder / ".partial-k2j4.onnx", folder / ".partial-9x1q.json"]
    for path in left:
        path.write_bytes(b"half an export")
    loading = folder / ".partial-w7nq"  # another process's optimised copy in the making (it takes no lock)
    loading.mkdir()
    (loading / "model.onnx").write_bytes(b"being written")
    with onnx_export._locked(folder):
        assert not any(path.exists() for path in left)
    assert all(path.exists() for path in kept) and (loading / "model.onnx").exists()
    busy = folder / ".partial-late.onnx"
    busy.write_bytes(b"another process's export, under its lock")
    with onnx_export._locked(folder, wait=False):  # a check that takes no lock must delete nothing
        pass
    assert busy.exists()


@pytest.mark.embeddings
@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for the interpreter")
def test_a_process_broken_by_a_killed_conversion_takes_up_the_one_made_later(spec, fresh_caches, tmp_path,  # noqa: F811
                                                                             monkeypatch):
    """A server whose first-use conversion was killed stays lexical without converting again on every
    search, and takes up the vector leg once `kenning models --convert` (here: a finished conversion
    put in its cache) has run - no restart (before, the break was kept for the process's life)."""
    pytest.importorskip("sentence_transformers")
    import kenning

    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    monkeypatch.setattr(embeddings, "RECHECK_S", 0.0)
    real_python, attempts = sys.executable, tmp_path / "attempts"
    dying_python(tmp_path, monkeypatch, f"echo x >> {attempts}; kill -KILL $$")
    store = kenning.open_store(tmp_path / "store")
    written = store.write("The auth service listens on port 8443.", scopes=["test"])
    first = store.search("which port does auth use", mode="hybrid", auto_scope=False)
    assert first.legs_run == ["bm25"] and first.degraded.reason == "embeddings_broken"
    assert first.degraded.fix == "kenning models --convert"
    for _ in range(3):  # still missing: looked at, not converted again
        assert store.search("auth port", mode="hybrid", auto_scope=False).degraded.reason == "embeddings_broken"
    assert attempts.read_text().count("x") == 1
    monkeypatch.setattr(sys, "executable", real_python)
    link_conversion(spec, cache)
    monkeypatch.setattr(embeddings, "RECHECK_S", 3600.0)  # looked at a moment ago: not yet
    assert store.search("auth port", mode="hybrid", auto_scope=False).degraded.reason == "embeddings_broken"
    monkeypatch.setattr(embeddings, "RECHECK_S", 0.0)
    healed = store.search("which port does auth use", mode="hybrid", auto_scope=False)
    assert healed.degraded is None and "vector" in healed.legs_run and healed.pending_embeddings == 1
    assert store.semantic.embed_pending() == 1
    after = store.search("which port does auth use", mode="semantic", auto_scope=False)
    assert after.pending_embeddings == 0 and [hit.id for hit in after.hits] == [written.id]
    assert attempts.read_text().count("x") == 1
    store.close()


@pytest.mark.embeddings
@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for the interpreter")
def test_closing_a_store_stops_the_first_use_conversion_its_background_thread_waits_on(fresh_caches, tmp_path,  # noqa: F811
                                                                                      monkeypatch):
    """An MCP server whose client closed stdin during the first-use conversion waited for it (up to
    the join's 30 s) before it could exit, and the child went on converting for a process that was
    gone. Closing the store now ends the child; what it was writing is cleared by the next conversion."""
    pytest.importorskip("sentence_transformers")
    import signal
    import time

    import kenning

    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    pid_file = tmp_path / "child.pid"
    dying_python(tmp_path, monkeypatch, f"echo $$ > {pid_file}; echo '{{\"step\": \"exporting\"}}'; exec sleep 600")
    store = kenning.open_store(tmp_path / "store")
    store.semantic.start_background()  # as a server does: the first look at the encoder converts the model
    while not (pid_file.exists() and pid_file.read_text().strip() and embeddings.converting()):
        time.sleep(0.05)  # the background thread started the conversion child
    child = int(pid_file.read_text())
    store.close()
    try:
        reaped, status = os.waitpid(child, os.WNOHANG)
    except ChildProcessError:
        reaped, status = child, 0  # already reaped by the thread that waited on it
    if reaped == 0:
        os.kill(child, signal.SIGKILL)  # left running: clean up before failing
    assert reaped == child, "the conversion child outlived the store that asked for it"
    assert embeddings.converting() == {}
    variant = embeddings.backend()
    assert onnx_export.problem(embeddings.resolve_model(), variant) is not None  # nothing half-made taken for a model
    onnx_export.check_writable(embeddings.resolve_model())  # and its folder's lock was let go


def test_a_child_whose_parent_is_gone_ends_without_a_traceback(tmp_path):
    """The parent killed (SIGTERM from a client, a user's kill) while its child converts: the child's next
    message meets a closed pipe, and its BrokenPipeError traceback landed on the user's terminal after the
    command had exited. Here the child fails at once (no such model) and answers into a closed pipe."""
    import json
    import subprocess

    request = {"name": "tiny", "path": str(tmp_path / "nonexistent"), "source": "test", "model_id": "tiny-0",
               "variant": "onnx", "force": False}
    child = subprocess.Popen([sys.executable, "-m", "kenning.retrieval.conversion_process", json.dumps(request)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "KENNING_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"})
    child.stdout.close()  # the parent is gone: nobody reads the answer
    err = child.stderr.read()
    assert child.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipe" not in err, err
