"""Fusion settings chosen by their smallest margin over each collection's better single mode, with the
lone-term weight in place (ninth pass, eval/baselines/README.md): a grid over alpha, the relative-cosine
share ``rho`` and the lone weight, replayed on fusecap.py's captures, in-sample and
leave-one-collection-out.

    KENNING_RELEVANCE_OUT=/tmp/fcap15 python bench/relevance/maximin.py builtin memval med cranfield npl locomo-dev scifact-train
"""
import functools
import sys

from fusereplay import score
from fusevariants import fuse, grid
from loneloo import captured

# each collection's better single mode (max of bm25 and semantic nDCG@10) as the baselines record it
# at the 0.15 floor (memval: semantic)
BEST_MODE = {"builtin": .8803, "memval": .7906, "med": .7875, "cranfield": .3578, "locomo-dev": .5294,
             "npl": .4536, "scifact-train": .7019}
AXES = {"alpha": [0.72, 0.75, 0.78, 0.81], "rho": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], "one": [0.3, 0.4, 0.5]}


def label(setting):
    return " ".join(f"{k}={v}" for k, v in setting.items())


def pick(table, settings, names):
    """The setting whose worst collection stands furthest above its better mode, then the best mean."""
    return max(settings, key=lambda s: (round(min(table[label(s)][n] - BEST_MODE[n] for n in names), 4),
                                        sum(table[label(s)][n] for n in names)))


if __name__ == "__main__":
    names = sys.argv[1:]
    caps = {n: captured(n) for n in names}
    settings = list(grid(**AXES))
    table = {label(s): {n: score(c, functools.partial(fuse, **s)) for n, c in caps.items()} for s in settings}
    ranked = sorted(settings, key=lambda s: -min(table[label(s)][n] - BEST_MODE[n] for n in names))
    for s in ranked[:15] + [{"alpha": 0.78, "rho": 0.0, "one": 0.4}]:
        row = table[label(s)]
        print(f"{label(s):26s} worst {min(row[n] - BEST_MODE[n] for n in names):+.4f} "
              + " ".join(f"{n} {row[n]:.4f} ({row[n] - BEST_MODE[n]:+.4f})" for n in names))
    print("in-sample:", label(pick(table, settings, names)))
    for out in names:
        chosen = pick(table, settings, [n for n in names if n != out])
        got = table[label(chosen)][out]
        print(f"held out {out:14s} chosen {label(chosen):26s} {got:.4f} ({got - BEST_MODE[out]:+.4f})")
