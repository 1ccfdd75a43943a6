"""configure(fusion="rrf") end to end: a hybrid search through the store then scores every hit by
reciprocal rank fusion of its legs' ranks (weights and k from the config), and the setting persists."""

import pytest

import kenning


@pytest.mark.embeddings  # the vector leg is one of the fused rankings
def test_rrf_setting_scores_hybrid_hits_by_their_legs_ranks(tmp_path):
    path = tmp_path / "s"
    with kenning.open_store(path) as s:
        for text in ("zebra quagga herd crossing", "zebra quagga okapi giraffe herd crossing river plain",
                     "zebra stripes only", "quagga extinct subspecies note"):
            s.write(text, scopes=["zoo"])
        evidence = {h["id"]: h["score"] for h in s.search("zebra quagga", mode="hybrid").to_dict()["hits"]}
        s.configure(fusion="rrf")
    with kenning.open_store(path) as s:  # a fresh open reads the persisted setting
        config = s.config
        assert config.fusion == "rrf"
        hits = s.search("zebra quagga", mode="hybrid").to_dict()["hits"]
    assert len(hits) == 4
    for hit in hits:
        weights = config.weights or {}
        expected = sum(weights.get(leg, 1.0) / (config.rrf_k + leg_hit["rank"]) for leg, leg_hit in hit["legs"].items())
        assert hit["score"] == pytest.approx(expected, abs=1e-6), hit["legs"]
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert {h["id"]: h["score"] for h in hits} != evidence  # the setting changed the fusion
