"""The rank-only path evaluation times (Store.rank(explain=False)): the same ids, order and scores as
the explained ranking, over more hits than one read chunk holds, with relevance labels on the top ten only."""

import kenning


def test_rank_only_gives_the_explained_ranking_without_the_reading(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        s.import_records([{"content": f"kiwi orchard row {i} needs {'water ' * (1 + i % 7)}", "scopes": ["farm"]}
                          for i in range(620)])
        explained = s.rank("kiwi water", mode="bm25", depth=600)
        bare = s.rank("kiwi water", mode="bm25", depth=600, explain=False)
    assert len(explained.hits) == len(bare.hits) == 600  # more than one 500-key read chunk
    assert [h.id for h in bare.hits] == [h.id for h in explained.hits]
    assert [h.score for h in bare.hits] == [h.score for h in explained.hits]
    assert [h.relevance for h in bare.hits[:10]] == [h.relevance for h in explained.hits[:10]]
    assert all(h.relevance is None for h in bare.hits[10:])
    assert bare.mode == "bm25" and bare.legs_run == ["bm25"] and bare.degraded is None
