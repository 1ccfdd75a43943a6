"""The `high` rule, fourth pass: signals not used before, on hybrid's hits as shipped (RM3 feedback
on the BM25 leg; labelfeat4.py's pickle).

high = near the top and one of the shipped branches (a) cos >= c_alone; (b) cos >= c and coverage
>= v; (c) cos >= .55, >= 3 terms, coverage >= .3; plus one new branch:
  agree: the hit is rank 1 in both the BM25 and the vector leg, cos >= c4, coverage >= v4
  gap:   the fused score of hit 1 leads hit 2 by >= g (share of hit 1's), cos >= c4, coverage >= v4
  cosgap: its cosine leads every other top-10 hit's by >= g, cos >= c4, coverage >= v4
  multi: (any hit) >= g distinct query terms matched and at least half of them (so the hit is
         `medium` on its words), cos >= c4, coverage >= v4 - a long
         conversational question whose answer repeats most of its words at a modest cosine
Constraints on the training collections: every unanswerable set they host (builtin's own 15,
off-topic queries) `high` at the top hit <= 2 %, and `high` >= 90 % judged relevant where the
judgments are dense (builtin, med). Builtin's answers-removed set is reported, not a constraint:
its store keeps unjudged answers ("Kestrel Airflow version" finds the duplicate "Kestrel runs on
Apache Airflow 2.8.1." once the judged one is gone). Objective: the smallest per-collection share
of answerable top hits `high` (maximin), then the mean.
    python bench/relevance/labelrule4.py
"""
import itertools, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
import labelrule2 as L2

F = L2.load("labelfeat4.pkl")
C, D, names, A, TOP, P1, DENSE, SETS = L2.C, F.D, F.names, F.A, F.TOP, F.P1, F.DENSE, F.SETS
# the promise where judgments are sparse: `high` is judged relevant more often than a top hit is
# (P@1) - LABELRULE4_FAMILY=multi keeps rules to the shipped one and one multi-term branch
FAMILY = os.environ.get("LABELRULE4_FAMILY", "all")
# LABELRULE4_OBJECTIVE=capped: the mean share of answerable top hits `high`, each capped at CAP
# (more `high` past the target only dilutes it), then the strictest rule
OBJECTIVE = os.environ.get("LABELRULE4_OBJECTIVE", "maximin")
CAP = 0.55
COHERENT = os.environ.get("LABELRULE4_COHERENT", "") == "1"
REMOVED = {n: np.vstack([m[:1] for m in D["removed"][n].values()]) for n in names}
SHIPPED = ("none", 0.95, 0.8, 0.4, 0.8, 0, 0, 0)
SINGLE = [SHIPPED] + [
    (kind, 0.95, ca, c, v, g, c4, v4)
    for kind, gs in (("agree", (0,)), ("gap", (0.3, 0.5, 0.7)), ("cosgap", (0.1, 0.2, 0.3)), ("multi", (4, 5)))
    for ca, c, v, g, c4, v4 in itertools.product((0.8,), (0.4,), (0.8,), gs, (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7),
                                                 (0.2, 0.3, 0.4, 0.5, 0.6, 0.7))]
# pairs: one first-hit branch (agree / gap / cosgap) together with one multi-term branch
MULTI = [r for r in SINGLE if r[0] == "multi" and r[6] <= 0.45 and 0.3 <= r[7] <= 0.5]
FIRST = [r for r in SINGLE if r[0] in ("agree", "gap", "cosgap") and r[6] <= 0.6 and r[7] <= 0.6]
GRID = SINGLE + [("pair", r, m) for r in FIRST for m in MULTI]


def high(M, kind, *rule):
    if kind == "pair":
        return high(M, *rule[0]) | high(M, *rule[1])
    near, c_alone, c, v, g, c4, v4 = rule
    cos, cov = M[:, C["cos"]], M[:, C["cov"]]
    h = (cos >= c_alone) | ((cos >= c) & (cov >= v)) | ((cos >= 0.55) & (M[:, C["nmatch"]] >= 3) & (cov >= 0.3))
    first = M[:, C["rank"]] == 0
    if kind == "agree":
        h |= first & (M[:, C["both1"]] > 0) & (cos >= c4) & (cov >= v4)
    elif kind == "gap":
        h |= first & (M[:, C["gap12"]] >= g) & (cos >= c4) & (cov >= v4)
    elif kind == "cosgap":
        h |= first & (M[:, C["cosgap"]] >= g) & (cos >= c4) & (cov >= v4)
    elif kind == "multi":
        h |= (M[:, C["nmatch"]] >= g) & (M[:, C["nmatch"]] >= 0.5 * M[:, C["nterms"]]) & (cos >= c4) & (cov >= v4)
    return (M[:, C["rel"]] >= near) & h


def table():
    out = {}
    for rule in GRID:
        col = {}
        for n in names:
            h = high(A[n], *rule)
            col[n] = (h[TOP[n]].mean(), int(h.sum()), int(A[n][h, C["y"]].sum()), h.mean())
        uns = {k: high(M, *rule).mean() for k, (_, M) in SETS.items()}
        uns.update({n + "-removed": high(M, *rule).mean() for n, M in REMOVED.items()})
        out[rule] = (col, uns)
    return out


def strictness(rule):
    if rule[0] == "pair":
        return strictness(rule[1]) + strictness(rule[2])
    kind, near, c_alone, c, v, g, c4, v4 = rule
    return 9.0 if kind == "none" else c4 + v4 + (g / 10 if kind == "multi" else g)


def choose(T, train):
    best = None
    for rule, (col, uns) in T.items():
        if any(uns[k] > 0.02 for k, (host, _) in SETS.items() if host in train):
            continue
        if any(col[n][1] and col[n][2] / col[n][1] < 0.9 for n in train if n in DENSE):
            continue
        if any(col[n][1] and col[n][2] / col[n][1] <= P1[n] for n in train):
            continue
        if FAMILY == "multi" and rule[0] not in ("none", "multi"):
            continue
        if COHERENT and rule[0] == "multi" and rule[6] < 0.4:
            continue  # a `high` below the `medium` cosine (.4) could be high and fail medium's tests
        shares = [col[n][0] for n in train]
        if OBJECTIVE == "capped":  # the target (50 %) with a margin; past it, the strictest rule
            score = (round(float(np.mean(np.minimum(shares, CAP))), 4), strictness(rule), -GRID.index(rule))
        else:
            score = (round(min(shares), 3), round(float(np.mean(shares)), 3), -GRID.index(rule))
        if best is None or score > best[0]:
            best = (score, rule)
    return best[1]


def line(F, T, n, rule):
    col, uns = T[rule]
    top, nh, nrel, share = col[n]
    hosted = {k: round(float(u), 3) for k, u in uns.items() if k.split("-q-")[0] == n or k == n + "-removed"}
    return "%-14s top-high %.3f | high precision %s | unanswerable top-high %s" % (
        n, top, "%.3f" % (nrel / nh) if nh else "-", hosted)


if __name__ == "__main__":
    T = table()
    print(len(T), "rules; dense:", DENSE)
    L2.report(F, T, choose, SHIPPED, "shipped", line=line)


def families(T):
    """Per family: chosen on all six, and builtin / LoCoMo each held out (what the write-up tabulates)."""
    global GRID
    full = GRID
    for kind in ("agree", "gap", "cosgap", "multi", "pair"):
        GRID = [SHIPPED] + [r for r in full if r[0] == kind]
        sub = {r: T[r] for r in GRID}
        rows = []
        for held in ("builtin", "locomo-dev"):
            rule = choose(sub, [m for m in names if m != held])
            col, uns = sub[rule]
            leak = {k: round(float(u), 3) for k, u in uns.items() if k.split("-q-")[0] == held and "-q-" in k or k == held}
            rows.append("%s held out %.3f (unanswerable %s)" % (held, col[held][0], leak))
        rule = choose(sub, names)
        col, _ = sub[rule]
        print("%-7s all six: %s builtin %.3f LoCoMo %.3f | %s" % (kind, rule[1:] if rule[0] != "pair" else rule[1:],
                                                                 col["builtin"][0], col["locomo-dev"][0], "; ".join(rows)))
    GRID = full
