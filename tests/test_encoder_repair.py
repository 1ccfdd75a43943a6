"""The slow repair paths of the encoder, in-process so the mutation score sees them (issue 19): a conversion
that no longer reproduces its probe is converted again, a model that cannot be converted says why, and
the export's check finds the least agreeing text. Fixtures and helpers are test_encoder_units'."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from kenning.errors import EmbeddingsUnavailable
from kenning.retrieval import embeddings, onnx_export

from test_encoder_units import _negated_probe, fresh_caches, link_conversion, link_model, reference, spec  # noqa: F401

pytestmark = [pytest.mark.embeddings, pytest.mark.slow]  # torch, a conversion, two sessions of the 90 MB file


def test_a_conversion_that_no_longer_reproduces_its_probe_is_converted_again(spec, reference, fresh_caches,
                                                                           monkeypatch, tmp_path, capsys):
    """The size is right, so only the probe tells: the file is converted again (forced) and then loads."""
    pytest.importorskip("sentence_transformers")
    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    onnx_file = link_conversion(spec, cache, _negated_probe)
    assert onnx_export.problem(spec) is None
    encoder = embeddings._load_onnx(spec, "onnx")
    assert not onnx_file.is_symlink() and onnx_export.problem(spec) is None  # a new file of its own
    assert encoder.onnx_file == onnx_file and encoder.model_id == spec.model_id + "@onnx"
    assert float(encoder.encode_query("auth port") @ reference.encode_query("auth port")) > 0.9999
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"kenning: the ONNX file {onnx_file} no longer reproduces its reference vector (damaged); "
                      f"converting {spec.name} to ONNX once (about half a minute)")
    assert err[1] == f"kenning:   loading {spec.name} with sentence-transformers (torch)"
    assert err[-1].startswith(f"kenning: converted {spec.name} in ") and err[-1].endswith(f" s ({onnx_file.parent})")
    seconds = int(err[-1].split(" in ")[1].split(" s ")[0])
    assert 0 <= seconds < 3600


def test_a_model_that_cannot_be_converted_says_so_without_a_repair_command(fresh_caches, monkeypatch, tmp_path, capsys):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    junk = tmp_path / "models" / "junk"
    junk.mkdir(parents=True)
    (junk / "config.json").write_text("{ this is not a model")
    spec = embeddings.resolve_model("junk", tmp_path / "models")
    with pytest.raises(EmbeddingsUnavailable) as unavailable:
        embeddings._load_onnx(spec, "onnx")
    assert re.match(r"converting junk to ONNX failed: \w*Error: \S", unavailable.value.cause), unavailable.value.cause
    assert unavailable.value.fix is None
    err = capsys.readouterr().err
    assert err.startswith(f"kenning: the ONNX conversion of junk is missing ({onnx_export.converted_dir(spec)}); "
                          "converting junk to ONNX once (about half a minute)\n")
    assert "kenning:   loading junk with sentence-transformers (torch)\n" in err and "converted junk" not in err
    availability = embeddings.probe("junk", tmp_path / "models")
    assert availability.state == "broken" and availability.model == spec and availability.fix is None


def test_the_worst_cosine_is_the_least_agreeing_text(spec, reference):
    texts = [onnx_export.PROBE_TEXT, *onnx_export._CHECK_TEXTS]
    vectors = reference.encode(texts)
    assert onnx_export._worst_cosine(spec, reference.onnx_file, vectors) > 0.99999
    spoiled = vectors.copy()
    spoiled[3] = -spoiled[3]
    assert onnx_export._worst_cosine(spec, reference.onnx_file, spoiled) == pytest.approx(-1.0, abs=1e-5)


def _own_conversion(spec, cache):
    """The shared conversion linked into ``cache``, its ONNX file replaced by a copy of its own (same
    time, so the manifest still matches) to damage, and no optimised copy linked from the shared cache
    (the next load makes one from the damaged file)."""
    import shutil

    from kenning.retrieval import onnx_encoder

    onnx_file = link_conversion(spec, cache)
    original = onnx_file.resolve()
    onnx_file.unlink()
    shutil.copy2(original, onnx_file)
    optimized = onnx_encoder.optimized_dir(onnx_file)
    if optimized.is_symlink():
        optimized.unlink()
    return onnx_file


def _nan_row(onnx_file, token_id: int) -> None:
    """Overwrite, in place, the word-embedding row of one token with NaN (the size and time kept): a file
    that loads and reproduces its probe, but gives NaN for any text holding that token."""
    import os

    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_file))
    table = next(numpy_helper.to_array(t) for t in model.graph.initializer if list(t.dims) == [30522, 384])
    data = onnx_file.read_bytes()
    offset = data.find(table[token_id].tobytes())
    assert offset > 0 and data.find(table[token_id].tobytes(), offset + 1) < 0
    stat = onnx_file.stat()
    with open(onnx_file, "r+b") as file:
        file.seek(offset)
        file.write(np.full(384, np.nan, dtype=np.float32).tobytes())
    os.utime(onnx_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_file_that_gives_nan_for_some_texts_stores_no_vector_and_breaks_the_encoder(spec, fresh_caches, monkeypatch,
                                                                                     tmp_path):
    import sqlite3

    import kenning
    from kenning.retrieval import onnx_encoder

    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    onnx_file = _own_conversion(spec, cache)
    _nan_row(onnx_file, onnx_encoder.load_tokenizer(spec.path).token_to_id("kitten"))
    assert onnx_export.problem(spec) is None  # size and time as recorded: nothing to hash

    store = kenning.open_store(tmp_path / "store")
    try:
        store.write("The auth service listens on port 8443", scopes=["x"])
        assert store.semantic.pending_count() == 0 and store.semantic.availability().working
        kitten = store.write("A kitten sleeps on the warm printer", scopes=["x"])
        availability = store.semantic.availability()
        assert availability.state == "broken" and availability.fix == "kenning models --convert"
        assert availability.cause == (f"the ONNX file {onnx_file} gave non-finite values (NaN or infinity) for a "
                                      "text, so it is damaged")
        assert store.semantic.pending_count() == 1  # left queued, never stored with a NaN vector
        result = store.search("printer", mode="hybrid", auto_scope=False)
        assert result.degraded.reason == "embeddings_broken" and result.degraded.fix == "kenning models --convert"
        assert result.pending_embeddings == 1 and result.hits[0].id == kitten.id
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "store" / "kenning.sqlite3") as db:
        vectors = [np.frombuffer(v, np.float32) for (v,) in db.execute("SELECT vector FROM embeddings")]
    assert len(vectors) == 1 and np.isfinite(vectors[0]).all()


def test_a_query_that_gives_nan_is_answered_lexically_in_the_same_search(spec, fresh_caches, monkeypatch, tmp_path):
    import kenning
    from kenning.retrieval import onnx_encoder

    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    onnx_file = _own_conversion(spec, cache)
    _nan_row(onnx_file, onnx_encoder.load_tokenizer(spec.path).token_to_id("kitten"))
    store = kenning.open_store(tmp_path / "store")
    try:
        store.write("The auth service listens on port 8443", scopes=["x"])
        result = store.search("kitten auth", mode="hybrid", auto_scope=False)
        assert result.legs_run == ["bm25"] and result.degraded.reason == "embeddings_broken"
        assert "8443" in result.hits[0].snippet and result.pending_embeddings == 0
    finally:
        store.close()


def test_bytes_overwritten_in_place_with_a_new_time_are_converted_again(spec, fresh_caches, monkeypatch, tmp_path):
    """The manifest's hash tells (no probe needed): the file is converted again, as a truncated one is."""
    import os

    from kenning.retrieval import onnx_encoder

    pytest.importorskip("sentence_transformers")
    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    onnx_file = _own_conversion(spec, cache)
    manifest_path = onnx_file.parent / onnx_export.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["onnx"] = onnx_export._file_entry(onnx_file)  # as a conversion now records it
    manifest_path.write_text(json.dumps(manifest))
    _nan_row(onnx_file, onnx_encoder.load_tokenizer(spec.path).token_to_id("kitten"))
    os.utime(onnx_file)  # an edit that sets the time, as most do
    assert onnx_export.problem(spec) == f"the ONNX file {onnx_file} is damaged (its content changed since it was converted)"
    encoder = embeddings._load_onnx(spec, "onnx")
    assert onnx_export.problem(spec) is None and np.isfinite(encoder.encode_query("a kitten naps")).all()


def test_the_torch_encoder_never_returns_a_nan_vector(fresh_caches, monkeypatch, tmp_path):
    """KENNING_ENCODER=torch guards as the ONNX encoder does: a model whose weights hold NaN (a real
    damaged copy of the packaged one) raises NonFiniteVectors, and the probe then says broken."""
    pytest.importorskip("sentence_transformers")
    from safetensors.numpy import load_file, save_file

    from kenning.retrieval.onnx_encoder import NonFiniteVectors

    source = embeddings.resolve_model().path
    target = link_model(source, tmp_path / "models" / "damaged", skip=("model.safetensors",))
    tensors = load_file(source / "model.safetensors")
    name = next(key for key in tensors if key.endswith("LayerNorm.weight"))
    tensors[name] = np.full_like(tensors[name], np.nan)
    save_file(tensors, str(target / "model.safetensors"), metadata={"format": "pt"})
    monkeypatch.setenv("KENNING_ENCODER", "torch")
    availability = embeddings.probe("damaged", tmp_path / "models")
    assert availability.working  # loading does not encode anything it keeps
    encoder = embeddings.get_encoder(availability.model)
    with pytest.raises(NonFiniteVectors) as refused:
        encoder.encode(["the deploy script lives in ops/deploy.sh", "a second text"])
    assert refused.value.cause == (f"the model in {target} gave non-finite values (NaN or infinity) for a text, "
                                   "so its weights are damaged")
    after = embeddings.probe("damaged", tmp_path / "models")
    assert after.state == "broken" and after.cause == refused.value.cause
    with pytest.raises(NonFiniteVectors):
        encoder.encode_query("deploy script")
