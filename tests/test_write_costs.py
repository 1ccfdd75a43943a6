"""What keeps a write from growing with the store: the duplicate probe ranks its terms without reading
posting lists, and the curation scan runs once per ten minutes per view, not once per session."""

from __future__ import annotations

import kenning
from kenning.memory import health


def test_document_frequencies_come_from_stored_lengths_and_match_the_postings(tmp_path):
    with kenning.open_store(tmp_path / "s") as store:
        store.import_records([{"content": f"billing note {i} for the {'red' if i % 3 else 'blue'} team",
                               "scopes": ["t"]} for i in range(40)])
        store.write("the billing team meets on the blue floor", scopes=["t"])  # a delta posting too
        lex = store.lexicon.refresh()
        terms = ["bill", "blue", "red", "team", "absent"]
        expected = {t: int(lex.postings([t])[t][0].size) for t in terms}
        fresh = kenning.open_store(tmp_path / "s")  # nothing cached: the stored lengths answer
        assert fresh.lexicon.refresh().doc_freqs(terms) == expected
        assert lex.doc_freqs(terms) == expected  # cached postings answer
        fresh.close()


def test_a_low_curation_pressure_is_measured_once_for_every_session(tmp_path, monkeypatch):
    scans = []
    real = health.curation_counts
    monkeypatch.setattr(health, "curation_counts", lambda *a, **k: (scans.append(1), real(*a, **k))[1])
    texts = ["the ledger service stores invoices in postgres", "alice reviews every pull request on fridays",
             "the staging cluster has three nodes behind nginx"]
    for text in texts:  # three CLI-like sessions, one write each
        with kenning.open_store(tmp_path / "s") as store:
            assert store.write(text, scopes=["t"], acknowledge_transient=True).status == "committed"
    assert len(scans) == 1
