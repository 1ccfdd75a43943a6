"""The reference encoder: the model run by sentence-transformers on torch.

It is not on the query or write path any more (``onnx_encoder.py`` is); it exists for the one-time
ONNX export, the parity tests and the benchmark, and as ``KENNING_ENCODER=torch`` to compare
answers. Importing this module is cheap; loading a model imports torch (~7 s).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from kenning.errors import EmbeddingsUnavailable

from .onnx_encoder import NonFiniteVectors, count_setting, describe_runs, query_head

_BATCHES_PER_CHUNK = 8


def load_sentence_transformer(path, attention: str | None = None):
    """The sentence-transformers model in ``path``, offline, with torch on one intra-op thread.

    ``attention`` picks the transformer's attention implementation (the export asks for "eager":
    its traced graph is the pattern onnxruntime's optimizer fuses; the default may trace to another).
    """
    # Everything a model needs is on disk; never let a load wander onto the network, and keep
    # the hub's per-load progress bars off a CLI's stderr.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer

    _limit_torch_threads()
    kwargs = {"model_kwargs": {"attn_implementation": attention}} if attention else {}
    return SentenceTransformer(str(path), device="cpu", local_files_only=True, **kwargs)


# Measured on the 2-core machine with other work running: a query took 485 ms with torch's default
# two threads and 13 ms with one; a batch of 256 short texts 18 vs 245 texts/s.
DEFAULT_THREADS = 1


def intra_op_threads() -> int:
    """KENNING_TORCH_THREADS, else DEFAULT_THREADS. Read as KENNING_ONNX_THREADS is (InvalidSetting for 0,
    a negative, a word or over 1,024): 0 once ran as 1 silently, a word failed the load as a model error."""
    return count_setting("KENNING_TORCH_THREADS", DEFAULT_THREADS)


def _limit_torch_threads() -> None:
    import torch

    torch.set_num_threads(intra_op_threads())


class TorchEncoder:
    """A loaded sentence-transformers model that returns L2-normalised float32 rows."""

    backend = "torch"
    last_runtime = "torch"  # what ran the latest encode(), as OnnxEncoder says it

    @staticmethod
    def bulk_min() -> None:
        """No bulk runtime: the reference encoder runs every encode itself (OnnxEncoder.bulk_min)."""
        return None

    @staticmethod
    def describe_runs(ran: Mapping[str, int]) -> str | None:
        """``ran`` as a phrase (OnnxEncoder.describe_runs): "torch", or None when nothing was encoded."""
        return describe_runs(ran)

    def __init__(self, spec, model_id: str | None = None):
        self.spec = spec
        self.model_id = model_id or spec.model_id
        self.failure: EmbeddingsUnavailable | None = None  # set when an encode produced NaN or infinity
        self.runs: Counter[str] = Counter()  # texts encode() ran, as OnnxEncoder counts them
        self._runs_lock = threading.Lock()
        self._model = load_sentence_transformer(spec.path)
        self.dim = int(self._model.encode(["probe"], convert_to_numpy=True).shape[1])

    def encode(
        self,
        texts: Iterable[str],
        batch_size: int = 16,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Encode texts to an (n, dim) float32 array; ``progress(n_done_now)`` is called per chunk."""
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        chunk = batch_size * _BATCHES_PER_CHUNK
        for start in range(0, len(order), chunk):
            rows = order[start : start + chunk]
            encoded = self._model.encode(
                [texts[i] for i in rows], batch_size=batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
            if not np.isfinite(encoded).all():  # as the ONNX encoder: such a vector is never stored
                if self.failure is None:
                    self.failure = NonFiniteVectors(
                        f"the model in {self.spec.path} gave non-finite values (NaN or infinity) for a text, "
                        "so its weights are damaged")
                raise self.failure
            out[rows] = encoded
            with self._runs_lock:
                self.runs["torch"] += len(rows)
            if progress is not None:
                progress(len(rows))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        """One query as a (dim,) unit vector; a pasted query of megabytes is tokenized by its head, as
        OnnxEncoder.encode_query does (``query_head``)."""
        return self.encode([query_head(text, self._overflows)], batch_size=1)[0]

    def _overflows(self, text: str) -> bool:
        """Whether the model reads fewer tokens than ``text`` has (it truncates to max_seq_length)."""
        ids = self._model.tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        return len(ids) > self._model.max_seq_length

    def knows_word(self, word: str) -> bool:
        """Whether the model's tokenizer reads ``word`` whole (OnnxEncoder.knows_word)."""
        return len(self._model.tokenizer.tokenize(word)) == 1
