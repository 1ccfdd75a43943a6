"""Every bad input is refused with a clear error and leaves the store exactly as it was."""

import pytest

from kenning.errors import InvalidInput, NotFound


def _snapshot(store):
    return store.db.read(lambda c: (
        c.execute("SELECT COUNT(*) FROM memories").fetchone()[0],
        c.execute("SELECT COUNT(*) FROM lex_docs").fetchone()[0],
        c.execute("SELECT COUNT(*) FROM memory_scopes").fetchone()[0],
    ))


BAD_WRITES = [
    ({"content": "", "scopes": ["x"]}, "empty"),
    ({"content": "   \n\t", "scopes": ["x"]}, "empty"),
    ({"content": "x" * (1024 * 1024 + 1), "scopes": ["x"]}, "limit"),
    ({"content": "ok", "scopes": []}, "scope"),
    ({"content": "ok", "scopes": [f"s{i}" for i in range(65)]}, "64"),
    ({"content": "ok", "scopes": ["bad\nscope"]}, "control"),
    ({"content": "ok", "scopes": ["x"], "metadata": {"k": "v\x00"}}, "control"),
    ({"content": "ok", "scopes": ["x"], "category": "rumour"}, "category"),
    ({"content": "ok", "scopes": ["x"], "links": [{"kind": "supersedes", "target": "nope"}]}, "nope"),
]


@pytest.mark.parametrize("kwargs,message", BAD_WRITES)
def test_bad_writes_are_refused_and_nothing_is_written(store, kwargs, message):
    store.write("existing memory", scopes=["x"])
    before = _snapshot(store)
    with pytest.raises((InvalidInput, NotFound), match=message):
        store.write(**kwargs)
    assert _snapshot(store) == before


@pytest.mark.parametrize("value", [float("nan"), float("inf"), [1.0, float("-inf")], {"deep": float("nan")}])
def test_a_number_json_cannot_hold_is_refused_in_metadata_not_kept_as_null(store, value):
    """NaN and infinity were accepted and read back as null (a record is JSON): the value lost without a word."""
    mid = store.write("existing memory", scopes=["x"], metadata={"w": 1}).id
    before = _snapshot(store)
    for call in (lambda: store.write("The cache weight is tuned per host", scopes=["x"], metadata={"w": value}),
                 lambda: store.update(mid, metadata={"w": value}),
                 lambda: store.import_records([{"content": "imported", "metadata": {"w": value}}])):
        with pytest.raises(InvalidInput, match="finite"):
            call()
    assert _snapshot(store) == before and store.get(mid).metadata == {"w": 1}


def test_exactly_one_mebibyte_is_allowed(store):
    assert store.write("x" * (1024 * 1024), scopes=["x"]).status == "committed"


@pytest.mark.parametrize("query", ["", "   "])
def test_empty_query(store, query):
    with pytest.raises(InvalidInput, match="empty"):
        store.search(query)


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
@pytest.mark.parametrize("query", ["🎉", "?!...", "→ © %"])
def test_a_query_of_no_word_says_so_rather_than_that_nothing_matched(store, query, mode):
    """Symbols are not indexed, so a memory holding them is not found by them: the empty answer says
    that (``note``, which the CLI prints instead of "no memory matches that query"), as the plain
    answer of the command line's fast path does."""
    from kenning.memory import reads

    store.write("Emoji in commit messages are fine 🎉 ?!... → © %", scopes=["x"])
    result = store.search(query, mode=mode, auto_scope=False)
    assert result.hits == [] and result.note.startswith("the query holds no word to search for")
    plain = reads.search_plain(store._s, query, mode, None, 5, None, False, False)
    assert plain.to_dict()["note"] == result.note
    assert store.search("🎉 nothing", mode=mode, auto_scope=False).note is None  # a word that matched nothing


@pytest.mark.parametrize("limit", [0, -1, 51, 1000])
def test_limit_out_of_range(store, limit):
    with pytest.raises(InvalidInput, match="between 1 and 50"):
        store.search("x", limit=limit)


def test_unknown_mode(store):
    with pytest.raises(InvalidInput, match="mode"):
        store.search("x", mode="fuzzy")


@pytest.mark.parametrize("call", [lambda s: s.search("port", mode=""), lambda s: s.rank("port", mode="")])
def test_an_empty_mode_is_refused_not_read_as_the_default(store, call):
    """mode="" (an unset setting passed on) ran the store's default mode without a word, where the
    CLI's --mode '' and the MCP tool refuse it; mode=None is the default."""
    store.configure(default_mode="bm25")
    with pytest.raises(InvalidInput, match="^unknown mode ''"):
        call(store)
    assert store.search("port", mode=None).mode == "bm25"


def test_unknown_ids(store):
    for call in (lambda: store.get("nope"), lambda: store.update("nope", text="new text"),
                 lambda: store.remove("nope", reason="r"), lambda: store.restore("nope")):
        with pytest.raises(NotFound):
            call()


def test_remove_needs_a_reason(store):
    mid = store.write("keep me", scopes=["x"]).id
    with pytest.raises(InvalidInput, match="reason"):
        store.remove(mid, reason=" ")
    assert store.get(mid).content == "keep me"


def test_a_removal_reason_is_a_sentence_not_a_file(store):
    """The library holds the MCP tool's 2,000-character limit too (a reason is shown on every similar write)."""
    mid = store.write("keep me", scopes=["x"]).id
    with pytest.raises(InvalidInput, match=r"removal reason is 2,001 characters; the limit is 2,000"):
        store.remove(mid, reason="r" * 2001)
    assert store.get(mid).content == "keep me"
    assert store.remove(mid, reason="r" * 2000).reason == "r" * 2000


def test_an_unknown_category_filter_is_named_by_list_as_by_search(store):
    store.write("keep me", scopes=["x"])
    for call in (lambda: store.list(category="bogus"), lambda: store.search("keep", category="bogus")):
        with pytest.raises(InvalidInput, match="unknown category 'bogus'"):
            call()


def test_bad_update_leaves_memory_unchanged(store):
    mid = store.write("original text", scopes=["x"]).id
    before = store.get(mid)
    with pytest.raises(InvalidInput):
        store.update(mid, text=" ")
    with pytest.raises(InvalidInput):
        store.update(mid, scopes=["ok", "bad\x07"])
    assert store.get(mid) == before
    assert [h.id for h in store.search("original").hits] == [mid]


def test_malformed_import_record_writes_nothing(store):
    before = _snapshot(store)
    with pytest.raises(InvalidInput, match="record 3"):
        store.import_records([{"text": "alpha"}, {"text": "beta"}, {"nope": 1}])
    assert _snapshot(store) == before


def test_a_closed_store_and_a_location_of_the_wrong_type_say_so(tmp_path):
    import kenning

    store = kenning.open_store(tmp_path / "s")
    store.write("keep me", scopes=["x"])
    store.close()
    for call in (lambda: store.search("keep"), lambda: store.write("more", scopes=["x"]), lambda: store.list()):
        with pytest.raises(InvalidInput, match="this store was closed; open it again"):
            call()
    with pytest.raises(InvalidInput, match="must be a folder path or a postgresql:// URL, got int"):
        kenning.open_store(5)
    with pytest.raises(InvalidInput, match="takes path, clock, session_id and cwd, not 'sesion_id'"):
        kenning.open_store(tmp_path / "s", sesion_id="a")  # a typo is named, not a TypeError
    assert "postgresql://" in kenning.open_store.__doc__ and "KENNING_HOME" in kenning.open_store.__doc__
    again = kenning.open_store(tmp_path / "s")
    assert [m.content for m in again.list()] == ["keep me"]
    again.close()


@pytest.mark.parametrize("mode", ["keyword", "bm25", "hybrid"])
def test_a_query_of_more_distinct_words_than_a_search_counts_is_searched_by_its_opening(store, mode):
    """70,000 distinct words (a pasted document): the legs' summing step counts a query's posting
    lists in 16 bits and refused ("too many lists"); the first MAX_QUERY_TERMS words are searched."""
    store.write("The pipeline stage for team3 runs nightly", scopes=["x"])
    query = " ".join(f"team{i} pipeline stage {i}" for i in range(35000))  # 70,002 distinct terms
    assert [h.snippet for h in store.search(query, mode=mode).hits] == ["The pipeline stage for team3 runs nightly"]
    from kenning.recall.recall import recall

    assert recall(store, query, all_projects=True, roles=("transcript",))["hits"] == []


def test_every_read_of_a_closed_store_says_it_was_closed(tmp_path):
    """count, stats, settle_uses, conflicts, here and the config / disabled_scopes properties sat
    outside the guard: after close() they raised sqlite3.ProgrammingError ("Cannot operate on a
    closed database"), which no ``except KenningError`` catches."""
    import kenning

    store = kenning.open_store(tmp_path / "s", cwd=tmp_path)
    store.write("keep me", scopes=["x"])
    store.close()
    store.close()  # twice is harmless
    calls = {"count": store.count, "stats": store.stats, "settle_uses": store.settle_uses,
             "conflicts": store.conflicts, "here": store.here,
             "config": lambda: store.config, "disabled_scopes": lambda: store.disabled_scopes}
    for name, call in calls.items():
        with pytest.raises(kenning.KenningError, match=f"^{name}: this store was closed; open it again"):
            call()
    with kenning.open_store(tmp_path / "s") as again:
        assert again.count() == 1 and again.config.default_mode
    with pytest.raises(InvalidInput, match="count: this store was closed"):
        again.count()


def test_events_takes_one_kind_as_a_string_and_refuses_other_shapes(store):
    """kinds="write" was iterated letter by letter (kind IN ('w', 'r', …)) and answered [] although
    the log held writes; an int raised a bare TypeError; a session id of the wrong type matched nothing."""
    store.write("The auth service listens on port 8443", scopes=["x"])
    writes = store.events(kinds=["write"])
    assert len(writes) == 1
    assert store.events(kinds="write") == writes
    with pytest.raises(InvalidInput, match="^kinds must be a list of strings, got int$"):
        store.events(kinds=5)
    with pytest.raises(InvalidInput, match="^kinds must be a list of strings, got an item of type int$"):
        store.events(kinds=["write", 5])
    with pytest.raises(InvalidInput, match="^session must be a session id"):
        store.events(session=5)


@pytest.mark.parametrize("depth", [0, -1, "5", 2.5, True, None])
def test_rank_refuses_a_depth_that_is_not_a_positive_whole_number(store, depth):
    """depth=0 and depth=-1 answered an empty ranking, as if nothing matched; "5" raised a bare
    TypeError ('>' not supported between int and str) wrapped as 'bad argument to rank'."""
    store.write("The auth service listens on port 8443", scopes=["x"])
    assert [h.snippet for h in store.rank("auth port", mode="bm25", depth=1).hits] == ["The auth service listens on port 8443"]
    with pytest.raises(InvalidInput, match=r"^depth must be a whole number from 1 to 1,000,000,000, got "):
        store.rank("auth port", mode="bm25", depth=depth)


@pytest.mark.parametrize("query,message", [
    ({"q": "auth"}, "query must be a string, got dict"),
    (b"auth", "query must be a string, got bytes"),
    (None, "query must be a string, got NoneType"),
    (["auth"], "query must be a string, got list"),
    ("  ", "the query is empty"),
])
def test_a_query_that_is_not_a_string_is_named_as_such(store, query, message):
    """A dict, bytes or a list as the query was refused as 'the query is empty', which sends the
    caller looking for a missing word rather than a wrong type."""
    store.write("The auth service listens on port 8443", scopes=["x"])
    for call in (lambda: store.search(query), lambda: store.rank(query)):
        with pytest.raises(InvalidInput, match=f"^{message}"):
            call()


@pytest.mark.parametrize("scopes", [5, 2.5, object()])
def test_search_names_scopes_of_the_wrong_type(store, scopes):
    """search(scopes=5) raised 'bad argument to search: TypeError: 'int' object is not iterable'."""
    store.write("The auth service listens on port 8443", scopes=["x"])
    for call in (lambda: store.search("auth", scopes=scopes), lambda: store.rank("auth", scopes=scopes)):
        with pytest.raises(InvalidInput, match=r"^scopes must be a list of strings, got "):
            call()
    assert [h.snippet for h in store.search("auth", scopes=[], auto_scope=False).hits] == [
        "The auth service listens on port 8443"]  # an empty list still means every scope
    assert store.search("auth", scopes="y").hits == []  # one string is one scope


@pytest.mark.parametrize("keyword,value,message", [
    ("cwd", 5, "^cwd must be a folder path, got int$"),
    ("clock", 5, "^clock must be a function returning the time"),
    ("session_id", ["a"], "^session_id must be a string, got list$"),
    ("session_id", 5, "^session_id must be a string, got int$"),
])
def test_open_store_refuses_its_other_arguments_at_the_open(tmp_path, keyword, value, message):
    """cwd=5 raised a bare TypeError from pathlib (no KenningError); clock=5 opened and failed at the
    first write; session_id=["a"] failed at the first logged event, session_id=5 was logged as an int."""
    import kenning

    with pytest.raises(InvalidInput, match=message):
        kenning.open_store(tmp_path / "s", **{keyword: value})
    assert not (tmp_path / "s").exists()  # refused before anything was created


@pytest.mark.parametrize("call,flag", [
    (lambda s: s.write("Deploys go through the staging cluster first", scopes=["x"], force="no"), "force"),
    (lambda s: s.configure(persist="no", bm25_k1=1.5), "persist"),
    (lambda s: s.search("deploys staging", auto_scope="false"), "auto_scope"),
    (lambda s: s.search("deploys staging", expand_top=1), "expand_top"),
    (lambda s: s.list(record=None), "record"),
    (lambda s: s.pending_writes(all_sessions="yes"), "all_sessions"),
])
def test_a_flag_that_is_not_true_or_false_is_refused(store, call, flag):
    """force="no" was truthy and wrote a duplicate through the duplicate gate; persist="no" stored
    the setting for every process: a flag given as a string or a number did what it did not say."""
    store.write("Deploys go through the staging cluster first", scopes=["x"])
    before, k1 = _snapshot(store), store.config.bm25_k1
    with pytest.raises(InvalidInput, match=f": {flag} must be True or False, got "):
        call(store)
    assert _snapshot(store) == before and store.config.bm25_k1 == k1
    assert store.write("Deploys go through the staging cluster first", scopes=["x"]).status == "duplicate"


def test_a_call_the_store_is_closed_under_says_the_store_was_closed(tmp_path):
    """close() from another thread (here, deterministically, from the call's own progress callback)
    while a call runs: the call raised sqlite3.ProgrammingError ('Cannot operate on a closed
    database'), no KenningError; it now raises InvalidInput 'this store was closed'."""
    import kenning

    store = kenning.open_store(tmp_path / "s")
    store.write("The cache layer sits in front of the database", scopes=["x"])
    rows = [{"content": f"row {i} about the cache layer and its eviction policy {i}"} for i in range(6)]
    with pytest.raises(kenning.KenningError, match="^import_records: this store was closed; open it again"):
        store.import_records(rows, batch_size=2, progress=lambda done: store.close())
    with pytest.raises(kenning.KenningError, match="^rebuild: this store was closed"):
        again = kenning.open_store(tmp_path / "s")
        again.rebuild("lexical", progress=lambda stage, done, total: again.close())
    with kenning.open_store(tmp_path / "s") as third:
        assert third.check()["ok"]


@pytest.mark.parametrize("method", ["import_records", "import_checked", "import_bulk"])
@pytest.mark.parametrize("records,message", [
    ({"content": "The cache layer sits in front of the database"}, "records must be a list of records, got one dict"),
    ("The cache layer sits in front of the database", "records must be a list \\(or iterable\\) of dicts, got str"),
    (None, "records must be a list \\(or iterable\\) of dicts, got NoneType"),
])
def test_an_import_of_something_not_a_list_of_records_says_so(store, method, records, message):
    """One dict (a single record) and a string were refused as 'record 1: expected a JSON object',
    None as 'bad argument to import_records: TypeError: 'NoneType' object is not iterable'."""
    before = _snapshot(store)
    with pytest.raises(InvalidInput, match=f"^{message}"):
        getattr(store, method)(records)
    with pytest.raises(InvalidInput, match="^progress must be a function"):
        getattr(store, method)([{"content": "The cache layer sits in front of the database"}], progress=5)
    assert _snapshot(store) == before


@pytest.mark.parametrize("method", ["import_records", "import_checked", "import_bulk"])
def test_labels_that_do_not_name_every_record_are_refused_and_nothing_is_written(store, method):
    """import_checked and import_bulk pair records with labels: given 1 label for 3 records they
    committed the first, reported one line and never wrote the other two; import_records raised a
    bare IndexError naming a bad second record."""
    records = [{"content": f"The harbour crane {name} lifts containers at berth {i}", "scopes": ["port"]}
               for i, name in enumerate(["alpha", "bravo", "charlie"])]
    before = _snapshot(store)
    with pytest.raises(InvalidInput, match="^1 labels for 3 records"):
        getattr(store, method)(records, labels=["line 1"])
    with pytest.raises(InvalidInput, match="^record 2: memory text is empty"):
        getattr(store, method)([records[0], {"content": "", "scopes": ["port"]}], labels=["line 1"])
    with pytest.raises(InvalidInput, match="^labels must be a list of strings"):
        getattr(store, method)(records, labels="line 1")
    assert _snapshot(store) == before
    count = store.count()
    getattr(store, method)(records, labels=["line 1", "line 2", "line 3"])
    assert store.count() == count + 3


def test_scopes_given_as_any_iterable_of_strings_are_taken(store):
    """The methods are annotated ``scopes: Iterable[str]`` and mypy accepts a generator, but every
    one refused it at run time ('scopes must be a list of strings, got generator')."""
    one = store.write("The cache layer sits in front of the database", scopes=(s for s in ["projects:a"]))
    assert one.status == "committed" and store.get(one.id).scopes == ["projects:a"]
    store.write("The billing cache sits in front of the ledger", scopes={"projects:b": 1}.keys())
    assert [h.id for h in store.search("cache", scopes=iter(["projects:a"]), auto_scope=False).hits] == [one.id]
    assert [m.id for m in store.list(scopes=map(str, ["projects:a"]), auto_scope=False)] == [one.id]
    assert store.update(one.id, scopes=(s for s in ["projects:c"])).scopes == ["projects:c"]
    for wrong in ({"projects:a": 1}, b"projects:a", 5):
        with pytest.raises(InvalidInput, match="^scopes must be a list of strings, got "):
            store.search("cache", scopes=wrong)


def test_a_pending_id_or_a_reason_of_the_wrong_type_is_named(store):
    """confirm_write(5) raised a several-line pydantic ValidationError wrapped as 'bad argument',
    cancel_write(5) answered not_found as if the id were merely unknown, remove(id, 5) said
    'a removal reason is required' although one was given."""
    kept = store.write("The cache layer sits in front of the database", scopes=["x"]).id
    for call in (lambda: store.confirm_write(5), lambda: store.cancel_write(5)):
        with pytest.raises(InvalidInput, match=r"^pending_id must be a string \(the id a staged write answered\), got int$"):
            call()
    with pytest.raises(InvalidInput, match="^reason must be text, got int$"):
        store.remove(kept, 5)
    assert store.get(kept).content == "The cache layer sits in front of the database"
    assert store.confirm_write("nope").status == "not_found"


def test_links_of_the_wrong_shape_are_named(store):
    """links="x" was read letter by letter and links=[5] (through write or update) answered
    'value: Input should be a valid dictionary or instance of Link', naming no argument."""
    kept = store.write("The cache layer sits in front of the database", scopes=["x"]).id
    calls = (lambda links: store.write("The ledger sits behind the gateway", scopes=["x"], links=links),
             lambda links: store.update(kept, links=links))
    for call in calls:
        with pytest.raises(InvalidInput, match=r"^links must be a list of links \({'kind': ..., 'target': id}\), got str$"):
            call("x")
        with pytest.raises(InvalidInput, match="^links must be a list of links .*, got dict$"):
            call({"kind": "extends", "target": kept})
        with pytest.raises(InvalidInput, match="^links\\[1\\]: Input should be a valid dictionary or instance of Link$"):
            call([{"kind": "extends", "target": kept}, 5])
        with pytest.raises(InvalidInput, match="^links\\[0\\]: kind: Input should be"):
            call([{"kind": "zzz", "target": kept}])
        with pytest.raises(InvalidInput, match="^links\\[0\\]: a link note is at most 500 characters, got 5,000,000$"):
            call([{"kind": "extends", "target": kept, "note": "n" * 5_000_000}])  # was stored, and shown whole
    linked = store.write("The ledger sits behind the gateway", scopes=["x"], links=[{"kind": "extends", "target": kept,
                                                                                     "note": "n" * 500}])
    assert [link.target for link in store.get(linked.id).links] == [kept]


def test_record_use_names_ids_and_excerpt_of_the_wrong_type(store):
    """record_use(5, ...) and record_use(id, ..., excerpt=5) answered "bad argument to record_use:
    TypeError: 'int' object is not iterable", naming neither argument."""
    kept = store.write("The cache layer sits in front of the database", scopes=["x"]).id
    with pytest.raises(InvalidInput, match="^ids must be a memory id or a list of them, got int$"):
        store.record_use(5, "applied")
    with pytest.raises(InvalidInput, match="^excerpt must be text or a list parallel to the ids, got int$"):
        store.record_use(kept, "applied", excerpt=5)
    assert store.events(kinds="outcome") == []
    assert store.record_use(kept, "applied", excerpt="cache layer")["status"] == "recorded"


def test_a_version_that_is_not_text_is_named_not_answered_stale(store):
    """update/verify(version=5) answered "changed since you read it", sending the caller to re-read
    a memory nobody had changed; the number can never be a version."""
    memory = store.write("the auth service listens on port 8443", scopes=["x"])
    for call in (lambda: store.update(memory.id, text="the auth service listens on port 9443", version=5),
                 lambda: store.verify(memory.id, version=5)):
        with pytest.raises(InvalidInput, match="version must be the version text"):
            call()
    shown = store.show(memory.id)
    assert shown["content"] == "the auth service listens on port 8443" and shown["last_verified_at"] is None


def test_a_callers_event_of_the_wrong_shape_is_named_and_not_logged(store):
    before = len(store.events())
    with pytest.raises(InvalidInput, match="memory_id must be a memory id"):
        store.log_event("checked", memory_id=5)
    with pytest.raises(InvalidInput, match="payload must be a dict"):
        store.log_event("checked", payload=[1])
    assert len(store.events()) == before
    store.log_event("checked", memory_id="01ARZ3NDEKTSV4RRFFQ69G5FAV", payload={"by": "me"})
    assert store.events(kinds=["checked"])[-1]["payload"] == {"by": "me"}


@pytest.mark.parametrize("shape", ["objects", "lists"])
def test_metadata_nested_past_the_limit_is_refused_and_the_store_stays_readable(store, shape):
    """Metadata 200 levels deep was committed, and the record could not be read back (its JSON parser
    stops at 200): every list and search of the store failed from then on, and the memory could be
    neither updated nor removed. An update did the same to a good memory."""
    from kenning.memory.gates.limits import MAX_METADATA_DEPTH

    def nested(depth):  # metadata ``depth`` levels deep, the top object counted
        value = 1
        for _ in range(depth - 1):
            value = {"a": value} if shape == "objects" else [value]
        return {"a": value}

    kept = store.write("The blue teapot sits on the second shelf", scopes=["x"])
    deepest = nested(MAX_METADATA_DEPTH)
    assert store.write("The red teapot sits on the top shelf", scopes=["x"], metadata=deepest).status == "committed"
    for depth in (MAX_METADATA_DEPTH + 1, 200, 5000):
        too_deep = nested(depth)
        for call in (lambda: store.write("The green teapot sits on the floor", scopes=["x"], metadata=too_deep),
                     lambda: store.update(kept.id, metadata=too_deep),
                     lambda: store.import_records([{"content": "The green teapot sits on the floor", "scopes": ["x"],
                                                    "metadata": too_deep}])):
            with pytest.raises(InvalidInput, match=f"^(record 1: )?metadata is nested more than {MAX_METADATA_DEPTH} "
                                                   "levels deep"):
                call()
    assert len(store.list(auto_scope=False)) == 2 and store.check()["ok"]
    assert store.get(kept.id).metadata == {}
    assert [h.id for h in store.search("teapot shelf", mode="bm25", auto_scope=False).hits] != []


def test_an_import_record_with_two_different_bodies_is_refused(store):
    """{"content": ..., "text": ...} kept content and dropped text without a word; PATCH refused it."""
    for load in (store.import_records, store.import_checked):
        with pytest.raises(InvalidInput, match="^record 1: give the body as content or as text, not two different ones$"):
            load([{"content": "The ports are 80 and 443", "text": "The hosts are web1 and web2", "scopes": ["t"]}])
    assert store.count() == 0
    store.import_records([{"content": "The ports are 80 and 443", "text": "The ports are 80 and 443", "scopes": ["t"]}])
    assert [m.content for m in store.list(auto_scope=False)] == ["The ports are 80 and 443"]


def test_an_id_that_is_not_text_or_is_very_long_is_named_as_such(store):
    """get({"id": ...}) answered in SQLite's words ("Error binding parameter 1: type 'dict' is not
    supported"), get(5) "no memory has id 5", and a 50,000-character id was echoed whole."""
    mid = store.write("The auth service listens on port 8443", scopes=["x"]).id
    calls = (store.get, store.show, store.restore, store.verify, lambda i: store.remove(i, "why"),
             lambda i: store.update(i, text="The auth service listens on port 9443"))
    for call in calls:
        for bad in ({"id": mid}, [mid], 5, None):
            with pytest.raises(InvalidInput, match=f"^a memory id is text .*, got {type(bad).__name__}$"):
                call(bad)
        with pytest.raises(NotFound) as found:
            call("x" * 50_000)
        assert len(str(found.value)) < 200 and "(50,000 characters)" in str(found.value)
    assert store.get(mid.lower()).id == mid  # a ULID in lower case names the same memory
