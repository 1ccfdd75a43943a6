"""`kenning index` of N freshly imported memories, two or more code trees, alternating rounds: the
same-run figure behind issue 10's "batch throughput" row read as what a user runs (the issue measured
`kenning index` embedding 1,000 memories in 57 s at a7cb25a, torch on the path).

    python bench/index_ab.py --tree a7cb25a=/tmp/a7 --tree a7cb25a-2t=/tmp/a7 --tree main=/tmp/main \\
        --env a7cb25a-2t:KENNING_TORCH_THREADS=2 --memories 1000 --rounds 3

``--tree`` is a folder holding a ``kenning`` package, put first on PYTHONPATH. Each round, per tree:
a new store, `kenning import` of the same N synthetic memories (bench/corpus.py; `--no-gates` where
the tree has it, so every tree embeds all N), then `kenning index` timed from spawn to exit (wall and
the child's CPU), the model's load included as a user meets it. Prints medians over the rounds,
memories per second, and each tree's ratio to the first. a7cb25a ran torch on one thread unless
KENNING_TORCH_THREADS said otherwise; ``--env`` gives it the machine's two.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Corpus  # noqa: E402


def run_index(tree: Path, lines: Path, work: Path, extra: dict[str, str]) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "KENNING_HOME": str(work), "HF_HUB_OFFLINE": "1", **extra}
    # a7cb25a had no __main__.py: its command line was kenning.cli
    cli = [sys.executable, "-m", "kenning" if (tree / "kenning" / "__main__.py").exists() else "kenning.cli"]
    # every memory is embedded in both trees: today's import gates refuse the corpus's run-state lines
    trusted = ["--no-gates"] if "--no-gates" in (tree / "kenning" / "cli.py").read_text() else []
    subprocess.run([*cli, "import", str(lines), *trusted], env=env, check=True, capture_output=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([*cli, "index"], env=env, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"    {done.stdout.strip()[-120:]}", file=sys.stderr)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="name=folder holding a kenning package")
    parser.add_argument("--env", action="append", default=[],
                        help="name:KEY=VALUE, an environment setting for one tree (a7cb25a:KENNING_TORCH_THREADS=2)")
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = [(name, Path(path)) for name, path in (t.split("=", 1) for t in args.tree)]
    extra: dict[str, dict[str, str]] = {name: {} for name, _ in trees}
    for setting in args.env:
        name, pair = setting.split(":", 1)
        key, value = pair.split("=", 1)
        extra[name][key] = value
    with tempfile.TemporaryDirectory(prefix="index-ab-") as tmp:
        lines = Path(tmp) / "memories.jsonl"
        lines.write_text("".join(json.dumps({"content": text}) + "\n" for text in Corpus().memories(args.memories)))
        results: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in trees}
        for round_no in range(args.rounds):
            order = trees if round_no % 2 == 0 else trees[::-1]
            for name, tree in order:
                work = Path(tmp) / f"{name}-{round_no}"
                wall, cpu = run_index(tree, lines, work, extra[name])
                results[name].append((wall, cpu))
                print(f"round {round_no + 1} {name}: {wall:.1f} s wall, {cpu:.1f} s CPU", file=sys.stderr)
    first = statistics.median(w for w, _ in results[trees[0][0]])
    summary = {}
    for name, _ in trees:
        wall = statistics.median(w for w, _ in results[name])
        cpu = statistics.median(c for _, c in results[name])
        summary[name] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "memories_per_s": round(args.memories / wall, 1),
                         "x_first": round(first / wall, 2), "env": extra[name], "runs": [[round(w, 2), round(c, 2)] for w, c in results[name]]}
        print(f"{name}: {wall:.1f} s wall ({cpu:.1f} s CPU), {args.memories / wall:.1f} memories/s, x{first / wall:.2f}")
    if args.out:
        args.out.write_text(json.dumps({"memories": args.memories, "rounds": args.rounds, "trees": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
