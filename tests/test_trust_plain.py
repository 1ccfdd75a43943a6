"""A memory that cites nothing checkable (no origin, claims or paths) is annotated from a remembered
report; what a hit says must be what the full assessment says, in every verification state."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import kenning
from kenning.memory import trust
from kenning.memory.staleness import DriftCache
from clocks import Clock

START = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def test_plain_hits_carry_exactly_the_full_assessment(tmp_path):
    clock = Clock(START)
    with kenning.open_store(tmp_path / "s", clock=clock) as store:
        ids = store.import_records([
            {"content": "the billing service bills monthly", "scopes": ["t"]},
            {"content": "the billing service is documented in docs/billing.md", "scopes": ["t"]},  # cites a path
            {"content": "billing invoices go out on the first", "scopes": ["t"]},
        ])
        store.verify(ids[2])
        seen = set()
        for days, stale_days in ((0, 90), (29, 30), (31, 30), (200, 90), (200, 365)):
            clock.now = START + timedelta(days=days)
            store.configure(persist=False, verification_stale_days=stale_days)
            for _ in range(2):  # the second search is served from the remembered report
                hits = store.search("billing", mode="bm25", limit=10, record=False).hits
                assert {h.id for h in hits} == set(ids)
                for hit in hits:
                    memory = store.get(hit.id)
                    full = trust.staleness(memory, clock.now, stale_days, DriftCache())
                    assert hit.staleness_verdict == full.verdict
                    assert hit.trust == full.to_hit_fields()
                    seen.add((hit.staleness_verdict, hit.trust["verification"]["status"]))
        assert {("fresh", "never"), ("spot_check_recommended", "never"), ("fresh", "fresh"),
                ("spot_check_recommended", "stale")} <= seen  # the states above did differ


def test_remembered_negative_outcomes_follow_every_new_outcome(tmp_path):
    clock = Clock(START)
    home = tmp_path / "s"
    with kenning.open_store(home, clock=clock) as a, kenning.open_store(home, clock=clock) as b:
        [first, second] = a.import_records([{"content": "the billing service bills monthly", "scopes": ["t"]},
                                            {"content": "billing invoices go out on the first", "scopes": ["t"]}])

        def negatives(store):
            return {h.id: [o["outcome"] for o in h.trust.get("recent_negative_outcomes", [])]
                    for h in store.search("billing", mode="bm25", record=False).hits}

        for _ in range(3):  # automatic applies pile up; nothing negative yet
            a.search("billing", mode="bm25")
        assert negatives(a) == {first: [], second: []}
        clock.now = START + timedelta(hours=1)  # an outcome at the write's own instant counts as answered
        b.record_use([first], "contradicted", note="it bills weekly")  # another connection
        assert negatives(a) == {first: ["contradicted"], second: []}
        a.record_use([second], "ignored")  # this store object itself
        assert negatives(a) == {first: ["contradicted"], second: ["ignored"]}
        clock.now = START + timedelta(days=31, hours=2)  # out of the 30-day window
        assert negatives(a) == {first: [], second: []}


def test_negative_outcomes_survive_the_remembered_set_filling_up(tmp_path, monkeypatch):
    # the memo used to be cleared after deciding which hits to read, so a search mixing remembered
    # and new hits once it passed its size failed with a KeyError (seen at limit 50 on a 20k store)
    monkeypatch.setattr(trust, "NEGATIVES_REMEMBERED", 3)
    with kenning.open_store(tmp_path / "s") as store:
        ids = store.import_records([{"content": f"billing note number {i}", "scopes": ["t"]} for i in range(6)])
        store.record_use([ids[0]], "ignored")
        assert len(store.search("billing", mode="bm25", limit=4, record=False).hits) == 4  # four remembered
        hits = store.search("billing", mode="bm25", limit=6, record=False).hits  # past the size: cleared
        assert {h.id for h in hits} == set(ids)
        ignored = [h.id for h in hits if h.trust.get("recent_negative_outcomes")]
        assert ignored == [ids[0]]
