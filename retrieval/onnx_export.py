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
It also records each file's size, time and sha256: a file whose time changed is hashed, and one
whose content changed (bytes overwritten in place) is treated as damaged too.

The exported graph is then rewritten by onnxruntime's transformer optimizer: each layer's attention
becomes one ``Attention`` node, the embedding sum + layer norm one ``EmbedLayerNormalization``,
residual + layer norm ``SkipLayerNormalization``, bias + GELU ``BiasGelu``. The arithmetic is the
same (exact GELU, no approximation; cosine to the unfused graph 1.000000 on long abstracts), and
batches run about a third faster per CPU-second.

One quantised variant is offered, ``onnx-q8``: the fused graph's matrix weights stored as 8-bit
blocks of 32 with a scale each (onnxruntime's ``MatMulNBits``), the products run on int8 with the
activations quantised per block too. It is made from the float file (no torch), checked against
the float file's answers and kept beside it as ``model-q8.onnx``; the manifest records its recipe,
and a changed recipe (``QUANT_VERSION``) makes it again. The per-tensor dynamic int8 recipes were
measured and dropped: each moved nDCG@10 by more than 0.01 on some development collection
(``bench/int8_recipes.py``, bench/results-encoder-int8.json), and one activation scale per batch
makes a text's vector depend on its batch-mates.

A second, ``onnx-rows8`` (``onnx_rowwise.py``), runs the matrix products on onnxruntime's int8
kernels with each token's activations quantised on their own scale: faster writes and batches than
the float graph and still batch-independent, further from it than onnx-q8 (bench/README.md).
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

from kenning.errors import KenningError

from .env_folder import env_folder

# Bump when the export recipe changes (opset, graph inputs, fusion).
# 3: exported with eager attention and fused by onnxruntime's transformer optimizer.
EXPORT_VERSION = 3
OPSET = 17
MANIFEST = "manifest.json"
VARIANTS = {"onnx": "model.onnx", "onnx-q8": "model-q8.onnx", "onnx-rows8": "model-rows8.onnx"}
# How each quantised variant is made from the float file (MatMulNBits: bits, block size, int8 compute).
# Bump QUANT_VERSION when a recipe changes: the manifest entry of the old file then no longer matches.
QUANT_VERSION = 1
QUANTISED = {"onnx-q8": {"bits": 8, "block_size": 32, "is_symmetric": True, "accuracy_level": 4},
             "onnx-rows8": {"activations": "int8 per row", "weights": "int8 per column", "attention_qkv": "float"}}
PROBE_TEXT = "kenning checks that the converted model still answers like the original"
# A converted file must reproduce the reference probe vector this closely, else it is corrupt.
PROBE_MIN_COSINE = {"onnx": 0.9999, "onnx-q8": 0.999, "onnx-rows8": 0.995}
# Texts the export is checked on before it is kept: short, long (truncated), padded together.
_CHECK_TEXTS = [
    "hi",
    "The auth service listens on port 8443 behind the gateway.",
    "Nightly database backups are kept for thirty days; " * 40,
    "café naïve résumé 東京 データベース",
]

Step = Callable[[str], None]


def cache_root() -> Path:
    override = env_folder("KENNING_CACHE_DIR")
    if override is not None:
        return override
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
    if variant in QUANTISED and entry.get("recipe") != _recipe(variant):
        return f"the {variant} file of {spec.name} is missing or was made by another recipe ({path})"
    if expected is None or not path.is_file():
        return f"the ONNX file {path} is missing"
    stat = path.stat()
    if stat.st_size != expected:
        return f"the ONNX file {path} is damaged (size {stat.st_size}, expected {expected})"
    if not _content_unchanged(spec, variant, entry, stat):
        return f"the ONNX file {path} is damaged (its content changed since it was converted)"
    return None


def _file_entry(path: Path) -> dict:
    """What the manifest records of a converted file: its size, time and content hash."""
    stat = path.stat()
    return {"name": path.name, "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": file_sha256(path)}


def _content_unchanged(spec, variant: str, entry: dict, stat: os.stat_result) -> bool:
    """True unless the file was modified in place (bytes overwritten, the size kept). Hashing 90 MB
    costs about a fifth of a second, so it is done only when the time differs from the manifest's;
    a file whose content is still the same (a copy) gets its new time recorded, when the cache is writable."""
    if "sha256" not in entry or entry.get("mtime_ns") == stat.st_mtime_ns:
        return True  # a conversion made before hashes were recorded has nothing to compare with
    if file_sha256(converted_dir(spec) / VARIANTS[variant]) != entry["sha256"]:
        return False
    _restamp(spec, variant, entry["sha256"], stat.st_mtime_ns)
    return True


def _restamp(spec, variant: str, sha256: str, mtime_ns: int) -> None:
    """Record the new time of a file whose content is unchanged, unless the folder is busy (another
    process, or this one, converting: it writes its own manifest) or not writable."""
    folder = converted_dir(spec)
    try:
        import fcntl

        with open(folder / ".lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            manifest = read_manifest(spec)
            entry = ((manifest or {}).get("files") or {}).get(variant)
            if entry and entry.get("sha256") == sha256:
                entry["mtime_ns"] = mtime_ns
                _write_manifest(folder, manifest)
    except (ImportError, OSError):  # the hash is checked again next time
        pass


def file_sha256(path: Path) -> str:
    """The sha256 of a file, read in 1 MB blocks (a converted model, a model's weights)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# What each step imports, by pip name: the float export runs torch and checks with the runtime encoder;
# a quantised variant is made with onnx (and onnx-ir for MatMulNBits) and checked the same way.
_EXPORT_NEEDS = {"sentence_transformers": "sentence-transformers", "torch": "torch"}
_RUNTIME_NEEDS = {"onnxruntime": "onnxruntime", "tokenizers": "tokenizers"}
_QUANTISE_NEEDS = {"onnx-q8": {"onnx": "onnx", "onnx_ir": "onnx-ir"}, "onnx-rows8": {"onnx": "onnx"}}


def missing_for(spec=None, variant: str = "onnx") -> list[str]:
    """The pip names of what making ``variant`` needs and is not installed, asked before anything
    runs (a ten-second torch export must not end on a missing package). The float export is needed
    for a quantised variant only when ``spec``'s float file is not there (always when spec is None)."""
    import importlib.util

    needs = dict(_RUNTIME_NEEDS)
    if variant not in QUANTISED or spec is None or problem(spec, "onnx") is not None:
        needs.update(_EXPORT_NEEDS)
    needs.update(_QUANTISE_NEEDS.get(variant, {}))
    return sorted(pip for module, pip in needs.items() if importlib.util.find_spec(module) is None)


class CacheNotWritable(KenningError):
    """The conversion folder cannot be created or written; ``fix`` names the setting that moves it."""

    def __init__(self, folder: Path, exc: OSError):
        refused = next((p for p in (folder, *folder.parents) if p.exists()), folder)  # the one it could not write in
        super().__init__(f"the model cache directory {refused} is not writable ({exc.strerror or exc})")
        self.fix = f"make {refused} writable, or set KENNING_CACHE_DIR to a writable directory"


def check_writable(spec) -> None:
    """Raise CacheNotWritable unless the conversion folder of ``spec`` can be created and locked."""
    with _locked(converted_dir(spec), wait=False):
        pass


def ensure(spec, variant: str = "onnx", step: Step | None = None, force: bool = False) -> Path:
    """The file of ``variant`` for ``spec``, converting (and quantising) first when it is missing or damaged.

    ``force`` makes the variant again; for a quantised one that is the quantisation, from the float
    file as it is (itself made first only when it is missing or damaged).
    """
    with _locked(converted_dir(spec)):  # another process may be converting the same model
        if (force and variant == "onnx") or problem(spec, "onnx") is not None:
            convert(spec, step)
        if variant in QUANTISED and (force or problem(spec, variant) is not None):
            quantise(spec, variant, step)
    return onnx_file(spec, variant)


def _recipe(variant: str) -> dict:
    return {**QUANTISED[variant], "quant_version": QUANT_VERSION}


def quantise(spec, variant: str, step: Step | None = None) -> dict:
    """Make the quantised ``variant`` from the float file (no torch), check it, record it in the manifest.

    The check: the probe and the export's check texts (short, long and truncated, non-Latin) must
    keep cosine >= PROBE_MIN_COSINE[variant] to the float file's vectors.
    """
    step = step or (lambda message: None)
    started = time.monotonic()
    folder = converted_dir(spec)
    source = onnx_file(spec, "onnx")
    recipe = QUANTISED[variant]
    tmp = _temp_path(folder, ".onnx")
    try:
        if variant == "onnx-rows8":
            step("rewriting the matrix products as int8 with activations quantised per row (onnx-rows8)")
            from .onnx_rowwise import rewrite

            rewrite(source, tmp)
        else:
            step(f"quantising the weights to {recipe['bits']}-bit blocks of {recipe['block_size']} ({variant})")
            _nbits(source, tmp, recipe)
        step(f"checking the {variant} model against the float one")
        texts = [PROBE_TEXT, *_CHECK_TEXTS]
        reference = _encode_with(spec, source, texts)
        worst = float(np.min(np.sum(reference * _encode_with(spec, tmp, texts), axis=1)))
        if worst < PROBE_MIN_COSINE[variant]:
            raise RuntimeError(f"the {variant} model disagrees with the float one (cosine {worst:.5f})")
        os.replace(tmp, folder / VARIANTS[variant])
    finally:
        tmp.unlink(missing_ok=True)
    manifest = read_manifest(spec)
    if manifest is None:  # the float file's manifest went away meanwhile: nothing to record against
        raise RuntimeError(f"the ONNX conversion of {spec.name} disappeared while quantising")
    manifest.setdefault("files", {})[variant] = {
        **_file_entry(folder / VARIANTS[variant]), "recipe": _recipe(variant),
        "check_min_cosine": worst, "seconds": round(time.monotonic() - started, 1)}
    _write_manifest(folder, manifest)
    return manifest


def _nbits(source: Path, target: Path, recipe: dict) -> None:
    """The MatMulNBits file of ``recipe`` (onnx-q8) made from the float ``source``."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    with _quiet_logs("onnxruntime.quantization"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantizer = MatMulNBitsQuantizer(onnx.load(str(source)), bits=recipe["bits"], block_size=recipe["block_size"],
                                         is_symmetric=recipe["is_symmetric"], accuracy_level=recipe["accuracy_level"])
        quantizer.process()
        quantizer.model.save_model_to_file(str(target), False)


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
        "files": {"onnx": _file_entry(folder / VARIANTS["onnx"])},
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
    from .onnx_encoder import shareable

    fd, name = tempfile.mkstemp(prefix=".partial-", suffix=suffix, dir=folder)
    os.close(fd)
    shareable(Path(name))  # the file it becomes (model.onnx, manifest.json) keeps this mode
    return Path(name)


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


@contextmanager
def _locked(folder: Path, wait: bool = True):
    """An exclusive lock on the conversion folder (POSIX; elsewhere conversions simply don't queue).
    ``wait=False`` only checks the folder can be made and locked (another process may hold it)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / ".lock", "a")
    except OSError as exc:
        raise CacheNotWritable(folder, exc) from exc
    with handle:  # closing it releases the lock
        if wait:
            try:
                import fcntl
            except ImportError:
                pass
            else:
                fcntl.flock(handle, fcntl.LOCK_EX)
                _remove_partials(folder)
        yield


def _remove_partials(folder: Path) -> None:
    """Delete the temporary files (``_temp_path``) of a conversion killed before it finished: a 90 MB
    export each, kept by nothing. Called holding the folder's lock, which every writer of them holds.
    The optimised copy's work folders (``onnx_encoder.optimized_copy``, also ``.partial-``) are made
    without the lock by any process that loads the model, so folders are left alone (unlink refuses them)."""
    for partial in folder.glob(".partial-*"):
        try:
            partial.unlink()
        except OSError:
            pass  # the next conversion tries again
