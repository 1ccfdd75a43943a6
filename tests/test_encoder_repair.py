"""The slow repair paths of the encoder, in-process so the mutation score sees them (issue 19): a conversion
that no longer reproduces its probe is converted again, a model that cannot be converted says why, and
the export's check finds the least agreeing text. Fixtures and helpers are test_encoder_units'."""

from __future__ import annotations

import re

import numpy as np
import pytest

from kenning.errors import EmbeddingsUnavailable
from kenning.retrieval import embeddings, onnx_export

from test_encoder_units import _negated_probe, fresh_caches, link_conversion, reference, spec  # noqa: F401

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
