"""Hypothesis over the library's entry points: bad input raises only kenning's own errors, and a
refused call changes no table. Arguments mix the right types with wrong ones, huge numbers, lone
surrogates, control characters and secrets."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kenning import open_store
from kenning.errors import KenningError
from kenning.memory import events

pytestmark = pytest.mark.slow
EXAMPLES = 500
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# text with everything: surrogates (category Cs), controls, escapes, NULs
wild_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=300)
plain_text = st.text(max_size=120)
tricky = st.sampled_from(["", " ", "\x00", "\ud800", "a" * 300, "my password is hunter2", "\x1b[31mred",
                          "ghp_" + "aB3" * 12, "-", "0", "projects:kenning", "fact", "applied", "bm25"])
strings = st.one_of(wild_text, plain_text, tricky)
numbers = st.one_of(st.integers(), st.integers(min_value=-3, max_value=60), st.just(10**20), st.floats(allow_nan=True))
anything = st.deferred(lambda: st.one_of(
    st.none(), st.booleans(), numbers, strings,
    st.lists(st.one_of(strings, numbers, st.none()), max_size=5),
    st.dictionaries(strings, st.one_of(strings, numbers, st.none()), max_size=4)))
text_arg = st.one_of(strings, anything)
scopes_arg = st.one_of(st.lists(strings, max_size=4), strings, anything)
limit_arg = st.one_of(numbers, strings, st.none(), anything)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = open_store(tmp_path_factory.mktemp("fuzz"))
    s.configure(default_mode="bm25")
    s.write("the auth service listens on port 8443", scopes=["ops"])
    s.write("deploys go through the staging cluster first", scopes=["ops"])
    yield s
    s.close()


def ids(store) -> list[str]:
    return [m.id for m in store.list(limit=5, record=False, auto_scope=False)]


def call(store, fn, *args, **kwargs):
    """Run one call: a KenningError must leave every table as it was; anything else fails the test.

    Read events of earlier calls are committed first: they wait in a queue (memory/deferred.py) that
    a timer may flush at any moment, which is their writing, not the refused call's."""
    events.flush_store(store.db.path)
    before = store.db.changes()
    try:
        fn(*args, **kwargs)
    except KenningError:
        assert store.db.changes() == before, f"{fn.__name__} refused but changed the database"


id_arg = st.one_of(strings, anything, st.just("__existing__"))


def pick_id(store, value):
    return (ids(store) or ["x"])[0] if value == "__existing__" else value


@SETTINGS
@given(content=text_arg, scopes=scopes_arg, category=text_arg, confidence=text_arg, source=text_arg,
       metadata=anything, links=anything, claims=anything)
def test_write(store, content, scopes, category, confidence, source, metadata, links, claims):
    call(store, store.write, content, scopes, category=category, confidence=confidence, source=source,
         metadata=metadata, links=links, claims=claims)


@SETTINGS
@given(id=id_arg, text=text_arg, scopes=st.one_of(st.none(), scopes_arg), confidence=st.one_of(st.none(), text_arg),
       metadata=st.one_of(st.none(), anything))
def test_update(store, id, text, scopes, confidence, metadata):
    call(store, store.update, pick_id(store, id), text=text, scopes=scopes, confidence=confidence, metadata=metadata)


@SETTINGS
@given(id=id_arg, reason=text_arg)
def test_remove_and_restore(store, id, reason):
    target = pick_id(store, id)
    call(store, store.remove, target, reason)
    call(store, store.restore, target)


@SETTINGS
@given(id=id_arg, note=text_arg, paths=anything, claims=anything)
def test_verify(store, id, note, paths, claims):
    call(store, store.verify, pick_id(store, id), note=note, verified_paths=paths, claims=claims)


@SETTINGS
@given(ids_=st.one_of(st.lists(id_arg, max_size=3), id_arg), outcome=text_arg, note=text_arg, excerpt=anything)
def test_record_use(store, ids_, outcome, note, excerpt):
    ids_ = [pick_id(store, i) for i in ids_] if isinstance(ids_, list) else pick_id(store, ids_)
    call(store, store.record_use, ids_, outcome, note=note, excerpt=excerpt)


@SETTINGS
@given(id=id_arg)
def test_get_and_show(store, id):
    call(store, store.get, pick_id(store, id))
    call(store, store.show, pick_id(store, id))


@SETTINGS
@given(scopes=st.one_of(st.none(), scopes_arg), category=st.one_of(st.none(), text_arg), limit=limit_arg)
def test_list_and_tombstones(store, scopes, category, limit):
    call(store, store.list, scopes=scopes, category=category, limit=limit)
    call(store, store.tombstones, scopes=scopes, limit=limit)


@SETTINGS
@given(query=text_arg, mode=st.one_of(st.sampled_from(["keyword", "bm25", None]), strings, anything),
       scopes=st.one_of(st.none(), scopes_arg), limit=limit_arg, category=st.one_of(st.none(), text_arg))
def test_search(store, query, mode, scopes, limit, category):
    if mode in ("semantic", "hybrid"):
        mode = "bm25"  # the model is exercised elsewhere; here the arguments are
    call(store, store.search, query, mode=mode, scopes=scopes, limit=limit, category=category)


@SETTINGS
@given(records=st.one_of(st.lists(st.one_of(st.fixed_dictionaries({"content": text_arg}, optional={
    "scopes": scopes_arg, "id": text_arg, "category": text_arg, "metadata": anything}), anything), max_size=4), anything),
       batch_size=limit_arg)
def test_import(store, records, batch_size):
    call(store, store.import_records, records, batch_size=batch_size)


@SETTINGS
@given(old=text_arg, new=text_arg, limit=limit_arg)
def test_scopes_and_health(store, old, new, limit):
    call(store, store.disable_scope, old)
    call(store, store.enable_scope, old)
    call(store, store.rename_scope, old, new)
    call(store, store.health, limit=limit)


@SETTINGS
@given(pending=text_arg)
def test_pending(store, pending):
    call(store, store.confirm_write, pending)
    call(store, store.cancel_write, pending)
