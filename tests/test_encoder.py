"""The ONNX encoder: parity with sentence-transformers, conversion keyed and repaired, no torch after it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from onnx_graphs import write_plain_graph

from kenning.retrieval import embeddings, onnx_export

pytestmark = pytest.mark.embeddings

BUILTIN = Path(__file__).resolve().parent.parent / "eval" / "builtin"


@pytest.fixture(scope="module")
def onnx_encoder():
    """The ONNX encoder of the packaged model (converting it first if this machine never did)."""
    pytest.importorskip("onnxruntime")
    spec = embeddings.resolve_model()
    return embeddings.get_encoder(spec, "onnx")


def parity_texts(n: int = 1000) -> list[str]:
    """n deterministic texts of every shape: memories, queries, first clauses, and long runs that
    the 256-token limit truncates, from the bundled collection (so the test needs no download)."""
    docs = [json.loads(line)["text"] for line in (BUILTIN / "corpus.jsonl").read_text().splitlines() if line]
    queries = [json.loads(line)["text"] for line in (BUILTIN / "queries.jsonl").read_text().splitlines() if line]
    texts = docs + queries
    texts += [doc.split(";")[0].split(",")[0] for doc in docs]
    texts += [" ".join(docs[i : i + 25]) for i in range(0, len(docs), 3)]  # 300+ tokens: truncated
    texts += [doc.upper() for doc in docs]
    return texts[:n]


@pytest.mark.slow
def test_onnx_vectors_match_sentence_transformers_on_1000_texts(onnx_encoder):
    from kenning.retrieval.torch_encoder import TorchEncoder

    texts = parity_texts()
    assert len(texts) == 1000 and max(map(len, texts)) > 1500  # ~400 tokens: past the 256-token cut
    reference = TorchEncoder(onnx_encoder.spec).encode(texts)
    vectors = onnx_encoder.encode(texts)
    cosines = np.sum(reference * vectors, axis=1)
    assert cosines.min() >= 0.999, f"worst cosine {cosines.min():.6f} on {texts[int(cosines.argmin())][:80]!r}"
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_batches_and_single_queries_agree_whatever_the_padding(onnx_encoder):
    texts = ["short", "a considerably longer sentence about databases, indexes and their upkeep " * 3, "mid length text"]
    together = onnx_encoder.encode(texts, batch_size=3)
    for text, row in zip(texts, together):
        assert float(onnx_encoder.encode_query(text) @ row) > 0.99999
    assert onnx_encoder.encode([]).shape == (0, onnx_encoder.dim)


def test_a_pasted_query_is_read_by_its_head_and_gets_the_vector_of_the_whole(onnx_encoder, monkeypatch):
    """A query of megabytes: the model reads its first 256 tokens, so only the head is tokenized
    (a 1.5 MB query took 3.7 s to tokenize whole), unless the head alone does not fill the model."""
    from kenning.retrieval.onnx_encoder import QUERY_HEAD_CHARS

    docs = [json.loads(line)["text"] for line in (BUILTIN / "corpus.jsonl").read_text().splitlines() if line]
    pasted = " ".join(docs * 20)
    sparse = "deploy" + " " * (QUERY_HEAD_CHARS + 10) + pasted  # a head of one token: read whole
    unspaced = "x" * (QUERY_HEAD_CHARS + 10) + " " + pasted  # no space to cut at: read whole
    assert len(pasted) > 20 * QUERY_HEAD_CHARS
    whole = {text: onnx_encoder._encode_batch([text])[0] for text in (pasted, sparse, unspaced)}
    real, read = onnx_encoder._tokenizer, []

    class Reading:  # the real tokenizer, noting how long a text it was given
        def __getattr__(self, name):
            return getattr(real, name)

        def encode(self, text, *args, **kwargs):
            read.append(len(text))
            return real.encode(text, *args, **kwargs)

    monkeypatch.setattr(onnx_encoder, "_tokenizer", Reading())
    assert np.array_equal(onnx_encoder.encode_query(pasted), whole[pasted])
    assert read and max(read) <= QUERY_HEAD_CHARS
    for text in (sparse, unspaced):
        read.clear()
        assert np.array_equal(onnx_encoder.encode_query(text), whole[text])
        assert max(read) == len(text)


@pytest.mark.slow
def test_the_torch_encoder_reads_a_pasted_query_by_its_head_too(onnx_encoder, monkeypatch):
    """KENNING_ENCODER=torch, the reference, cuts a pasted query as the ONNX encoder does: only the
    head is tokenized and encoded, and its vector is the whole text's (the model truncates both)."""
    from kenning.retrieval.onnx_encoder import QUERY_HEAD_CHARS
    from kenning.retrieval.torch_encoder import TorchEncoder

    torch_encoder = TorchEncoder(onnx_encoder.spec)
    docs = [json.loads(line)["text"] for line in (BUILTIN / "corpus.jsonl").read_text().splitlines() if line]
    pasted = " ".join(docs * 20)
    sparse = "deploy" + " " * (QUERY_HEAD_CHARS + 10) + pasted  # a head of one token: read whole
    whole = {text: torch_encoder.encode([text], batch_size=1)[0] for text in (pasted, sparse)}
    encode, overflows, read = torch_encoder.encode, torch_encoder._overflows, []

    def noting(texts, *args, **kwargs):
        read.extend(map(len, texts))
        return encode(texts, *args, **kwargs)

    monkeypatch.setattr(torch_encoder, "encode", noting)
    monkeypatch.setattr(torch_encoder, "_overflows", lambda text: read.append(len(text)) or overflows(text))
    assert np.allclose(torch_encoder.encode_query(pasted), whole[pasted], atol=1e-6)
    assert read and max(read) <= QUERY_HEAD_CHARS
    read.clear()
    assert np.allclose(torch_encoder.encode_query(sparse), whole[sparse], atol=1e-6)
    assert max(read) == len(sparse)


def test_the_tokenizer_follows_the_model_directory(onnx_encoder):
    from kenning.retrieval.onnx_encoder import max_seq_length

    spec = onnx_encoder.spec
    assert max_seq_length(spec.path) == json.loads((spec.path / "sentence_bert_config.json").read_text())["max_seq_length"]
    long_text = "word " * 1000
    assert float(onnx_encoder.encode_query(long_text) @ onnx_encoder.encode_query("word " * 600)) > 0.99999  # both cut


def test_vectors_are_keyed_by_backend_so_caches_never_mix(onnx_encoder):
    spec = onnx_encoder.spec
    ids = {backend: embeddings.encoder_id(spec, backend) for backend in embeddings.BACKENDS}
    assert ids["torch"] == spec.model_id and len(set(ids.values())) == len(embeddings.BACKENDS) == 4
    assert ids["onnx-q8"] == spec.model_id + "@onnx-q8"
    assert onnx_encoder.model_id == ids["onnx"]


def test_the_conversion_is_keyed_by_model_id_and_export_version(onnx_encoder, tmp_path):
    spec = onnx_encoder.spec
    folder = onnx_export.converted_dir(spec)
    assert folder.name.endswith(f"-e{onnx_export.EXPORT_VERSION}")
    assert spec.model_id.split(":")[1] in folder.name
    other = embeddings.ModelSpec(spec.name, spec.path, spec.source, spec.name + ":000000000000")
    assert onnx_export.converted_dir(other) != folder  # a changed model is converted afresh
    manifest = onnx_export.read_manifest(spec)
    assert manifest["model_id"] == spec.model_id and manifest["check_min_cosine"] >= 0.9999


def _operators(path: Path) -> set[str]:
    import onnx

    return {node.op_type for node in onnx.load(str(path), load_external_data=False).graph.node}


def test_the_float_graph_is_fused_by_the_transformer_optimizer(onnx_encoder):
    manifest = onnx_export.read_manifest(onnx_encoder.spec)
    layers = json.loads((onnx_encoder.spec.path / "config.json").read_text())["num_hidden_layers"]
    assert manifest["fusion"]["fused"] is True and manifest["fusion"]["operators"]["Attention"] == layers
    operators = _operators(onnx_encoder.onnx_file)
    assert {"Attention", "SkipLayerNormalization", "BiasGelu"} <= operators
    assert "Softmax" not in operators and "Gelu" not in operators and "FastGelu" not in operators  # exact GELU kept


def test_a_graph_the_optimizer_cannot_fuse_is_left_as_exported(tmp_path):
    """No recipe for the model type, or no attention in the graph: nothing is written, the plain export stays."""
    source, target = write_plain_graph(tmp_path / "plain.onnx"), tmp_path / "fused.onnx"

    class Config:
        model_type, num_attention_heads, hidden_size = "bert", 1, 4

    class Unknown(Config):
        model_type = "gpt2"

    fused = onnx_export.fuse(source, target, Config())
    assert fused["fused"] is False and "no attention" in fused["why"] and not target.exists()
    unknown = onnx_export.fuse(source, target, Unknown())
    assert unknown["fused"] is False and "gpt2" in unknown["why"] and not target.exists()


def test_parallel_batches_return_the_rows_in_input_order(onnx_encoder, monkeypatch):
    texts = parity_texts(120)
    monkeypatch.setenv("KENNING_BULK_RUNTIME", "onnxruntime")  # parallel batches are onnxruntime's
    monkeypatch.setenv("KENNING_ONNX_BATCH_WORKERS", "1")
    serial = onnx_encoder.encode(texts, batch_size=8)
    monkeypatch.setenv("KENNING_ONNX_BATCH_WORKERS", "3")
    advanced: list[int] = []
    parallel = onnx_encoder.encode(texts, batch_size=8, progress=advanced.append)
    assert np.allclose(serial, parallel, atol=1e-6)
    assert sum(advanced) == len(texts) and len(advanced) == 2  # one call per 8 batches, and the last
    assert float(parallel[7] @ onnx_encoder.encode_query(texts[7])) > 0.99999


def _copy_conversion(spec, cache: Path) -> Path:
    """The converted model copied into another cache dir, so a test may damage its copy."""
    source = onnx_export.converted_dir(spec)
    target = cache / "onnx" / source.name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".lock", ".partial-*", "*.optimized"))
    return target


PROBE = """
import json, sys
{setup}
from kenning.retrieval import embeddings
import kenning
s = kenning.open_store({store!r})
s.write("The auth service listens on port 8443", scopes=["x"])
r = s.search("auth port", mode="hybrid")
a = embeddings.probe()
print(json.dumps({{"state": a.state, "cause": a.cause, "fix": a.fix,
                  "degraded": r.degraded.model_dump() if r.degraded else None, "hits": len(r.hits),
                  "legs": r.legs_run, "torch": "torch" in sys.modules}}))
"""
NO_CONVERTER = """
import importlib.util
_real = importlib.util.find_spec
sys.modules["sentence_transformers"] = None
importlib.util.find_spec = lambda name, *a: None if name.split(".")[0] == "sentence_transformers" else _real(name, *a)
"""


def _run(tmp_path: Path, cache: Path, setup: str = "") -> dict:
    env = {**os.environ, "KENNING_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE.format(setup=setup, store=str(tmp_path / "s"))],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]) | {"stderr": done.stderr}


def _damage_in_place(path: Path) -> None:
    """Overwrite a stretch of the weights with zeros, keeping the size (a bad disk, a bad copy)."""
    data = bytearray(path.read_bytes())
    for start in range(len(data) // 10, len(data), len(data) // 10):  # every tenth of the file
        data[start : start + 500_000] = bytes(len(data[start : start + 500_000]))
    path.write_bytes(bytes(data))


def test_the_optimised_copy_is_made_once_beside_the_file_and_answers_the_same(onnx_encoder, tmp_path):
    from kenning.retrieval.onnx_encoder import OnnxEncoder, optimized_dir

    spec = onnx_encoder.spec
    onnx_file = _copy_conversion(spec, tmp_path / "cache") / "model.onnx"
    texts = ["The auth service listens on port 8443", "hi", "Nightly database backups are kept for thirty days; " * 30]
    plain = OnnxEncoder(spec, onnx_file, "check").encode(texts)
    assert not optimized_dir(onnx_file).exists()  # only the runtime path (cache_optimized) makes one
    fast = OnnxEncoder(spec, onnx_file, "check", cache_optimized=True)
    folder = optimized_dir(onnx_file)
    assert fast._session._model_path == str(folder / "model.onnx")
    assert (folder / "weights.bin").stat().st_size > 0.9 * onnx_file.stat().st_size  # the weights, mapped from here
    assert np.array_equal(fast.encode(texts), plain)
    made = (folder / "stamp.json").stat().st_mtime_ns
    OnnxEncoder(spec, onnx_file, "check", cache_optimized=True)
    assert (folder / "stamp.json").stat().st_mtime_ns == made  # the next process reuses it
    os.utime(onnx_file, ns=(made + 10**9, made + 10**9))  # the source changed (a new conversion): made again
    OnnxEncoder(spec, onnx_file, "check", cache_optimized=True)
    assert json.loads((folder / "stamp.json").read_text())["source_mtime_ns"] == made + 10**9
    assert [p.name for p in onnx_file.parent.iterdir() if p.name.startswith(".")] == []  # no partial or discarded folder


@pytest.mark.parametrize("damage", ["truncated", "zeroed"])
def test_a_damaged_optimised_copy_is_dropped_for_the_converted_file(onnx_encoder, tmp_path, monkeypatch, damage):
    """A copy that fails to load, or loads and answers wrong, is removed and the file itself answers."""
    from kenning.retrieval.onnx_encoder import optimized_dir

    spec = onnx_encoder.spec
    cache = tmp_path / "cache"
    onnx_file = _copy_conversion(spec, cache) / "model.onnx"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    embeddings._checked_onnx(spec, "onnx")  # makes the copy
    weights = optimized_dir(onnx_file) / "weights.bin"
    if damage == "truncated":
        weights.write_bytes(weights.read_bytes()[:1000])
    else:
        _damage_in_place(weights)
    encoder = embeddings._checked_onnx(spec, "onnx")  # checks the probe vector, as every load does
    assert float(encoder.encode_query("auth port") @ onnx_encoder.encode_query("auth port")) > 0.99999
    if damage == "zeroed":  # loaded, answered wrong: the copy went, the converted file answered
        assert encoder._session._model_path == str(onnx_file) and not optimized_dir(onnx_file).exists()
    assert onnx_export.problem(spec) is None  # nothing was re-converted
    assert embeddings._checked_onnx(spec, "onnx")._session._model_path == str(optimized_dir(onnx_file) / "model.onnx")


@pytest.mark.parametrize("damage", ["missing", "truncated", "zeroed", "not-onnx"])
def test_a_missing_or_damaged_onnx_file_degrades_with_the_repair_when_it_cannot_convert(onnx_encoder, tmp_path, damage):
    cache = tmp_path / "cache"
    onnx_file = _copy_conversion(onnx_encoder.spec, cache) / "model.onnx"
    if damage == "missing":
        onnx_file.unlink()
    elif damage == "truncated":
        onnx_file.write_bytes(onnx_file.read_bytes()[:1000])
    elif damage == "zeroed":
        _damage_in_place(onnx_file)
    else:
        size = onnx_file.stat().st_size
        onnx_file.write_bytes(b"not a model " * (size // 12) + b"x" * (size % 12))
    report = _run(tmp_path, cache, NO_CONVERTER)
    assert report["state"] == "broken" and report["fix"].endswith("kenning models --convert")
    assert "ONNX" in report["cause"] and "sentence-transformers" in report["fix"]
    assert report["degraded"]["reason"] == "embeddings_broken" and report["degraded"]["fix"] == report["fix"]
    assert report["legs"] == ["bm25"] and report["hits"] == 1  # it answered, lexically
    assert "Traceback" not in report["stderr"] and report["torch"] is False


@pytest.mark.slow
def test_a_damaged_onnx_file_is_reconverted_when_sentence_transformers_is_there(onnx_encoder, tmp_path):
    cache = tmp_path / "cache"
    onnx_file = _copy_conversion(onnx_encoder.spec, cache) / "model.onnx"
    _damage_in_place(onnx_file)
    report = _run(tmp_path, cache)
    assert report["state"] == "working" and report["degraded"] is None and "vector" in report["legs"]
    assert "converting" in report["stderr"] and "converted" in report["stderr"]  # the repair was shown
    assert onnx_export.problem(onnx_encoder.spec) is None
    assert report["torch"] is False  # converted by a child process (retrieval/conversion_process.py)


@pytest.mark.slow
def test_a_first_use_converts_in_a_child_so_the_searching_process_never_holds_torch(onnx_encoder, tmp_path):
    """A process whose first hybrid search had to convert the model gets its vector leg, shows the
    conversion's steps, and never imports torch: a server would otherwise keep ~600 MB of it for life."""
    report = _run(tmp_path, tmp_path / "empty-cache")
    assert report["state"] == "working" and report["degraded"] is None and "vector" in report["legs"]
    assert report["torch"] is False
    name = onnx_encoder.spec.name
    lines = report["stderr"].splitlines()
    assert lines[0].startswith(f"kenning: the ONNX conversion of {name} is missing")
    assert f"kenning:   loading {name} with sentence-transformers (torch)" in lines
    assert any(line.startswith(f"kenning: converted {name} in ") for line in lines)


@pytest.mark.slow
def test_no_torch_in_a_process_that_searches_writes_and_serves_mcp(onnx_encoder, tmp_path):
    """A fresh library process (write, hybrid search) and a fresh MCP server (tool calls) never import torch."""
    report = _run(tmp_path, onnx_export.cache_root())
    assert report["state"] == "working" and "vector" in report["legs"] and report["torch"] is False

    pytest.importorskip("mcp")
    from anyio.from_thread import start_blocking_portal
    from mcp import ClientSession, StdioServerParameters, stdio_client

    marker = tmp_path / "modules.json"
    launcher = textwrap.dedent(f"""
        import atexit, json, sys
        atexit.register(lambda: open({str(marker)!r}, "w").write(json.dumps(sorted(sys.modules))))
        from kenning.serve.mcp import main
        main(["--store", {str(tmp_path / "served")!r}])
    """)
    params = StdioServerParameters(command=sys.executable, args=["-c", launcher], cwd=str(tmp_path),
                                   env={**os.environ, "HF_HUB_OFFLINE": "1"})

    async def session_calls():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            wrote = await session.call_tool("memory_write", {"content": "Pods restart after three failed liveness probes",
                                                             "scopes": ["infra"]})
            found = await session.call_tool("memory_search", {"query": "container health check restarts"})
            return wrote.structured_content, found.structured_content

    with start_blocking_portal() as portal:
        wrote, found = portal.call(session_calls)
    assert wrote["status"] == "committed"
    assert found["mode"] == "hybrid" and "vector" in found["legs_run"] and found["hits"][0]["matched_leg"] != "lexical"
    modules = json.loads(marker.read_text())
    assert "onnxruntime" in modules and "torch" not in modules and "sentence_transformers" not in modules


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "kenning.cli", "--store", str(tmp_path / "s"), *args],
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.slow
def test_cli_import_embed_index_and_search_report_progress_rate_and_pending(onnx_encoder, tmp_path):
    lines = tmp_path / "notes.jsonl"
    lines.write_text("".join(json.dumps({"content": f"note {i} about the garden and its {i} tomatoes"}) + "\n"
                             for i in range(60)))
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps({"content": f"kittens {i} nap on the warm windowsill"}) + "\n" for i in range(7)))

    done = _cli(tmp_path, "import", str(lines), "--no-gates", "--embed")
    assert done.returncode == 0, done.stderr
    assert "imported 60 memories" in done.stdout and "embedded 60 in" in done.stdout and "memories/s" in done.stdout
    assert _cli(tmp_path, "import", str(more), "--no-gates", "--json").returncode == 0  # queued, not embedded

    searched = _cli(tmp_path, "search", "cat sleeping in the sun", "--mode", "hybrid", "--no-auto-scope", "--json")
    result = json.loads(searched.stdout)
    assert result["pending_embeddings"] == 7 and "vector" in result["legs_run"]
    plain = _cli(tmp_path, "search", "cat sleeping in the sun", "--mode", "hybrid", "--no-auto-scope")
    assert "7 memories have no vector yet" in plain.stderr and "kenning index" in plain.stderr

    report = json.loads(_cli(tmp_path, "index", "--json").stdout)
    assert report["pending_before"] == 7 and report["embedded"] == 7 and report["pending"] == 0
    assert report["per_second"] > 0
    result = json.loads(_cli(tmp_path, "search", "cat sleeping in the sun", "--mode", "hybrid", "--no-auto-scope",
                             "--json").stdout)
    assert result["pending_embeddings"] == 0 and "kittens" in result["hits"][0]["snippet"]

    models = json.loads(_cli(tmp_path, "models", "--json").stdout)
    default = next(m for m in models["models"] if m["name"] == embeddings.DEFAULT_MODEL)
    assert default["onnx"] == str(onnx_export.onnx_file(onnx_encoder.spec)) and default["store_indexed_with"]
    assert models["backend"] == "onnx" and models["store"]["model_id"] == onnx_encoder.model_id
