"""The second paraphrase branch (``labels.paraphrase_high``: no shared word, cosine >= c, at least d
closer in meaning than any other text), read from labelfeat7.py dumps of the shipped engine (which
record each label's ``cosine_lead``). For the best hits sharing no query word, under a `high`
ceiling, in a question naming nothing: right / wrong / unanswerable or off-topic / answers-removed
counts by cosine lead, what each (c, d) would add to the first branch, and the pair chosen with one
collection left out, scored on it (leave-one-collection-out).
    KENNING_EVAL_DATA=../shared/eval-data bash bench/relevance/label_dumps.sh /tmp/kr
    python bench/relevance/clear_paraphrase.py /tmp/kr
"""
import itertools, sys
from collections import defaultdict
from kenning.retrieval import labels
from labelfeat7 import best_hits

SETS = ["builtin", "memval", "memval2", "memval3", "med", "cranfield", "npl", "locomo-dev"]
COSINES = (0.35, 0.4, 0.45, 0.5)
LEADS = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15)


def tops(path, removed):
    """(kind, cosine, cosine lead, already high without the branch) of each best hit the branch could reach."""
    out = []
    for q, best in best_hits(path):
        args = best["label_args"][0]
        cos, share, n, lead, ceiling, names, cl = args[0], args[1], args[2], args[7], args[8], args[9], args[-1]
        if cos is None or share != 0 or ceiling != "high" or names:
            continue
        kind = ("removed" if removed else "right" if q["answerable"] and best["rel"]
                else "wrong" if q["answerable"] else "unanswerable")
        before = labels.paraphrase_high(cos, 0.0, n, False) or (
            labels.vector_high(cos, 0.0, 0) and labels.stands_out(cos, lead, n))
        out.append((kind, cos, cl, before))
    return out


def added(rows, c, d):
    got = defaultdict(int)
    for kind, cos, cl, before in rows:
        if not before and cos >= c and cl >= d:
            got[kind] += 1
    return got


def score(got, removed_weight):
    """A right `high` gained against 3 wrong, 5 unanswerable and ``removed_weight`` answers-removed ones."""
    return got["right"] - 3 * got["wrong"] - 5 * got["unanswerable"] - removed_weight * got["removed"]


if __name__ == "__main__":
    out = sys.argv[1]
    data = {name: tops(f"{out}/labelfeat7-{name}.pkl", False) + tops(f"{out}/labelfeat7-{name}-removed.pkl", True)
            for name in SETS}
    print("cosine >= .40, by cosine lead: right / wrong / unanswerable or off-topic / answers removed")
    buckets = defaultdict(lambda: defaultdict(int))
    for rows in data.values():
        for kind, cos, cl, _ in rows:
            if cos >= 0.4:
                buckets[min(int(round(cl * 100)) // 2 * 2, 20)][kind] += 1
    for b in sorted(buckets):
        g = buckets[b]
        print(f"  {b / 100:+.2f}  {g['right']:3d} {g['wrong']:3d} {g['unanswerable']:3d} {g['removed']:3d}")
    grid = list(itertools.product(COSINES, LEADS))

    def total(names, c, d):
        got = defaultdict(int)
        for name in names:
            for k, v in added(data[name], c, d).items():
                got[k] += v
        return got
    print("added to the first branch, every set: (c, d) right wrong unanswerable removed")
    for c, d in grid:
        g = total(SETS, c, d)
        print(f"  ({c}, {d})  {g['right']} {g['wrong']} {g['unanswerable']} {g['removed']}")
    for weight in (3, 1):
        print(f"leave one collection out, an answers-removed `high` weighing {weight}:")
        for left in SETS[:4]:
            rest = [n for n in SETS if n != left]
            c, d = max(grid, key=lambda p: (score(total(rest, *p), weight), p))
            g = total([left], c, d)
            print(f"  {left} left out: picked ({c}, {d}) -> on it right {g['right']} wrong {g['wrong']} "
                  f"unanswerable {g['unanswerable']} removed {g['removed']}")
