"""Run a relevance collection through the engine users run and measure every mode.

The corpus goes into a throwaway store with ``Store.import_records`` and every query goes through
``Store.rank`` - the same code path as ``kenning search`` - so a figure here is a figure of the
product, never of a parallel re-implementation. The one deliberate exception is the optional
``rank-bm25`` reference row, which exists precisely to be independent of our engine.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import kenning
from kenning.errors import InvalidInput
from kenning.retrieval.text import search_tokens, tokenize
from kenning.store.models import MODES
from kenning.memory.facade import Store

from .datasets import Dataset, checked_group_sep, group_of, load_dataset, with_foreign_queries
from .metrics import mean, per_query, within

LEXICAL_MODES = ("keyword", "bm25")
SEMANTIC_MODES = ("semantic", "hybrid")
REFERENCES = ("rank-bm25",)
# Scope every document gets when the collection is not split into groups.
UNGROUPED_SCOPE = "eval"
LABELS = ("high", "medium", "low")
TOP = 10
# unstorable documents a report names one by one (all are counted)
UNSTORABLE_LISTED = 20


@dataclass
class ModeRun:
    """What one mode returned for every query, before any metric is computed."""

    ranked: dict[str, list[str]] = field(default_factory=dict)
    top_relevance: dict[str, str | None] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)  # relevance of the top ten hits
    latencies_ms: list[float] = field(default_factory=list)
    legs_run: list[str] = field(default_factory=list)
    degraded: str | None = None


class Progress:
    """Rich progress bars on stderr, or nothing: the harness reports through this one object.

    Use it as a context manager around a whole run, so the bars share one live display.
    """

    def __init__(self, enabled: bool):
        self._bar = None
        self.doing: str | None = None  # the last task begun and how far it came, for an interruption's message
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            console = Console(stderr=True)
            self._bar = RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                console=console, transient=True, disable=not console.is_terminal,  # no blank line in a log
            )

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    @contextmanager
    def task(self, description: str, total: int) -> Iterator:
        """Yield ``advance_to(n_done)``; the bar is removed when the block ends."""
        self.doing = f"{description} (0 of {total:,} done)"
        task = self._bar.add_task(description, total=total) if self._bar is not None else None

        def advance(done: int) -> None:
            self.doing = f"{description} ({done:,} of {total:,} done)"
            if task is not None:
                self._bar.update(task, completed=done)

        try:
            yield advance
        finally:
            if task is not None:
                self._bar.remove_task(task)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during ``run_eval``: what it stopped (``during``) and whether corpus vectors were being
    made, which the embedding cache keeps (committed every few thousand), so a re-run is faster."""

    def __init__(self, during: str | None, vectors_kept: bool):
        super().__init__(during)
        self.during, self.vectors_kept = during, vectors_kept


def resolve_modes(modes: Iterable[str] | str | None) -> list[str]:
    """Requested modes, validated; None means every mode that can run here (semantic ones only with embeddings).

    A mode named twice runs once; an empty entry (``bm25,,hybrid``) is a typo, not a mode to skip.
    """
    if modes is None:
        return list(LEXICAL_MODES) + (list(SEMANTIC_MODES) if kenning.embeddings_available() else [])
    if isinstance(modes, str):
        modes = [m.strip() for m in modes.split(",")] if modes.strip() else []
    if "" in modes:
        raise InvalidInput(f"--modes has an empty entry ({','.join(modes)!r}); separate modes with single commas: "
                           f"{', '.join(MODES)}")
    wanted = list(dict.fromkeys(modes))
    unknown = [m for m in wanted if m not in MODES]
    if unknown or not wanted:
        raise InvalidInput(f"unknown mode(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(MODES)}")
    return wanted


def as_dataset(dataset: Dataset | str | Path) -> Dataset:
    """A loaded collection as is, or load one from a folder or ``"builtin"``."""
    return dataset if isinstance(dataset, Dataset) else load_dataset(dataset)


def query_scopes(query_id: str, group_sep: str | None) -> list[str] | None:
    """The scope a query is restricted to: its group under ``group_sep``, else no filter."""
    group = group_of(query_id, group_sep)
    return None if group is None else [group]


def indexable(dataset: Dataset) -> list[tuple[str, str]]:
    """(doc id, content) of every document the store can keep; empty and unstorable documents
    (``Dataset.unstorable``) cannot be stored or found."""
    refused = dataset.unstorable
    return [(doc.id, doc.content) for doc in dataset.documents.values() if doc.content.strip() and doc.id not in refused]


@contextmanager
def loaded_store(
    dataset: Dataset,
    group_sep: str | None = None,
    progress: Progress | None = None,
    config_overrides: Mapping | None = None,
    semantic: bool = False,
    store_url: str | None = None,
    encoded: Counter | None = None,
) -> Iterator[Store]:
    """A store holding the collection, in a temporary directory removed afterwards (with
    ``store_url``, in a scratch schema on that PostgreSQL server, dropped afterwards).

    Each document keeps its id and gets its group as scope (``--group-sep``), so a query can be
    restricted to its own group with the ordinary scope filter. With ``semantic`` (and a working
    embeddings extra) the corpus is embedded up front through the shared embedding cache, keyed
    by (model id, text hash): a second run of the same collection encodes nothing, and query
    latencies never include the corpus's encoding. ``encoded`` is given the texts each runtime
    encoded for the corpus (the encoder's ``runs``; none for vectors the cache held).
    """
    progress = progress or Progress(False)
    docs = indexable(dataset)
    _check_groups(dataset, group_sep)
    with scratch_location(store_url) as tmp:
        store = kenning.open_store(tmp)
        cache = None
        try:
            if config_overrides:
                store.configure(persist=False, **dict(config_overrides))
            records = (
                {"id": doc_id, "content": content, "scopes": [group_of(doc_id, group_sep) or UNGROUPED_SCOPE]}
                for doc_id, content in docs
            )
            with progress.task(f"indexing {dataset.name}", len(docs)) as advance:
                store.import_records(records, progress=advance)
            if semantic and store.semantic.availability().working:
                from kenning.retrieval.embedding_cache import EmbeddingCache
                from kenning.retrieval.onnx_encoder import counting_runs

                cache = store.semantic.cache = EmbeddingCache()
                with progress.task(f"embedding {dataset.name}", store.semantic.pending_count()) as advance:
                    done = 0

                    def step(n: int) -> None:
                        nonlocal done
                        done += n
                        advance(done)

                    with counting_runs(store.semantic.encoder()) as ran:
                        store.semantic.embed_pending(progress=step)
                    if encoded is not None:
                        encoded.update(ran)
            yield store
        finally:
            store.close()
            if cache is not None:
                cache.close()


def _check_groups(dataset: Dataset, group_sep: str | None) -> None:
    """Every document's group must be a scope the store keeps; one that is not is refused before the
    import, in the terms of ``--group-sep`` (the store would name a scope the user never set)."""
    from kenning.memory.gates.limits import check_scopes, reads_as_a_list

    seen: set[str] = set()
    for doc_id, _ in indexable(dataset):
        group = group_of(doc_id, group_sep)
        if not group or group in seen:  # an id starting with the separator is ungrouped (loaded_store)
            continue
        seen.add(group)
        named = (f"{dataset.documents[doc_id].where}: group {group!r} (the part of _id {doc_id!r} before "
                 f"--group-sep {group_sep!r})")
        if reads_as_a_list(group):  # the store would refuse it as a list of scopes
            raise InvalidInput(f"{named} holds a comma and a space, which kenning would read as two groups; choose "
                               "another separator or rename the group")
        try:
            check_scopes([group])
        except InvalidInput as exc:
            raise InvalidInput(f"{named} cannot be used as a group: {exc}") from None


@contextmanager
def scratch_location(store_url: str | None) -> Iterator[str]:
    """Where a throwaway store goes: a temporary directory, or a new schema on the server at ``store_url``."""
    if store_url is None:
        with tempfile.TemporaryDirectory(prefix="kenning-eval-") as tmp:
            yield tmp
        return
    import uuid

    from kenning.store.postgres.database import scratch_schema

    with scratch_schema(store_url, f"kenning_eval_{uuid.uuid4().hex[:12]}") as url:
        yield url


def run_mode(
    store: Store,
    dataset: Dataset,
    mode: str,
    group_sep: str | None = None,
    depth: int = 100,
    progress: Progress | None = None,
) -> ModeRun:
    """Every query of the collection through ``Store.rank`` in one mode, timed one by one.

    Rank-only (``explain=False``): no snippets, trust annotation or events, so the latency column
    measures the engine (legs, fusion, reading the ids), not the explanation of 100 hits."""
    progress = progress or Progress(False)
    out = ModeRun()
    with progress.task(f"querying {mode}", len(dataset.queries)) as advance:
        for done, query in enumerate(dataset.queries.values(), start=1):
            start = time.perf_counter()
            result = store.rank(query.text, mode=mode, depth=depth, scopes=query_scopes(query.id, group_sep), explain=False)
            out.latencies_ms.append((time.perf_counter() - start) * 1000.0)
            out.ranked[query.id] = [dataset.collection_ids.get(hit.id, hit.id) for hit in result.hits]
            out.top_relevance[query.id] = result.hits[0].relevance if result.hits else None
            out.labels[query.id] = [hit.relevance for hit in result.hits[:TOP]]
            out.legs_run = list(result.legs_run)
            if result.degraded is not None:
                out.degraded = result.degraded.reason
            advance(done)
    return out


def run_rank_bm25(
    dataset: Dataset,
    group_sep: str | None = None,
    depth: int = 100,
    k1: float = 1.2,
    b: float = 0.5,
    progress: Progress | None = None,
) -> ModeRun:
    """The reference row: ``rank_bm25.BM25Okapi`` over the same token stream and the same grouping.

    One BM25Okapi per group, so its statistics (IDF, average length) are those of the group. Like
    the engine's legs it returns only documents sharing a query token, best first, ties by id.
    """
    from rank_bm25 import BM25Okapi

    progress = progress or Progress(False)
    groups: dict[str | None, list[tuple[str, list[str]]]] = {}
    for doc_id, content in indexable(dataset):
        groups.setdefault(group_of(doc_id, group_sep), []).append((doc_id, tokenize(content)))
    indexes = {}
    for group, docs in groups.items():
        postings: dict[str, set[int]] = {}
        for i, (_, tokens) in enumerate(docs):
            for token in tokens:
                postings.setdefault(token, set()).add(i)
        indexes[group] = (BM25Okapi([tokens for _, tokens in docs], k1=k1, b=b), [d for d, _ in docs], postings)

    out = ModeRun(legs_run=["rank-bm25"])
    with progress.task("querying rank-bm25", len(dataset.queries)) as advance:
        for done, query in enumerate(dataset.queries.values(), start=1):
            start = time.perf_counter()
            ranked: list[str] = []
            if group_of(query.id, group_sep) in indexes:
                bm25, ids, postings = indexes[group_of(query.id, group_sep)]
                tokens = search_tokens(query.text)
                candidates = sorted(set().union(*(postings.get(t, set()) for t in tokens)))
                if candidates:
                    scores = bm25.get_batch_scores(tokens, candidates)
                    order = sorted(zip(candidates, scores), key=lambda cs: (-cs[1], ids[cs[0]]))
                    ranked = [ids[i] for i, _ in order[:depth]]
            out.latencies_ms.append((time.perf_counter() - start) * 1000.0)
            out.ranked[query.id] = ranked
            out.top_relevance[query.id] = None
            advance(done)
    return out


def rank_bm25_settings(k1: float, b: float) -> dict:
    """What the reference row ran with (``run_rank_bm25``), for the report's "what ran": its figures
    are read against the engine's bm25 row, so they must be visibly measured the same way."""
    import inspect

    from rank_bm25 import BM25Okapi

    from kenning.retrieval import text

    epsilon = inspect.signature(BM25Okapi).parameters["epsilon"].default  # the library's own, not passed
    return {"class": "rank_bm25.BM25Okapi", "k1": k1, "b": b, "epsilon": epsilon,
            "tokenizer": f"the engine's token stream (v{text.TOKENIZER_VERSION}, {text.fingerprint()})",
            "statistics": "one index per --group-sep group"}


def summarize(dataset: Dataset, run: ModeRun, depth: int = 100) -> dict:
    """Metrics, latency, per-category figures and the unanswerable block of one mode; only the
    metrics the ranking's ``depth`` can measure (no R@100 at depth 10)."""
    answerable = [q for q in dataset.queries if dataset.is_answerable(q)]
    measured = within(depth)
    table = {name: values for name, values in per_query(dataset.qrels, run.ranked, answerable).items()
             if name in measured} if answerable else {name: {} for name in measured}
    row: dict = {name: _round(mean(values)) for name, values in table.items()}
    latencies = np.asarray(run.latencies_ms) if run.latencies_ms else np.zeros(1)
    row["latency_ms_p50"] = round(float(np.percentile(latencies, 50)), 2)
    row["latency_ms_p95"] = round(float(np.percentile(latencies, 95)), 2)
    row["queries"] = len(answerable)
    row["legs_run"] = run.legs_run
    if run.labels:
        row["reliability"] = reliability(dataset, run, answerable)
    if run.degraded:
        row["degraded"] = run.degraded
    unanswerable = [q for q in dataset.queries if not dataset.is_answerable(q)]
    if unanswerable:
        row["unanswerable"] = _unanswerable(run, unanswerable)
    categories: dict[str, list[str]] = {}
    for query in dataset.queries.values():
        if query.category is not None:
            categories.setdefault(query.category, []).append(query.id)
    if categories:
        row["by_category"] = {
            name: _category(dataset, run, table, ids) for name, ids in sorted(categories.items(), key=_natural)
        }
    return row


def reliability(dataset: Dataset, run: ModeRun, answerable: list[str]) -> dict:
    """What each relevance label promised on this collection's judgments.

    Per label: its share of the answerable queries' top-ten hits and its precision (the share of
    those hits judged relevant); then how often an answerable query's top hit was ``high``. The
    unanswerable side (top hit ``high``) is in the ``unanswerable`` block.
    """
    counts = {label: [0, 0] for label in LABELS}  # label -> [hits, judged relevant]
    for q in answerable:
        judged = dataset.qrels.get(q, {})
        for doc, label in zip(run.ranked[q], run.labels.get(q, [])):
            counts[label][0] += 1
            counts[label][1] += judged.get(doc, 0) > 0
    total = sum(n for n, _ in counts.values())
    out: dict = {label: {"hits": n, "share": _round(n / total) if total else None,
                         "precision": _round(rel / n) if n else None} for label, (n, rel) in counts.items()}
    out["top_high"] = _round(sum(run.top_relevance.get(q) == "high" for q in answerable) / len(answerable)) if answerable else None
    return out


def _category(dataset: Dataset, run: ModeRun, table: dict, ids: list[str]) -> dict:
    answerable = [q for q in ids if dataset.is_answerable(q)]
    out: dict = {"queries": len(ids)}
    if answerable:
        out.update({name: _round(mean(values, answerable)) for name, values in table.items()})
    if len(answerable) < len(ids):
        out["unanswerable"] = _unanswerable(run, [q for q in ids if q not in set(answerable)])
    return out


def _unanswerable(run: ModeRun, ids: list[str]) -> dict:
    """Share of unanswerable queries that came back empty, and share whose top hit claimed ``high``.

    The second is confident junk: lower is better. The reference row has no relevance labels.
    """
    out = {"queries": len(ids), "empty": _round(sum(not run.ranked[q] for q in ids) / len(ids))}
    if run.top_relevance and any(v is not None for v in run.top_relevance.values()):
        out["top_high"] = _round(sum(run.top_relevance[q] == "high" for q in ids) / len(ids))
    return out


def _natural(item: tuple[str, list[str]]):
    name = item[0]
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


CACHE_ONLY = "nothing encoded, the embedding cache held every vector"


def what_ran(store: Store, semantic: bool = True, encoded: Mapping[str, int] | None = None) -> dict:
    """Every setting that shaped the figures: the store's config, the token stream, BM25's fixed
    constants, the vector leg's floor and model, what encoded the corpus (``encoded``: texts per
    runtime, ``loaded_store``'s) and the rule behind the relevance labels."""
    from kenning.retrieval import bm25, feedback, fusion, labels, lexical, spelling, stamps, text

    # the model and floor are reported as applied (model_id, vector_floor_applied), not as the
    # config's "default" (null) beside them
    out = store.config.model_dump(mode="json", exclude={"verification_stale_days", "require_write_confirmation",
                                                        "model", "vector_floor"})
    out["tokenizer"] = {"name": text.TOKENIZER_NAME, "version": text.TOKENIZER_VERSION, "fingerprint": text.fingerprint()}
    out["bm25_k3"] = bm25.K3
    out["bm25_idf"] = bm25.IDF_NAME
    out["query_spelling"] = spelling.describe()
    out["evidence_bm25_share"] = fusion.BM25_SHARE
    out["evidence_lone_term_weight"] = fusion.LONE_TERM_WEIGHT
    out["evidence_partial_coverage"] = fusion.PARTIAL_COVERAGE
    out["evidence_far_cosine"] = fusion.FAR_COSINE
    out["hybrid_bm25_feedback"] = (f"rm3: {feedback.FEEDBACK_DOCS} texts, {feedback.FEEDBACK_TERMS} terms, "
                                   f"query keeps {feedback.KEEP_QUERY}")
    out["hybrid_vector_feedback"] = (f"rocchio: a question of >= {feedback.VECTOR_FEEDBACK_TERMS} terms moved "
                                     f"{feedback.VECTOR_FEEDBACK_WEIGHT} toward its {feedback.VECTOR_FEEDBACK_DOCS} "
                                     f"nearest texts, labelled by its own cosines")
    out["label_rule"] = labels.describe()
    # the same answers either way; the latency column differs
    out["lexical_sums"] = "compiled (retrieval/_postings.c)" if lexical.kernel is not None else "numpy"
    if semantic and store.semantic.availability().working:
        encoder = store.semantic.encoder()
        out["model_id"] = store.semantic.model_info()["model_id"]
        if encoded is None:  # what would encode a corpus
            out["long_encodes"] = getattr(encoder, "bulk_runtime", encoder.backend)
        else:  # what did: the embedding cache's vectors are reused whichever runtime made them
            out["long_encodes"] = encoder.describe_runs(encoded) or CACHE_ONLY
        out["vector_floor_applied"] = store.semantic.floor()
        out["vector_text"] = stamps.describe()
    return out


def _semantic_not_run() -> dict:
    """Why a run of every mode could not run the semantic ones, as ``kenning search`` says it: the
    report must not pass for a full run, and a verdict must not judge modes that never ran."""
    from kenning.retrieval.embeddings import degraded_note, probe

    note = degraded_note(probe()) or {}
    return {"modes": list(SEMANTIC_MODES), "cause": note.get("message"), "fix": note.get("fix"),
            "reason": note.get("reason")}


def run_eval(
    dataset: Dataset | str | Path,
    modes: Iterable[str] | str | None = None,
    group_sep: str | None = None,
    depth: int = 100,
    progress: bool = True,
    config_overrides: Mapping | None = None,
    reference: Sequence[str] = (),
    limit_queries: int | None = None,
    foreign: Dataset | str | Path | None = None,
    store_url: str | None = None,
) -> dict:
    """Evaluate a collection (folder, ``"builtin"`` or a loaded ``Dataset``) in every requested mode.

    Returns the report in the contract's shape: ``{"dataset", "queries", "modes": {mode: {"nDCG@10",
    "R@10", "R@100", "MRR@10", "latency_ms_p50", "latency_ms_p95", "queries", …}}}`` (R@100 only at a
    ``depth`` of 100 or more). Metrics average over answerable queries (an empty answer scores 0);
    queries without any relevant document are reported in each mode's ``unanswerable`` block instead.
    ``foreign`` adds another collection's queries as unanswerable ones (category ``foreign``).
    ``not_run`` names the semantic modes a run of every mode (``modes`` None) could not run, and why.
    """
    data = as_dataset(dataset)
    group_sep = checked_group_sep(group_sep)
    other_data = as_dataset(foreign) if foreign is not None else None
    if limit_queries is not None and limit_queries >= max(len(data.queries), len(other_data.queries) if other_data else 0):
        limit_queries = None  # cuts nothing: the run is the whole collection's, and its report says so (comparable)
    if limit_queries is not None:
        if limit_queries < 1:
            raise InvalidInput("--limit-queries must be at least 1")
        data = data.limit_queries(limit_queries)
    if other_data is not None:
        data = with_foreign_queries(data, other_data.limit_queries(limit_queries) if limit_queries else other_data)
    if depth < 10:
        raise InvalidInput("depth must be at least 10 (nDCG@10 needs ten ranks)")
    unknown_refs = [r for r in reference if r not in REFERENCES]
    if unknown_refs:
        raise InvalidInput(f"unknown reference {unknown_refs[0]!r}; available: {', '.join(REFERENCES)}")
    wanted = resolve_modes(modes)
    not_run = _semantic_not_run() if modes is None and not any(m in SEMANTIC_MODES for m in wanted) else None
    grouped, outside = data.outside_their_group(group_sep)
    if grouped and outside == grouped:
        raise InvalidInput(f"--group-sep {group_sep!r}: every grouped query has a relevant document outside its group "
                           "(the part of the id before the separator), where it can never be found; check the "
                           "separator against the ids")
    report: dict = {
        "dataset": data.name,
        "queries": len(data.queries),
        "documents": len(data.documents),
        "group_sep": group_sep,
        "depth": depth,
        "contents": data.fingerprint(),
        "modes": {},
    }
    if not_run:
        report["not_run"] = not_run
    semantic = any(mode in SEMANTIC_MODES for mode in wanted)
    with Progress(progress) as bar:
        encoded: Counter = Counter()
        try:
            with loaded_store(data, group_sep, bar, config_overrides, semantic, store_url, encoded) as store:
                config = store.config
                report["config"] = what_ran(store, semantic, encoded)
                for mode in wanted:
                    report["modes"][mode] = summarize(data, run_mode(store, data, mode, group_sep, depth, bar), depth)
            if "rank-bm25" in reference:
                ref = run_rank_bm25(data, group_sep, depth, config.bm25_k1, config.bm25_b, bar)
                report["modes"]["rank-bm25"] = summarize(data, ref, depth)
                report["config"]["rank_bm25"] = rank_bm25_settings(config.bm25_k1, config.bm25_b)
        except KeyboardInterrupt:
            raise Interrupted(bar.doing, semantic and kenning.embeddings_available()) from None
    if limit_queries is not None:
        report["limit_queries"] = limit_queries
    skipped = len(data.documents) - len(indexable(data))
    if skipped:
        report["skipped_documents"] = skipped
        if data.unstorable:
            report["skipped_reasons"] = {"no text": skipped - len(data.unstorable),
                                         "refused by the store": len(data.unstorable)}
            report["unstorable_documents"] = [
                {"_id": doc_id, "where": data.documents[doc_id].where, "why": why}
                for doc_id, why in list(data.unstorable.items())[:UNSTORABLE_LISTED]]
        left_out = set(data.unstorable) | {doc.id for doc in data.documents.values() if not doc.content.strip()}
        judged = sum(any(grade > 0 and d in left_out for d, grade in data.qrels.get(q, {}).items()) for q in data.queries)
        if judged:  # their answer is a document no mode can return: recall below 1 by construction
            report["queries_judged_relevant_to_skipped"] = judged
    if data.unknown_qrels:
        report["unknown_qrels"] = data.unknown_qrels
    if data.other_split_queries:
        report["other_split_queries"] = data.other_split_queries
        report["qrels_file"] = data.qrels_file
    if data.orphaned_queries:
        report["orphaned_queries"] = data.orphaned_queries
    if data.conflicting_judgments:
        report["conflicting_judgments"] = data.conflicting_judgments
    if outside:
        report["relevant_outside_group"] = outside
    return report

