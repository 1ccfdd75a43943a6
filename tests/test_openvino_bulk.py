"""Long encodes on OpenVINO (retrieval/openvino_bulk.py, KENNING_BULK_RUNTIME=openvino): the same
vectors as the float graph within cosine 0.9999, whatever a text's batch-mates, used only from
BULK_MIN texts, and never a failure of its own: a broken, missing or straying OpenVINO leaves long
encodes on onnxruntime. Unset, nothing of it loads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from kenning.retrieval import embeddings, onnx_export, openvino_bulk
from kenning.retrieval.onnx_encoder import InvalidSetting, OnnxEncoder

pytestmark = pytest.mark.embeddings

BUILTIN = Path(__file__).resolve().parent.parent / "eval" / "builtin"


@pytest.fixture(scope="module")
def spec():
    pytest.importorskip("onnxruntime")
    spec = embeddings.resolve_model()
    embeddings.get_encoder(spec, "onnx")  # converts first on a machine that never did
    return spec


def fresh(spec, bulk: bool = True) -> OnnxEncoder:
    return OnnxEncoder(spec, onnx_export.onnx_file(spec), model_id="bulk-test", bulk=bulk)


def corpus(n: int) -> list[str]:
    docs = [json.loads(line)["text"] for line in (BUILTIN / "corpus.jsonl").read_text().splitlines() if line]
    texts = docs + [" ".join(docs[i : i + 12]) for i in range(0, len(docs), 5)]  # long ones: truncated at 256
    assert len(texts) >= n
    return texts[:n]


def assert_probe_refused(runtime: str) -> None:
    """The runtime names the probe's cosine (close to 1 on any CPU: bfloat16 or float32 products)
    and the bar it missed (1.01 here); cut to six places, so it never reads as the bar itself."""
    found = re.fullmatch(r"onnxruntime \(openvino's probe vectors stray from the float graph's: cosine (\d\.\d{6}), "
                         r"under the 1\.01 it must reach\)", runtime)
    assert found and 0.999 <= float(found[1]) < 1.01, runtime


@pytest.fixture
def openvino_on(monkeypatch):
    if not openvino_bulk.installed():
        pytest.skip("openvino is not installed here")  # the dev extra installs it
    monkeypatch.setenv("KENNING_BULK_RUNTIME", "openvino")


def test_a_long_encode_runs_on_openvino_in_bfloat16_and_keeps_the_float_vectors(spec, openvino_on):
    texts = corpus(150)
    bulk, plain = fresh(spec), fresh(spec, bulk=False)
    got, want = bulk.encode(texts), plain.encode(texts)
    # no compiled blob is kept: one damaged in place gave vectors at cosine 0.7 past the probe
    assert not (bulk.onnx_file.parent / "model.openvino").exists()
    expected = "openvino bf16" if openvino_bulk.cpu_has_bfloat16() else "openvino f32"
    assert bulk.last_runtime == bulk.bulk_runtime == expected
    cosines = (got * want).sum(axis=1)
    assert got.dtype == np.float32 and cosines.min() >= 0.9999, cosines.min()
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # a text's vector does not depend on the texts it is batched with
    shuffled = list(reversed(texts[40:])) + texts[:40]
    again = bulk.encode(shuffled)
    moved = dict(zip(shuffled, again))
    assert min(float(moved[t] @ v) for t, v in zip(texts, got)) >= 0.99999


def test_a_short_encode_and_a_query_stay_on_onnxruntime_exactly(spec, openvino_on):
    texts = corpus(openvino_bulk.BULK_MIN - 1)
    bulk, plain = fresh(spec), fresh(spec, bulk=False)
    assert np.array_equal(bulk.encode(texts), plain.encode(texts)) and bulk.last_runtime == "onnxruntime"
    assert bulk._bulk is None  # nothing compiled for it
    assert np.array_equal(bulk.encode_query(texts[0]), plain.encode_query(texts[0]))


@pytest.mark.parametrize("value", [None, "onnxruntime", " ONNXRuntime "])
def test_by_default_a_long_encode_is_the_float_graph_exactly(spec, monkeypatch, value):
    if value is None:
        monkeypatch.delenv("KENNING_BULK_RUNTIME", raising=False)
    else:
        monkeypatch.setenv("KENNING_BULK_RUNTIME", value)
    texts = corpus(openvino_bulk.BULK_MIN)
    bulk = fresh(spec)
    assert np.array_equal(bulk.encode(texts), fresh(spec, bulk=False).encode(texts))
    assert bulk.bulk_runtime == bulk.last_runtime == "onnxruntime" and bulk._bulk is None


def test_a_typo_in_the_setting_is_named(monkeypatch):
    monkeypatch.setenv("KENNING_BULK_RUNTIME", "gpu")
    with pytest.raises(InvalidSetting, match=r"KENNING_BULK_RUNTIME='gpu' is not a runtime; set it to one of "
                                             r"onnxruntime, openvino \(default onnxruntime\)") as caught:
        openvino_bulk.setting()
    assert caught.value.fix == "unset KENNING_BULK_RUNTIME"


def test_openvino_straying_from_the_float_graph_is_not_used(spec, monkeypatch, openvino_on):
    """The probe is what keeps a runtime that computes something else out: with a bar no runtime can
    pass, long encodes stay on onnxruntime and say why."""
    monkeypatch.setattr(openvino_bulk, "MIN_PROBE_COSINE", 1.01)
    texts = corpus(openvino_bulk.BULK_MIN)
    bulk = fresh(spec)
    assert np.array_equal(bulk.encode(texts), fresh(spec, bulk=False).encode(texts))
    assert bulk.last_runtime == "onnxruntime"
    assert_probe_refused(bulk.bulk_runtime)


@pytest.mark.slow
def test_a_broken_openvino_install_costs_kenning_index_nothing(spec, tmp_path):
    """An openvino that fails to import (a half-removed install): `kenning index` embeds on
    onnxruntime, says so, and every vector is there."""
    fake = tmp_path / "site" / "openvino"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('libopenvino.so.2026: cannot open shared object file')\n")
    store = tmp_path / "store"
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "site"), os.environ.get("PYTHONPATH")]))}
    env["KENNING_BULK_RUNTIME"] = "openvino"
    memories = "".join(json.dumps({"content": f"memory {i}: {t}"}) + "\n" for i, t in enumerate(corpus(80)))
    (tmp_path / "m.jsonl").write_text(memories)
    run = [sys.executable, "-m", "kenning.cli", "--store", str(store)]
    subprocess.run([*run, "import", "--no-gates", str(tmp_path / "m.jsonl")], env=env, check=True, capture_output=True, text=True)
    done = subprocess.run([*run, "index", "--json"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    refused = "onnxruntime (openvino failed: ImportError: libopenvino.so.2026: cannot open shared object file)"
    assert report["embedded"] == 80 and report["pending"] == 0, report
    assert report["runtime"] == refused and report["runtimes"] == {"onnxruntime": 80}, report  # asked for, and why not
    assert "Traceback" not in done.stderr
    models = subprocess.run([*run, "models", "--json"], env=env, capture_output=True, text=True, check=True)
    assert json.loads(models.stdout)["long_encodes"] == refused
    probe = textwrap.dedent("""
        import sys
        from kenning.retrieval import embeddings, onnx_export
        from kenning.retrieval.onnx_encoder import OnnxEncoder
        spec = embeddings.resolve_model()
        print(OnnxEncoder(spec, onnx_export.onnx_file(spec), "x", bulk=True).bulk_runtime)
    """)
    said = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert said.stdout.strip() == "onnxruntime (openvino failed: ImportError: libopenvino.so.2026: cannot open " \
                                  "shared object file)"


@pytest.mark.slow
def test_a_bulk_encode_sends_no_telemetry_and_leaves_nothing_in_home(spec, tmp_path, openvino_on):
    """openvino's conversion tools report each import and keep a client id under ~/intel; kenning's
    import of it goes through the tools' silent stub. Unset, openvino is not even imported."""
    home = tmp_path / "home"
    home.mkdir()
    script = textwrap.dedent("""
        import sys
        from kenning.retrieval import embeddings, onnx_export
        from kenning.retrieval.onnx_encoder import OnnxEncoder
        spec = embeddings.resolve_model()
        encoder = OnnxEncoder(spec, onnx_export.onnx_file(spec), "x", bulk=True)
        encoder.encode([f"text number {i}" for i in range(70)])
        print(encoder.last_runtime, sys.modules.get("openvino_telemetry"), "openvino" in sys.modules)
    """)
    cache = onnx_export.onnx_file(spec).parents[2]  # this session's conversion, not a new one under HOME
    env = {**os.environ, "HOME": str(home), "HF_HUB_OFFLINE": "1", "KENNING_BULK_RUNTIME": "openvino",
           "KENNING_CACHE_DIR": str(cache)}
    said = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert said.stdout.split()[-2:] == ["None", "True"] and said.stdout.startswith("openvino "), said.stdout
    del env["KENNING_BULK_RUNTIME"]
    said = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert said.stdout.split() == ["onnxruntime", "None", "False"], said.stdout
    assert not (home / "intel").exists()  # where openvino_telemetry keeps its client id and counts


def test_the_bulk_size_is_given_only_where_the_bulk_runtime_may_run(spec, monkeypatch, openvino_on):
    from kenning.retrieval.torch_encoder import TorchEncoder

    assert fresh(spec).bulk_min() == openvino_bulk.BULK_MIN
    assert fresh(spec, bulk=False).bulk_min() is None  # a q8 encoder: the bulk runtime serves the float graph only
    assert TorchEncoder.bulk_min() is None
    monkeypatch.setattr(openvino_bulk, "MIN_PROBE_COSINE", 1.01)
    strayed = fresh(spec)
    strayed.encode(corpus(openvino_bulk.BULK_MIN))
    assert strayed.last_runtime == "onnxruntime" and strayed.bulk_min() is None  # failed here: small batches again
    monkeypatch.setenv("KENNING_BULK_RUNTIME", "onnxruntime")
    assert fresh(spec).bulk_min() is None


def test_a_server_drains_a_backlog_on_the_bulk_runtime_and_its_writes_on_onnxruntime(store, monkeypatch, openvino_on):
    """A server started on an unembedded import (`kenning import` without --embed) embeds it in the
    background in batches the bulk runtime takes; a write it answers meanwhile stays on onnxruntime."""
    from kenning.store import semantic

    texts = corpus(2 * openvino_bulk.BULK_MIN + 10)
    store.import_records([{"content": f"note {i}: {t}", "scopes": ["bulk"]} for i, t in enumerate(texts)])
    assert store.semantic.pending_count() == len(texts)  # imported, not embedded
    encoder = store.semantic.encoder()
    assert store.semantic.background_batch() == openvino_bulk.BULK_MIN
    ran: list[tuple[int, str]] = []
    original = encoder.encode

    def encode(batch, **kwargs):
        batch = list(batch)
        out = original(batch, **kwargs)
        ran.append((len(batch), encoder.last_runtime))
        return out

    monkeypatch.setattr(encoder, "encode", encode)
    store.semantic.start_background(poll_s=0.1)
    deadline = time.monotonic() + 120
    while store.semantic.pending_count() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.semantic.pending_count() == 0
    bulk = "openvino bf16" if openvino_bulk.cpu_has_bfloat16() else "openvino f32"
    assert ran[:3] == [(64, bulk), (64, bulk), (10, "onnxruntime")], ran
    written = store.write("The staging cluster is drained every Friday at noon", scopes=["x"])
    assert written.status == "committed"
    found = store.search("when is staging emptied", mode="semantic", limit=3)
    assert found.pending_embeddings == 0 and found.hits[0].id == written.id
    assert ran[-1] == (1, "onnxruntime"), ran
    monkeypatch.delenv("KENNING_BULK_RUNTIME")
    assert store.semantic.background_batch() == semantic.BACKGROUND_BATCH


def test_openvino_failing_part_way_through_a_long_encode_hands_the_rest_to_onnxruntime(spec, monkeypatch, openvino_on):
    """A runtime error after the probe passed (the real OpenVINO cannot be made to fail on demand, so
    its run raises from the third batch): no batch is lost, the failed ones and every later one are
    the float graph's, and the encoder says what ran."""
    texts = corpus(6 * openvino_bulk.BULK_BATCH)
    bulk, plain = fresh(spec), fresh(spec, bulk=False)
    runner = bulk.bulk_runner()
    assert runner is not None
    real, calls = runner.run, []

    def run(feed):
        calls.append(len(feed["input_ids"]))
        if len(calls) >= 3:
            raise RuntimeError("Exception from src/inference/src/cpp/infer_request.cpp: out of memory")
        return real(feed)

    monkeypatch.setattr(runner, "run", run)
    got, want = bulk.encode(texts), plain.encode(texts)
    assert len(calls) == 3  # not tried again after it failed
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= 0.9999 and int((abs(cosines - 1) < 1e-6).sum()) >= 4 * openvino_bulk.BULK_BATCH
    said = "onnxruntime (openvino failed: RuntimeError: Exception from src/inference/src/cpp/infer_request.cpp: out of memory)"
    assert bulk.last_runtime == bulk.bulk_runtime == said and bulk.bulk_min() is None
    assert np.array_equal(bulk.encode(texts), want) and bulk.last_runtime == "onnxruntime"


@pytest.mark.parametrize("answer", ["nan", "raise"])
def test_an_openvino_probe_that_gives_nan_or_raises_is_not_used(spec, monkeypatch, openvino_on, answer):
    def run(self, feed):
        if answer == "raise":
            raise RuntimeError("compiled model has no CPU plugin")
        return np.full((len(feed["input_ids"]), 384), np.nan, np.float32)

    monkeypatch.setattr(openvino_bulk.BulkRunner, "run", run)
    texts = corpus(openvino_bulk.BULK_MIN)
    bulk = fresh(spec)
    assert np.array_equal(bulk.encode(texts), fresh(spec, bulk=False).encode(texts))
    assert bulk.last_runtime == "onnxruntime" and bulk.bulk_min() is None
    assert bulk.bulk_runtime == {"nan": "onnxruntime (openvino gave non-finite values for its probe)",
                                 "raise": "onnxruntime (openvino failed: RuntimeError: compiled model has no CPU plugin)"}[answer]


def kenning(store: Path, *args: str, env: dict | None = None, prelude: str | None = None) -> subprocess.CompletedProcess:
    """``kenning --store store args`` in a subprocess with KENNING_BULK_RUNTIME=openvino; ``prelude`` runs first."""
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "KENNING_BULK_RUNTIME": "openvino", **(env or {})}
    command = ([sys.executable, "-m", "kenning.cli"] if prelude is None
               else [sys.executable, "-c", f"{prelude}\nfrom kenning.cli import main; main()"])
    return subprocess.run([*command, "--store", str(store), *args], capture_output=True, text=True, env=environ)


def jsonl(path: Path, label: str, n: int) -> str:
    path.write_text("".join(json.dumps({"content": f"{label} {i}: {t}"}) + "\n" for i, t in enumerate(corpus(n))))
    return str(path)


@pytest.mark.slow
def test_index_and_import_embed_name_every_runtime_that_ran_not_the_last_chunks(spec, tmp_path, openvino_on):
    """300 pending memories are drained in chunks of 256 (store/semantic.py EMBED_BATCH): 256 run on
    OpenVINO, the last 44 (under BULK_MIN) on onnxruntime. The report names both, with counts; it once
    said "onnxruntime", the last chunk's. With nothing pending, runtime is there and null."""
    bulk = "openvino bf16" if openvino_bulk.cpu_has_bfloat16() else "openvino f32"
    store = tmp_path / "store"
    queued = kenning(store, "import", "--no-gates", jsonl(tmp_path / "a.jsonl", "memory", 300))
    assert queued.returncode == 0, queued.stderr
    done = kenning(store, "index", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["embedded"] == 300 and report["pending"] == 0, report
    assert report["runtimes"] == {bulk: 256, "onnxruntime": 44}, report
    assert report["runtime"] == f"{bulk} (44 on onnxruntime: fewer than {openvino_bulk.BULK_MIN} texts at a time)"
    idle = json.loads(kenning(store, "index", "--json").stdout)
    assert idle["embedded"] == 0 and "runtime" in idle and idle["runtime"] is None and idle["runtimes"] == {}, idle
    embedded = kenning(store, "import", "--no-gates", "--embed", jsonl(tmp_path / "b.jsonl", "note", 300))
    assert embedded.returncode == 0, embedded.stderr
    said = embedded.stdout.splitlines()[-1]
    assert said.startswith("embedded 300 in ") and said.endswith(
        f" memories/s) on {bulk} (44 on onnxruntime: fewer than {openvino_bulk.BULK_MIN} texts at a time); 0 pending"), said


@pytest.mark.slow
def test_index_says_why_openvino_was_not_used_when_its_probe_refused_it(spec, tmp_path, openvino_on):
    """OpenVINO installed and asked for, but its probe vectors miss the bar (set past reach here, as
    the in-process test does): the runtime says onnxruntime and why, in JSON and in plain text."""
    store = tmp_path / "store"
    assert kenning(store, "import", "--no-gates", jsonl(tmp_path / "a.jsonl", "memory", 70)).returncode == 0
    done = kenning(store, "index", "--json", prelude="from kenning.retrieval import openvino_bulk\n"
                                                      "openvino_bulk.MIN_PROBE_COSINE = 1.01  # no runtime passes")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["runtimes"] == {"onnxruntime": 70}, report
    assert_probe_refused(report["runtime"])


def test_kenning_models_does_not_promise_openvino_before_a_long_encode_checked_it(tmp_path, openvino_on):
    """`kenning models` compiles nothing, so it cannot know that OpenVINO will pass its probe: it says
    what it will run if it does, and what decides it (it once said just "openvino bf16")."""
    bulk = "openvino bf16" if openvino_bulk.cpu_has_bfloat16() else "openvino f32"
    shown = kenning(tmp_path / "store", "models", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["long_encodes"] == (
        f"{bulk} if it compiles and reproduces the float graph's probe vectors (checked by each process's first "
        "long encode; onnxruntime otherwise)")
    assert kenning(tmp_path / "store", "models").stdout.count(bulk) == 1
    q8 = json.loads(kenning(tmp_path / "store", "models", "--json", env={"KENNING_ENCODER": "onnx-q8"}).stdout)
    assert q8["long_encodes"] == "onnx-q8 (KENNING_BULK_RUNTIME=openvino serves the onnx encoder only)"


def test_every_command_that_runs_long_encodes_mentions_the_bulk_runtime_in_its_help():
    """index, import --embed, eval run and a server draining a backlog run long encodes; models says
    what runs them."""
    from typer.testing import CliRunner

    from kenning.cli import app

    for command in (["index"], ["import"], ["models"], ["serve"], ["eval", "run"], ["transcripts", "index"]):
        shown = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
        assert shown.exit_code == 0 and "KENNING_BULK_RUNTIME=openvino" in shown.stdout, command


@pytest.mark.parametrize("bulk", [False, True])
def test_an_eval_report_says_what_encoded_its_corpus_and_when_the_cache_held_it_all(spec, tmp_path, monkeypatch, bulk):
    """`kenning eval run`'s "what ran" names the runtime that encoded the corpus in this run, not the
    setting: texts the shared embedding cache already held were encoded by whatever made them, so a
    second run of the same collection says nothing was encoded."""
    import uuid

    from kenning.eval.harness import CACHE_ONLY, run_eval
    from test_eval_datasets import write_collection

    if bulk:
        if not openvino_bulk.installed():
            pytest.skip("openvino is not installed here")
        monkeypatch.setenv("KENNING_BULK_RUNTIME", "openvino")
    tag = uuid.uuid4().hex  # texts no earlier test put in the session's embedding cache
    texts = corpus(openvino_bulk.BULK_MIN + 6)
    folder = write_collection(tmp_path / "c", [{"_id": f"d{i}", "title": "", "text": f"{tag} {t}"} for i, t in enumerate(texts)],
                              [{"_id": "q1", "text": "who approves refunds"}], [("q1", "d0", 1)])
    first = run_eval(folder, modes=["semantic"], progress=False)["config"]["long_encodes"]
    expected = ("openvino bf16" if openvino_bulk.cpu_has_bfloat16() else "openvino f32") if bulk else "onnxruntime"
    assert first == expected
    assert run_eval(folder, modes=["semantic"], progress=False)["config"]["long_encodes"] == CACHE_ONLY
