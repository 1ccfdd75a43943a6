"""Time one memory write (and ``--force``, ``update`` and ``import``) of a body near kenning's size cap.

A memory may hold up to 1 MiB (memory/gates/limits.py, MAX_CONTENT_BYTES); every write runs the
content gates (credentials, durability, user claims, ...), the duplicate probe and the lexical
index over the whole body. This script times those paths for bodies of ~1 MiB of different shapes,
each case in a fresh process on a fresh store (the first write of a process is what a CLI call
pays), and prints the median of the repeats per case. It is not a test: nothing here asserts a
time. The embeddings extra is hidden (a base install), so nothing waits on a model.

    python bench/large_write.py --repeats 3 --out /tmp/large-write.json
    python bench/large_write.py --cases prose,cjk --ops write --repeats 5
    python bench/large_write.py --trees /tmp/before,/tmp/after --repeats 3   # two snapshots, alternating

Cases: ``prose`` (sentences of common and technical words), ``word`` (one 1 MiB word),
``line`` (one short line of run-state wording repeated: every gate pattern fires thousands of
times), ``secretline`` (``PG_PASSWORD=sunshine`` repeated), ``redline`` (``the build is red``
without sentence ends: one 1 MiB clause), ``cjk`` (CJK text without spaces), ``cap`` (a body 1
byte under the cap) and ``over`` (1 byte over it: refused). Each subprocess has ``--timeout``
seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

CAP = 1024 * 1024

CASES = ("prose", "word", "line", "secretline", "redline", "userline", "cjk", "cap", "over")
OPS = ("write", "force", "update", "import")


def body(case: str, size: int = CAP) -> str:
    rng = random.Random(7)
    if case in ("prose", "cap", "over"):
        words = ("the billing service for helios runs on postgres behind the migration proxy and the deploy "
                 "config is kept in the ops repository with a nightly backup to object storage").split()
        parts, n = [], 0
        while n < size:
            line = " ".join(rng.choice(words) for _ in range(rng.randint(8, 20))).capitalize() + ".\n"
            parts.append(line)
            n += len(line)
        text = "".join(parts)
        if case == "cap":
            return text[: size - 1]
        if case == "over":
            return text[: size + 1]
        return text[:size]
    if case == "word":
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(size))
    if case == "line":
        line = "We are currently migrating the build, it is still running and CI is red since yesterday.\n"
    elif case == "secretline":
        line = "PG_PASSWORD=sunshine\n"
    elif case == "redline":
        line = "the build is red and the queue is paused today "
    elif case == "userline":
        line = "the user prefers vim and you like tabs\n"
    elif case == "cjk":
        chars = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
        n = size // 3  # three UTF-8 bytes a character
        return "".join(rng.choice(chars) for _ in range(n))
    else:
        raise ValueError(case)
    return (line * (size // len(line) + 1))[:size]


CHILD = r"""
import json, sys, time, tempfile, os
sys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None  # a base install: no model
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[1])))
from large_write import body
import kenning
case, op = sys.argv[2], sys.argv[3]
text = body(case)
store_dir = tempfile.mkdtemp(prefix="kenning-large-")
store = kenning.open_store(store_dir)
out = {"chars": len(text), "bytes": len(text.encode("utf-8"))}
def timed(fn):
    t, c = time.perf_counter(), time.process_time()
    try:
        r = fn()
        status = getattr(r, "status", None) or type(r).__name__  # a Memory from update
        gate = getattr(r, "gate", None)
        if hasattr(r, "lines"):  # an import report
            status = ",".join(f"{line.status}" for line in r.lines)
            gate = ",".join(str(getattr(line, "gate", None)) for line in r.lines)
    except Exception as exc:  # a refusal raised as an error (the size cap)
        status, gate = "error", f"{type(exc).__name__}: {str(exc)[:120]}"
    return {"wall": time.perf_counter() - t, "cpu": time.process_time() - c, "status": status, "gate": gate}
if op == "write":
    out.update(timed(lambda: store.write(text, scopes=["t"])))
elif op == "force":
    out.update(timed(lambda: store.write(text, scopes=["t"], force=True)))
elif op == "update":
    r = store.write("the deploy config lives in the ops repository", scopes=["t"])
    out.update(timed(lambda: store.update(r.id, text=text)))
elif op == "import":
    out.update(timed(lambda: store.import_checked([{"content": text, "scopes": ["t"]}])))
print(json.dumps(out))
"""


def run_one(case: str, op: str, timeout: float, tree: str = "") -> dict:
    here = os.path.abspath(__file__)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if tree:  # a code snapshot (git archive HEAD --prefix=kenning/ | tar -x -C DIR) ahead of the editable install
        env["PYTHONPATH"] = tree
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, here, case, op], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"wall": None, "cpu": None, "status": f"timeout>{timeout:g}s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"wall": None, "cpu": None, "status": "crash: " + proc.stderr.strip().splitlines()[-1:][0][:200]
                if proc.stderr.strip() else f"crash rc={proc.returncode}"}
    return json.loads(lines[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--trees", default="", help="comma-separated PYTHONPATH snapshots to alternate (default: the installed code)")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load0 = os.getloadavg()[0]
    trees = args.trees.split(",") if args.trees else [""]
    for case in args.cases.split(","):
        for op in args.ops.split(","):
            runs: dict[str, list[dict]] = {tree: [] for tree in trees}
            for _ in range(args.repeats):  # the trees alternate, so a change in load hits both
                for tree in trees:
                    runs[tree].append(run_one(case, op, args.timeout, tree))
            for tree in trees:
                got = runs[tree]
                walls = [r["wall"] for r in got if r.get("wall") is not None]
                cpus = [r["cpu"] for r in got if r.get("cpu") is not None]
                row = {"case": case, "op": op, "tree": tree or "installed", "bytes": got[0].get("bytes"),
                       "status": got[0].get("status"), "gate": got[0].get("gate"),
                       "wall_median": statistics.median(walls) if walls else None,
                       "cpu_median": statistics.median(cpus) if cpus else None, "walls": walls, "cpus": cpus}
                rows.append(row)
                wall = f"{row['wall_median']:.3f}s" if walls else "-"
                cpu = f"{row['cpu_median']:.3f}s" if cpus else "-"
                print(f"{case:10s} {op:7s} {row['tree'][-24:]:>24s} wall {wall:>8s} cpu {cpu:>8s}  {row['status']}"
                      f" {(row['gate'] or '')[:100]}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"started": started, "load_average_at_start": load0, "load_average_at_end": os.getloadavg()[0],
                       "cpus": os.cpu_count(), "repeats": args.repeats, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
