"""The `high` rule, fourteenth pass: two branches that skip the standing-out test.

- every word: a hit holding every distinct query term (>= 2) at cosine >= ``every_cos`` that leads
  the second by ``every_lead`` (``every_long``: also for a query of ``labels.LONG_QUERY_TERMS`` or
  more, which otherwise needs ``labels.LONG_LEAD``);
- paraphrase: a hit holding none of the query's terms at cosine >= ``para_cos`` (``para_long``: any
  query length), ``para_names``: not when the query writes a word as a name
  (``labels.names_something``), and ``para_lift``: a cosine at which the ``medium`` ceiling of an
  unknown name is lifted for such a hit (9: never).

Read from labelfeat7.py's dumps of the engine before the change (what ``labels.label`` was given for
each top-10 hit, hybrid), scored as labelrule7.py scores, plus each collection's *own* unanswerable
questions on their own (builtin's 15, memval's 60): a rule letting one of them through is not
admissible, whatever the pooled off-topic share. Chosen as labelrule7.py chooses (fewer branches
and higher thresholds count as stricter); then leave-one-collection-out.
    python bench/relevance/labelfeat7.py builtin --foreign ../shared/eval-data/locomo-dev   # and the rest:
    #   builtin --removed; memval --foreign .../locomo-dev; memval --removed; .../med --foreign .../cranfield;
    #   .../cranfield --foreign .../med; .../npl --foreign .../med; .../locomo-dev --foreign .../npl --group-sep :;
    #   .../locomo-dev --removed --group-sep :; .../scifact-train --foreign .../locomo-dev
    python bench/relevance/labelrule9.py [--short-paraphrase]
"""
import itertools, os, pickle
from kenning.retrieval import labels as L
from kenning.retrieval.text import search_tokens, written_as_names
import labelrule7

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
NAMES = ["builtin", "memval", "med", "cranfield", "npl", "locomo-dev", "scifact-train"]
REMOVED = {"builtin": ("builtin-removed", 0.02), "memval": ("memval-removed", 0.05),
           "locomo-dev": ("locomo-dev-removed", 0.05)}
OFF = 9
GRID = [g for g in itertools.product((.6, .65, .7, .75, .8, OFF), (.3, .4, .5, .6), (False, True),
                                     (.4, .43, .45, .47, .5, .55, OFF), (False, True), (.5, .55, .6, OFF), (False, True))
        if not (g[0] == OFF and (g[1] != .3 or g[2])) and not (g[3] == OFF and (g[4] or g[5] != OFF or g[6]))]
SHIPPED = (OFF, .3, False, OFF, False, OFF, False)


def rule_of(every_cos, every_lead, every_long, para_cos, para_long, para_lift, para_names):
    def high(h):
        cos, share, n, s, top, cov, known, lead, ceil = h["label_args"][0][:9]
        if h["asks"] or not (top <= 0 or s >= L.NEAR_TOP * top):
            return False
        paraphrase = (cos is not None and share == 0 and cos >= para_cos and (para_long or n < L.LONG_QUERY_TERMS)
                      and not (para_names and h["names"]))
        if ceil == "low" or (ceil == "medium" and not (paraphrase and cos >= para_lift)):
            return False
        if cos is None:
            return L.vectorless_high(share, n)
        return ((L.vector_high(cos, cov, round(share * n), share, known) and L.stands_out(cos, lead, n))
                or (share >= 1.0 and n >= 2 and cos >= every_cos and lead >= every_lead
                    and (every_long or n < L.LONG_QUERY_TERMS))
                or paraphrase)
    return high


def score(rows, high):
    """labelrule7.score's five figures, then the own unanswerable questions' top hits high and their count."""
    ans = [q for q in rows.values() if q["answerable"] and q["hits"]]
    una = [q for q in rows.values() if not q["answerable"]]
    own = [q for q in una if not q["foreign"]]
    hh = [h["rel"] for q in ans for h in q["hits"] if high(h)]
    top = lambda qs: sum(bool(q["hits"]) and high(q["hits"][0]) for q in qs)  # noqa: E731
    return (sum(high(q["hits"][0]) for q in ans) / len(ans) if ans else 0.0, sum(hh) / len(hh) if hh else 1.0,
            len(hh), top(una), len(una), top(own), len(own))


def strictness(rule):
    every_cos, every_lead, every_long, para_cos, para_long, para_lift, para_names = rule
    return ((every_cos == OFF) + (para_cos == OFF) + (para_lift == OFF), para_names - every_long - para_long,
            sum(x for x in (every_cos, every_lead, para_cos, para_lift) if x < OFF))


def choose(table, train):
    fine = {r: o for r, o in table.items() if all(o[n][5] <= 0.02 * o[n][6] for n in train)}
    return labelrule7.choose(fine, train, REMOVED, strictness)


def line(o, n):
    share, prec, nh, un, nu, own, nown = o[n]
    gone = " | answers removed: top high %d of %d" % o[REMOVED[n][0]][3:5] if n in REMOVED else ""
    return "%-14s top-high %5.1f %% | high precision %.3f (%d hits) | unanswerable top high %d of %d (own %d of %d)%s" % (
        n, 100 * share, prec, nh, un, nu, own, nown, gone)


def load():
    data = labelrule7.prepared({n: pickle.load(open(f"{OUT}/labelfeat7-{n}.pkl", "rb"))
                                for n in NAMES + [r for r, _ in REMOVED.values()]
                                if os.path.exists(f"{OUT}/labelfeat7-{n}.pkl")})
    for rows in data.values():
        for q in rows.values():
            names = bool(written_as_names(q["text"], search_tokens(q["text"])))
            for h in q["hits"]:
                h["names"] = names
    return data


if __name__ == "__main__":
    import sys
    if "--short-paraphrase" in sys.argv:  # as shipped: the paraphrase branch for short queries only
        GRID = [g for g in GRID if not g[4]]
    data = load()
    names = [n for n in NAMES if n in data]
    table = {rule: {n: score(rows, rule_of(*rule)) for n, rows in data.items()} for rule in GRID}
    labelrule7.report(table, names, SHIPPED, line, choose)
