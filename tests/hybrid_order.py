"""Five memories whose hybrid (evidence fusion) order is known by construction, shared by the library,
CLI and MCP tests. Evidence scores a candidate ``alpha * lexical + (1 - alpha) * cos'`` with
``lexical = coverage**power * ((1 - share) + share * bm25 / best bm25)``:

- ``exact`` is the query itself: every query term (coverage 1), the best BM25 score and nearest in
  meaning, so it scores at least alpha.
- ``padded`` holds every query term among unrelated words: coverage 1 too, so it scores at least
  alpha * (1 - share) (a long text: BM25 ranks it below ``exact``), and it is further in meaning.
- ``three`` holds three of the six query terms, on the query's topic.
- ``paraphrase`` says the same as the query without one of its words: only the vector leg finds it,
  so it scores at most 1 - alpha. It still beats ``one``, which RRF would rank above it (two legs
  against one): this pair tells evidence fusion from rank fusion.
- ``one`` shares one word with the query and nothing of its meaning.
- ``unrelated`` shares neither and is no hit at all.
"""

from kenning.retrieval.fusion import BM25_SHARE

QUERY = "deploy pipeline rotates database credentials nightly"
MEMORIES = {
    "exact": "the deploy pipeline rotates database credentials nightly",
    "padded": "nightly the database team met; deploy talk, credentials audit, pipeline budget, rotates seating, "
              "lunch menu and parking",
    "three": "database credentials rotate in the vault",
    "paraphrase": "after dark the release automation swaps the passwords of the SQL server",
    "one": "the garden pipeline of tomato seedlings",
    "unrelated": "ripe figs and honey for breakfast",  # cosine -0.015 to the query, under any floor
}
ORDER = ["exact", "padded", "three", "paraphrase", "one"]


def check(hits: list[dict], names: dict[str, str], alpha: float) -> None:
    """The hits (as JSON) come in ORDER, with the score bounds evidence fusion promises."""
    assert [names[h["id"]] for h in hits] == ORDER, [(names[h["id"]], h["score"], h["legs"]) for h in hits]
    by_name = {names[h["id"]]: h for h in hits}
    assert alpha <= by_name["exact"]["score"] <= 1.0  # every query term and the best BM25 score
    assert alpha * (1 - BM25_SHARE) <= by_name["padded"]["score"] <= 1.0  # every query term
    paraphrase = by_name["paraphrase"]
    assert set(paraphrase["legs"]) == {"vector"} and paraphrase["matched_leg"] == "semantic"
    assert 0.0 < paraphrase["score"] <= 1.0 - alpha
    assert all(set(by_name[n]["legs"]) == {"keyword", "bm25", "vector"} for n in ("exact", "padded", "three", "one"))
