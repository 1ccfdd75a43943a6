"""What the labels' handling of query words no stored text holds buys and costs (tenth pass): every
collection run in hybrid (and semantic for the memory sets) three ways - as shipped (a query's
``labels.ceiling``), without the ceiling (the ninth pass: unknown words count neither way), and
without the ceiling or the known-term coverage (unknown words count as missing); the top hit's
``high`` share of answerable and of unanswerable questions, and ``high`` precision.

    python bench/relevance/unknown_terms.py builtin memval ../shared/eval-data/{med,cranfield,npl,locomo-dev} \
        --foreign memval=/path/to/near-miss-set
"""
import argparse
import json

from kenning.eval import harness
from kenning.retrieval import labels

GROUPED = {"locomo-dev": ":"}


def run(source, foreign, modes):
    name = source.rstrip("/").rsplit("/", 1)[-1]
    report = harness.run_eval(source, modes=modes, group_sep=GROUPED.get(name), progress=False, foreign=foreign,
                              limit_queries=400 if "scifact" in name else None)
    out = {}
    for mode, row in report["modes"].items():
        rel = row.get("reliability", {})
        out[mode] = {"nDCG@10": row["nDCG@10"], "top_high": rel.get("top_high"),
                     "high_precision": rel.get("high", {}).get("precision"), "high_hits": rel.get("high", {}).get("hits"),
                     "unanswerable_top_high": row.get("unanswerable", {}).get("top_high"),
                     "unanswerable": row.get("unanswerable", {}).get("queries")}
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("collections", nargs="+")
    parser.add_argument("--foreign", action="append", default=[], help="NAME=FOLDER: add FOLDER's queries to NAME as unanswerable")
    args = parser.parse_args()
    foreign = dict(item.split("=", 1) for item in args.foreign)
    known, ceiling = labels.KNOWN_TERMS, labels.ceiling
    variants = {"shipped": (known, ceiling), "no ceiling": (known, lambda query, unknown=(): "high"),
                "unknown missing": (10**9, lambda query, unknown=(): "high")}
    for source in args.collections:
        name = source.rstrip("/").rsplit("/", 1)[-1]
        modes = "semantic,hybrid" if name in ("builtin", "memval") else "hybrid"
        for variant, (labels.KNOWN_TERMS, labels.ceiling) in variants.items():
            print(json.dumps({"collection": name, "variant": variant, **run(source, foreign.get(name), modes)}), flush=True)
    labels.KNOWN_TERMS, labels.ceiling = known, ceiling
