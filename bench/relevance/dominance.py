"""How far any `high` rule that reads the evidence monotonically could go: for each memory set, the
right top hits that are not `high` and, among them, those the top hit of one of the set's own
unanswerable questions matches or beats on every figure the label reads (cosine, share of the
query's terms, their IDF coverage, the fused lead over the second hit, the cosine lead). A rule
that never gets less sure as evidence grows cannot make such a hit `high` without making that
unanswerable question's top hit `high` too. Also: right top hits no unanswerable's top hit
dominates, as a share of the answerable questions (the ceiling of such a rule on these figures).
Read from labelfeat7.py's dumps (hybrid):
    for n in builtin memval memval2 memval3; do python bench/relevance/labelfeat7.py $n; done
    python bench/relevance/dominance.py
"""
import os, pickle

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")


def evidence(hit):
    cos, share, _, _, _, coverage, _, lead, _, _, cosine_lead = hit["label_args"][0][:11]
    return (cos or 0.0, share, coverage, lead, cosine_lead)


def dominated(a, by):
    return any(all(x >= y for x, y in zip(b, a)) for b in by)


def main():
    for name in ["builtin", "memval", "memval2", "memval3"]:
        rows = pickle.load(open(f"{OUT}/labelfeat7-{name}.pkl", "rb"))
        tops = [(q, q["hits"][0]) for q in rows.values() if q["hits"]]
        unanswerable = [evidence(h) for q, h in tops if not q["answerable"]]
        answerable = [(q, h) for q, h in tops if q["answerable"]]
        right = [h for q, h in answerable if h["rel"]]
        high = sum(h["label"] == "high" for _, h in answerable)
        waiting = [h for h in right if h["label"] != "high"]
        blocked = [h for h in waiting if dominated(evidence(h), unanswerable)]
        free = [h for h in right if not dominated(evidence(h), unanswerable)]
        print(f"{name}: {len(answerable)} answerable, top high {high / len(answerable):.1%}; right but not high "
              f"{len(waiting)}, of them dominated by an unanswerable's top hit {len(blocked)} (the rest could add "
              f"{(len(waiting) - len(blocked)) / len(answerable):.1%}); right tops no unanswerable dominates "
              f"{len(free) / len(answerable):.1%}")


if __name__ == "__main__":
    main()
