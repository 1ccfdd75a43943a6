"""A model-based test of the store: hypothesis drives long random sequences of writes, updates,
removals, restores, verifications, supersessions, reopens and export/import round trips against a
plain-Python model of what the store must hold, and checks every read surface against it after
each step. Scenario tests check one path each; this finds what only a sequence of them breaks."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule

from kenning import open_store
from kenning.errors import NotFound

SCOPES = ["projects:alpha", "projects:beta", "team:ops"]
RENAMES = [*SCOPES, "team:dev"]
LEXICAL_MODES = ("keyword", "bm25")
LETTERS = "bcdfghjklmnpqrstvwxz"  # consonants: a token never spells a real (or stemmed) word

tokens = st.text(alphabet=LETTERS, min_size=9, max_size=9).map(lambda t: "qx" + t)
fillers = st.tuples(*[st.text(alphabet=LETTERS, min_size=6, max_size=6).map(lambda t: "zv" + t)] * 2)
scope_lists = st.lists(st.sampled_from(SCOPES), min_size=1, max_size=2, unique=True)
meta_values = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.none(),
                        st.text(alphabet="abc xyz-_", max_size=8),
                        st.floats(allow_nan=False, allow_infinity=False, width=32))
metadata = st.dictionaries(st.sampled_from(["owner", "ticket", "weight", "note"]),
                           st.one_of(meta_values, st.lists(meta_values, max_size=3)), max_size=3)
TEMPLATES = ["The {t} service keeps its settings in the {a} table of the {b} schema.",
             "Builds of {t} sign their artifacts with the {a} key before {b} publishes them.",
             "{t} talks to {a} over gRPC and retries each call against {b} three times."]


def body(token: str, filler: tuple[str, str], template: int) -> str:
    return TEMPLATES[template].format(t=token, a=filler[0], b=filler[1])


class StoreModel(RuleBasedStateMachine):
    """The store under test and the dicts that say what it must hold."""

    live = Bundle("live")
    removed = Bundle("removed")
    modes = LEXICAL_MODES  # where a memory's own token must rank it first

    def __init__(self):
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="kenning-stateful-")
        self.generation = 0
        self.store = self._open()
        # id -> {content, scopes, metadata, links: [(kind, target)], token, note}
        self.memories: dict[str, dict] = {}
        self.gone: dict[str, str] = {}  # removed id -> reason
        self.used_tokens: set[str] = set()
        self.staged: dict[str, tuple] = {}  # pending id -> (content, scopes, token), oldest first

    def _open(self):
        store = open_store(os.path.join(self.folder, f"store{self.generation}"))
        store.configure(default_mode="bm25")
        return store

    def teardown(self):
        try:
            self.check_clean()
        finally:
            self.store.close()
            shutil.rmtree(self.folder, ignore_errors=True)

    # ---------------------------------------------------------------- helpers
    def _live_ids(self) -> set[str]:
        return set(self.memories) - set(self.gone)

    def _fresh(self, token: str) -> str | None:
        if token in self.used_tokens:
            return None
        self.used_tokens.add(token)
        return token

    def _refused(self, result) -> bool:
        """The duplicates gate is modelled loosely: a text like another (the templates share most words)
        may be refused, but only naming a live memory (duplicate) or a tombstone (previously_removed)."""
        if result.status == "duplicate":
            assert result.id in self._live_ids(), result.to_dict()
        elif result.status == "previously_removed":
            assert result.match["id"] in self.gone, result.to_dict()
        return result.status in ("duplicate", "previously_removed")

    def _expect(self, id: str, content: str, scopes: list[str], meta: dict, links: list, token: str) -> None:
        self.memories[id] = {"content": content, "scopes": scopes, "metadata": meta, "links": links,
                             "token": token, "note": None}

    # ---------------------------------------------------------------- rules
    @rule(target=live, token=tokens, filler=fillers, template=st.integers(0, 2),
          scopes=scope_lists, meta=metadata)
    def write(self, token, filler, template, scopes, meta):
        token = self._fresh(token)
        if token is None:
            return consumes_nothing()  # hypothesis drew a token in use: nothing to add
        content = body(token, filler, template)
        result = self.store.write(content, scopes=scopes, metadata=meta)
        if self._refused(result):
            return consumes_nothing()
        assert result.status == "committed", result.to_dict()
        self._expect(result.id, content, scopes, meta, [], token)
        return result.id

    @rule(target=live, old=live, token=tokens, filler=fillers, template=st.integers(0, 2))
    def write_superseding(self, old, token, filler, template):
        if old not in self._live_ids():
            return consumes_nothing()
        token = self._fresh(token)
        if token is None:
            return consumes_nothing()
        content = body(token, filler, template)
        scopes = list(self.memories[old]["scopes"])
        result = self.store.write(content, scopes=scopes, links=[{"kind": "supersedes", "target": old}])
        if self._refused(result):
            return consumes_nothing()
        assert result.status == "committed", result.to_dict()
        self._expect(result.id, content, scopes, {}, [("supersedes", old)], token)
        return result.id

    @rule(target=live, id=live, force=st.booleans())
    def write_again(self, id, force):
        """The same text again: the duplicates gate refuses it (naming a live memory with that text)
        unless forced, when it is a second memory."""
        if id not in self._live_ids():
            return consumes_nothing()
        m = self.memories[id]
        result = self.store.write(m["content"], scopes=m["scopes"], force=force)
        if not force:
            assert result.status == "duplicate", result.to_dict()
            assert self.memories[result.id]["content"] == m["content"] and result.id in self._live_ids()
            return consumes_nothing()
        assert result.status == "committed", result.to_dict()
        self._expect(result.id, m["content"], list(m["scopes"]), {}, [], m["token"])
        return result.id

    @rule(id=live, token=tokens, filler=fillers, template=st.integers(0, 2))
    def update_text(self, id, token, filler, template):
        if id not in self._live_ids():
            return
        token = self._fresh(token)
        if token is None:
            return
        content = body(token, filler, template)
        updated = self.store.update(id, text=content)
        m = self.memories[id]
        m.update(content=content, token=token, note=None)
        assert updated.content == content and updated.last_verified_at is None

    @rule(id=live, scopes=scope_lists, meta=st.one_of(st.none(), metadata))
    def update_fields(self, id, scopes, meta):
        if id not in self._live_ids():
            return
        self.store.update(id, scopes=scopes, metadata=meta)
        self.memories[id]["scopes"] = scopes
        if meta is not None:
            self.memories[id]["metadata"] = meta

    @rule(id=live, to=live, kind=st.sampled_from(["supersedes", "extends", "depends_on"]))
    def update_links(self, id, to, kind):
        if id not in self._live_ids() or to == id:
            return
        self.store.update(id, links=[{"kind": kind, "target": to}])
        self.memories[id]["links"] = [(kind, to)]

    @rule(target=removed, id=consumes(live), reason=st.sampled_from(["moved to the wiki", "wrong port", "merged"]))
    def remove(self, id, reason):
        if id not in self._live_ids():
            return consumes_nothing()
        tomb = self.store.remove(id, reason)
        assert tomb.memory.id == id and tomb.reason == reason
        self.gone[id] = reason
        return id

    @rule(target=live, id=consumes(removed))
    def restore(self, id):
        if id not in self.gone:
            return consumes_nothing()
        memory = self.store.restore(id)
        del self.gone[id]
        self._matches(memory, self.memories[id])
        return id

    @rule(id=removed)
    def write_removed_text(self, id):
        """A tombstone's text again: refused as previously_removed (or a duplicate of a live copy)."""
        if id not in self.gone:
            return
        m = self.memories[id]
        result = self.store.write(m["content"], scopes=m["scopes"])
        same = {i for i in self._live_ids() if self.memories[i]["content"] == m["content"]}
        if same:
            assert result.status == "duplicate" and result.id in same, result.to_dict()
        else:
            assert result.status == "previously_removed", result.to_dict()
            assert result.match["id"] in self.gone, result.to_dict()

    @rule(id=live, note=st.sampled_from(["checked against the code", "still true"]))
    def verify(self, id, note):
        if id not in self._live_ids():
            return
        self.store.verify(id, note=note)
        self.memories[id]["note"] = note

    @rule(id=removed)
    def remove_twice_is_refused(self, id):
        if id not in self.gone:
            return
        with pytest.raises(NotFound):
            self.store.remove(id, "again")

    @rule(target=live, id=live, token=tokens, filler=fillers, keep_new=st.booleans())
    def contradict_and_resolve(self, id, token, filler, keep_new):
        """A memory written to contradict another, then the pair settled: the winner supersedes the
        loser and the contradicts links between them go."""
        if id not in self._live_ids():
            return consumes_nothing()
        token = self._fresh(token)
        if token is None:
            return consumes_nothing()
        content = body(token, filler, 0)
        result = self.store.write(content, scopes=["team:ops"], links=[{"kind": "contradicts", "target": id}])
        if self._refused(result):
            return consumes_nothing()
        assert result.status == "committed", result.to_dict()
        self._expect(result.id, content, ["team:ops"], {}, [("contradicts", id)], token)
        winner, loser = (result.id, id) if keep_new else (id, result.id)
        self.store.resolve_conflict(result.id, id, "supersede", keep_id=winner)
        pair = {winner, loser}
        for mid in pair:
            m = self.memories[mid]
            m["links"] = [(k, t) for k, t in m["links"] if not (k == "contradicts" and t in pair)]
        self.memories[winner]["links"].append(("supersedes", loser))
        return result.id

    @rule(old=st.sampled_from(RENAMES), new=st.sampled_from(RENAMES))
    def rename_scope(self, old, new):
        if old == new:
            return
        changed = self.store.rename_scope(old, new)
        carriers = [m for m in self.memories.values() if old in m["scopes"]]
        assert changed == len(carriers)
        for m in carriers:
            m["scopes"] = list(dict.fromkeys(new if x == old else x for x in m["scopes"]))

    @rule()
    def import_again(self):
        """The live memories as exported, imported again into the same store through the gates
        (each a duplicate) and the trusted resumable path (each already present): nothing new."""
        rows = [m.model_dump(mode="json") for m in self._all_listed()]
        checked = self.store.import_checked(rows)
        assert checked.count("committed") == 0, checked.to_dict()
        bulk = self.store.import_bulk(rows)
        assert bulk.count("already_present") == len(rows), bulk.to_dict()

    @rule(target=live, token=tokens, filler=fillers, id=live, new_token=tokens, new_filler=fillers)
    def another_handle_writes(self, token, filler, id, new_token, new_filler):
        """A second Store on the same store (another process, in effect) writes one memory and rewrites
        another while this one stays open: this one's caches must see both at its next call."""
        token, new_token = self._fresh(token), self._fresh(new_token)
        if token is None or new_token is None:
            return consumes_nothing()
        content, new_content = body(token, filler, 1), body(new_token, new_filler, 2)
        with open_store(os.path.join(self.folder, f"store{self.generation}")) as other:
            result = other.write(content, scopes=["team:dev"])
            if id in self._live_ids():
                other.update(id, text=new_content)
                self.memories[id].update(content=new_content, token=new_token, note=None)
        if self._refused(result):
            return consumes_nothing()
        assert result.status == "committed", result.to_dict()
        self._expect(result.id, content, ["team:dev"], {}, [], token)
        return result.id

    @rule(token=tokens, filler=fillers, scopes=scope_lists)
    def stage(self, token, filler, scopes):
        """A write while confirmation is required is staged, not stored (``pending``)."""
        token = self._fresh(token)
        if token is None:
            return
        content = body(token, filler, 1)
        self.store.configure(persist=False, require_write_confirmation=True)
        try:
            result = self.store.write(content, scopes=scopes)
        finally:
            self.store.configure(persist=False, require_write_confirmation=False)
        if self._refused(result):
            return
        assert result.status == "pending", result.to_dict()
        self.staged[result.pending_id] = (content, scopes, token)

    @rule(target=live, confirm=st.booleans())
    def settle_staged(self, confirm):
        """The oldest staged write confirmed (gated again: a duplicate keeps it staged) or cancelled."""
        if not self.staged:
            return consumes_nothing()
        pending_id = next(iter(self.staged))
        if not confirm:
            assert self.store.cancel_write(pending_id)["status"] == "cancelled"
            del self.staged[pending_id]
            return consumes_nothing()
        result = self.store.confirm_write(pending_id)
        if self._refused(result):
            assert result.pending_retained, result.to_dict()
            return consumes_nothing()
        assert result.status == "committed", result.to_dict()
        content, scopes, token = self.staged.pop(pending_id)
        self._expect(result.id, content, scopes, {}, [], token)
        return result.id

    @rule()
    def reopen(self):
        self.store.close()
        self.store = open_store(os.path.join(self.folder, f"store{self.generation}"))
        self.check_clean()

    @rule()
    def export_and_import(self):
        """Every live memory as `list --json` writes it, one JSON object a line, imported into a fresh
        store, which the machine goes on with: tombstones are not exported, so they are forgotten."""
        rows = [m.model_dump(mode="json") for m in self._all_listed()]
        self.store.close()
        self.generation += 1
        self.store = self._open()
        self.store.import_records(rows)
        self.staged.clear()  # staged writes stay with the old store
        for id in list(self.gone):  # a live memory's link to one of them is kept, pointing past the store
            del self.memories[id]
        self.gone.clear()
        self.check_clean()

    # ---------------------------------------------------------------- invariants
    def _matches(self, memory, m: dict) -> None:
        assert memory.content == m["content"]
        assert memory.scopes == m["scopes"]
        assert memory.metadata == m["metadata"]
        assert [(link.kind, link.target) for link in memory.links] == m["links"]
        assert memory.verification_note == m["note"]

    def _all_listed(self, page: int = 50) -> list:
        out, after = [], None
        while True:
            chunk = self.store.list(limit=page, auto_scope=False, record=False, after=after)
            out += chunk
            if len(chunk) < page:
                return out
            after = chunk[-1].cursor

    @invariant()
    def gets_match(self):
        for id in self._live_ids():
            self._matches(self.store.get(id), self.memories[id])
        for id in self.gone:
            with pytest.raises(NotFound):
                self.store.get(id)

    @invariant()
    def lists_match(self):
        listed = self._all_listed()
        ids = [m.id for m in listed]
        assert len(ids) == len(set(ids)), "list repeated a memory"
        assert set(ids) == self._live_ids()
        keys = [(m.updated, m.id) for m in listed]
        assert keys == sorted(keys, reverse=True), "list is not newest first"
        assert [m.id for m in self._all_listed(page=3)] == ids, "paging skipped or repeated"
        stones = self.store.tombstones(limit=50)
        assert {t.memory.id: t.reason for t in stones} == self.gone
        paged, after = [], None
        while chunk := self.store.tombstones(limit=2, after=after):
            paged += chunk
            after = chunk[-1].cursor
        assert [t.memory.id for t in paged] == [t.memory.id for t in stones], "tombstone paging skipped or repeated"
        for scope in RENAMES:
            within = {t.memory.id for t in self.store.tombstones(scopes=[scope], limit=50)}
            assert within == {i for i in self.gone if scope in self.memories[i]["scopes"]}, scope

    @invariant()
    def counts_match(self):
        live = self._live_ids()
        assert self.store.count() == len(live)
        stats = self.store.stats()
        assert (stats["memories"], stats["tombstones"], stats["pending_writes"]) == (
            len(live), len(self.gone), len(self.staged))
        assert [p["pending_id"] for p in self.store.pending_writes(all_sessions=True)] == list(self.staged)
        overview = self.store.scope_overview(auto_scope=False)
        per_scope: dict[str, int] = {}
        for id in live:
            for scope in self.memories[id]["scopes"]:
                per_scope[scope] = per_scope.get(scope, 0) + 1
        assert overview["scopes"] == per_scope and overview["total"] == len(live)
        for scope in RENAMES:
            listed = {m.id for m in self.store.list(scopes=[scope], limit=50, auto_scope=False, record=False)}
            assert listed == {id for id in live if scope in self.memories[id]["scopes"]}, scope

    @invariant()
    def searches_find_own_token(self):
        live = self._live_ids()
        holders: dict[str, set[str]] = {}
        for id in live:
            holders.setdefault(self.memories[id]["token"], set()).add(id)
        for token, ids in holders.items():
            for mode in self.modes:
                hits = [h.id for h in self.store.search(token, mode=mode, limit=min(len(ids) + 4, 50),
                                                        auto_scope=False, record=False).hits]
                assert ids <= set(hits), (mode, token, hits, ids)
                # a holder's superseders the search found too move up to just above it
                # (trust.superseders_first), theirs above them, unless the holder supersedes them in
                # turn (a cycle keeps its order): together they lead, then others
                def above(x: str) -> set[str]:
                    found, todo = set(), [x]
                    while todo:
                        for b in self._superseders(todo.pop()) & set(hits) - found:
                            found.add(b)
                            todo.append(b)
                    return found

                leading, todo = set(ids), list(ids)
                while todo:
                    x = todo.pop()
                    for b in self._superseders(x) & set(hits) - leading:
                        if x not in above(b):
                            leading.add(b)
                            todo.append(b)
                assert set(hits[: len(leading)]) == leading, (mode, token, hits, ids, leading)
            for scope in RENAMES:  # a scope filter keeps exactly the holders carrying it
                within = {i for i in ids if scope in self.memories[i]["scopes"]}
                hits = self.store.search(token, mode="bm25", scopes=[scope], limit=min(len(ids) + 4, 50),
                                         auto_scope=False, record=False).hits
                assert {h.id for h in hits} & ids == within, (scope, token, [h.id for h in hits], within)
        for token in self.used_tokens - set(holders):  # the vector leg always answers something
            for mode in set(self.modes) & set(LEXICAL_MODES):
                hits = [h.id for h in self.store.search(token, mode=mode, limit=5, auto_scope=False, record=False).hits]
                assert not set(hits) & live, (mode, token, hits)

    @invariant()
    def supersession_is_consistent(self):
        for id in self._live_ids():
            shown = self.store.show(id)
            assert set(shown.get("superseded_by", [])) == self._superseders(id), id

    def _superseders(self, id: str) -> set[str]:
        """trust.superseded_by's rule: live memories with a supersedes link to id, directly or through
        removed memories that superseded it; never itself (a cycle through a removed memory)."""
        found, frontier, seen = set(), {id}, set()
        while frontier:
            nxt = set()
            for source, m in self.memories.items():
                for kind, target in m["links"]:
                    if kind != "supersedes" or target not in frontier:
                        continue
                    if source not in self.gone:
                        found.add(source)
                    elif source not in seen:
                        seen.add(source)
                        nxt.add(source)
            frontier = nxt
        return found - {id}

    def check_clean(self):
        report = self.store.check()
        assert report["ok"], report["problems"]


def consumes_nothing():
    """A rule that drew an id its model no longer holds as live adds nothing to the bundle."""
    from hypothesis.stateful import multiple

    return multiple()


# CI runs a fixed, derandomized sample (some 20-30 s); KENNING_STATEFUL_EXAMPLES / _STEPS hunt at random, e.g.
# 300 and 50 (about 15 minutes; with KENNING_TEST_BACKEND=postgres on PostgreSQL)
CI = settings(max_examples=int(os.environ.get("KENNING_STATEFUL_EXAMPLES", "10")),
              stateful_step_count=int(os.environ.get("KENNING_STATEFUL_STEPS", "30")),
              deadline=None, database=None, derandomize=not os.environ.get("KENNING_STATEFUL_EXAMPLES"),
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

StoreModel.TestCase.settings = CI
test_store_against_its_model = pytest.mark.slow(StoreModel.TestCase)


class HybridStoreModel(StoreModel):
    """The same machine, its tokens searched in hybrid mode with the real model (every write embedded)."""

    modes = ("hybrid",)


HybridStoreModel.TestCase.settings = settings(CI, max_examples=max(CI.max_examples // 3, 1))
test_hybrid_search_against_the_model = pytest.mark.slow(pytest.mark.embeddings(HybridStoreModel.TestCase))


# ---------------------------------------------------------------- what the machine found, written out


def test_an_imported_link_to_a_memory_left_behind_does_not_block_updates(tmp_path):
    """A live memory superseding a removed one, exported (live memories only) and imported into a new
    store: its link names a memory that store lacks, and every update of it was refused as NotFound."""
    with open_store(tmp_path / "old") as old:
        first = old.write("The qxfirst service keeps its settings in the zvone table.", scopes=["team:ops"]).id
        second = old.write("The qxsecond service keeps its settings in the zvtwo table.", scopes=["team:ops"],
                           links=[{"kind": "supersedes", "target": first}]).id
        old.remove(first, "merged")
        rows = [m.model_dump(mode="json") for m in old.list(auto_scope=False)]
    with open_store(tmp_path / "new") as new:
        new.import_records(rows)
        updated = new.update(second, scopes=["team:dev"], metadata={"owner": "ops"})
        assert updated.scopes == ["team:dev"] and [(x.kind, x.target) for x in updated.links] == [("supersedes", first)]
        assert new.show(second)["links"][0]["status"] == "missing"
        with pytest.raises(NotFound):  # a link an update adds must still name a memory of the store
            new.update(second, links=[{"kind": "extends", "target": first}])
