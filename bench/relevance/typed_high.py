"""`high` for a hit that misses only attribute words whose value it holds (``answer_types``), replayed
on labelfeat7.py's dumps (hybrid): a short query's best hit, not yet `high`, holding some of the
query's terms, every missing one an attribute word ("version", "address", "budget") whose kind of
value the hit holds, at cosine >= c and a fused lead >= l. Per collection: answerable top hits newly
`high` right / wrong, the collection's unanswerable questions (u) and another collection's (f)
newly `high`, answers-removed near misses newly `high` (r); then leave-one-collection-out. The
replay reads the query's tokens as written: a misspelt word the engine respells ("foler path" ->
folder) counts here as a missing word that names no attribute, so the engine gains more than this
replay shows (memval +6 against +3 at c .5).
    python bench/relevance/labelfeat7.py builtin --foreign .../locomo-dev   # and the rest, as labelrule9.py
    python bench/relevance/typed_high.py [-v]
    python bench/relevance/labelfeat7.py builtin --foreign .../locomo-dev --mode bm25   # and the rest
    python bench/relevance/typed_high.py --bm25   # without the vector leg: the BM25 lead >= labels.LEXICAL_LEAD
"""
import itertools, os, sys
from kenning.retrieval import answer_types, labels, text
from labelfeat7 import best_hits

OUT = os.environ.get("KENNING_RELEVANCE_OUT", "/tmp/kenning-relevance")
NAMES = ["builtin", "memval", "memval2", "memval3", "med", "cranfield", "npl", "locomo-dev"]


def rows(path, lexical=False):
    out = []
    for q, h in best_hits(path):
        if (h["label_args"][0][0] is None) != lexical:
            continue
        cos, share, n, _, _, _, _, lead, ceil = h["label_args"][0][:9]
        if lexical:  # the label's lead without vectors: on BM25's own scores (engine.lead)
            second = q["hits"][1]["legs"].get("bm25", (0, 0.0))[1] if len(q["hits"]) > 1 else None
            cos, lead = 1.0, labels.lead_of(h["legs"].get("bm25", (0, 0.0))[1], second)
        terms = list(dict.fromkeys(text.search_tokens(q["text"])))
        held = set(text.tokenize(h["text"]))
        missing = [t for t in terms if t not in held]
        kind = "removed" if "-removed" in path else "foreign" if q["foreign"] else "ans" if q["answerable"] else "unans"
        out.append(dict(q=q["text"], t=h["text"], kind=kind, rel=h["rel"], label=h["label"], cos=cos, n=n, share=share,
                        lead=lead, ceil=ceil, typed=0 < len(missing) < len(terms) and answer_types.answers_missing(missing, h["text"]),
                        asks=labels.asks_about([t for t in terms if t in held], h["text"])))
    return out


def newly_high(x, c, l):
    return (x["label"] != "high" and x["ceil"] == "high" and x["n"] < labels.LONG_QUERY_TERMS and x["typed"]
            and not x["asks"] and x["cos"] >= c and x["lead"] >= l)


def cells(data, c, l):
    out = {}
    for name, (own, removed) in data.items():
        new = [x for x in own if newly_high(x, c, l)]
        answerable = [x for x in own if x["kind"] == "ans"]
        high = sum(x["label"] == "high" for x in answerable)
        out[name] = dict(right=sum(x["kind"] == "ans" and x["rel"] for x in new), wrong=sum(x["kind"] == "ans" and not x["rel"] for x in new),
                         u=sum(x["kind"] == "unans" for x in new), f=sum(x["kind"] == "foreign" for x in new),
                         r=sum(newly_high(x, c, l) for x in removed), share=(high + sum(x["kind"] == "ans" for x in new)) / max(1, len(answerable)),
                         new=new + [x for x in removed if newly_high(x, c, l)])
    return out


def admissible(cell):
    return cell["u"] == 0 and cell["wrong"] + cell["r"] <= max(1, cell["right"] // 4)


if __name__ == "__main__":
    lexical = "--bm25" in sys.argv
    tail = "-bm25.pkl" if lexical else ".pkl"
    data = {n: (rows(f"{OUT}/labelfeat7-{n}{tail}", lexical), rows(f"{OUT}/labelfeat7-{n}-removed{tail}", lexical)) for n in NAMES}
    grid = ([(1.0, labels.LEXICAL_LEAD)] if lexical else
            list(itertools.product((.4, .45, .5, .55, .6, .65, .7), (0, .02, .05, .1, .2))))
    results = {g: cells(data, *g) for g in grid}
    for g, res in results.items():
        print(*g, " | ".join(f"{n} +{x['right']}/-{x['wrong']} u{x['u']} f{x['f']} r{x['r']} {100 * x['share']:.1f}%"
                             for n, x in res.items() if x["new"]))
    if "-v" in sys.argv:
        for n, x in results[grid[0] if lexical else (.5, .02)].items():
            for y in x["new"]:
                print("   ", n, y["kind"], "right" if y["rel"] else "wrong", f"{y['cos']:.2f} {y['lead']:.2f}", y["q"][:50], "->", y["t"][:60])
    # leave one collection out: the loosest setting admissible on every other collection (no
    # unanswerable, wrong and near misses at most a quarter of the gain), scored on the one left out
    for out in ([] if lexical else NAMES):
        ok = [g for g in grid if all(admissible(results[g][n]) for n in NAMES if n != out)]
        pick = max(ok, key=lambda g: sum(results[g][n]["right"] for n in NAMES if n != out))
        x = results[pick][out]
        print(f"left out {out:10s} chosen {pick}: +{x['right']}/-{x['wrong']} u{x['u']} f{x['f']} r{x['r']} {100 * x['share']:.1f}%")
