"""onnx_export.convert on a real but tiny sentence-transformers model, fast enough for mutation testing.

The model is built here, offline and seeded: a 2-layer BERT of width 32 (2 heads) behind the packaged
MiniLM's own tokenizer files (same vocabulary size), with mean pooling and normalisation, saved by
sentence-transformers' file layout. Its conversion is the real one (torch export, onnxruntime's fusion,
the check against sentence-transformers) in a couple of CPU seconds instead of a minute, so every
line of ``convert`` can be checked by what it writes: the file, its graph, its manifest, its answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from onnx_graphs import write_plain_graph

from kenning.retrieval import embeddings, onnx_export

pytestmark = [pytest.mark.embeddings, pytest.mark.slow]  # torch, three real conversions of a tiny model

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("sentence_transformers")

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
                    "sentence_bert_config.json", "config_sentence_transformers.json")
_NAMES = ["input_ids", "attention_mask", "token_type_ids"]
_STEPS = [
    "loading tiny with sentence-transformers (torch)",
    "exporting the transformer to ONNX",
    "fusing attention and layer norms (onnxruntime transformer optimizer)",
    "checking the ONNX model against sentence-transformers",
]


def build_tiny_model(folder: Path, normalize: bool = True) -> Path:
    """A seeded 2-layer BERT (hidden 32) saved as a sentence-transformers directory, nothing downloaded.

    ``normalize=False`` leaves out the Normalize module: the graph's vectors are then not unit length.
    """
    import torch
    from transformers import BertConfig, BertModel

    packaged = embeddings.resolve_model(embeddings.DEFAULT_MODEL, folder / "no-models").path
    folder.mkdir(parents=True)
    torch.manual_seed(19)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(folder)
    for name in _TOKENIZER_FILES:
        shutil.copy(packaged / name, folder / name)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules if normalize else modules[:2]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}))
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> embeddings.ModelSpec:
    path = build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")
    return embeddings.resolve_model("tiny", path.parent)


@pytest.fixture(scope="module")
def unnormalised(tmp_path_factory) -> embeddings.ModelSpec:
    path = build_tiny_model(tmp_path_factory.mktemp("models") / "plain", normalize=False)
    return embeddings.resolve_model("plain", path.parent)


@pytest.fixture(scope="module")
def torch_model(tiny):
    from kenning.retrieval.torch_encoder import load_sentence_transformer

    return load_sentence_transformer(tiny.path)


def torch_vectors(model, texts) -> np.ndarray:
    return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)


def test_a_conversion_is_written_checked_and_answers_like_torch(tiny, torch_model, monkeypatch, tmp_path, request):
    """One real conversion through ``ensure``, every part of it checked.

    One test, not several sharing a fixture: mutmut reruns only the tests that called ``convert``.
    Partial files live beside the result, never in the temp dir: a rename across disks fails, so the
    temp dir is put on another file system when there is one (a RAM disk), where such a rename fails.
    """
    import tempfile

    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shm.stat().st_dev != tmp_path.stat().st_dev:
        elsewhere = Path(tempfile.mkdtemp(prefix="kenning-test-", dir=shm))
        request.addfinalizer(lambda: shutil.rmtree(elsewhere, ignore_errors=True))
        monkeypatch.setattr(tempfile, "tempdir", str(elsewhere))
    folder = onnx_export.converted_dir(tiny)
    steps: list[str] = []
    partial_files: list[list[str]] = []

    def step(message: str) -> None:
        steps.append(message)
        if message.startswith("checking"):
            partial_files.append(sorted(p.name[-5:] for p in folder.iterdir() if p.name.startswith(".partial-")))

    path = onnx_export.ensure(tiny, step=step)
    assert path == onnx_export.onnx_file(tiny) == folder / "model.onnx"
    assert steps == _STEPS and partial_files == [[".onnx", ".onnx"]]
    again: list[str] = []
    assert onnx_export.ensure(tiny, step=again.append) == path and again == []  # a finished conversion stays
    manifest = json.loads((folder / onnx_export.MANIFEST).read_text())
    check_files_and_manifest(tiny, manifest, tmp_path / "cache")
    check_probe_and_worst_cosine(tiny, manifest, torch_model)
    check_graph(path)
    check_fusion(manifest, path)
    check_answers(tiny, path, torch_model)


def check_files_and_manifest(tiny, manifest, cache):
    folder = onnx_export.converted_dir(tiny)
    assert folder == cache / "onnx" / f"tiny-{tiny.model_id.split(':')[1]}-e{onnx_export.EXPORT_VERSION}"
    assert sorted(p.name for p in folder.iterdir()) == [".lock", "manifest.json", "model.onnx"]  # no partial files
    umask = os.umask(0o022)
    os.umask(umask)
    for name in ("manifest.json", "model.onnx"):  # mkstemp's 0600 would keep a shared cache from other users
        assert (folder / name).stat().st_mode & 0o777 == 0o666 & ~umask, name
    assert onnx_export.problem(tiny) is None and onnx_export.read_manifest(tiny) == manifest
    assert manifest["model_id"] == tiny.model_id and manifest["model_path"] == str(tiny.path)
    assert manifest["export_version"] == onnx_export.EXPORT_VERSION and manifest["opset"] == 17
    assert manifest["inputs"] == _NAMES
    stat = (folder / "model.onnx").stat()
    assert manifest["files"] == {"onnx": {"name": "model.onnx", "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                                          "sha256": hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()}}
    import torch

    assert manifest["exported_with"] == {"torch": torch.__version__,
                                         "sentence_transformers": version("sentence-transformers")}
    seconds = manifest["seconds"]
    assert isinstance(seconds, float) and 0 <= seconds < 3600 and seconds == round(seconds, 1)  # tenths
    assert sorted(manifest) == sorted(["model_id", "model_path", "export_version", "opset", "inputs", "fusion",
                                       "files", "probe", "check_min_cosine", "exported_with", "seconds"])


def check_probe_and_worst_cosine(tiny, manifest, torch_model):
    assert manifest["probe"]["text"] == onnx_export.PROBE_TEXT
    expected = torch_vectors(torch_model, [onnx_export.PROBE_TEXT])[0]
    assert len(manifest["probe"]["vector"]) == 32
    assert np.allclose(manifest["probe"]["vector"], expected, atol=1e-5)
    texts = [onnx_export.PROBE_TEXT, *onnx_export._CHECK_TEXTS]
    worst = onnx_export._worst_cosine(tiny, onnx_export.onnx_file(tiny), torch_vectors(torch_model, texts))
    assert manifest["check_min_cosine"] == pytest.approx(worst, abs=1e-6)
    assert 0.9999 <= manifest["check_min_cosine"] < 1.0001


def check_graph(path):
    """Opset 17, the three inputs by name, one output, and batch and token axes left open."""
    model = onnx.load(str(path))
    assert {o.domain: o.version for o in model.opset_import}[""] == 17
    assert [i.name for i in model.graph.input] == _NAMES
    assert [o.name for o in model.graph.output] == ["sentence_embedding"]
    for tensor in model.graph.input:
        assert [d.dim_param for d in tensor.type.tensor_type.shape.dim] == ["batch", "tokens"]
    assert model.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def check_fusion(manifest, path):
    assert manifest["fusion"] == {"fused": True, "operators": {"EmbedLayerNormalization": 1, "Attention": 2,
                                                               "BiasGelu": 2, "SkipLayerNormalization": 4}}
    ops = [node.op_type for node in onnx.load(str(path)).graph.node]
    assert ops.count("Attention") == 2 and ops.count("EmbedLayerNormalization") == 1


def check_answers(tiny, path, torch_model):
    """Any batch size and padding: the converted file answers like sentence-transformers on torch."""
    from kenning.retrieval.onnx_encoder import OnnxEncoder

    encoder = OnnxEncoder(tiny, path, model_id="t")
    texts = ["hi", "a much longer sentence about the gateway port and the nightly backups of the database",
             "Nightly database backups are kept for thirty days; " * 60, "zzz"]
    reference = torch_vectors(torch_model, texts)
    together = encoder.encode(texts)
    alone = np.vstack([encoder.encode([t]) for t in texts])
    assert together.shape == (4, 32)
    assert np.min(np.sum(together * reference, axis=1)) > 0.9999
    assert np.min(np.sum(alone * reference, axis=1)) > 0.9999


def test_a_fused_graph_that_disagrees_is_dropped_for_the_plain_export(tiny, torch_model, monkeypatch, tmp_path):
    """The real fusion, then one of its weights flipped: the check catches it and the plain export is kept."""
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    real_fuse = onnx_export.fuse

    def fuse_then_damage(source, target, config):
        result = real_fuse(source, target, config)
        model = onnx.load(str(target))
        weights = next(t for t in model.graph.initializer if onnx.numpy_helper.to_array(t).ndim == 2)
        weights.CopyFrom(onnx.numpy_helper.from_array(-onnx.numpy_helper.to_array(weights), weights.name))
        onnx.save(model, str(target))
        return result

    monkeypatch.setattr(onnx_export, "fuse", fuse_then_damage)
    manifest = onnx_export.convert(tiny)
    assert manifest["fusion"]["fused"] is False and sorted(manifest["fusion"]) == ["fused", "why"]
    why = re.fullmatch(r"the fused graph disagreed with sentence-transformers \(cosine (-?\d\.\d{5})\)",
                       manifest["fusion"]["why"])
    assert why and float(why.group(1)) < 0.9999
    folder = onnx_export.converted_dir(tiny)
    ops = [node.op_type for node in onnx.load(str(folder / "model.onnx")).graph.node]
    assert "Attention" not in ops and "MatMul" in ops  # the plain export
    assert 0.9999 <= manifest["check_min_cosine"] < 1.0001
    assert json.loads((folder / "manifest.json").read_text()) == manifest
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "model.onnx"]
    assert onnx_export.problem(tiny) is None


def test_a_model_without_a_fusion_recipe_keeps_the_plain_export_and_a_unit_probe(unnormalised, monkeypatch,
                                                                                 tmp_path):
    """A model whose pipeline has no Normalize module: the probe and the check still compare unit vectors."""
    from kenning.retrieval.torch_encoder import load_sentence_transformer

    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(onnx_export, "_FUSABLE", {})
    steps: list[str] = []
    manifest = onnx_export.convert(unnormalised, steps.append)
    assert steps == [_STEPS[0].replace("tiny", "plain"), *_STEPS[1:]]
    assert manifest["fusion"] == {"fused": False, "why": "no fusion recipe for model type 'bert'"}
    ops = [node.op_type for node in onnx.load(str(onnx_export.onnx_file(unnormalised))).graph.node]
    assert "Attention" not in ops
    raw = load_sentence_transformer(unnormalised.path).encode([onnx_export.PROBE_TEXT], convert_to_numpy=True)[0]
    assert abs(float(np.linalg.norm(raw)) - 1) > 0.01  # the model itself does not normalise
    assert np.allclose(manifest["probe"]["vector"], raw / np.linalg.norm(raw), atol=1e-5)
    assert 0.9999 <= manifest["check_min_cosine"] < 1.0001


def test_an_export_that_disagrees_is_refused_and_leaves_nothing(tiny, monkeypatch, tmp_path):
    """Nothing can reach a cosine of 1.5: both graphs fail the check, the error says by how much."""
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    monkeypatch.setitem(onnx_export.PROBE_MIN_COSINE, "onnx", 1.5)
    with pytest.raises(RuntimeError) as refused:
        onnx_export.convert(tiny)
    assert re.fullmatch(r"the exported model disagrees with sentence-transformers \(cosine (0\.9999\d|1\.0000\d)\)",
                        str(refused.value))
    folder = onnx_export.converted_dir(tiny)
    assert list(folder.iterdir()) == []  # no file, no manifest, no partial files
    assert onnx_export.problem(tiny) is not None


@pytest.mark.parametrize("config", [
    None,  # a pipeline whose first module has no transformers config
    type("NoType", (), {"num_attention_heads": 2, "hidden_size": 32})(),
    type("NoHeads", (), {"model_type": "bert", "hidden_size": 32})(),
    type("NoWidth", (), {"model_type": "bert", "num_attention_heads": 2})(),
    type("ZeroHeads", (), {"model_type": "bert", "num_attention_heads": 0, "hidden_size": 32})(),
])
def test_a_config_without_type_heads_or_width_is_not_fused_and_nothing_is_written(config, tmp_path):
    target = tmp_path / "fused.onnx"
    result = onnx_export.fuse(tmp_path / "missing.onnx", target, config)
    model_type = getattr(config, "model_type", None)
    assert result == {"fused": False, "why": f"no fusion recipe for model type {model_type!r}"}
    assert not target.exists()


_BERT = type("Bert", (), {"model_type": "bert", "num_attention_heads": 1, "hidden_size": 4})()


def test_a_graph_without_attention_is_not_fused_and_says_what_was_found(tmp_path):
    source, target = write_plain_graph(tmp_path / "plain.onnx"), tmp_path / "fused.onnx"
    result = onnx_export.fuse(source, target, _BERT)
    assert result == {"fused": False, "why": "the optimizer found no attention to fuse", "operators": {}}
    assert not target.exists()


def test_a_graph_the_optimizer_cannot_read_is_not_fused_and_names_the_error(tmp_path):
    source = tmp_path / "junk.onnx"
    source.write_bytes(b"not a graph " * 40)
    result = onnx_export.fuse(source, tmp_path / "fused.onnx", _BERT)
    assert sorted(result) == ["fused", "why"] and result["fused"] is False
    error = result["why"].split(":")[0]
    assert error.isidentifier() and error not in ("NoneType", "Exception")  # the exception's own type
    long = onnx_export.fuse(tmp_path / ("x" * 250 + ".onnx"), tmp_path / "fused.onnx", _BERT)
    assert long["fused"] is False and len(long["why"]) == 300  # cut, the path in it is longer


def test_the_q8_variant_is_made_from_the_float_file_once_checked_and_keyed_by_its_recipe(tiny, torch_model,
                                                                                          monkeypatch, tmp_path):
    """onnx-q8: the float conversion first, then its 8-bit weights; a changed recipe makes it again, not the float file."""
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    steps: list[str] = []
    path = onnx_export.ensure(tiny, "onnx-q8", step=steps.append)
    folder = onnx_export.converted_dir(tiny)
    quant_steps = ["quantising the weights to 8-bit blocks of 32 (onnx-q8)", "checking the onnx-q8 model against the float one"]
    assert path == folder / "model-q8.onnx" and steps == _STEPS + quant_steps
    assert sorted(p.name for p in folder.iterdir()) == [".lock", "manifest.json", "model-q8.onnx", "model.onnx"]
    manifest = onnx_export.read_manifest(tiny)
    entry = manifest["files"]["onnx-q8"]
    assert entry["name"] == "model-q8.onnx" and entry["bytes"] == path.stat().st_size
    assert entry["recipe"] == {"bits": 8, "block_size": 32, "is_symmetric": True, "accuracy_level": 4,
                               "quant_version": onnx_export.QUANT_VERSION}
    assert 0.999 <= entry["check_min_cosine"] <= 1.0001
    assert onnx_export.problem(tiny, "onnx-q8") is None and onnx_export.problem(tiny) is None
    ops = [node.op_type for node in onnx.load(str(path)).graph.node]
    assert ops.count("MatMulNBits") == 6 and "MatMul" not in ops  # per layer: attention output, FFN in and out
    again: list[str] = []
    assert onnx_export.ensure(tiny, "onnx-q8", step=again.append) == path and again == []
    from kenning.retrieval.onnx_encoder import OnnxEncoder

    texts = ["hi", "a much longer sentence about the gateway port and the nightly backups of the database"]
    vectors = OnnxEncoder(tiny, path, model_id="q").encode(texts)
    assert np.min(np.sum(vectors * torch_vectors(torch_model, texts), axis=1)) > 0.999
    float_written = onnx_export.onnx_file(tiny).stat().st_mtime_ns
    monkeypatch.setattr(onnx_export, "QUANT_VERSION", onnx_export.QUANT_VERSION + 1)
    assert "made by another recipe" in onnx_export.problem(tiny, "onnx-q8")
    redone: list[str] = []
    onnx_export.ensure(tiny, "onnx-q8", step=redone.append)
    assert redone == quant_steps and onnx_export.onnx_file(tiny).stat().st_mtime_ns == float_written
    assert onnx_export.read_manifest(tiny)["files"]["onnx-q8"]["recipe"]["quant_version"] == onnx_export.QUANT_VERSION
    forced: list[str] = []
    onnx_export.ensure(tiny, "onnx-q8", step=forced.append, force=True)  # the quantisation again, not the export
    assert forced == quant_steps and onnx_export.onnx_file(tiny).stat().st_mtime_ns == float_written
    onnx_export.ensure(tiny, step=forced.append, force=True)  # a new float export drops the q8 entry: made again on use
    assert "onnx-q8" not in onnx_export.read_manifest(tiny)["files"] and onnx_export.problem(tiny, "onnx-q8")


def test_the_q8_encoder_has_its_own_id_so_its_vectors_never_mix_with_the_float_ones(tiny, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    q8 = embeddings.get_encoder(tiny, "onnx-q8")
    plain = embeddings.get_encoder(tiny, "onnx")
    assert q8.model_id == tiny.model_id + "@onnx-q8" != plain.model_id == tiny.model_id + "@onnx"
    assert q8.onnx_file.name == "model-q8.onnx" and plain.onnx_file.name == "model.onnx"
    monkeypatch.setenv("KENNING_ENCODER", "onnx-q8")
    assert embeddings.encoder_id(tiny) == q8.model_id
    embeddings._encoders.pop(q8.model_id), embeddings._encoders.pop(plain.model_id)


def test_the_rows8_variant_runs_every_weight_matmul_on_int8_and_a_vector_never_depends_on_its_batch(
        tiny, torch_model, monkeypatch, tmp_path):
    """onnx-rows8: made from the float file (no torch), each weight MatMul on MatMulInteger with one
    activation scale per token, so a text alone and in a padded batch gets the same vector."""
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    steps: list[str] = []
    path = onnx_export.ensure(tiny, "onnx-rows8", step=steps.append)
    assert path == onnx_export.converted_dir(tiny) / "model-rows8.onnx"
    assert steps == _STEPS + ["rewriting the matrix products as int8 with activations quantised per row (onnx-rows8)",
                              "checking the onnx-rows8 model against the float one"]
    entry = onnx_export.read_manifest(tiny)["files"]["onnx-rows8"]
    assert entry["recipe"]["activations"] == "int8 per row" and 0.995 <= entry["check_min_cosine"] <= 1.0001
    assert onnx_export.problem(tiny, "onnx-rows8") is None
    ops = [node.op_type for node in onnx.load(str(path)).graph.node]
    assert ops.count("MatMulInteger") == 6 and "MatMul" not in ops  # per layer: attention output, FFN in and out
    encoder = embeddings.get_encoder(tiny, "onnx-rows8")
    assert encoder.model_id == tiny.model_id + "@onnx-rows8" and encoder.onnx_file == path
    texts = ["hi", "a much longer sentence about the gateway port and the nightly backups of the database",
             "the port", "nightly backups"]
    batch = encoder.encode(texts, batch_size=4)
    alone = np.stack([encoder.encode_query(t) for t in texts])
    assert np.allclose(batch, alone, atol=1e-5)  # padding and batch-mates change nothing
    assert np.min(np.sum(batch * torch_vectors(torch_model, texts), axis=1)) > 0.995
    embeddings._encoders.pop(encoder.model_id)
