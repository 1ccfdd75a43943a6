"""Where a gated write's CPU goes, phase by phase, on a copy of a store (issue 14).

    python bench/write_phases.py STORE_DIR --offset 100000 --writes 300

Copies STORE_DIR (made by bench_scale.py or an ``import_records`` of bench/corpus.py's records),
opens the copy with the embeddings extra hidden, runs one bm25 search, times the first write (the
one that measures the curation pressure for the hint), then ``--writes`` writes of the corpus'
memories from ``--offset`` on. Prints the CPU p50 of the whole write and of each phase (the
content gates, the duplicate probe's term ranking, postings and BM25, the overlap check, the
commit). Run it from each tree's root with that tree on PYTHONPATH to compare two trees.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None  # type: ignore[assignment]  # a base install

import kenning  # noqa: E402
from kenning.memory import requests, session, writes  # noqa: E402
from kenning.memory.gates import duplicates, pipeline  # noqa: E402
from kenning.retrieval import bm25  # noqa: E402
from kenning.store import lexicon  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402

PHASES = {}


def timed(owner, name: str, label: str) -> None:
    """Wrap ``owner.name`` so each call's CPU time is collected under ``label``."""
    real = getattr(owner, name)

    @functools.wraps(real)
    def wrapper(*args, **kwargs):
        c0 = time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            PHASES.setdefault(label, []).append(time.process_time() - c0)

    setattr(owner, name, wrapper)


def timed_block(owner, name: str, label: str) -> None:
    """Wrap the context manager ``owner.name`` so the CPU time from entering to leaving its block
    is collected under ``label``."""
    real = getattr(owner, name)

    @functools.wraps(real)
    @contextlib.contextmanager
    def wrapper(*args, **kwargs):
        c0 = time.process_time()
        try:
            with real(*args, **kwargs) as value:
                yield value
        finally:
            PHASES.setdefault(label, []).append(time.process_time() - c0)

    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--offset", type=int, default=100_000, help="first corpus memory to write (the store's size)")
    parser.add_argument("--writes", type=int, default=300)
    args = parser.parse_args()
    for owner, name, label in ((pipeline, "run_content_gates", "content gates"),
                               (lexicon.Lexicon, "doc_freqs", "probe: term frequencies"),
                               (lexicon.Lexicon, "postings", "probe: postings"),
                               (lexicon.Lexicon, "_fetch", "probe: postings read from SQLite"),
                               (lexicon, "_read_terms", "probe: postings read: the two queries"),
                               
                               (bm25, "top_k", "probe: top 20 of the summed scores"),
                               (lexicon.Lexicon, "_patch_add", "commit: cached postings patched"),
                               (lexicon.Lexicon, "add", "commit: index entry (delta rows)"),
                               (bm25, "search_once" if hasattr(bm25, "search_once") else "search", "probe: BM25 (postings included)"),
                               (pipeline, "_neighbours", "probe: whole"),
                               (duplicates, "check_duplicate", "overlap check"),
                               (writes, "_commit", "commit: the rows (inside the transaction)"),
                               (session.Session, "locate", "origin detection"),
                               (requests, "new_memory", "request: validated Memory"),
                               (pipeline, "run", "gates: all (probe included)"),
                               (writes, "_with_curation_hint", "curation hint check")):
        timed(owner, name, label)
    timed_block(session.Session, "transaction", "commit: whole transaction (rows + COMMIT)")
    texts = list(Corpus().memories(args.writes, offset=args.offset))
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(args.store, copy)
        store = kenning.open_store(copy)
        store.search("warm up", mode="bm25")
        c0, t0 = time.process_time(), time.perf_counter()
        store.write("a first write about the deploy pipeline and its cache", scopes=["bench:writes"])
        print(f"first write (curation pressure measured): CPU {time.process_time() - c0:.3f} s, "
              f"wall {time.perf_counter() - t0:.3f} s")
        PHASES.clear()
        cpu = []
        for text in texts:
            c0 = time.process_time()
            store.write(text, scopes=["bench:writes"])
            cpu.append(time.process_time() - c0)
        store.close()
    print(f"{kenning.__file__}: {len(texts)} writes, CPU p50 {statistics.median(cpu) * 1e3:.2f} ms")
    for label, samples in PHASES.items():
        print(f"  {label:34s} n={len(samples):4d}  CPU p50 {statistics.median(samples) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
