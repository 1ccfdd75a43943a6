"""The runtime encoder: onnxruntime + tokenizers + numpy, reproducing sentence-transformers exactly.

What sentence-transformers does before its modules run, and what this mirrors: strip each text
(and lowercase it when ``do_lower_case``), tokenize with the model's own ``tokenizer.json``
truncated to ``max_seq_length`` (sentence_bert_config.json, else the smaller of the tokenizer's and
the model's limit) and padded to the longest text of the batch. The graph is the model's module
pipeline (transformer, mean pooling over the attention mask, normalisation); a graph of a bare
transformer is mean-pooled here the same way. Rows are L2-normalised at the end.

No torch here: this module is the query and write path. The ONNX graph comes from
``onnx_export.py``, which is the only place torch is imported.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from kenning.errors import EmbeddingsUnavailable, InvalidInput

from . import openvino_bulk
from .embeddings import REPAIR_COMMAND

log = logging.getLogger(__name__)

# Two intra-op threads (when there are two cores): a query or a write's one text is a short matrix
# product per layer that mostly waits on reading the weights, and two cores read them in about
# half the wall time for ~5% more CPU. The threads never spin (see ``session``): spin-waiting on a
# busy machine costs more than it saves. KENNING_ONNX_THREADS overrides.
DEFAULT_THREADS = min(2, os.cpu_count() or 1)
# Texts are tokenized, sorted by length and run in batches this large: padding stays short.
DEFAULT_BATCH = 32
# A long encode (indexing, background embedding) runs this many batches at once. One: two batches
# sharing the session's two intra-op threads ran 114 texts/s against 132 for one batch at a time
# (quiet 2-core machine, bench/README.md "Session 21"); an earlier loaded machine could not tell
# them apart. KENNING_ONNX_BATCH_WORKERS overrides.
DEFAULT_BATCH_WORKERS = 1
# Encode this many batches between progress callbacks.
_BATCHES_PER_CHUNK = 8
# A query longer than this is first tokenized by its head: the model reads only its first
# max_length tokens, and tokenizing a pasted 1.5 MB query whole took 3.7 s (the head: 0.09 s).
QUERY_HEAD_CHARS = 16_384
# Texts the bulk runtime must reproduce before it is used: one word, and a memory-sized sentence.
_BULK_PROBES = ["probe", "The deploy script restarts the queue workers after the database migration has run."]


def query_head(text: str, overflows: Callable[[str], bool]) -> str:
    """The query's words up to the last space in its first ``QUERY_HEAD_CHARS`` characters when they
    alone already fill the model's length (``overflows``: the model's tokenizer says a text has more
    tokens than the model reads): the model then reads the same tokens (a space ends a word for every
    tokenizer, and none reads across one), found without tokenizing the rest. Otherwise (no space, a
    tokenizer that does not truncate, few tokens) the whole text."""
    if len(text) <= QUERY_HEAD_CHARS:
        return text
    cut = text.rfind(" ", 0, QUERY_HEAD_CHARS)
    return text[:cut] if cut > 0 and overflows(text[:cut]) else text


def max_seq_length(model_dir: Path) -> int:
    """The token limit sentence-transformers applies to this model directory."""
    configured = _json(model_dir / "sentence_bert_config.json").get("max_seq_length")
    if configured:
        return int(configured)
    limits = [
        _json(model_dir / "tokenizer_config.json").get("model_max_length"),
        _json(model_dir / "config.json").get("max_position_embeddings"),
    ]
    limits = [int(v) for v in limits if isinstance(v, (int, float)) and 0 < v < 1_000_000]
    return min(limits) if limits else 512


def _json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def load_tokenizer(model_dir: Path):
    """The model's fast tokenizer, truncating and padding the way sentence-transformers calls it."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_seq_length(model_dir), strategy="longest_first")
    pad_token = _json(model_dir / "tokenizer_config.json").get("pad_token") or "[PAD]"
    if isinstance(pad_token, dict):
        pad_token = pad_token.get("content", "[PAD]")
    pad_id = tokenizer.token_to_id(pad_token)
    tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token=pad_token)
    return tokenizer


def intra_op_threads(threads: int | None = None) -> int:
    """The intra-op threads a session gets: ``threads``, else KENNING_ONNX_THREADS, else DEFAULT_THREADS."""
    return threads if threads is not None else count_setting("KENNING_ONNX_THREADS", DEFAULT_THREADS)


def batch_workers() -> int:
    return count_setting("KENNING_ONNX_BATCH_WORKERS", DEFAULT_BATCH_WORKERS)


def check_settings() -> None:
    """Raise InvalidSetting for a KENNING_ONNX_* count that is not a number of 1 or more: the probe asks
    before loading, so a typo is reported as the setting it is, not as a damaged model file.
    KENNING_BULK_RUNTIME is not among them: the probe checks it for every encoder, torch's included."""
    intra_op_threads()
    batch_workers()


class InvalidSetting(InvalidInput):
    """An environment variable holds a value kenning cannot use; ``fix`` says what to do."""

    def __init__(self, message: str, name: str):
        super().__init__(message)
        self.name = name
        self.fix = f"unset {name}"


def describe_runs(ran: Mapping[str, int], onnxruntime_why: str | None = None) -> str | None:
    """What ran a command's encodes, from ``ran`` (texts per runtime): the runtime that ran most, then
    the others with their counts, and why texts ran on onnxruntime when another was asked for; None
    when nothing was encoded. ``{"openvino bf16": 256, "onnxruntime": 44}`` and short encodes' reason
    give "openvino bf16 (44 on onnxruntime: fewer than 64 texts at a time)"."""
    ran = {name: n for name, n in ran.items() if n > 0}
    if not ran:
        return None
    head, *others = sorted(ran, key=lambda name: (-ran[name], name))
    notes = [f"{ran[name]} on {name}" + (f": {onnxruntime_why}" if name == "onnxruntime" and onnxruntime_why else "")
             for name in others]
    if head == "onnxruntime" and onnxruntime_why:
        notes.insert(0, onnxruntime_why)
    return f"{head} ({'; '.join(notes)})" if notes else head


@contextmanager
def counting_runs(encoder) -> Iterator[Counter]:
    """The texts each runtime encodes while the block runs, from ``encoder.runs`` before and after
    (filled on leaving). Right where nothing else encodes with this encoder meanwhile (a command's
    drain, an eval's corpus); texts a stored vector served are in no runtime's count."""
    ran: Counter[str] = Counter()
    before = Counter(encoder.runs)
    try:
        yield ran
    finally:
        ran.update(encoder.runs - before)


def count_setting(name: str, default: int) -> int:
    """A whole-number setting of 1 to MAX_COUNT (threads, workers: torch_encoder's too), else ``default``
    when unset or empty. Zero or a negative
    count is refused as a word is: it once ran as 1 without a word, while "abc" got a note."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        count = int(value)
    except ValueError:
        count = None
    if count is None or count < 1:
        why = "is not a whole number" if count is None else "is below 1"
        raise InvalidSetting(f"{name}={value!r} {why}; set it to a count of 1 or more (default {default}), "
                             "or unset it", name)
    if count > MAX_COUNT:
        raise InvalidSetting(f"{name}={value!r} is over {MAX_COUNT}; set it to a count of 1 to {MAX_COUNT} "
                             f"(default {default}), or unset it", name)
    return count


MAX_COUNT = 1024  # threads or workers: 100,000 intra-op threads hung a search for minutes


def session(onnx_file: Path, threads: int | None = None, cache_optimized: bool = False):
    """An onnxruntime CPU session: DEFAULT_THREADS intra-op threads unless KENNING_ONNX_THREADS says otherwise.

    With ``cache_optimized`` the session loads the graph onnxruntime optimised and saved beside the
    file on the first load (``optimized_copy``), falling back to the file itself when that copy
    cannot be made or read.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op_threads(threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: warnings would land on a CLI's or MCP client's stderr
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if cache_optimized:
        try:
            return ort.InferenceSession(str(optimized_copy(onnx_file)), options, providers=["CPUExecutionProvider"])
        except Exception:  # unwritable cache, a damaged or half-removed copy: the source still works
            discard_optimized(onnx_file)
    return ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])


_OPTIMIZED_WEIGHTS = "weights.bin"


def optimized_dir(onnx_file: Path) -> Path:
    return onnx_file.parent / f"{onnx_file.stem}.optimized"


def optimized_copy(onnx_file: Path) -> Path:
    """The graph of ``onnx_file`` as onnxruntime optimises it, saved once beside it, its weights in a
    separate file; made on first use and again when the source or onnxruntime changes.

    Loading a 90 MB ONNX file parses every weight out of the protobuf and re-runs the graph
    optimisers, ~0.13 s of CPU; this copy's weights are memory-mapped and its graph is already
    rewritten, ~0.03 s. It is saved at the extended level (the portable rewrites: fusions, constant
    folding); the session applies the rest, so it runs the same graph as one built from the source.
    """
    import onnxruntime as ort

    source = onnx_file.stat()
    stamp = {"source_bytes": source.st_size, "source_mtime_ns": source.st_mtime_ns, "onnxruntime": ort.__version__}
    folder = optimized_dir(onnx_file)
    if _json(folder / "stamp.json") == stamp:
        return folder / "model.onnx"
    work = Path(tempfile.mkdtemp(prefix=".partial-", dir=onnx_file.parent))
    shareable(work)  # mkdtemp makes it 0700: a cache shared between users must stay readable
    try:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(work / "model.onnx")
        options.log_severity_level = 3
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", _OPTIMIZED_WEIGHTS)
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        (work / "stamp.json").write_text(json.dumps(stamp), encoding="utf-8")
        discard_optimized(onnx_file)
        try:
            os.rename(work, folder)
        except OSError:  # another process put its copy there first: use that one
            if _json(folder / "stamp.json") != stamp:
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder / "model.onnx"


def shareable(path: Path) -> None:
    """Give a file or folder made by mkstemp/mkdtemp (0600/0700) the modes the umask allows an
    ordinary one (0666/0777 & ~umask), so another user of a shared cache can read it."""
    path.chmod((0o777 if path.is_dir() else 0o666) & ~_umask())


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (os.umask can only set it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def discard_optimized(onnx_file: Path) -> None:
    """Remove the optimised copy (it is made again from the source on the next load)."""
    folder = optimized_dir(onnx_file)
    if not folder.exists():
        return
    trash = Path(tempfile.mkdtemp(prefix=".discarded-", dir=onnx_file.parent))
    try:
        os.replace(folder, trash / "old")  # a rename first, so no reader finds half a folder
    except OSError:
        pass
    shutil.rmtree(trash, ignore_errors=True)


class NonFiniteVectors(EmbeddingsUnavailable):
    """An encode produced NaN or infinity: the file loads but its weights are damaged. Such a
    vector is never stored (it would match nothing and hide its memory from semantic search)."""


class OnnxEncoder:
    """Texts -> L2-normalised float32 rows from an ONNX transformer. Safe to call from several threads."""

    backend = "onnx"

    def __init__(self, spec, onnx_file: Path, model_id: str, dim: int | None = None, threads: int | None = None,
                 cache_optimized: bool = False, bulk: bool = False):
        self.spec = spec
        self.model_id = model_id
        self.onnx_file = onnx_file
        self.failure: EmbeddingsUnavailable | None = None  # set when an encode produced NaN or infinity
        self._tokenizer = load_tokenizer(spec.path)
        self._counting = None  # the same tokenizer unpadded, loaded by the first batch (_token_counts)
        self._lower = bool(_json(spec.path / "sentence_bert_config.json").get("do_lower_case"))
        self.threads = intra_op_threads(threads)  # cores one encode keeps busy (Semantic.query_vector_ahead asks)
        self._session = session(onnx_file, self.threads, cache_optimized)
        self._inputs = {i.name for i in self._session.get_inputs()}
        # Long encodes may run on OpenVINO (openvino_bulk.py): loaded by the first one, when ``bulk``.
        self._bulk_allowed = bulk
        self._bulk: tuple | None = None  # (runner, None) or (None, why OpenVINO is not running long encodes)
        self._bulk_lock = threading.Lock()
        self.last_runtime = "onnxruntime"  # what ran the latest encode() (OpenVINO failing in it: what took over)
        # texts encode() ran on each runtime over this encoder's life: `kenning index` reports what its drain added
        self.runs: Counter[str] = Counter()
        self._runs_lock = threading.Lock()
        self.dim = dim if dim is not None else int(self._encode_batch(["probe"]).shape[1])

    def encode(
        self,
        texts: Iterable[str],
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Encode texts to an (n, dim) float32 array in input order; ``progress(n_done_now)`` per chunk.

        Texts are run most tokens first, so each batch holds texts of about the same token count and
        pads little: sorted by characters (what sentence-transformers does), batches of 32 corpus
        memories ran 14% padding, by tokens 0.5% (bench/README.md, "Batches sorted by tokens").
        """
        texts = [self._prepare(t) for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        runner = self.bulk_runner() if len(texts) >= openvino_bulk.BULK_MIN else None
        if runner is not None:
            batch_size = openvino_bulk.BULK_BATCH
        self.last_runtime = runner.description if runner is not None else "onnxruntime"
        order = sorted(range(len(texts)), key=self._token_counts(texts).__getitem__, reverse=True)
        batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        workers = 1 if runner is not None else min(len(batches), batch_workers())
        pool = ThreadPoolExecutor(workers, thread_name_prefix="kenning-encode") if workers > 1 else None
        try:
            run = pool.map if pool is not None else map  # onnxruntime releases the GIL while it runs
            done_since = 0
            if runner is not None:
                results = map(lambda rows: self._encode_bulk_batch([texts[i] for i in rows], runner), batches)
            else:
                results = run(lambda rows: (self._encode_batch([texts[i] for i in rows]), "onnxruntime"), batches)
            for n, (rows, (vectors, ran_on)) in enumerate(zip(batches, results), start=1):
                out[rows] = vectors
                with self._runs_lock:
                    self.runs[ran_on] += len(rows)
                done_since += len(rows)
                if progress is not None and (n % _BATCHES_PER_CHUNK == 0 or n == len(batches)):
                    progress(done_since)
                    done_since = 0
            if runner is not None and self._bulk[0] is not runner:  # it failed part-way: say what ran instead
                self.last_runtime = openvino_bulk.fallback(self._bulk[1])
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        return out

    def bulk_min(self) -> int | None:
        """Texts from which an encode runs on the bulk runtime, or None when none is set up or it
        failed here; a server's background drain sizes its batches by it (store/semantic.py)."""
        if not self._bulk_allowed or openvino_bulk.setting() == "onnxruntime":
            return None
        return None if self._bulk is not None and self._bulk[0] is None else openvino_bulk.BULK_MIN

    def bulk_runner(self):
        """The OpenVINO runner for long encodes, loaded on first use; None when this encoder is not the
        float graph, OpenVINO is not to be used here, or its probe vectors stray from onnxruntime's."""
        if not self._bulk_allowed or openvino_bulk.setting() == "onnxruntime":  # read each time: tests switch it
            return None
        with self._bulk_lock:
            if self._bulk is None:
                self._bulk = self._load_bulk()
            return self._bulk[0]

    @property
    def bulk_runtime(self) -> str:
        """What runs (or will run) this encoder's long encodes, and why; loads the runner to say."""
        if not self._bulk_allowed:
            return openvino_bulk.fallback("the bulk runtime serves the float graph only")
        runner = self.bulk_runner()
        if runner is not None:
            return runner.description
        return openvino_bulk.fallback(None if self._bulk is None else self._bulk[1])

    def describe_runs(self, ran: Mapping[str, int]) -> str | None:
        """``ran`` (texts per runtime, as ``runs`` counts them) as a phrase (module ``describe_runs``),
        saying why texts ran on onnxruntime when the bulk runtime was asked for. Loads nothing."""
        return describe_runs(ran, self._onnxruntime_why())

    def _onnxruntime_why(self) -> str | None:
        """Why long encodes run on onnxruntime though KENNING_BULK_RUNTIME asks for another, else None."""
        try:
            if openvino_bulk.setting() == "onnxruntime":
                return None
        except InvalidInput:  # changed since the probe checked it: this encoder ran whatever it ran
            return None
        if not self._bulk_allowed:
            return "the bulk runtime serves the float graph only"
        state = self._bulk
        if state is None or state[0] is not None:  # not needed yet, or running: only short encodes stayed
            return f"fewer than {openvino_bulk.BULK_MIN} texts at a time"
        return state[1]

    def _load_bulk(self) -> tuple:
        runner, why = openvino_bulk.load(self.onnx_file, self.threads)
        if runner is None:
            return None, why
        try:
            feed = self._feed(_BULK_PROBES)
            pooled = runner.run(feed)
            if not np.isfinite(pooled).all():
                return None, "openvino gave non-finite values for its probe"
            cosines = (self._encode_batch(_BULK_PROBES) * _unit_rows(pooled, feed["attention_mask"])).sum(axis=1)
        except Exception as exc:
            return None, openvino_bulk.failed(exc)
        if not cosines.min() >= openvino_bulk.MIN_PROBE_COSINE:
            low = np.floor(float(cosines.min()) * 1e6) / 1e6  # cut, not rounded: never shown at the bar
            return None, (f"openvino's probe vectors stray from the float graph's: cosine {low:.6f}, under the "
                          f"{openvino_bulk.MIN_PROBE_COSINE} it must reach")
        return runner, None

    def _token_counts(self, texts: list[str]) -> list[int]:
        """Each text's token count, truncation included (a few microseconds a text, against
        milliseconds to encode it); one text needs none. The counting tokenizer loads on the first
        batch: loading one costs ~40 ms of CPU, which a query or a write (one text) never needs."""
        if len(texts) == 1:
            return [0]
        counting = self._counting
        if counting is None:  # two threads may both load it: either copy counts the same
            counting = load_tokenizer(self.spec.path)
            counting.no_padding()
            self._counting = counting
        return [len(e.ids) for e in counting.encode_batch(texts, add_special_tokens=True)]

    def knows_word(self, word: str) -> bool:
        """Whether the model's tokenizer reads ``word`` whole, as one entry of its vocabulary, rather
        than as pieces: a word it knows (``spelling.for_the_model``)."""
        return len(self._tokenizer.encode(self._prepare(word), add_special_tokens=False).ids) == 1

    def encode_query(self, text: str) -> np.ndarray:
        """One query as a (dim,) float32 unit vector; a pasted query of megabytes is tokenized by its
        head (``query_head``)."""
        return self._encode_batch([query_head(self._prepare(text), self._overflows)])[0]

    def _overflows(self, text: str) -> bool:
        """Whether the model reads fewer tokens than ``text`` has (the tokenizer truncates it)."""
        return bool(self._tokenizer.encode(text, add_special_tokens=True).overflowing)

    def _prepare(self, text: str) -> str:
        text = str(text).strip()
        return text.lower() if self._lower else text

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        feed = self._feed(texts)
        pooled = self._session.run(None, feed)[0]
        if not np.isfinite(pooled).all():
            raise self._broken(NonFiniteVectors(
                f"the ONNX file {self.onnx_file} gave non-finite values (NaN or infinity) for a text, so it is "
                "damaged", fix=REPAIR_COMMAND))
        return _unit_rows(pooled, feed["attention_mask"])

    def _encode_bulk_batch(self, texts: list[str], runner) -> tuple[np.ndarray, str]:
        """One batch on the bulk runtime, and the runtime that ran it. Should it raise or give non-finite
        values (its fault, not the file's: the probe passed), this batch and every later one run on
        onnxruntime."""
        if self._bulk is None or self._bulk[0] is not runner:  # it failed on an earlier batch
            return self._encode_batch(texts), "onnxruntime"
        feed = self._feed(texts)
        try:
            pooled = runner.run(feed)
        except Exception as exc:
            log.warning("openvino failed, long encodes run on onnxruntime: %s", exc)
            self._bulk = (None, openvino_bulk.failed(exc))
            return self._encode_batch(texts), "onnxruntime"
        if not np.isfinite(pooled).all():
            self._bulk = (None, "openvino gave non-finite values")
            return self._encode_batch(texts), "onnxruntime"
        return _unit_rows(pooled, feed["attention_mask"]), runner.description

    def _feed(self, texts: list[str]) -> dict[str, np.ndarray]:
        if len(texts) == 1:  # a query or one write: nothing to pad, no list of encodings to walk
            one = self._tokenizer.encode(texts[0], add_special_tokens=True)
            ids, mask, types = ([one.ids], [one.attention_mask], [one.type_ids])
        else:
            encoded = self._tokenizer.encode_batch(texts, add_special_tokens=True)
            ids = [e.ids for e in encoded]
            mask = [e.attention_mask for e in encoded]
            types = [e.type_ids for e in encoded]
        feed = {"input_ids": np.array(ids, dtype=np.int64), "attention_mask": np.array(mask, dtype=np.int64)}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.array(types, dtype=np.int64)
        return feed

    def _broken(self, exc: EmbeddingsUnavailable) -> EmbeddingsUnavailable:
        """Remember the first break: the probe then reports this encoder broken instead of working."""
        if self.failure is None:
            self.failure = exc
        return exc


def _unit_rows(pooled: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The graph's output as L2-normalised float32 rows; a graph of the bare transformer is
    mean-pooled over the tokens the mask keeps first."""
    if pooled.ndim == 3:
        weights = mask[:, :, None].astype(np.float32)
        pooled = (pooled * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
