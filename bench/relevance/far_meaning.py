"""Sixteenth pass: discount the lexical evidence of a text holding part of the query (coverage below
theta) at a cosine below c0, by (cosine / c0) ** (power * e), replayed on fusecap.py's captures;
margin over each collection's better mode (its baseline's bm25 / semantic nDCG@10), in sample and
leave-one-collection-out (the setting with the best smallest margin on the others, scored on the one
left out). A text the vector leg did not return is kept in full ("one") or judged at the list's last
cosine ("cut").

    python bench/relevance/fusecap.py builtin memval memval2 memval3 ../shared/eval-data/{med,cranfield,npl,locomo-dev,scifact-train}
    python bench/relevance/far_meaning.py
"""
import itertools
import json
from pathlib import Path

from fusereplay import load, score
from kenning.retrieval import fusion

NAMES = ["builtin", "memval", "memval2", "memval3", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]
BASELINES = Path(__file__).resolve().parents[2] / "eval" / "baselines"


def better_mode(name):
    modes = json.loads((BASELINES / f"{name}.json").read_text())["modes"]
    return max(modes["bm25"]["nDCG@10"], modes["semantic"]["nDCG@10"])


def fuser(c0=None, e=1.0, missing="one", theta=9.0):
    """The fusion before this pass (``far_cosine=0``) with the discount applied to the coverage it is
    given (coverage ** power then carries it as (cosine / c0) ** (power * e))."""
    def fuse(row):
        rankings, coverage = row["rankings"], row["coverage"]
        if c0 is not None:
            listed = rankings.get("vector", [])
            cosine, cut = dict(listed), (listed[-1][1] if listed else 0.0)

            def kept(key):
                if key not in cosine and missing == "one":
                    return 1.0
                return min(1.0, max(0.0, cosine.get(key, cut)) / c0) ** e
            coverage = {k: (v * kept(k) if v < theta else v) for k, v in coverage.items()}
        return [f.key for f in fusion.evidence(rankings, coverage, lone=row["lone"], far_cosine=0.0, **row["settings"])]
    return fuse


if __name__ == "__main__":
    caps = {n: load(n) for n in NAMES}
    better = {n: better_mode(n) for n in NAMES}
    grid = [{}] + [dict(c0=c0, e=e, missing=m, theta=t) for c0, e, m, t in itertools.product(
        (0.3, 0.35, 0.4, 0.45, 0.5), (1.0, 2.0), ("one", "cut"), (0.5, 0.6, 0.7, 0.8, 9.0))]
    margins = {json.dumps(g): {n: score(c, fuser(**g)) - better[n] for n, c in caps.items()} for g in grid}
    for setting, m in sorted(margins.items(), key=lambda kv: -min(kv[1].values()))[:12] + [("{}", margins["{}"])]:
        print(f"{min(m.values()):+.4f} {setting:58s}", " ".join(f"{n[:7]} {x:+.4f}" for n, x in m.items()))
    for family in ("", '"e": 1.0, "missing": "one"'):
        pool = {k: v for k, v in margins.items() if family in k or k == "{}"}
        print("leave one out", family or "(every setting)")
        for out in NAMES:
            pick, m = max(pool.items(), key=lambda kv: min(x for n, x in kv[1].items() if n != out))
            print(f"  {out:14s} {m[out]:+.4f}  chosen on the others: {pick}")
