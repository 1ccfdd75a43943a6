"""The vector leg's best hit first when it stands out, fifteenth pass: for a query of at most
``max_terms`` distinct terms whose vector leg's best cosine leads its second by ``delta`` or more
(and whose best holds at least ``min_coverage`` of the query's IDF weight), that hit ranks first in
the hybrid list. Replayed on fusecap.py's captures; margins over the better mode (as spread.py),
leave-one-collection-out, and how many queries each setting changes (wins / losses in nDCG@10).
    python bench/relevance/vector_first.py
"""
import itertools

from kenning.retrieval.text import search_tokens
from spread import NAMES, better_mode, fuse, load, ndcg10

GRID = [None] + list(itertools.product((.04, .05, .06, .07, .08, .1), (0, .1, .2, .3, .4), (4, 5, 6, 8, 10, 99)))


def first(row, ranked, terms, setting):
    if setting is None or row["rankings"] is None:
        return ranked
    delta, min_coverage, max_terms = setting
    listed = row["rankings"].get("vector", [])
    if len(listed) < 2 or not ranked or terms > max_terms:
        return ranked
    (top, best), (_, second) = listed[0], listed[1]
    if best - second < delta or row["coverage"].get(top, 0) < min_coverage or ranked[0] == top:
        return ranked
    return [top] + [k for k in ranked if k != top]


if __name__ == "__main__":
    caps = {n: load(n) for n in NAMES}
    best = {n: better_mode(n) for n in NAMES}
    shipped = {n: {q: fuse(r) if r["rankings"] is not None else r["shipped"] for q, r in c["rows"].items()} for n, c in caps.items()}
    terms = {n: {q: len(set(search_tokens(c["texts"][q]))) for q in c["rows"]} for n, c in caps.items()}
    table, moved = {}, {}
    for setting in GRID:
        table[setting], moved[setting] = {}, {}
        for n, cap in caps.items():
            values, won, lost = [], 0, 0
            for q, row in cap["rows"].items():
                judged = cap["qrels"].get(q)
                if not judged:
                    continue
                before = ndcg10(shipped[n][q], judged)
                after = ndcg10(first(row, shipped[n][q], terms[n][q], setting), judged)
                if after is None:
                    continue
                values.append(after)
                won, lost = won + (after > before + 1e-9), lost + (after < before - 1e-9)
            table[setting][n], moved[setting][n] = sum(values) / len(values) - best[n], (won, lost)

    def pick(train):
        return max(GRID, key=lambda g: (round(min(table[g][n] for n in train), 4), round(sum(table[g][n] for n in train), 4)))

    for setting in [None] + sorted(GRID[1:], key=lambda g: -min(table[g].values()))[:8]:
        print(setting or "shipped", f"smallest {min(table[setting].values()):+.4f}",
              " ".join(f"{n[:7]} {table[setting][n]:+.4f} ({w}+/{l}-)" for n, (w, l) in moved[setting].items()))
    worst = min(table[pick([n for n in NAMES if n != out])][out] for out in NAMES)
    print(f"leave-one-collection-out worst {worst:+.4f}, shipped {min(table[None].values()):+.4f}")
