"""The `high` rule, seventh pass: the sixth pass's rule, its lead thresholds swept again, with and
without "the hit asks about the query" (``labels.asks_about``: a sentence holding a query word is a
question, never `high`). Read from labelfeat7.py's dumps (what the shipped engine gave
``labels.label`` for each top-10 hit, hybrid), scored as the eval's reliability table is: answerable
top hit `high`, precision of `high` among the top 10, unanswerable top hit `high`.
A rule is admissible on a set of training collections when every unanswerable set they host
(builtin's 15 and the off-topic queries, the ``-removed`` near misses: builtin <= 2 %, LoCoMo <= 5 %)
keeps its top hits `high` <= 2 % and, with builtin among them, builtin's answerable top hits are
`high` >= 50 %. Among the admissible: the most training collections whose `high` is judged relevant
>= 90 %, then the highest smallest precision, then the mean top-hit share (each capped at .55), then
the strictest (asking checked counts as stricter). Scored on all six, then leave-one-collection-out.
    python bench/relevance/labelfeat7.py ...   # once per collection, see its docstring
    python bench/relevance/labelrule7.py
"""
import itertools, os, pickle
import numpy as np
from kenning.retrieval import labels
from kenning.retrieval.text import query_tokens

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
NAMES = ["builtin", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]
REMOVED = {"builtin": ("builtin-removed", 0.02), "locomo-dev": ("locomo-dev-removed", 0.05)}
GRID = list(itertools.product((0.7, 0.75, 0.8, 9), (0.5, 0.55, 0.6, 0.62, 0.64, 0.65, 0.66, 0.68, 0.7, 0.75, 0.8),
                              (5, 6, 7, 99), (0.7, 0.75, 0.8, 0.85, 0.9, 9), (False, True)))
SIXTH = (0.75, 0.6, 6, 0.8, False)
SHIPPED = (labels.LEAD_COSINE, labels.LEAD, labels.LONG_QUERY_TERMS, labels.LONG_LEAD, True)


def load():
    return {n: pickle.load(open(f"{OUT}/labelfeat7-{n}.pkl", "rb"))
            for n in NAMES + [r for r, _ in REMOVED.values()] if os.path.exists(f"{OUT}/labelfeat7-{n}.pkl")}


def prepared(data):
    """Per collection, per query: its hits' label inputs and whether each asks about the query."""
    for rows in data.values():
        for q in rows.values():
            terms = list(dict.fromkeys(query_tokens(q["text"])))
            for h in q["hits"]:
                h["asks"] = labels.asks_about(terms, h["text"])
    return data


def rule_of(cosine_alone, lead, long_terms, long_lead, asks):
    def high(h):
        cos, share, n, s, top, cov, known, lead_ = h["label_args"][0]
        near = top <= 0 or s >= labels.NEAR_TOP * top
        if not (near and labels.vector_high(cos, cov, round(share * n), share, known)):
            return False
        out = (lead_ >= long_lead) if n >= long_terms else (cos >= cosine_alone or lead_ >= lead)
        return out and not (asks and h["asks"])
    return high


def score(rows, high):
    """(answerable top hit high, high precision in the top 10, high hits, unanswerable top hits high, unanswerable)."""
    ans = [q for q in rows.values() if q["answerable"] and q["hits"]]
    una = [q for q in rows.values() if not q["answerable"]]
    hh = [h["rel"] for q in ans for h in q["hits"] if high(h)]
    return (sum(high(q["hits"][0]) for q in ans) / len(ans) if ans else 0.0, sum(hh) / len(hh) if hh else 1.0,
            len(hh), sum(bool(q["hits"]) and high(q["hits"][0]) for q in una), len(una))


def choose(table, train, removed=None, strictness=None):
    """The rule admissible on ``train`` that ranks best (see the module docstring); ``removed`` maps a
    collection to its answers-removed dump and bound (default REMOVED), ``strictness`` a rule to how
    strict it is (default: this pass's thresholds summed, asking counted)."""
    removed = REMOVED if removed is None else removed
    strictness = strictness or (lambda rule: sum(x for x in rule[:4] if x < 9) + rule[4])
    best = None
    for rule, o in table.items():
        if any(o[n][3] > 0.02 * o[n][4] for n in train):
            continue
        if any(n in removed and o[removed[n][0]][3] > removed[n][1] * o[removed[n][0]][4] for n in train):
            continue
        if "builtin" in train and o["builtin"][0] < 0.5:
            continue
        prec = [o[n][1] for n in train]
        key = (sum(p >= 0.9 for p in prec), round(min(prec), 2), round(float(np.mean([min(o[n][0], 0.55) for n in train])), 3),
               strictness(rule))
        if best is None or key > best[0]:
            best = (key, rule)
    return best[1] if best else None


def line(o, n, removed=None):
    removed = REMOVED if removed is None else removed
    share, prec, nh, un, nu = o[n]
    gone = " | answers removed: top high %d of %d" % o[removed[n][0]][3:] if n in removed else ""
    return "%-14s top-high %5.1f %% | high precision %.3f (%d hits) | unanswerable top high %d of %d%s" % (
        n, 100 * share, prec, nh, un, nu, gone)


def report(table, names, shipped, line, choose):
    """The shipped rule, the rule chosen on every collection, then each chosen on the others and
    scored on the one left out (``line(o, name)`` prints one row, ``choose(table, train)`` picks)."""
    print("shipped", shipped)
    for n in names:
        print("  " + line(table[shipped], n))
    rule = choose(table, names)
    print("chosen on all:", rule)
    for n in names:
        print("  " + line(table[rule], n))
    print("leave-one-collection-out (chosen on the others, scored on the one left out)")
    for n in names:
        rule = choose(table, [m for m in names if m != n])
        print("  %s\n    %s" % (rule, line(table[rule], n) if rule else "no admissible rule"))


if __name__ == "__main__":
    data = prepared(load())
    table = {rule: {n: score(rows, rule_of(*rule)) for n, rows in data.items()} for rule in GRID}
    for title, rule in (("sixth pass " + str(SIXTH), SIXTH), ("shipped " + str(SHIPPED), SHIPPED)):
        print(title)
        for n in NAMES:
            print("  " + line(table[rule], n))
    print("chosen on all six:", choose(table, NAMES))
    print("leave-one-collection-out (chosen on five, scored on the sixth)")
    for n in NAMES:
        rule = choose(table, [m for m in NAMES if m != n])
        print("  %s\n    %s" % (rule, line(table[rule], n)))
