"""Speed of transcript recall over 10,000 messages: the warm query bound of issue 16 (<= 50 ms).

Run from the repository root:

    python bench/bench_transcripts.py --messages 10000 --repeats 5 --out bench/results-transcripts.json

It writes Claude Code session ledgers (with sidechain ledgers) and Codex CLI rollouts holding
``--messages`` user/assistant messages (texts from bench/corpus.py, fixed seed) into a temporary
folder, registers it with a fresh store and times:

- the first index of the folder (``transcripts add``), messages/s;
- a warm ``TranscriptIndex.search`` per query (project scope and ``all``, lexical: keyword and
  BM25), each including the incremental check of every ledger (a stat each) that makes appends
  visible without a restart;
- with the embeddings extra working: embedding every message (messages/s), then a warm ``hybrid``
  search (keyword, BM25 and the vector leg, fused as the store fuses memories), beside the query's
  encoding alone (the model's share of it) and the full hybrid ``recall`` (one encoding for every tier);
- a query right after one line was appended to a live ledger (the append is read, then ranked);
- the full ``recall`` (profile + memories + transcripts) on the same store;
- the reference, measured in the same run: the scan-first design the seed started from (read
  every ledger, score each message with saturating term counts) for the same queries.

Every figure is a median and a p95 over ``--repeats`` passes over ~100 queries.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402

PROJECT = "/home/bench/projects/payments"
OTHER_PROJECT = "/home/bench/projects/website"
MESSAGES_PER_LEDGER = 100


def write_ledgers(root: Path, messages: int, corpus: Corpus) -> int:
    """Claude Code sessions (every fifth with a sidechain ledger) and Codex rollouts; returns ledger count."""
    texts = corpus.memories(messages)
    ledgers = 0
    n = 0
    while n < messages:
        count = min(MESSAGES_PER_LEDGER, messages - n)
        session = f"{ledgers:08d}-aaaa-4bbb-8ccc-{ledgers:012d}"
        cwd = PROJECT if ledgers % 2 == 0 else OTHER_PROJECT
        if ledgers % 3 == 2:  # a Codex rollout
            path = root / "codex" / "sessions" / "2026" / "11" / f"{ledgers % 28 + 1:02d}" / f"rollout-{session}.jsonl"
            lines = [{"timestamp": "2026-11-01T00:00:00Z", "type": "session_meta",
                      "payload": {"id": session, "cwd": cwd, "cli_version": "0.63.0", "source": "cli"}}]
            for i in range(count):
                role = "user" if i % 2 == 0 else "assistant"
                lines.append({"timestamp": f"2026-11-01T00:{i // 60:02d}:{i % 60:02d}Z", "type": "response_item",
                              "payload": {"type": "message", "role": role,
                                          "content": [{"type": "input_text" if role == "user" else "output_text",
                                                       "text": next(texts)}]}})
        else:
            folder = root / "claude" / "projects" / cwd.replace("/", "-")
            sidechain = ledgers % 5 == 0
            path = folder / session / "subagents" / "agent-b1.jsonl" if sidechain else folder / f"{session}.jsonl"
            lines = []
            for i in range(count):
                role = "user" if i % 2 == 0 else "assistant"
                content = next(texts) if role == "user" else [{"type": "text", "text": next(texts)}]
                lines.append({"parentUuid": None, "isSidechain": sidechain, "cwd": cwd, "sessionId": session,
                              "agentId": "b1" if sidechain else None, "type": role,
                              "message": {"role": role, "content": content}, "uuid": f"{ledgers}-{i}",
                              "timestamp": f"2026-11-01T00:{i // 60:02d}:{i % 60:02d}Z"})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        n += count
        ledgers += 1
    return ledgers


def scan_reference(root: Path, query: str, limit: int = 8) -> list[tuple[float, str]]:
    """The scan-first design: read every ledger and score each message by saturating term counts."""
    from kenning.retrieval.text import query_terms, tokenize

    terms = set(query_terms(query))
    scored = []
    for path in root.rglob("*.jsonl"):
        with open(path, encoding="utf-8") as f:
            for raw in f:
                obj = json.loads(raw)
                text = _text(obj)
                if not text:
                    continue
                counts: dict[str, int] = {}
                for tok in tokenize(text):
                    if tok in terms:
                        counts[tok] = counts.get(tok, 0) + 1
                if counts:
                    scored.append((sum(1 + math.log(c) for c in counts.values()), text))
    scored.sort(key=lambda s: -s[0])
    return scored[:limit]


def _text(obj: dict) -> str:
    if obj.get("type") == "response_item":
        return " ".join(b.get("text", "") for b in obj["payload"].get("content") or [])
    message = obj.get("message")
    if isinstance(message, dict):
        content = message.get("content")
        return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content or [])
    return ""


class Samples(list):
    """Wall-clock milliseconds, with the process CPU milliseconds of the same calls beside them (on a
    shared machine a high load average inflates wall time; CPU time shows by how much)."""

    def __init__(self):
        super().__init__()
        self.cpu: list[float] = []


def timed(fn, samples: "Samples | None" = None) -> float:
    cpu, start = time.process_time(), time.perf_counter()
    fn()
    wall = (time.perf_counter() - start) * 1000.0
    if samples is not None:
        samples.append(wall)
        samples.cpu.append((time.process_time() - cpu) * 1000.0)
    return wall


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    out = {"median_ms": round(statistics.median(ordered), 3),
           "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3), "n": len(ordered)}
    if isinstance(samples, Samples) and samples.cpu:
        out["cpu_median_ms"] = round(statistics.median(samples.cpu), 3)
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--no-vector", action="store_true", help="Skip embedding and the hybrid figures.")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import kenning
    from kenning.recall.recall import recall
    from kenning.recall.transcripts import TranscriptIndex, index_for

    load_start = os.getloadavg()
    corpus = Corpus()
    queries = corpus.queries(args.queries, corpus_size=args.messages)
    tmp = Path(tempfile.mkdtemp(prefix="kenning-bench-transcripts-"))
    try:
        root = tmp / "ledgers"
        ledgers = write_ledgers(root, args.messages, corpus)
        store = kenning.open_store(tmp / "store")
        store.import_records(corpus.records(200, offset=args.messages))  # a few memories beside the transcripts
        index = index_for(store)
        start = time.perf_counter()
        added = index.add_source(root, project=PROJECT)
        first_index_s = time.perf_counter() - start
        # keyword + BM25 fused, as a base install (no embeddings extra) ranks: an index without the model
        lexical = TranscriptIndex(store.db, lambda: store.config, semantic=None)
        _lexical = functools.partial(TranscriptIndex.search, lexical, mode="hybrid")
        for q in queries[:10]:  # warm the postings cache the way a running server is warm
            _lexical(q, project=PROJECT)
        scoped, everywhere, full, sync_only = Samples(), Samples(), Samples(), Samples()
        for _ in range(args.repeats):
            for q in queries:
                timed(lambda: _lexical(q, project=PROJECT), scoped)
                timed(lambda: _lexical(q, all_projects=True), everywhere)
            timed(lexical.sync, sync_only)
        for q in queries[:20]:
            timed(lambda: recall(store, q, all_projects=True, mode="bm25"), full)
        vector = {}
        if not args.no_vector and index.vectors.available():
            start = time.perf_counter()
            embedded = index.vectors.embed_pending()
            seconds = time.perf_counter() - start
            store.semantic.embed_pending()
            index.search(queries[0], project=PROJECT, mode="hybrid")
            encoder = store.semantic.encoder()
            hybrid, encoding, recalled = Samples(), Samples(), Samples()
            load_before = os.getloadavg()
            for _ in range(args.repeats):
                for q in queries:
                    timed(lambda: index.search(q, project=PROJECT, mode="hybrid"), hybrid)
                    timed(lambda: encoder.encode_query(q), encoding)  # the model's share of each search
            for q in queries[:20]:
                timed(lambda: recall(store, q, all_projects=True, mode="hybrid"), recalled)
            vector = {"embed_messages_per_s": round(embedded / seconds), "embed_s": round(seconds, 1),
                      "warm_search_hybrid_project": summary(hybrid), "query_encoding_alone": summary(encoding),
                      "recall_all_tiers_hybrid": summary(recalled),
                      "load_average_during_hybrid": [round(x, 2) for x in (*load_before, *os.getloadavg())]}
        live = next(root.rglob("*.jsonl"))
        rng = random.Random(7)
        appended = Samples()
        for i in range(args.repeats * 4):
            word = f"zebrafish{rng.randrange(10**6)}"
            with open(live, "a") as f:
                f.write(json.dumps({"session": "live", "role": "user", "text": f"the {word} deploy finished {i}",
                                    "cwd": PROJECT}) + "\n")
            hits = []
            timed(lambda: hits.extend(_lexical(word, project=PROJECT).hits), appended)
            assert hits, "an appended line must be searchable at the next query"
        reference = Samples()
        for q in queries[:10]:
            timed(lambda: scan_reference(root, q), reference)
        store.close()
        result = {
            "messages": added["messages_added"], "ledgers": ledgers, "queries": len(queries), "repeats": args.repeats,
            "first_index_s": round(first_index_s, 3),
            "first_index_messages_per_s": round(added["messages_added"] / first_index_s),
            "warm_search_project": summary(scoped), "warm_search_all": summary(everywhere),
            "no_change_sync": summary(sync_only), "query_after_append": summary(appended),
            "recall_all_tiers_bm25": summary(full), **vector, "reference_scan_first": summary(reference),
            "python": platform.python_version(), "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in (*load_start, *os.getloadavg())],  # 1/5/15 min at start, then at end
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
