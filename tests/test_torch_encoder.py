"""The reference encoder (sentence-transformers on torch): offline loading, threads, attention, order, progress.

In-process on the real packaged model, so the mutation score of retrieval/torch_encoder.py sees it
(issue 19). Loading torch takes seconds: the module is marked slow.
"""

from __future__ import annotations

import numpy as np
import pytest

from kenning.retrieval import embeddings

pytestmark = [pytest.mark.embeddings, pytest.mark.slow]


@pytest.fixture(scope="module")
def spec() -> embeddings.ModelSpec:
    pytest.importorskip("sentence_transformers")
    return embeddings.resolve_model()


@pytest.fixture(scope="module")
def torch_encoder(spec):
    from kenning.retrieval.torch_encoder import TorchEncoder

    return TorchEncoder(spec)


@pytest.fixture
def torch_threads():
    import torch

    before = torch.get_num_threads()
    yield torch
    torch.set_num_threads(before)


def test_loading_is_offline_quiet_on_one_thread_and_keeps_settings_already_made(spec, monkeypatch, torch_threads):
    from kenning.retrieval.torch_encoder import load_sentence_transformer

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    monkeypatch.delenv("KENNING_TORCH_THREADS", raising=False)
    torch_threads.set_num_threads(2)
    model = load_sentence_transformer(spec.path)
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert torch_threads.get_num_threads() == 1 and str(model.device) == "cpu"
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    monkeypatch.setenv("KENNING_TORCH_THREADS", "2")
    load_sentence_transformer(spec.path)
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "0" and torch_threads.get_num_threads() == 2
    monkeypatch.setenv("KENNING_TORCH_THREADS", "0")  # refused as KENNING_ONNX_THREADS=0 is, not run as 1
    from kenning.retrieval.onnx_encoder import InvalidSetting

    with pytest.raises(InvalidSetting, match="KENNING_TORCH_THREADS='0' is below 1"):
        load_sentence_transformer(spec.path)
    assert torch_threads.get_num_threads() == 2  # the setting made before stands


def test_the_export_can_ask_for_eager_attention(spec):
    from kenning.retrieval.torch_encoder import load_sentence_transformer

    eager = load_sentence_transformer(spec.path, attention="eager")
    assert eager[0].auto_model.config._attn_implementation == "eager"
    default = load_sentence_transformer(spec.path)
    assert default[0].auto_model.config._attn_implementation != "eager"


def test_the_encoder_carries_its_model_and_dimension(spec, torch_encoder):
    from kenning.retrieval.torch_encoder import TorchEncoder

    assert torch_encoder.spec == spec and torch_encoder.model_id == spec.model_id == embeddings.encoder_id(spec, "torch")
    assert torch_encoder.dim == 384 and torch_encoder.backend == "torch"
    assert TorchEncoder(spec, model_id="named").model_id == "named"


def test_rows_come_back_in_input_order_unit_length_with_progress_per_chunk(torch_encoder, capsys):
    texts = [f"note {n}: " + "the deploy moved to Friday " * (n % 4 + 1) for n in range(11)]
    singles = np.stack([torch_encoder.encode_query(t) for t in texts])
    advanced: list[int] = []
    vectors = torch_encoder.encode(iter(texts), batch_size=1, progress=advanced.append)
    assert advanced == [8, 3]  # chunks of batch_size * 8 texts
    assert vectors.dtype == np.float32 and vectors.shape == (11, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors, singles, atol=1e-5)
    advanced.clear()
    assert np.allclose(torch_encoder.encode(texts, progress=advanced.append), singles, atol=1e-5)
    assert advanced == [11]
    assert np.allclose(torch_encoder.encode(texts[:2]), singles[:2], atol=1e-5)
    empty = torch_encoder.encode([], progress=advanced.append)
    assert empty.shape == (0, 384) and empty.dtype == np.float32 and advanced == [11]
    assert capsys.readouterr().err == ""  # no progress bar of sentence-transformers' own


def test_rows_are_normalised_even_for_a_model_without_a_normalize_module(spec, tmp_path):
    import json

    from kenning.retrieval.torch_encoder import TorchEncoder

    model = tmp_path / "unnormalised"
    for file in spec.path.rglob("*"):
        if file.is_file() and file.name != "modules.json":
            (model / file.relative_to(spec.path)).parent.mkdir(parents=True, exist_ok=True)
            (model / file.relative_to(spec.path)).symlink_to(file)
    modules = json.loads((spec.path / "modules.json").read_text())
    (model / "modules.json").write_text(json.dumps([m for m in modules if not m["type"].endswith("Normalize")]))
    encoder = TorchEncoder(embeddings.resolve_model("unnormalised", tmp_path))
    assert np.allclose(np.linalg.norm(encoder.encode(["a", "some longer text"]), axis=1), 1.0, atol=1e-5)


def test_a_query_is_one_unit_row_that_agrees_with_the_onnx_encoder(spec, torch_encoder):
    pytest.importorskip("onnxruntime")
    query = torch_encoder.encode_query("which port does the auth service listen on")
    assert query.shape == (384,) and query.dtype == np.float32
    onnx = embeddings.get_encoder(spec, "onnx").encode_query("which port does the auth service listen on")
    assert float(query @ onnx) > 0.9999
    assert float(query @ torch_encoder.encode_query("a recipe for lemon cake")) < 0.5


def test_both_encoders_know_the_same_words(spec, torch_encoder):
    """``knows_word``: a word of the model's vocabulary is one piece, a slip or a coined name several,
    and the two backends read words with the same tokenizer."""
    pytest.importorskip("onnxruntime")
    onnx = embeddings.get_encoder(spec, "onnx")
    words = ["many", "moon", "Port", "library", "lantren", "libary", "secruity", "kennelbook"]
    assert [torch_encoder.knows_word(w) for w in words] == [onnx.knows_word(w) for w in words] == [True] * 4 + [False] * 4


def test_the_torch_backend_loads_through_embeddings_once_per_model(spec, torch_encoder, monkeypatch):
    from kenning.retrieval.torch_encoder import TorchEncoder

    monkeypatch.setattr(embeddings, "_encoders", {})
    loaded = embeddings._load_torch(spec)
    assert isinstance(loaded, TorchEncoder) and loaded.model_id == spec.model_id
    assert np.allclose(loaded.encode_query("kittens"), torch_encoder.encode_query("kittens"), atol=1e-6)
    monkeypatch.delenv("KENNING_ENCODER", raising=False)  # onnx by default; torch asked for by name
    first = embeddings.get_encoder(spec, "torch")
    assert list(embeddings._encoders) == [spec.model_id] and not embeddings.loaded(spec)
    monkeypatch.setenv("KENNING_ENCODER", "torch")
    assert first is embeddings.get_encoder(spec) and list(embeddings._encoders) == [spec.model_id]
    assert embeddings.loaded(spec) and first.backend == "torch"


def test_a_model_torch_cannot_load_is_unavailable_with_the_cause(tmp_path):
    pytest.importorskip("sentence_transformers")
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "config.json").write_text("{ this is not a model")
    spec = embeddings.resolve_model("junk", tmp_path)
    with pytest.raises(embeddings.EmbeddingsUnavailable) as unavailable:
        embeddings._load_torch(spec)
    assert unavailable.value.cause.startswith("loading model 'junk' with sentence-transformers failed: ")
    assert unavailable.value.fix is None and len(unavailable.value.cause.splitlines()) == 1
