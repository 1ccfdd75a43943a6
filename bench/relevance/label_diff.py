"""Which top hits' `high` moved between two sets of labelfeat7.py dumps (before and after a change),
per collection: answerable top hits newly `high` judged right or wrong, unanswerable and off-topic
ones, answers-removed near misses (``-removed`` dumps), the same lost, and how many rankings moved.
    KENNING_EVAL_DATA=../shared/eval-data bash bench/relevance/label_dumps.sh /tmp/before  # at each commit
    python bench/relevance/label_diff.py /tmp/before /tmp/after [--suffix -bm25] [-v]
"""
import argparse, os, pickle

NAMES = ["builtin", "memval", "memval2", "memval3", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]


def kind(row, hit, removed):
    if removed:
        return "answers removed"
    if row["foreign"]:
        return "off-topic"
    if not row["answerable"]:
        return "unanswerable"
    return "right" if hit["rel"] else "wrong"


def compare(before, after, removed=False):
    gained, lost, moved, lines = {}, {}, 0, []
    for qid, a in before.items():
        b = after[qid]
        moved += [h["id"] for h in a["hits"]] != [h["id"] for h in b["hits"]]
        top_a, top_b = (a["hits"] or [None])[0], (b["hits"] or [None])[0]
        high_a = bool(top_a and top_a["label"] == "high")
        high_b = bool(top_b and top_b["label"] == "high")
        if high_a == high_b and (not high_a or top_a["id"] == top_b["id"]):
            continue
        for high, row, top, tally, sign in ((high_b, b, top_b, gained, "+"), (high_a, a, top_a, lost, "-")):
            if high:
                tag = kind(row, top, removed)
                tally[tag] = tally.get(tag, 0) + 1
                lines.append(f"  {sign} [{tag}] {row['text']!r} -> {top['text'][:90]!r}")
    return gained, lost, moved, lines


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--suffix", default="", help="the dumps' mode suffix, as labelfeat7.py names them (-bm25, -semantic)")
    ap.add_argument("-v", action="store_true", help="list every question whose top hit's `high` moved")
    a = ap.parse_args()
    for name in NAMES:
        for removed in ("", "-removed"):
            paths = [f"{d}/labelfeat7-{name}{removed}{a.suffix}.pkl" for d in (a.before, a.after)]
            if not all(os.path.exists(p) for p in paths):
                continue
            gained, lost, moved, lines = compare(*(pickle.load(open(p, "rb")) for p in paths), removed=bool(removed))
            print(f"{name}{removed}: rankings moved {moved}; newly high {gained or 'none'}; no longer high {lost or 'none'}")
            if a.v and lines:
                print("\n".join(lines))
