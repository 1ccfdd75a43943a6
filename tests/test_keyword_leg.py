"""The keyword leg through the store: the verbatim-phrase bonus, and the recency nudge (between equal
matches the recently updated memory ranks first, by at most RECENCY_MAX, halving every
RECENCY_HALF_LIFE_DAYS)."""

import datetime as dt

import pytest

from kenning.retrieval.keyword import PHRASE_BONUS, RECENCY_HALF_LIFE_DAYS, RECENCY_MAX


def test_recency_breaks_a_tie_between_equal_matches(store):
    long_ago = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=300)).isoformat()
    # the old memory has the smaller key, so without the nudge the tie would go to it
    store.import_records([{"id": "old1", "content": "kiwi deploy notes alpha", "created": long_ago, "updated": long_ago},
                          {"id": "new1", "content": "kiwi deploy notes gamma"}])
    hits = store.search("kiwi deploy", mode="keyword").to_dict()["hits"]
    assert [h["id"] for h in hits] == ["new1", "old1"]
    new, old = (h["legs"]["keyword"]["score"] for h in hits)
    assert new - old == pytest.approx(RECENCY_MAX * (1 - 0.5 ** (300 / RECENCY_HALF_LIFE_DAYS)), abs=2e-6)
    assert new - old <= RECENCY_MAX


def test_the_verbatim_phrase_earns_the_bonus(store):
    # the phrase holder is written first (smaller key, older): only the bonus can put it first
    verbatim = store.write("Rotate the Kiwi  Deploy keys monthly", scopes=["ops"]).id
    scattered = store.write("deploy keys for kiwi rotate monthly", scopes=["ops"], force=True).id
    hits = store.search("kiwi deploy", mode="keyword").to_dict()["hits"]
    assert [h["id"] for h in hits] == [verbatim, scattered]
    gap = hits[0]["legs"]["keyword"]["score"] - hits[1]["legs"]["keyword"]["score"]
    assert gap == pytest.approx(PHRASE_BONUS, abs=1e-3)


@pytest.mark.parametrize("quoted", ['"kiwi deploy"', "\u201ckiwi deploy\u201d", "'kiwi deploy'", "\u00abkiwi deploy\u00bb"])
def test_a_phrase_written_in_quotes_earns_the_bonus_its_words_earn(store, quoted):
    """A user quotes a phrase to ask for exactly it; the quotes themselves are in no text, so they
    are not part of the phrase the leg looks for."""
    verbatim = store.write("Rotate the Kiwi  Deploy keys monthly", scopes=["ops"]).id
    scattered = store.write("deploy keys for kiwi rotate monthly", scopes=["ops"], force=True).id
    hits = store.search(quoted, mode="keyword").to_dict()["hits"]
    assert [h["id"] for h in hits] == [verbatim, scattered]
    gap = hits[0]["legs"]["keyword"]["score"] - hits[1]["legs"]["keyword"]["score"]
    assert gap == pytest.approx(PHRASE_BONUS, abs=1e-3)
