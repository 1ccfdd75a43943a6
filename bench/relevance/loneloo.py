"""The lone-term weight (fusion.LONE_TERM_WEIGHT), leave-one-collection-out on fusecap.py's captures:
on each fold the weight whose worst training collection stands furthest above its better single-mode
figure (then the best mean), scored on the collection left out.
    python bench/relevance/loneloo.py builtin memval med cranfield npl locomo-dev scifact-train
"""
import functools
import os
import pickle
import sys

from fusereplay import OUT, load, score
from fusevariants import fuse, with_matches
from kenning.eval.datasets import PACKAGED, load_dataset

# each collection's better single mode (max of bm25 and semantic nDCG@10), committed baselines / memval's first run
BEST_MODE = {"builtin": .8803, "memval": .7883, "med": .7875, "cranfield": .3578, "locomo-dev": .5294,
             "npl": .4536, "scifact-train": .7019}
WEIGHTS = [1.0, 0.6, 0.5, 0.4, 0.3, 0.2]
DATA = os.environ.get("KENNING_EVAL_DATA", "/work/shared/eval-data")


def captured(name):
    path = OUT / f"fusecap-{name}-matched.pkl"
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    data = load_dataset(name if name in PACKAGED else os.path.join(DATA, name))
    cap = with_matches(load(name), {d.id: d.content for d in data.documents.values()})
    with open(path, "wb") as f:
        pickle.dump(cap, f)
    return cap


if __name__ == "__main__":
    names = sys.argv[1:]
    caps = {n: captured(n) for n in names}
    table = {w: {n: score(c, functools.partial(fuse, one=None if w == 1.0 else w)) for n, c in caps.items()}
             for w in WEIGHTS}
    for w in WEIGHTS:
        print(f"weight {w}: " + " ".join(f"{n} {table[w][n]:.4f} ({table[w][n] - BEST_MODE[n]:+.4f})" for n in names))
    for out in names:
        train = [n for n in names if n != out]
        chosen = max(WEIGHTS, key=lambda w: (round(min(table[w][n] - BEST_MODE[n] for n in train), 4),
                                             sum(table[w][n] for n in train)))
        print(f"held out {out:14s} chosen {chosen}: {table[chosen][out]:.4f} ({table[chosen][out] - BEST_MODE[out]:+.4f})")
