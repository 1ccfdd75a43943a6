"""How long the `kenning` command takes to start, per command, against a bare Python start-up.

Each command runs ``--repeats`` times as a fresh process; the report gives the median and the p95
of the wall time and the median CPU time (user + system of the child), next to ``python -c pass``
and ``python -c "import typer"`` measured in the same run, so a busy machine shows as a slow
reference rather than as a slow kenning. Lexical commands run on a small store made here; none of
them may load torch (the script checks it once per command).

    python bench/bench_cli_startup.py --repeats 20
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

PYTHON = sys.executable
COMMANDS = {
    "python -c pass (reference)": [PYTHON, "-c", "pass"],
    "python -c 'import typer' (reference)": [PYTHON, "-c", "import typer"],
    "kenning --version": [PYTHON, "-m", "kenning", "--version"],
    "kenning --help": [PYTHON, "-m", "kenning", "--help"],
    "kenning search --help": [PYTHON, "-m", "kenning", "search", "--help"],
    "kenning search (bm25)": [PYTHON, "-m", "kenning", "search", "auth port", "--mode", "bm25"],
    "kenning list": [PYTHON, "-m", "kenning", "list"],
    "kenning info": [PYTHON, "-m", "kenning", "info"],
}
TORCH_PROBE = "import sys, runpy; sys.argv = ['kenning', *sys.argv[1:]]\ntry:\n    runpy.run_module('kenning', run_name='__main__')\nexcept SystemExit:\n    pass\nprint('torch' in sys.modules)"


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", help="also write the figures as JSON here")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="kenning-bench-cli-")
    env = {**os.environ, "KENNING_HOME": home, "HF_HUB_OFFLINE": "1"}
    subprocess.run([PYTHON, "-m", "kenning", "write", "The auth service listens on port 8443", "--scope", "x"],
                   env=env, check=True, capture_output=True)
    results = {}
    for name, argv in COMMANDS.items():
        timed(argv, env)  # warm the page cache
        samples = [timed(argv, env) for _ in range(args.repeats)]
        walls = sorted(w for w, _ in samples)
        torch = None
        if argv[1:3] == ["-m", "kenning"]:
            probe = subprocess.run([PYTHON, "-c", TORCH_PROBE, *argv[3:]], env=env, capture_output=True, text=True)
            torch = probe.stdout.strip().splitlines()[-1] == "True"
        results[name] = {"wall_median_s": round(statistics.median(walls), 3),
                         "wall_p95_s": round(walls[max(0, int(len(walls) * 0.95) - 1)], 3),
                         "cpu_median_s": round(statistics.median(c for _, c in samples), 3),
                         "loads_torch": torch}
        row = results[name]
        print(f"{name:40} wall median {row['wall_median_s']:.3f} s  p95 {row['wall_p95_s']:.3f} s  "
              f"cpu {row['cpu_median_s']:.3f} s" + ("" if torch is None else f"  torch loaded: {torch}"))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"repeats": args.repeats, "loadavg": os.getloadavg(), "results": results}, fh, indent=2)


if __name__ == "__main__":
    main()
