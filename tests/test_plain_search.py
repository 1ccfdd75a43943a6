"""A search answered as plain data (memory/reads.py ``search_plain``, store/plain.py) says exactly what
``Store.search`` says, loads no pydantic, and hands every record or setting it cannot read the same
way back to the models (None) before logging anything."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

import kenning
from kenning.memory import reads
from kenning.memory.session import Session
from kenning.store.models import Memory, StoreConfig
from kenning.store.plain import CONFIG_DEFAULTS, MEMORY_FIELDS, NotPlain, plain_memory
from clocks import Clock

START = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def test_the_plain_field_lists_are_the_models():
    assert MEMORY_FIELDS == tuple(Memory.model_fields)
    assert CONFIG_DEFAULTS == StoreConfig().model_dump()


def _without_token(answer: dict) -> dict:
    assert answer.pop("use_token", "absent") is not None
    return answer


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    """A store whose memories cover what a hit reports: every verification state, a cited path, a
    worktree origin with claims, links (supersedes, depends_on), outcomes, metadata, non-ASCII and
    control characters."""
    monkeypatch.chdir(tmp_path)  # outside any repository: these writes are global
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("PORT = 8443\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x", "--allow-empty"],
                   cwd=repo, check=True)
    clock = Clock(START)
    home = tmp_path / "s"
    with kenning.open_store(home, clock=clock) as store:
        plain_ids = store.import_records([
            {"content": "the billing service bills monthly", "scopes": ["billing"]},
            {"content": "billing invoices go out on the first; see docs/billing.md", "scopes": ["billing", "ops"]},
            {"content": "billing für Ünïcödé kunden \x07 with a bell", "scopes": ["billing"],
             "metadata": {"n": 3, "tags": ["a", "b"], "ok": True}},
            {"content": "the old billing cron ran nightly", "scopes": ["billing"], "confidence": "low"},
        ])
        newer = store.write("billing runs from the scheduler instead of the old cron", scopes=["billing"],
                            links=[{"kind": "supersedes", "target": plain_ids[3]},
                                   {"kind": "depends_on", "target": plain_ids[0], "note": "needs it"}],
                            force=True, acknowledge_transient=True)
        assert newer.status == "committed", newer
        store.verify(plain_ids[0])
        store.record_use([plain_ids[1]], "contradicted", note="it is the second")
        clock.now = START + timedelta(days=45)
        store.verify(plain_ids[2])
        monkeypatch.chdir(repo)
        anchored = kenning.open_store(home, clock=clock, cwd=repo)
        written = anchored.write("billing entry point is src/app.py with PORT 8443", scopes=["billing"],
                                 claims=["src/app.py::PORT=8443"], force=True, acknowledge_transient=True)
        assert written.status == "committed", written
        anchored.close()
    return home, clock, [*plain_ids, newer.id]


@pytest.mark.parametrize("mode,auto_scope", [("bm25", True), ("keyword", True), ("bm25", False), (None, False)])
def test_a_plain_answer_is_the_models_answer(seeded, mode, auto_scope):
    home, clock, _ = seeded
    with kenning.open_store(home, clock=clock) as store:
        store.configure(default_mode="bm25")
        for limit in (1, 3, 10):
            full = store.search("billing", mode=mode, limit=limit, auto_scope=auto_scope).to_dict()
            session = Session(home, clock, None, None)
            try:
                plain = reads.search_plain(session, "billing", mode, None, limit, None, auto_scope, False)
            finally:
                session.close()
            assert plain is not None
            assert json.dumps(_without_token(plain.to_dict())) == json.dumps(_without_token(full))
            assert full["hits"]
        assert {h["staleness_verdict"] for h in full["hits"]} >= {"fresh", "spot_check_recommended"}


def test_filters_and_an_empty_answer_match_too(seeded):
    home, clock, _ = seeded
    with kenning.open_store(home, clock=clock) as store:
        for args in ((["ops"], None, False), (None, "fact", False), (None, None, True)):
            full = store.search("billing", mode="bm25", scopes=args[0], category=args[1],
                                since_prior_session=args[2]).to_dict()
            session = Session(home, clock, None, None)
            try:
                plain = reads.search_plain(session, "billing", "bm25", args[0], 5, args[1], True, args[2])
            finally:
                session.close()
            assert _without_token(plain.to_dict()) == _without_token(full)


def test_a_plain_search_logs_its_event_as_the_models_search_does(seeded):
    home, clock, _ = seeded
    session = Session(home, clock, None, None)
    try:
        answer = reads.search_plain(session, "billing", "bm25", None, 5, None, True, False)
    finally:
        session.close()
    with kenning.open_store(home, clock=clock) as store:
        [event] = [e for e in store.events(kinds=["search"]) if e["session"] == session.session_id]
    assert event["payload"]["hit_ids"] == [h.id for h in answer.hits]
    assert event["payload"]["use_token"] == answer.use_token and event["payload"]["mode"] == "bm25"


@pytest.mark.parametrize("record", [
    {"id": "m1", "content": "x", "scopes": ["s"], "created": "2026-01-01T00:00:00.000000Z",
     "updated": "2026-01-01T00:00:00.000000Z"},  # an older shape: fields the model fills in
    {**dict.fromkeys(MEMORY_FIELDS), "id": "m1", "content": "x", "scopes": ["s"], "category": "fact",
     "confidence": "medium", "source": "explicit-statement", "created": "2026-01-01T00:00:00Z",
     "updated": "2026-01-01T00:00:00.000000Z", "verified_paths": [], "verified_absent_paths": [], "claims": [],
     "links": [], "metadata": {}},  # a timestamp not in the store's form
    {**dict.fromkeys(MEMORY_FIELDS), "id": "m1", "content": "x", "scopes": ["s"], "category": "opinion",
     "confidence": "medium", "source": "explicit-statement", "created": "2026-01-01T00:00:00.000000Z",
     "updated": "2026-01-01T00:00:00.000000Z", "verified_paths": [], "verified_absent_paths": [], "claims": [],
     "links": [], "metadata": {}},  # a value the model refuses
])
def test_a_record_only_the_model_reads_the_same_way_is_not_plain(record):
    text = json.dumps(record, separators=(",", ":"))
    with pytest.raises(NotPlain):
        plain_memory(text)


def test_a_float_the_two_json_writers_spell_differently_is_not_plain():
    written = Memory(id="m1", content="x", scopes=["s"], created=START, updated=START, metadata={"small": 1e-7})
    assert '"small":1e-7' in written.model_dump_json()  # Python's json writes 1e-07
    with pytest.raises(NotPlain):
        plain_memory(written.model_dump_json())
    same = written.model_copy(update={"metadata": {"n": 0.1, "big": 1e16}})
    assert plain_memory(same.model_dump_json()).version == same.version


def test_a_stored_record_is_read_as_the_model_reads_it(seeded):
    home, clock, ids = seeded
    with kenning.open_store(home, clock=clock) as store:
        rows = store.db.read(lambda c: c.execute("SELECT record FROM memories").fetchall())
    assert len(rows) == 6
    for (record,) in rows:
        plain, model = plain_memory(record), Memory.model_validate_json(record)
        assert plain.version == model.version and plain.summary == model.summary
        for name in ("id", "content", "scopes", "category", "created", "updated", "last_verified_at", "metadata"):
            assert getattr(plain, name) == getattr(model, name)
        assert [c.spec for c in plain.claims] == [c.spec for c in model.claims]
        assert [(k.kind, k.target, k.note) for k in plain.links] == [(k.kind, k.target, k.note) for k in model.links]
        assert (plain.origin is None) == (model.origin is None)


def test_a_record_only_the_model_reads_sends_the_search_back_before_it_is_logged(seeded):
    home, clock, ids = seeded
    with kenning.open_store(home, clock=clock) as store:
        with store.db.transaction() as c:  # an older record shape, as an earlier version wrote it
            record = json.loads(c.execute("SELECT record FROM memories WHERE id = ?", (ids[0],)).fetchone()[0])
            del record["metadata"]
            c.execute("UPDATE memories SET record = ? WHERE id = ?", (json.dumps(record), ids[0]))
        before = len(store.events(kinds=["search"]))
    session = Session(home, clock, None, None)
    try:
        assert reads.search_plain(session, "billing monthly", "bm25", None, 5, None, False, False) is None
    finally:
        session.close()
    with kenning.open_store(home, clock=clock) as store:
        assert len(store.events(kinds=["search"])) == before


@pytest.mark.parametrize("changes,readable,answered", [
    ({}, True, False),  # the default mode is hybrid: the vector leg, so the models answer
    ({"default_mode": "bm25", "bm25_k1": 1.5, "verification_stale_days": 7}, True, True),
    ({"default_mode": "keyword"}, True, True),
    ({"default_mode": "bm25", "weights": {"keyword": 0.5, "bm25": 1.0, "vector": 1.0}}, False, False),
    ({"default_mode": "bm25", "search_enabled": False}, False, False),  # the models say why
])
def test_settings_a_plain_search_may_use(tmp_path, changes, readable, answered):
    with kenning.open_store(tmp_path / "s") as store:
        store.import_records([{"content": "the billing service bills monthly", "scopes": ["t"]}])
        if changes:
            store.configure(**changes)
        expected = store.config
    session = Session(tmp_path / "s", kenning.store.plain.utcnow, None, None)
    try:
        values = session.settings.plain()
        assert (values is not None) is readable
        if readable:
            assert values.to_dict() == expected.model_dump()
        assert (reads.search_plain(session, "billing", None, None, 5, None, True, False) is not None) is answered
    finally:
        session.close()


def test_a_plain_search_imports_no_pydantic(seeded):
    home, _, _ = seeded
    probe = ("import sys\n"
             "from kenning.memory import reads\n"
             "from kenning.memory.session import Session\n"
             "from kenning.store.plain import utcnow\n"
             f"s = Session({str(home)!r}, utcnow, None, None)\n"
             "answer = reads.search_plain(s, 'billing', 'bm25', None, 10, None, False, False)\n"
             "s.close()\n"
             "assert answer is not None and len(answer.hits) == 6, answer\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=home)
    assert done.returncode == 0, done.stderr
    # the memory with a worktree origin and a claim is assessed in full (memory/staleness.py): pydantic
    assert "pydantic" in done.stdout
    probe = probe.replace("'billing', 'bm25'", "'monthly', 'bm25'").replace("== 6", "== 1")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_damaged_index_is_repaired_and_noted_even_when_a_hit_needs_the_models(seeded):
    """The plain path leaves a damaged lexical index to the models' search, which repairs it and says
    so; repairing first and then falling back for another reason used to lose the note."""
    home, clock, ids = seeded
    with kenning.open_store(home, clock=clock) as store:
        with store.db.transaction() as c:
            record = json.loads(c.execute("SELECT record FROM memories WHERE id = ?", (ids[0],)).fetchone()[0])
            del record["metadata"]  # a record only the models read the same way, found only through
            # the damaged term, so the plain path meets it after the repair
            c.execute("UPDATE memories SET record = ? WHERE id = ?", (json.dumps(record), ids[0]))
            c.execute("UPDATE lex_segments SET postings = ? WHERE term = 'bill'", (b"garbage!",))
    out = subprocess.run([sys.executable, "-m", "kenning", "--store", str(home), "search", "billing",
                          "--mode", "bm25", "--json"], capture_output=True, text=True, check=True)
    answer = json.loads(out.stdout)
    assert answer["degraded"]["reason"] == "lexical_index_repaired"
    assert ids[0] in [h["id"] for h in answer["hits"]]
