"""The CLI's output from two code trees, compared byte for byte: the check behind a change to the
command line's start-up path (issue 14's fast search) that nothing a user sees has changed.

    mkdir -p /tmp/before && git archive main --prefix=kenning/ | tar -x -C /tmp/before
    python bench/cli_output_ab.py --tree before=/tmp/before:/tmp/stores-before/onnx-10000 \\
        --tree after=/tmp/after:/tmp/stores-after/onnx-10000 --queries 40

Each tree is ``label=folder holding kenning/:store directory`` (its own copy of the store: every
search logs an event row). For each of ``--queries`` corpus queries (corpus.py), modes keyword and
bm25 (``--modes`` adds hybrid), limits 1, 5 and 10, text and ``--json``, and a few option forms,
both trees run ``kenning search`` as a new process with the clock fixed (the keyword leg's recency
and the trust fields' ages read it); stdout (each search's own use token blanked), stderr and the
exit code must be equal. Prints one JSON line: how many command lines, how many
differed, and the first differences.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402

EXTRA_FORMS = [
    ["--limit=3", "--mode=bm25", "--no-auto-scope"],
    ["--mode", "bm25", "--expand-top"],
    ["--mode", "keyword", "--category", "fact", "--json"],
    ["--mode", "bm25", "--scope", "bench:corpus", "-s", "global"],
    ["--mode", "bm25", "--since-prior-session"],
    ["--limit", "0"],
    ["--mode", "nonsense"],
    ["--mode", "bm25", "--help"],
]


# `python -m kenning` with the library's clock fixed (patched before the facade or the plain search
# imports it; a tree older than store/plain.py has it in store/models.py only)
FIXED_CLOCK = """
import sys
from datetime import datetime, timezone
fixed = lambda: datetime(2026, 12, 2, 1, 0, 0, tzinfo=timezone.utc)
try:
    import kenning.store.plain as plain
    plain.utcnow = fixed
except ImportError:
    pass
import kenning.store.models as models
models.utcnow = fixed
sys.argv = ["kenning", *sys.argv[1:]]
from kenning.__main__ import main
main()
"""


def _run(tree: str, store: str, args: list[str]) -> tuple[int, bytes, bytes]:
    env = {**os.environ, "PYTHONPATH": tree, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", FIXED_CLOCK, "--store", store, "search", *args],
                          capture_output=True, env=env, cwd="/tmp", timeout=600)
    return done.returncode, re.sub(rb"use_[0-9A-Z]{26}", b"use_TOKEN", done.stdout), done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="label=folder:store (twice)")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--modes", default="keyword,bm25")
    args = parser.parse_args()
    trees = [(label, *spec.rsplit(":", 1)) for label, spec in (t.split("=", 1) for t in args.tree)]
    if len(trees) != 2:
        sys.exit("give exactly two --tree")
    queries = Corpus().queries(args.queries, corpus_size=10_000)
    lines = [[q, "--mode", mode, "--limit", str(limit), *json_flag]
             for q in queries for mode in args.modes.split(",") for limit in (1, 5, 10) for json_flag in ([], ["--json"])]
    lines += [[queries[0], *form] for form in EXTRA_FORMS]
    differed = []
    for line in lines:
        (a_label, a_tree, a_store), (b_label, b_tree, b_store) = trees
        a, b = _run(a_tree, a_store, line), _run(b_tree, b_store, line)
        if a != b:
            differed.append({"args": line, a_label: [a[0], a[1][:300].decode(errors="replace"), a[2][:300].decode()],
                             b_label: [b[0], b[1][:300].decode(errors="replace"), b[2][:300].decode()]})
    print(json.dumps({"command_lines": len(lines), "differed": len(differed), "first": differed[:5]}))


if __name__ == "__main__":
    main()
