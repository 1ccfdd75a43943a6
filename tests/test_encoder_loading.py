"""A server's searches while its background thread loads the encoder: answered at once, lexically, with
`embeddings_loading`, never made to wait for a half-minute conversion; writes are queued meanwhile,
and the vector leg joins as soon as the encoder is ready (store/semantic.py, Semantic.availability).

"Another process is converting the model" is made real by holding the conversion folder's lock, the
lock a converting process holds; the finished conversion is then linked in and the lock released."""

from __future__ import annotations

import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import ExitStack

import pytest

import kenning
from kenning.retrieval import embeddings, onnx_export
from kenning.store import semantic

from test_encoder_units import fresh_caches, link_conversion, reference, spec  # noqa: F401

pytestmark = pytest.mark.embeddings

TEXT = "the payments service retries failed webhooks with exponential backoff"


def _within(call, seconds: float = 30.0):
    """``call()``'s answer, failing (not hanging) if it waits for the held conversion: a regression
    here would block on the lock this test holds until the test released it."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(call).result(timeout=seconds)
    except FutureTimeout:
        pytest.fail(f"the call waited more than {seconds:.0f} s for the encoder")
    finally:
        pool.shutdown(wait=False)  # a blocked call ends once the test lets go of what it waits for


def _until(predicate, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_server_answers_lexically_while_its_model_is_converted(spec, fresh_caches, monkeypatch, tmp_path):
    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    store = kenning.open_store(tmp_path / "store")
    try:
        with onnx_export._locked(onnx_export.converted_dir(spec)):  # another process is converting it
            store.semantic.start_background(poll_s=0.2)
            _until(lambda: spec.name in embeddings.converting())
            written = _within(lambda: store.write(TEXT, scopes=["x"]))
            assert written.status == "committed" and store.semantic.pending_count() == 1  # queued, not waited for
            for mode in ("hybrid", "semantic"):
                result = _within(lambda: store.search("payments webhooks", mode=mode))
                assert result.legs_run == ["bm25"] and [h.id for h in result.hits] == [written.id]
                degraded = result.degraded
                assert degraded.reason == "embeddings_loading" and degraded.fix is None and degraded.install == ""
                assert degraded.message.startswith(f"the semantic leg is not ready: {spec.name} is being converted "
                                                   "to ONNX, once per install"), degraded.message
            assert result.pending_embeddings == 1
            assert not store.semantic.loaded
            link_conversion(spec, cache)  # that process finished ...
        # ... and released the folder: the background thread loads the file and embeds the queue
        _until(lambda: store.semantic.loaded and store.semantic.pending_count() == 0)
        assert embeddings.converting() == {}
        result = store.search("payments webhooks", mode="hybrid")
        assert result.degraded is None and result.legs_run == ["keyword", "bm25", "vector"]
        assert result.hits[0].id == written.id and "vector" in result.hits[0].legs and result.pending_embeddings == 0
    finally:
        store.close()


def test_a_load_longer_than_the_wait_is_reported_as_loading(spec, fresh_caches, monkeypatch, tmp_path):
    """No conversion, but the encoder is not loaded within LOADING_WAIT_S (a busy machine): the search
    says `loading` rather than wait on; holding the encoder registry's lock is what stalls the load."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    link_conversion(spec, cache)
    monkeypatch.setattr(semantic, "LOADING_WAIT_S", 0.3)
    store = kenning.open_store(tmp_path / "store")
    try:
        written = store.write(TEXT, scopes=["x"])  # no server yet: this loads the encoder in-process ...
        assert store.semantic.pending_count() == 0
    finally:
        store.close()
    monkeypatch.setattr(embeddings, "_encoders", {})  # ... a new process, which has not
    monkeypatch.setattr(embeddings, "_availability", {})
    store = kenning.open_store(tmp_path / "store")
    try:
        with embeddings._lock:
            store.semantic.start_background(poll_s=0.2)
            started = time.monotonic()
            result = _within(lambda: store.search("payments webhooks", mode="hybrid"))
            waited = time.monotonic() - started
            assert result.degraded.reason == "embeddings_loading" and result.legs_run == ["bm25"]
            assert re.fullmatch(r"the semantic leg is not ready: the encoder is still loading \(\d+ s so far\); "
                                r"this answer used the lexical legs", result.degraded.message), result.degraded.message
            assert waited >= 0.3 and [h.id for h in result.hits] == [written.id]
        _until(lambda: store.semantic.loaded)
        result = store.search("payments webhooks", mode="hybrid")
        assert result.degraded is None and "vector" in result.legs_run
    finally:
        store.close()


@pytest.mark.slow  # starts the MCP server as a subprocess
def test_the_mcp_servers_first_search_does_not_wait_for_a_conversion(spec, monkeypatch, tmp_path):
    from test_server import connect

    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))  # passed on to the server (child_env.py)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    with ExitStack() as converting:
        converting.enter_context(onnx_export._locked(onnx_export.converted_dir(spec)))  # "another process"
        with connect(tmp_path / "store", repo) as server:
            written = server.call("memory_write", content=TEXT, scopes=["ops"])
            assert written["status"] == "committed"
            found = server.call("memory_search", query="payments webhooks")
            assert found["mode"] == "hybrid" and found["legs_run"] == ["bm25"]
            assert found["degraded"]["reason"] == "embeddings_loading" and found["pending_embeddings"] == 1
            assert [h["id"] for h in found["hits"]] == [written["id"]]
            link_conversion(spec, cache)
            converting.close()  # that conversion is done: the server loads it and embeds the write
            deadline = time.monotonic() + 120
            while found["degraded"] is not None or found["pending_embeddings"]:
                assert time.monotonic() < deadline, found
                time.sleep(0.2)
                found = server.call("memory_search", query="payments webhooks")
            assert found["legs_run"] == ["keyword", "bm25", "vector"] and found["hits"][0]["id"] == written["id"]
            assert "vector" in found["hits"][0]["legs"]
