"""Secrets are kept out of every stored field (refused, nothing written) and masked where the
call must go on (search queries and audited turns in the event log)."""

from __future__ import annotations

import json

import pytest

from kenning import open_store
from kenning.errors import InvalidInput

SECRET = "glpat-" + "Xk29fLq8Zr4Vb7Nw1Tc5"  # assembled so no scanner mistakes this file for a leak
PROSE = "my password is hunter2"


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path)
    s.write("the auth service listens on port 8443", scopes=["ops"])
    s.write("deploys go through the staging cluster first", scopes=["ops"])
    yield s
    s.close()


def first_id(store):
    return store.list(record=False, auto_scope=False)[0].id


def everything(store) -> str:
    """Every row of every table as text."""
    tables = store.db.tables()
    dump = []
    for table in tables:
        rows = store.db.read(lambda c: c.execute(f"SELECT * FROM {table}").fetchall())
        dump.append(repr(rows))
    return "\n".join(dump)


REFUSED = {
    "remove reason": lambda s, x: s.remove(first_id(s), reason=f"rotated, old one was {x}"),
    "verify note": lambda s, x: s.verify(first_id(s), note=f"checked with {x}"),
    "record-use note": lambda s, x: s.record_use([first_id(s)], "applied", note=f"used {x}"),
    "record-use excerpt": lambda s, x: s.record_use([first_id(s)], "contradicted", excerpt=f"key {x}"),
    "link note": lambda s, x: s.write("the new deploy doc replaces the old one", scopes=["ops"],
                                      links=[{"kind": "supersedes", "target": first_id(s), "note": f"see {x}"}]),
    "metadata": lambda s, x: s.write("the billing service runs on port 9000", scopes=["ops"],
                                     metadata={"how": f"token {x}"}),
    "metadata on update": lambda s, x: s.update(first_id(s), metadata={"api_key": x}),
    "scope name": lambda s, x: s.write("the billing service runs on port 9000", scopes=[f"ops:{x}"]),
    "rename scope": lambda s, x: s.rename_scope("ops", f"ops-{x}"),
    "update text": lambda s, x: s.update(first_id(s), text=f"the auth service uses {x}"),
}


@pytest.mark.parametrize("secret", [SECRET, PROSE])
@pytest.mark.parametrize("field", sorted(REFUSED))
def test_a_secret_in_a_stored_field_is_refused_and_nothing_is_written(store, field, secret):
    before = store.db.changes()
    with pytest.raises(InvalidInput, match="secret"):
        REFUSED[field](store, secret)
    assert store.db.changes() == before
    assert "hunter2" not in everything(store) and SECRET not in everything(store)


def test_a_secret_in_an_episode_is_refused(store):
    from kenning.memory.episodes import Episodes

    episodes = Episodes(store)
    with pytest.raises(InvalidInput, match="secret"):
        episodes.write(f"deployed with {SECRET}", takeaway="deploy works")
    with pytest.raises(InvalidInput, match="secret"):
        episodes.write("deployed the service", takeaway=PROSE)
    assert SECRET not in everything(store) and "hunter2" not in everything(store)


def test_search_queries_and_audited_turns_are_logged_masked(store):
    store.search(f"auth port {SECRET}", mode="bm25")
    store.search(f"why does {PROSE} not work", mode="bm25")
    from kenning.memory.audit import audit_turn

    audit_turn(store, f"here is my token {SECRET}, what port does auth use?")
    logged = json.dumps(store.events())
    assert SECRET not in logged and "hunter2" not in logged
    assert "removed]" in logged and "auth port" in logged
    assert SECRET not in everything(store)
