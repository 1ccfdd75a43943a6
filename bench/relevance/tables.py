"""Before/after and label-reliability tables (markdown) from the committed baselines.

    python bench/relevance/tables.py <before-commit> [<another before-commit>...]
"""
import json, subprocess, sys
from pathlib import Path

BASE = Path(__file__).resolve().parents[2] / "eval" / "baselines"
CASES = ["builtin", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]


def old(commit, case):
    try:
        return json.loads(subprocess.check_output(["git", "show", f"{commit}:eval/baselines/{case}.json"],
                                                  stderr=subprocess.DEVNULL, cwd=BASE))
    except subprocess.CalledProcessError:
        return None


def f(x):
    return "-" if x is None else f"{x:.3f}"


def pct(x):
    return "-" if x is None else f"{100 * x:.0f}%"


if __name__ == "__main__":
    befores = sys.argv[1:]
    heads = " | ".join(f"{m} {c[:7]}" for m in ("nDCG@10", "R@10") for c in befores)
    print(f"| collection | variant | {heads} | nDCG@10 after | R@10 after |")
    print("|---|---|" + "---|" * (2 * len(befores) + 2))
    rel = []
    for case in CASES:
        new = json.loads((BASE / f"{case}.json").read_text())
        was = [old(c, case) for c in befores]
        for v, row in new["modes"].items():
            os_ = [(w or {}).get("modes", {}).get(v, {}) for w in was]
            cells = [f(o.get("nDCG@10")) for o in os_] + [f(o.get("R@10")) for o in os_]
            print(f"| {case} | {v} | " + " | ".join(cells) + f" | {f(row['nDCG@10'])} | {f(row['R@10'])} |")
            r = row.get("reliability") or {}
            u = row.get("unanswerable") or {}
            if v in ("bm25", "semantic", "hybrid"):
                cells = []
                for lab in ("high", "medium", "low"):
                    x = r.get(lab) or {}
                    cells += [pct(x.get("share")), pct(x.get("precision"))]
                rel.append(f"| {case} | {v} | " + " | ".join(cells) + f" | {pct(r.get('top_high'))} | "
                           f"{pct(u.get('top_high')) if u else '-'} ({u.get('queries', 0)}) |")
        best = max(new["modes"]["bm25"]["nDCG@10"], new["modes"]["semantic"]["nDCG@10"])
        rel_margin = new["modes"]["hybrid"]["nDCG@10"] - best
        print(f"<!-- {case}: hybrid - max(bm25, semantic) = {rel_margin:+.4f} -->")
    print()
    print("| collection | mode | high share | high precision | medium share | medium precision | low share | low precision | answerable top hit high | unanswerable top hit high (n) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rel))
