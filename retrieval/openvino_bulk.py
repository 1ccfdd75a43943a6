"""Long encodes (indexing, imports, eval corpora) on OpenVINO, with bfloat16 matrix products where
the CPU multiplies bfloat16 itself (AMX or AVX512-BF16).

Why a second runtime: a float32 batch on two cores runs at about torch's rate whatever the runtime,
because the matrix products are the work (bench/README.md, "Session 21"), and every int8 recipe for
onnxruntime either moved nDCG@10 too far, made a vector depend on its batch-mates or was no faster.
OpenVINO compiles the same ONNX file (the fused graph's com.microsoft ops included) and, asked for
bfloat16, runs the products on the CPU's bfloat16 units with float32 sums, layer norms and softmax:
3.4-3.8x torch's batches in the same run, at cosine >= 0.99997 to the float graph's vectors, the same
vector for a text alone or in a batch (bench/encoder_throughput.py; bench/README.md "Session 22").

It is an option, not the default, by the rule the 8-bit encoders follow: near-ties between two
texts' cosines (gaps under 0.001) reorder, which moves nDCG@10 of some development collections by
more than the 0.003 the float graph keeps to torch (up to +0.0057, builtin semantic), though within
the 0.01 a reduced-precision encoder is offered under.

Only long encodes use it (a server's backlog included). A query or a write stays on onnxruntime,
which is as fast for one text and keeps a serving process ~60 MB smaller; so queries and single
writes get the float graph's vectors, and a text embedded in bulk lies within cosine 0.9999 of them
(the same model id: a store is not re-embedded for switching).

``KENNING_BULK_RUNTIME``: ``onnxruntime`` (default) or ``openvino`` (bfloat16 where the CPU has it,
else float32, which is about onnxruntime's speed). Install with ``pip install "kenning[openvino]"``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

SETTINGS = ("onnxruntime", "openvino")
DEFAULT = "onnxruntime"
# Texts in one encode from which the bulk runtime is worth loading (~0.3 s to compile): `kenning index`,
# `import --embed` (256 a batch), the eval harness (2,048), and a server draining a backlog, which
# then takes batches of this size (store/semantic.py); its single writes stay on onnxruntime, so a
# server with no backlog never loads it.
BULK_MIN = 64
# Texts per OpenVINO call: 8 and 16 ran fastest on two cores, 32 ~10% and 64 ~15% slower.
BULK_BATCH = 16
# The bulk runtime must reproduce the float graph's probe vector this closely, or it is not used.
MIN_PROBE_COSINE = 0.999


def setting() -> str:
    """``$KENNING_BULK_RUNTIME``, default onnxruntime; InvalidSetting for anything else."""
    from .onnx_encoder import InvalidSetting

    value = os.environ.get("KENNING_BULK_RUNTIME", "").strip().lower() or DEFAULT
    if value not in SETTINGS:
        raise InvalidSetting(f"KENNING_BULK_RUNTIME={value!r} is not a runtime; set it to one of "
                             f"{', '.join(SETTINGS)} (default {DEFAULT}), or unset it", "KENNING_BULK_RUNTIME")
    return value


def installed() -> bool:
    return importlib.util.find_spec("openvino") is not None


def _openvino():
    """``import openvino`` without its telemetry. The package's model-conversion tools, imported with
    it, report every import to Google Analytics and keep a client id under ~/intel unless the user
    opted out; they fall back to a silent stub when ``openvino_telemetry`` does not import, so this
    process never lets it (kenning sends nothing anywhere)."""
    sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]  # None: "cannot be imported"
    import openvino

    return openvino


class BulkRunner:
    """The ONNX file compiled by OpenVINO; ``run(feed)`` gives the graph's first output. One call at
    a time (a compiled model's implicit request is not shared between threads)."""

    def __init__(self, onnx_file: Path, threads: int, bfloat16: bool):
        ov = _openvino()
        core = ov.Core()
        config = {"INFERENCE_PRECISION_HINT": "bf16" if bfloat16 else "f32",
                  "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads}
        self.description = f"openvino {'bf16' if bfloat16 else 'f32'}"
        # No compiled-blob cache (CACHE_DIR): a blob damaged in place loads without complaint and gives
        # vectors as far off as cosine 0.7 while a short probe still passes (a hostile test found it);
        # compiling from the checked ONNX file costs ~0.3 s a process that runs a long encode.
        self._model = core.compile_model(str(onnx_file), "CPU", config)
        self._lock = threading.Lock()

    def run(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        with self._lock:
            return np.array(self._model(feed)[0], dtype=np.float32)


def cpu_has_bfloat16() -> bool:
    return "BF16" in _openvino().Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def plan() -> str:
    """What long encodes will run on here, and why, without compiling anything (``kenning models``).
    Whether OpenVINO is used is settled only by a process's first long encode, which compiles it and
    checks its probe vectors (OnnxEncoder.bulk_runner); this says so rather than promise it."""
    bfloat16, why = _choose()
    if bfloat16 is None:
        return fallback(why)
    return (f"openvino {'bf16' if bfloat16 else 'f32'} if it compiles and reproduces the float graph's probe "
            "vectors (checked by each process's first long encode; onnxruntime otherwise)")


def _choose() -> tuple[bool | None, str | None]:
    """(bfloat16 or not, None) when OpenVINO is to run long encodes, else (None, why not; None when
    the setting asks for onnxruntime)."""
    if setting() == "onnxruntime":
        return None, None
    if not installed():
        return None, 'openvino is not installed: pip install "kenning[openvino]"'
    try:
        bfloat16 = cpu_has_bfloat16()
    except Exception as exc:
        return None, failed(exc)
    return bfloat16, None


def failed(exc: BaseException) -> str:
    """Why OpenVINO stopped running long encodes when it raised ``exc``: the error's first line."""
    return f"openvino failed: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"


def fallback(why: str | None) -> str:
    """What runs long encodes when OpenVINO does not, as reported: onnxruntime, and why when OpenVINO
    was asked for (``why`` None: the setting asks for onnxruntime)."""
    return "onnxruntime" if why is None else f"onnxruntime ({why})"


def load(onnx_file: Path, threads: int) -> tuple[BulkRunner | None, str | None]:
    """The bulk runner the setting calls for, or None and why not (None when the setting asks for
    onnxruntime). Never raises for OpenVINO's sake: without it a long encode runs on onnxruntime as before."""
    bfloat16, why = _choose()
    if bfloat16 is None:
        return None, why
    try:
        runner = BulkRunner(onnx_file, threads, bfloat16)
    except Exception as exc:
        log.warning("openvino could not compile %s, long encodes run on onnxruntime: %s", onnx_file, exc)
        return None, failed(exc)
    return runner, None
