"""Reliability experiments of issue 12, reproducible: attempts, failures, lost, corrupt.

    python bench/bench_reliability.py [--attempts 5] [--records 5000] [--json]

- kill -9 during import: a child imports with ``import_bulk`` in batches and prints each committed
  count; it is killed at a random moment. lost = acknowledged records missing; corrupt = a failed
  ``PRAGMA integrity_check`` or ``kenning check``; failures = a re-run that does not end with every
  record exactly once.
- kill -9 during writes: a child writes one memory at a time and prints each committed id.
- kill -9 during a lexical rebuild (``Store.rebuild("lexical")``).
- derived-data damage: each kind of damage on a fresh store; exceptions in a search, whether
  ``check`` saw it (index rows lost or retired are repaired when the store opens, before the
  check), and answers still wrong after ``rebuild``.
- secrets: the labelled corpus (tests/data/credentials_corpus.py): detection and false positives.
The fuzzing figures come from the hypothesis suites: ``pytest tests/test_fuzz_*.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BATCH = 250


def _records(n: int) -> list[dict]:
    return [{"content": f"record {i}: relay {i % 17} feeds queue {i % 31} in zone {i % 7}", "scopes": ["bench"]}
            for i in range(n)]


def _child(script: str, stdin: str | None = None) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    if stdin is not None:
        proc.stdin.write(stdin)
    proc.stdin.close()
    return proc


def _kill_after(proc: subprocess.Popen, seconds: float) -> list[str]:
    """Read the child's acknowledgements until ``seconds`` pass, then SIGKILL it; returns the lines read."""
    import selectors

    lines, sel, end = [], selectors.DefaultSelector(), time.monotonic() + seconds
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < end and proc.poll() is None:
        if sel.select(timeout=max(0.0, end - time.monotonic())):
            line = proc.stdout.readline()
            if line:
                lines.append(line.strip())
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lines.extend(line.strip() for line in proc.stdout.read().splitlines())
    return lines


def _integrity(home: Path) -> bool:
    conn = sqlite3.connect(home / "kenning.sqlite3")
    ok = conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    from kenning import open_store

    with open_store(home) as store:
        return ok and store.check()["ok"]


def kill_import(attempts: int, n: int) -> dict:
    from kenning import open_store

    out = {"attempts": attempts, "failures": 0, "lost": 0, "corrupt": 0}
    data = json.dumps(_records(n))
    for _ in range(attempts):
        home = Path(tempfile.mkdtemp()) / "s"
        script = (f"import json, sys\nfrom kenning import open_store\ns = open_store({str(home)!r})\n"
                  f"s.import_bulk(json.load(sys.stdin), batch_size={BATCH}, progress=lambda d: print(d, flush=True))\n")
        acks = _kill_after(_child(script, data), random.uniform(0.5, 2.5))
        acked = max([int(a) for a in acks if a.isdigit()] or [0])
        with open_store(home) as store:
            have = store.count()
        out["lost"] += max(0, acked - have)
        out["corrupt"] += 0 if _integrity(home) else 1
        with open_store(home) as store:
            store.import_bulk(json.loads(data), batch_size=BATCH)
            if store.count() != n or have % BATCH:
                out["failures"] += 1
    return out


def kill_writes(attempts: int) -> dict:
    from kenning import open_store

    out = {"attempts": attempts, "failures": 0, "lost": 0, "corrupt": 0}
    for _ in range(attempts):
        home = Path(tempfile.mkdtemp()) / "s"
        script = (f"from kenning import open_store\ns = open_store({str(home)!r})\n"
                  "for i in range(100000):\n"
                  "    r = s.write(f'write loop fact {i}: host h{i} serves shard {i % 13}', scopes=['bench'])\n"
                  "    print(r.id, flush=True)\n")
        acks = [a for a in _kill_after(_child(script), random.uniform(2.0, 6.0)) if a]
        with open_store(home) as store:
            missing = [a for a in acks if not _exists(store, a)]
        out["lost"] += len(missing)
        out["corrupt"] += 0 if _integrity(home) else 1
    return out


def _exists(store, mid: str) -> bool:
    try:
        store.get(mid)
        return True
    except Exception:
        return False


def kill_rebuild(attempts: int, n: int) -> dict:
    from kenning import open_store

    out = {"attempts": attempts, "failures": 0, "lost": 0, "corrupt": 0}
    for _ in range(attempts):
        home = Path(tempfile.mkdtemp()) / "s"
        with open_store(home) as store:
            store.import_bulk(_records(n), batch_size=BATCH)
        script = (f"from kenning import open_store\ns = open_store({str(home)!r})\nprint('go', flush=True)\n"
                  "while True:\n    s.rebuild('lexical')\n")
        _kill_after(_child(script), random.uniform(1.0, 4.0))
        with open_store(home) as store:
            out["lost"] += n - store.count()
            hits = store.search("relay feeds queue", mode="bm25", limit=5, record=False).hits
            out["failures"] += 0 if hits else 1
        out["corrupt"] += 0 if _integrity(home) else 1
    return out


DAMAGE = {
    "garbage postings blob": "UPDATE lex_segments SET postings = x'0102' WHERE term = 'relay'",
    "postings deleted": "DELETE FROM lex_segments WHERE term IN ('relay', 'queue')",
    "terms swapped": "UPDATE lex_segments SET term = 'tmp' WHERE term = '11'; "
                     "UPDATE lex_segments SET term = '11' WHERE term = '12'; "
                     "UPDATE lex_segments SET term = '12' WHERE term = 'tmp'",
    "documents marked dead": "UPDATE lex_docs SET live = 0 WHERE lexid % 3 = 0",
    "index rows deleted": "DELETE FROM lex_docs WHERE lexid % 5 = 0",
    "vectors.idx replaced by a folder": None,
}


def derived_damage(n: int) -> dict:
    from kenning import open_store

    out = {}
    for name, statement in DAMAGE.items():
        home = Path(tempfile.mkdtemp()) / "s"
        queries = [f"relay {i} feeds queue {j}" for i, j in zip(range(17), range(3, 40, 2))]
        with open_store(home) as store:
            store.import_bulk(_records(n), batch_size=BATCH)
            before = {q: {h.id: round(h.score, 5) for h in store.search(q, mode="bm25", limit=10, record=False).hits}
                      for q in queries}
        if statement is None:
            (home / "vectors.idx").mkdir()
        else:
            conn = sqlite3.connect(home / "kenning.sqlite3")
            conn.executescript(statement)
            conn.commit()
            conn.close()
        row = {"attempts": len(queries), "exceptions": 0, "detected_by_check": False, "wrong_after_repair": 0}
        with open_store(home) as store:
            row["detected_by_check"] = not store.check()["ok"]
            store.rebuild("lexical" if statement else "vectors")
            for q in queries:
                try:
                    got = {h.id: round(h.score, 5) for h in store.search(q, mode="bm25", limit=10, record=False).hits}
                except Exception:
                    row["exceptions"] += 1
                    continue
                row["wrong_after_repair"] += got != before[q]
        out[name] = row
    return out


def secrets() -> dict:
    spec = importlib.util.spec_from_file_location("corpus", ROOT / "tests" / "data" / "credentials_corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    from kenning.memory.gates.credentials import find_credentials

    items = list({i["text"]: i for i in corpus.corpus()}.values())
    secret = [i for i in items if i["secret"]]
    clean = [i for i in items if not i["secret"]]
    caught = sum(1 for i in secret if find_credentials(i["text"]))
    flagged = sum(1 for i in clean if find_credentials(i["text"]))
    return {"secrets": len(secret), "kinds": len({i["kind"] for i in secret}), "clean": len(clean),
            "detected": round(caught / len(secret), 4), "false_positives": round(flagged / len(clean), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attempts", type=int, default=5)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    random.seed(12)
    report = {
        "kill -9 during import": kill_import(args.attempts, args.records),
        "kill -9 during writes": kill_writes(args.attempts),
        "kill -9 during lexical rebuild": kill_rebuild(args.attempts, args.records),
        "derived-data damage": derived_damage(2000),
        "secrets corpus": secrets(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, row in report.items():
        if name == "derived-data damage":
            for kind, r in row.items():
                print(f"damage: {kind}: {r}")
        else:
            print(f"{name}: {row}")


if __name__ == "__main__":
    main()
