"""Mutation score of the schema migrations' SQL (store/db.py MIGRATIONS), which mutmut cannot mutate.

mutmut 3 mutates Python function bodies only; the migrations are SQL text in a module-level list.
This makes SQL mutants instead, one at a time, each in a scratch copy of this commit's tree:

- every statement of every step deleted (the step then silently skips it);
- every JSON path of a data-moving statement pointed at a key that does not exist (the backfill then
  copies NULLs instead of the data).

Each mutant runs the named tests (stop at the first failure); a failing run kills it.

    python bench/mutation_sql.py tests/test_schema.py tests/test_migrations_with_data.py

Prints one line a mutant and the score; exits 1 when any mutant survived.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
DB = "store/db.py"


def migrations(source: str) -> list[str]:
    """MIGRATIONS as written in db.py (read from the syntax tree, not imported: no kenning needed)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "MIGRATIONS":
            return [ast.literal_eval(item) for item in node.value.elts]
    raise SystemExit("no MIGRATIONS list in store/db.py")


def mutants(source: str) -> list[tuple[str, str]]:
    """(description, mutated db.py source) for every SQL mutant."""
    out = []
    for number, step in enumerate(migrations(source), start=1):
        for statement in step.split(";"):
            if not statement.strip():
                continue
            head = " ".join(line.split("--")[0] for line in statement.strip().splitlines()).split()
            label = " ".join(head[:6])
            if source.count(statement + ";") != 1:
                raise SystemExit(f"step {number}: statement not unique in db.py: {label}")
            out.append((f"step {number}: delete `{label}`", source.replace(statement + ";", ";", 1)))
            for path in sorted(set(re.findall(r"'\$\.[\w.]+'", statement))):
                mutated = statement.replace(path, path[:-1] + "_mutant'")
                out.append((f"step {number}: {path} -> missing key in `{label}`",
                            source.replace(statement, mutated, 1)))
    return out


def run(tests: list[str]) -> int:
    source = (HERE / DB).read_text()
    found = mutants(source)
    python = os.environ.get("PYTHON") or sys.executable
    killed = 0
    with tempfile.TemporaryDirectory(prefix="kenning-sql-mutation-") as scratch:
        tree = Path(scratch) / "kenning"
        archive = subprocess.run(["git", "-C", str(HERE), "archive", "HEAD", "--prefix=kenning/"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", scratch], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": scratch, "HF_HUB_OFFLINE": "1"}
        base = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
        clean = subprocess.run(base, cwd=tree, env=env, capture_output=True, text=True)
        if clean.returncode != 0:
            raise SystemExit(f"the tests fail without any mutant:\n{clean.stdout[-2000:]}")
        for description, mutated in found:
            (tree / DB).write_text(mutated)
            done = subprocess.run(base, cwd=tree, env=env, capture_output=True, text=True)
            dead = done.returncode != 0
            killed += dead
            print(f"{'killed  ' if dead else 'SURVIVED'} {description}", flush=True)
        (tree / DB).write_text(source)
    print(f"{killed}/{len(found)} killed ({100 * killed / len(found):.1f}%)")
    return 0 if killed == len(found) else 1


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:] or ["tests/test_schema.py", "tests/test_migrations_with_data.py"]))
