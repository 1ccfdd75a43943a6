"""The one-time conversion of a sentence-transformers model to ONNX, and where the result lives.

sentence-transformers stays the reference and the export path: its whole module pipeline
(transformer, mean pooling over the attention mask, dense layers if any, normalisation) is exported
with ``torch.onnx.export``, so the graph is the model, not a re-implementation of it. This is the
only module that imports torch, and only inside ``convert``. Tokenizing (the model's own
tokenizer.json and max length) happens outside the graph, in ``onnx_encoder.py``.

A converted model lives in ``<cache>/onnx/<model id>-e<EXPORT_VERSION>/`` (``$KENNING_CACHE_DIR``,
else the user cache dir), not inside the model directory: the model id hashes that directory, so
a file added there would change the id it is keyed by. The folder name carries the model id (name
+ a hash of the model files) and the export recipe's version, so a changed model or recipe gets a
fresh conversion and never reuses a stale one. ``manifest.json`` records what was converted and
the reference vector of a probe sentence; a load that does not reproduce it is treated as corrupt.

The exported graph is then rewritten by onnxruntime's transformer optimizer: each layer's attention
becomes one ``Attention`` node, the embedding sum + layer norm one ``EmbedLayerNormalization``,
residual + layer norm ``SkipLayerNormalization``, bias + GELU ``BiasGelu``. The arithmetic is the
same (exact GELU, no approximation; cosine to the unfused graph 1.000000 on long abstracts), and
batches run about a third faster per CPU-second.

There is no int8 variant: every dynamic quantisation recipe measured moved nDCG@10 by more than the
0.01 the issue allows on some development collection (``bench/int8_recipes.py``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import numpy as np

# Bump when the export recipe changes (opset, graph inputs, fusion).
# 3: exported with eager attention and fused by onnxruntime's transformer optimizer.
EXPORT_VERSION = 3
OPSET = 17
MANIFEST = "manifest.json"
VARIANTS = {"onnx": "model.onnx"}
PROBE_TEXT = "kenning checks that the converted model still answers like the original"
# A converted file must reproduce the reference probe vector this closely, else it is corrupt.
PROBE_MIN_COSINE = {"onnx": 0.9999}
# Texts the export is checked on before it is kept: short, long (truncated), padded together.
_CHECK_TEXTS = [
    "hi",
    "The auth service listens on port 8443 behind the gateway.",
    "Nightly database backups are kept for thirty days; " * 40,
    "café naïve résumé 東京 データベース",
]

Step = Callable[[str], None]


def cache_root() -> Path:
    override = os.environ.get("KENNING_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("kenning"))


def converted_dir(spec) -> Path:
    """Where the ONNX conversion of ``spec`` lives (keyed by model id and export version)."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in spec.model_id)
    return cache_root() / "onnx" / f"{safe}-e{EXPORT_VERSION}"


def onnx_file(spec, variant: str = "onnx") -> Path:
    return converted_dir(spec) / VARIANTS[variant]


def read_manifest(spec) -> dict | None:
    """The manifest of a finished conversion of exactly this model and recipe, else None."""
    try:
        manifest = json.loads((converted_dir(spec) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    if manifest.get("model_id") != spec.model_id or manifest.get("export_version") != EXPORT_VERSION:
        return None
    return manifest


def problem(spec, variant: str = "onnx") -> str | None:
    """Why the converted file cannot be used as it is (missing, unfinished, wrong size), or None."""
    manifest = read_manifest(spec)
    path = onnx_file(spec, variant)
    if manifest is None:
        return f"the ONNX conversion of {spec.name} is missing ({converted_dir(spec)})"
    entry = (manifest.get("files") or {}).get(variant, {})
    expected = entry.get("bytes")
    if expected is None or not path.is_file():
        return f"the ONNX file {path} is missing"
    if path.stat().st_size != expected:
        return f"the ONNX file {path} is damaged (size {path.stat().st_size}, expected {expected})"
    return None


def can_convert() -> bool:
    """True when sentence-transformers (and with it torch) is installed to do a conversion."""
    import importlib.util

    return importlib.util.find_spec("sentence_transformers") is not None and importlib.util.find_spec("torch") is not None


def ensure(spec, variant: str = "onnx", step: Step | None = None, force: bool = False) -> Path:
    """The converted file of ``spec``, converting first when it is missing or damaged."""
    with _locked(converted_dir(spec)):  # another process may be converting the same model
        if force or problem(spec, variant) is not None:
            convert(spec, step)
    return onnx_file(spec, variant)


def convert(spec, step: Step | None = None) -> dict:
    """Export the transformer of ``spec`` to ONNX with torch, check it against torch, write the manifest."""
    step = step or (lambda message: None)
    started = time.monotonic()
    step(f"loading {spec.name} with sentence-transformers (torch)")
    import torch

    from .torch_encoder import load_sentence_transformer

    model = load_sentence_transformer(spec.path, attention="eager").eval()
    folder = converted_dir(spec)
    folder.mkdir(parents=True, exist_ok=True)
    step("exporting the transformer to ONNX")
    # a padded pair, so the traced graph is the one that honours the attention mask
    tokenized = model[0].tokenizer(["a padded example", "a longer example sentence so that the first one is padded"],
                                   padding=True, return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tokenized]
    wrapper = _SentenceEmbedding(model, names)
    tmp, fused_tmp = _temp_path(folder, ".onnx"), _temp_path(folder, ".onnx")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer notes about shapes; the check below is what counts
            torch.onnx.export(
                wrapper, tuple(tokenized[n] for n in names), str(tmp), input_names=names,
                output_names=["sentence_embedding"], opset_version=OPSET, dynamo=False,
                dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names}, "sentence_embedding": {0: "batch"}},
            )
        step("fusing attention and layer norms (onnxruntime transformer optimizer)")
        fusion = fuse(tmp, fused_tmp, model[0].auto_model.config if hasattr(model[0], "auto_model") else None)
        step("checking the ONNX model against sentence-transformers")
        reference = model.encode([PROBE_TEXT, *_CHECK_TEXTS], normalize_embeddings=True, convert_to_numpy=True)
        worst = None
        if fusion.get("fused"):
            worst = _worst_cosine(spec, fused_tmp, reference)
            if worst >= PROBE_MIN_COSINE["onnx"]:
                os.replace(fused_tmp, tmp)
            else:  # a fusion that changes the answers is not kept; the plain export may still be right
                fusion = {"fused": False, "why": f"the fused graph disagreed with sentence-transformers (cosine {worst:.5f})"}
                worst = None
        if worst is None:
            worst = _worst_cosine(spec, tmp, reference)
        if worst < PROBE_MIN_COSINE["onnx"]:
            raise RuntimeError(f"the exported model disagrees with sentence-transformers (cosine {worst:.5f})")
        os.replace(tmp, folder / VARIANTS["onnx"])
    finally:
        tmp.unlink(missing_ok=True)
        fused_tmp.unlink(missing_ok=True)
    manifest = {
        "model_id": spec.model_id,
        "model_path": str(spec.path),
        "export_version": EXPORT_VERSION,
        "opset": OPSET,
        "inputs": names,
        "fusion": fusion,
        "files": {"onnx": {"name": VARIANTS["onnx"], "bytes": (folder / VARIANTS["onnx"]).stat().st_size}},
        "probe": {"text": PROBE_TEXT, "vector": [float(x) for x in reference[0]]},
        "check_min_cosine": worst,
        "exported_with": {"torch": torch.__version__, "sentence_transformers": _version("sentence_transformers")},
        "seconds": round(time.monotonic() - started, 1),
    }
    _write_manifest(folder, manifest)
    return manifest


def fuse(source: Path, target: Path, config) -> dict:
    """Rewrite a BERT-family graph with onnxruntime's fused transformer operators; what was fused.

    Returns ``{"fused": False, "why": ...}`` (and writes nothing) for a model the optimizer does
    not know or cannot fuse: the plain export is kept then, slower but right.
    """
    model_type = getattr(config, "model_type", None)
    heads, hidden = getattr(config, "num_attention_heads", None), getattr(config, "hidden_size", None)
    if model_type not in _FUSABLE or not heads or not hidden:
        return {"fused": False, "why": f"no fusion recipe for model type {model_type!r}"}
    try:  # an optimizer that cannot be imported or cannot handle this graph costs speed, not the model
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        options = FusionOptions(_FUSABLE[model_type])
        options.enable_gelu_approximation = False  # exact GELU: the answers must not move
        with _quiet_logs("onnxruntime.transformers"):
            optimized = optimize_model(str(source), model_type=_FUSABLE[model_type], num_heads=int(heads),
                                       hidden_size=int(hidden), optimization_options=options, opt_level=0,
                                       use_gpu=False)
            counts = {op: n for op, n in optimized.get_fused_operator_statistics().items() if n}
            if not counts.get("Attention"):
                return {"fused": False, "why": "the optimizer found no attention to fuse", "operators": counts}
            optimized.save_model_to_file(str(target))
    except Exception as exc:
        return {"fused": False, "why": f"{type(exc).__name__}: {exc}"[:300]}
    return {"fused": True, "operators": counts}


@contextmanager
def _quiet_logs(name: str):
    """Only errors from a library's logger while it runs: its advice would land on a CLI's stderr."""
    import logging

    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


# Model types (config.json) the transformer optimizer fuses, and the recipe it uses for each.
_FUSABLE = {"bert": "bert", "roberta": "bert", "xlm-roberta": "bert", "mpnet": "bert", "distilbert": "bert"}


def _worst_cosine(spec, path: Path, reference: np.ndarray) -> float:
    produced = _encode_with(spec, path, [PROBE_TEXT, *_CHECK_TEXTS])
    return float(np.min(np.sum(reference * produced, axis=1)))


class _SentenceEmbedding:
    """Wraps the whole sentence-transformers pipeline (transformer, pooling over the attention mask,
    any dense layers, normalisation) so the graph takes positional tensors and returns the
    sentence embedding: every module the model declares is in the graph, none is re-implemented."""

    def __new__(cls, model, names):
        import torch

        class Wrapper(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *tensors):
                return self.model(dict(zip(names, tensors)))["sentence_embedding"]

        return Wrapper()


def _encode_with(spec, path: Path, texts: list[str]) -> np.ndarray:
    from .onnx_encoder import OnnxEncoder

    return OnnxEncoder(spec, path, model_id="check").encode(texts)


def _write_manifest(folder: Path, manifest: dict) -> None:
    tmp = _temp_path(folder, ".json")
    tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)


def _temp_path(folder: Path, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(prefix=".partial-", suffix=suffix, dir=folder)
    os.close(fd)
    return Path(name)


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


@contextmanager
def _locked(folder: Path):
    """An exclusive lock on the conversion folder (POSIX; elsewhere conversions simply don't queue)."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(folder / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
