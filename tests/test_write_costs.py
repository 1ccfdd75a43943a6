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


def test_remembered_document_frequencies_follow_this_view_and_other_writers(tmp_path):
    """doc_freqs remembers the stored counts it read; its own writes add to them and another
    connection's write empties them, so it always answers what a fresh read of the store would."""
    with kenning.open_store(tmp_path / "s") as store, kenning.open_store(tmp_path / "s") as other:
        store.import_records([{"content": f"ledger row {i} for the {'red' if i % 2 else 'blue'} squad",
                               "scopes": ["t"]} for i in range(30)])
        terms = ["ledger", "red", "blue", "squad", "green"]
        lex = store.lexicon
        first = lex.refresh().doc_freqs(terms)
        assert first == {"ledger": 30, "red": 15, "blue": 15, "squad": 30, "green": 0}
        store.write("the green squad keeps the ledger in red ink", scopes=["t"])
        lex._cache.clear()
        assert lex.refresh().doc_freqs(terms) == {"ledger": 31, "red": 16, "blue": 15, "squad": 31, "green": 1}
        other.write("a blue ledger for the green squad, kept apart", scopes=["t"], force=True)
        for view in (store, other):
            lex = view.lexicon
            lex._cache.clear()  # no cached postings: the remembered or stored counts answer
            got = lex.refresh().doc_freqs(terms)
            with kenning.open_store(tmp_path / "s") as fresh:
                assert got == fresh.lexicon.refresh().doc_freqs(terms)
            assert got == {"ledger": 32, "red": 16, "blue": 16, "squad": 32, "green": 2}


def test_a_low_curation_pressure_is_measured_once_for_every_session(tmp_path, monkeypatch):
    scans = []
    real = health.pressure_counts
    monkeypatch.setattr(health, "pressure_counts", lambda *a, **k: (scans.append(1), real(*a, **k))[1])
    texts = ["the ledger service stores invoices in postgres", "alice reviews every pull request on fridays",
             "the staging cluster has three nodes behind nginx"]
    for text in texts:  # three CLI-like sessions, one write each
        with kenning.open_store(tmp_path / "s") as store:
            assert store.write(text, scopes=["t"], acknowledge_transient=True).status == "committed"
    assert len(scans) == 1


def test_a_high_curation_pressure_is_measured_once_and_still_hinted_in_every_session(tmp_path, monkeypatch):
    from datetime import datetime, timedelta, timezone

    now = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    clock = lambda: now[0]  # noqa: E731
    scans = []
    real = health.pressure_counts
    monkeypatch.setattr(health, "pressure_counts", lambda *a, **k: (scans.append(1), real(*a, **k))[1])
    with kenning.open_store(tmp_path / "s", clock=clock) as store:
        store.import_records([{"content": f"legacy subsystem {n} used codename vault{n}", "scopes": ["t"]}
                              for n in range(health.CURATION_HINT_THRESHOLD)])
    now[0] += timedelta(days=91)  # never retrieved and older than DEAD_DAYS: dead weight
    scans.clear()
    hints = []
    for text in ["the kite festival is held on the coast", "kites need steady wind above ten knots",
                 "kite lines are rated in kilograms"]:  # three CLI-like sessions, one write each
        with kenning.open_store(tmp_path / "s", clock=clock) as store:
            hints.append(store.write(text, scopes=["t"], acknowledge_transient=True).curation_hint)
    assert [h["counts"]["dead_weight"] for h in hints] == [health.CURATION_HINT_THRESHOLD] * 3
    assert len(scans) == 1  # the first session measured; the others trusted its counts
    now[0] += timedelta(minutes=11)
    with kenning.open_store(tmp_path / "s", clock=clock) as store:
        assert store.write("kite tails steady the flight", scopes=["t"]).curation_hint is not None
    assert len(scans) == 2  # older than CURATION_RECHECK: measured again


def test_a_low_pressure_measured_in_the_clocks_future_is_measured_again(tmp_path):
    """A long-lived session (an MCP server) trusted its own low measurement while ``now`` minus its time was
    under CURATION_RECHECK, and with the clock set back that difference is negative: for as long as the
    clock was set back, plus ten minutes, no write measured again, whatever another process added."""
    from datetime import datetime, timedelta, timezone

    now = [datetime(2026, 6, 1, tzinfo=timezone.utc)]
    clock = lambda: now[0]  # noqa: E731
    with kenning.open_store(tmp_path / "s", clock=clock) as server:
        assert server.write("the kite festival is held on the coast", scopes=["t"]).curation_hint is None
        old = (now[0] - timedelta(days=health.DEAD_DAYS + 10)).isoformat()
        with kenning.open_store(tmp_path / "s", clock=clock) as other:  # another process: a backlog of dead weight
            other.import_records([{"content": f"legacy subsystem {n} used codename vault{n}", "scopes": ["t"],
                                   "created": old} for n in range(health.CURATION_HINT_THRESHOLD)])
        now[0] -= timedelta(minutes=30)  # the clock is set back
        hint = server.write("kites need steady wind above ten knots", scopes=["t"]).curation_hint
        assert hint is not None and hint["counts"]["dead_weight"] == health.CURATION_HINT_THRESHOLD


def test_the_hint_counts_equal_the_full_scan_after_a_mixed_workload(tmp_path):
    """What a write's hint weighs (dead, drifted, cold endorsements) without reading the store
    equals what the full curation scan counts, for several views, after imports, writes, searches,
    shows, outcomes, removals and another process's writes, over two months of clock."""
    import os
    import subprocess
    import sys
    from datetime import datetime, timedelta, timezone

    from kenning.memory.scopes import View

    now = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    clock = lambda: now[0]  # noqa: E731
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "src" / "kept.py").write_text("x = 1\n")
    (repo / "src" / "gone.py").write_text("y = 2\n")

    def check(store):
        s = store._s
        for view in (s.view(True), s.view(False), View(disabled=frozenset({"b"}))):
            full, _ = health.curation_counts(s.db, s.config.verification_stale_days, view, now[0])
            fast = health.pressure_counts(s.db, view, now[0])
            assert fast == {k: full[k] for k in fast}, view
        return full

    with kenning.open_store(tmp_path / "s", clock=clock, cwd=repo) as store:
        store.import_records([{"content": f"legacy subsystem {n} keeps vault{n}", "scopes": ["a" if n % 2 else "b"],
                               **({"category": "ambient"} if n % 5 == 0 else {})} for n in range(30)])
        ids = [store.write(f"module {n} lives in src/{'gone' if n % 2 else 'kept'}.py and builds kite{n}",
                           scopes=["a"], acknowledge_transient=True).id for n in range(6)]
        check(store)
        now[0] += timedelta(days=40)
        for n in range(7):  # retrieved often, never applied: cold endorsements
            store.search("legacy subsystem vault3 vault7", mode="bm25")
        store.show(ids[0])
        store.record_use([ids[0]], "applied")
        (repo / "src" / "gone.py").unlink()  # the odd modules drift
        store.remove(ids[2], reason="test")
        check(store)
        child = (f"import kenning\nwith kenning.open_store({str(tmp_path / 's')!r}) as o:\n"
                 "    o.import_records([{'content': f'another process note {n}', 'scopes': ['b']} for n in range(12)])\n"
                 "    o.search('another process note', mode='bm25')\n")
        subprocess.run([sys.executable, "-c", child], check=True, env=os.environ.copy())
        now[0] += timedelta(days=60)  # past DEAD_DAYS for the first memories
        counts = check(store)
        assert counts["dead"] > 0 and counts["drifted"] > 0 and counts["cold_endorsement_memories"] > 0
