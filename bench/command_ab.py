"""Any `kenning` command as a user runs it (a new process each time), two or more code trees alternating
run after run: wall, CPU (user + system) and peak RSS of the child, medians. For the commands beyond
search and write on a large store (`check`, `export`, `import`, `rename-scope`, ...).

    python bench/command_ab.py --tree before=/tmp/before --tree after=/tmp/after --store /tmp/s100k \\
        --runs 5 --lexical -- check

Each tree is ``label=folder holding kenning/`` (put on PYTHONPATH, as bench/README.md describes).
``--copy`` gives every run its own copy of the store (for a command that changes it); ``{store}``
and ``{tmp}`` (a fresh empty folder a run) in the command are filled in. ``--lexical`` hides the
embeddings extra from the child, as on a base install. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_INSTALL = ('import sys\nsys.modules["sentence_transformers"] = sys.modules["onnxruntime"] = None'
                '  # a base install: no embeddings extra\n')


def run_once(tree: str, store: str, command: list[str], copy: bool, lexical_site: str | None,
             work: Path) -> tuple[float, float, float]:
    """One child: (wall s, CPU s, peak RSS MB)."""
    run_dir = Path(tempfile.mkdtemp(dir=work))
    target = store
    if copy:
        target = str(run_dir / "store")
        shutil.copytree(store, target)
    filled = [part.replace("{store}", target).replace("{tmp}", str(run_dir / "tmp")) for part in command]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (lexical_site, tree) if p), HF_HUB_OFFLINE="1", NO_COLOR="1")
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "kenning", "--store", target, *filled], env=env, cwd=str(run_dir),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    error = child.stderr.read().decode() if child.stderr else ""
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # check exits 1 on damage: still a timed run
        sys.exit(f"{tree}: {' '.join(filled)} failed: {error[-800:]}")
    shutil.rmtree(run_dir, ignore_errors=True)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="label=folder holding kenning/ (repeat)")
    parser.add_argument("--store", required=True, help="the store directory")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--copy", action="store_true", help="each run on its own copy of the store")
    parser.add_argument("--lexical", action="store_true", help="hide the embeddings extra (a base install)")
    parser.add_argument("--work", default=None, help="folder for copies and sitecustomize (default: a temp dir)")
    parser.add_argument("command", nargs="+", help="after --: the kenning command and its arguments")
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    work = Path(args.work or tempfile.mkdtemp(prefix="command-ab-"))
    work.mkdir(parents=True, exist_ok=True)
    site = None
    if args.lexical:
        site = str(work / "base-install")
        Path(site).mkdir(exist_ok=True)
        (Path(site) / "sitecustomize.py").write_text(BASE_INSTALL)
    samples: dict[str, list[tuple[float, float, float]]] = {label: [] for label in trees}
    load = [os.getloadavg()[0]]
    for i in range(args.runs + 1):  # the first round warms the page cache and bytecode, and is dropped
        for label, tree in (trees.items() if i % 2 else reversed(trees.items())):
            row = run_once(tree, args.store, args.command, args.copy, site, work)
            if i:
                samples[label].append(row)
    load.append(os.getloadavg()[0])
    report: dict = {"command": args.command, "runs": args.runs, "load_start_end": load}
    for label, rows in samples.items():
        walls, cpus, rss = zip(*rows)
        report[label] = {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3),
                         "cpu_min_s": round(min(cpus), 3), "rss_mb": round(statistics.median(rss), 1)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
