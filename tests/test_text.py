import pytest

from kenning.retrieval import text


def test_words_are_snowball_stemmed_so_word_forms_meet():
    assert text.tokenize("queries query indexes indexing connection connected running runs") == [
        "queri", "queri", "index", "index", "connect", "connect", "run", "run"]
    assert text.tokenize("news class status") == ["news", "class", "status"]
    assert text.stem("generously") == "generous"


def test_technical_tokens_stay_whole():
    """A technical token stays whole; a document also indexes the names a compound joins, after it."""
    assert text.tokenize("Python 3.12.1 with C++ and node.js, C# too.") == [
        "python", "3.12.1", "with", "c++", "and", "node.js", "c#", "too"]
    assert text.tokenize("snake_case_name end.") == ["snake_case_name", "snake", "case", "name", "end"]
    assert text.tokenize("snake_case_name end.", compounds=False) == ["snake_case_name", "end"]
    assert text.query_tokens("snake_case_name end") == ["snake_case_name", "end"]


def test_nfkc_and_casefold():
    assert text.tokenize("Ｆｕｌｌ ﬁle STRASSE Straße") == ["full", "file", "strass", "strass"]


def test_cjk_runs_become_overlapping_bigrams_and_in_a_document_letters_too():
    """A query's run is its bigrams; a document's adds each letter, so a one-letter word (猫, cat)
    finds the texts that hold it inside a run."""
    assert text.query_tokens("東京都に行く") == ["東京", "京都", "都に", "に行", "行く"]
    assert text.tokenize("東京都に行く") == ["東", "東京", "京", "京都", "都", "都に", "に", "に行", "行", "行く", "く"]
    assert text.tokenize("猫") == text.query_tokens("猫") == ["猫"]
    assert text.tokenize("API 東京") == ["api", "東", "東京", "京"]
    assert text.content_terms("我的猫叫小白") == {"我的", "的猫", "猫叫", "叫小", "小白"}  # what duplicates compare
    assert text.match_terms(text.query_terms("猫"), "我的猫叫小白") == ["猫"]


def test_query_stopwords_dropped_unless_nothing_is_left():
    assert text.query_tokens("what is the port of the auth service") == ["port", "auth", "servic"]
    assert text.query_tokens("the and of") == ["the", "and", "of"]
    assert text.tokenize("the port") == ["the", "port"]  # documents keep stopwords
    # judged before stemming: "does" is a stopword even though its stem "doe" is not
    assert text.query_tokens("does the deploy") == ["deploy"]


def test_query_tokens_keep_repeats_and_terms_do_not():
    assert text.query_tokens("port port auth ports") == ["port", "port", "auth", "port"]
    assert text.query_terms("port port auth ports") == ["port", "auth"]


def test_surface_forms_show_what_the_query_wrote():
    assert text.surface_forms("Running queries run") == {"run": "running", "queri": "queries"}


def test_phrase_matching_ignores_case_and_spacing():
    assert text.contains_phrase("The  Auth\nService listens", "auth service")
    assert not text.contains_phrase("service auth", "auth service")


def test_snippet_is_bounded_and_centred_on_the_densest_cluster():
    body = "filler " * 80 + "the auth service listens on port 8443 " + "padding " * 80
    snip = text.snippet(body, ["auth", "port"])
    assert len(snip) <= 240
    assert "auth service listens on port 8443" in snip
    assert snip.startswith("…") and snip.endswith("…")
    assert text.snippet("short text", ["x"]) == "short text"


def test_fingerprint_is_stable_and_follows_the_token_stream(monkeypatch):
    """Same tokenizer, same mark; a changed token stream (version, stemming, stopwords) a new one, so
    stored indexes are rebuilt."""
    base = text.fingerprint()
    assert base == text.fingerprint() and len(base) == 16
    monkeypatch.setattr(text, "TOKENIZER_VERSION", text.TOKENIZER_VERSION + "-next")
    assert text.fingerprint() != base
    monkeypatch.undo()
    monkeypatch.setattr(text, "STOPWORDS", text.STOPWORDS | {"queries"})
    assert text.fingerprint() != base
    monkeypatch.undo()
    real = text.tokenize
    monkeypatch.setattr(text, "tokenize", lambda s: [t.upper() for t in real(s)])
    assert text.fingerprint() != base
    monkeypatch.undo()
    assert text.fingerprint() == base


@pytest.mark.parametrize("word, joined", [
    ("KESTREL_DB_POOL", ["kestrel", "db", "pool"]), ("tenant_id", ["tenant", "id"]),
    ("getUserById", ["get", "user", "by", "id"]), ("useHTTPClient", ["use", "http", "client"]),
    ("__init__.py", ["init", "py"]), ("my_module.py", ["my", "module.py"]), ("über_wert", ["über", "wert"]),
    # a part needs two letters; a capitalised word is a name; a dotted word stays whole
    ("x86_64", []), ("t_0007", []), ("kDa", []), ("PostgreSQL", []), ("TideDesk", []), ("node.js", []),
    ("React.useEffect", []), ("v1.2.3", []), ("snake", []),
])
def test_a_compound_identifier_joins_the_words_a_document_indexes_after_it(word, joined):
    tokens = text.tokenize(f"see {word} now")
    assert tokens == ["see", text.tokenize(word, compounds=False)[0], *[text.stem(w.casefold()) for w in joined], "now"]
    assert [word[s:e] for _, s, e in text.pieces(word)] == [  # spans point at the words as written
        word[word.casefold().find(w.casefold()):][:len(w)] for w in joined]
    assert text.query_tokens(f"see {word}") == ["see", text.tokenize(word, compounds=False)[0]]


def test_a_pasted_dump_holding_underscores_is_no_identifier():
    """A base64url blob holds underscores; cut to its head like any long word, it joins no words:
    otherwise a megabyte of it indexed some 25,000 random ones."""
    import random
    import string

    rng = random.Random(1)
    dump = "_".join("".join(rng.choice(string.ascii_letters) for _ in range(12)) for _ in range(20_000))
    assert text.tokenize(f"core: {dump}") == ["core", dump[: text.MAX_TOKEN_CHARS].lower()]
    assert text.pieces("kestrel_db_pool_" * 8) != () and text.pieces("kestrel_db_pool_" * 9) == ()


def test_a_snippet_and_match_terms_see_the_words_inside_an_identifier():
    body = "filler " * 60 + "the pool size comes from KESTREL_DB_POOL at start " + "padding " * 60
    assert text.match_terms(["db", "pool"], body) == ["db", "pool"]
    assert "KESTREL_DB_POOL" in text.snippet(body, ["db"])


def test_snippet_of_a_matched_token_longer_than_the_snippet():
    """A matched token wider than the snippet (a hash, a minified line) is cut, never an IndexError."""
    for size in (238, 239, 240, 500, 5000):
        token = "a" * size
        body = f"start {token} end " + "filler words " * 40
        out = text.snippet(body, [token])
        assert 0 < len(out) <= 240


def _general_road(value: str) -> list[str]:
    """tokenize through token_spans (NFKC, the CJK-aware regex): the road non-ASCII text takes."""
    return [token for token, _, _ in text.token_spans(value)]


def test_ascii_text_takes_a_shorter_road_to_the_same_tokens():
    from hypothesis import given, settings, strategies as st

    ascii_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=60)
    samples = ["Queries indexes C++ node.js 3.12.1 c# snake_case end. Matches caches.", "a..b ++c d#e _x_ 1.2.",
               "Species series news THIS Classes boxes buzzes wishes"]

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(ascii_text)
    def same(value):
        assert text.tokenize(value) == _general_road(value)

    for value in samples:
        assert text.tokenize(value) == _general_road(value)
    same()


def test_the_lower_case_word_pattern_finds_what_the_ascii_one_finds():
    from hypothesis import given, settings, strategies as st

    dense = st.text(alphabet="aZ09_.+#-:;,!? \t\n", max_size=40)  # the characters the two patterns treat apart

    @settings(max_examples=500, deadline=None, derandomize=True)
    @given(st.one_of(dense, st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=60)))
    def same(value):
        low = value.lower()
        assert text._LOWER_ASCII_WORD_RE.findall(low) == text._ASCII_WORD_RE.findall(low)

    same()


def test_fingerprint_follows_the_token_stream(monkeypatch):
    current = text.fingerprint()
    monkeypatch.setattr(text, "stem", lambda word: word)  # the stream without stemming
    text.clear_word_caches()
    try:
        assert text.fingerprint() != current
    finally:
        monkeypatch.undo()
        text.clear_word_caches()
    assert text.fingerprint() == current


def test_snippet_finds_stemmed_forms():
    body = "filler " * 80 + "the connection pool was exhausted " + "padding " * 80
    assert "connection pool" in text.snippet(body, text.query_terms("connected pools"))


def test_cjk_spans_point_at_their_bigrams():
    assert text.token_spans("東京都") == [("東", 0, 1), ("東京", 0, 2), ("京", 1, 2), ("京都", 1, 3), ("都", 2, 3)]
    assert text.token_spans("猫 API") == [("猫", 0, 1), ("api", 2, 5)]
    assert text.token_spans("ＡＢ 東京") == [("ab", 0, 2), ("東", 3, 4), ("東京", 3, 5), ("京", 4, 5)]  # spans in the NFKC text


def test_a_word_keeps_its_combining_marks_and_format_characters():
    """A mark (a Devanagari vowel sign, an Arabic vowel point) or a format character (soft hyphen,
    ZWNJ) belongs to its word: a Hindi word is one token, not its consonants one by one."""
    assert text.tokenize("दिल्ली में सर्वर") == ["दिल्ली", "में", "सर्वर"]
    assert text.token_spans("दिल्ली x") == [("दिल्ली", 0, 6), ("x", 7, 8)]
    assert text.tokenize("con\u00adnection") == ["connect"] and text.tokenize("می\u200cخواهم") == ["میخواهم"]
    assert text.tokenize("max\u200bconnections") == ["max", "connect"]  # a zero-width space breaks (UAX #29)


def test_scripts_without_spaces_become_bigrams_of_letters_with_their_marks():
    assert text.token_spans("กรุงเทพ") == [("ก", 0, 1), ("กรุ", 0, 3), ("รุ", 1, 3), ("รุง", 1, 4), ("ง", 3, 4),
                                           ("งเ", 3, 5), ("เ", 4, 5), ("เท", 4, 6), ("ท", 5, 6), ("ทพ", 5, 7), ("พ", 6, 7)]
    assert text.query_tokens("กรุงเทพ") == ["กรุ", "รุง", "งเ", "เท", "ทพ"]
    assert set(text.query_tokens("กรุงเทพ")) <= set(text.tokenize("เซิร์ฟเวอร์หลักอยู่ที่กรุงเทพ"))
    assert text.query_tokens("葛\U000E0100城") == ["葛城"]  # a variation selector picks a glyph, not a letter


def test_arabic_and_hebrew_words_meet_with_or_without_their_vowel_points():
    assert text.tokenize("الخَادِمُ يَعْمَلُ") == text.tokenize("الخادم يعمل") == ["الخادم", "يعمل"]
    assert text.tokenize("عـــربي") == ["عربي"]  # the tatweel only stretches the word
    assert text.tokenize("הַשָּׁרָת הָרָאשִׁי") == text.tokenize("השרת הראשי") == ["השרת", "הראשי"]


def test_a_digit_of_another_script_is_its_ascii_digit():
    assert text.tokenize("المنفذ ٥٤٣٢ پورت ۸۰۸۰ सर्वर १२३ v٣.١٢") == ["المنفذ", "5432", "پورت", "8080", "सर्वर", "123", "v3.12"]


def test_the_character_tables_are_bounded(monkeypatch):
    """The translate tables remember each character once; text of random code points must not grow
    them without end (a long-running server)."""
    monkeypatch.setattr(text, "_TABLE_BOUND", 8)
    for table in (text._JOINING, text._SPELLING):
        table.clear()
        "".join(map(chr, range(0x4E00, 0x4E40))).translate(table)
        assert 0 < len(table) <= 8
        table.clear()


def test_a_turkish_i_meets_its_other_case():
    assert text.tokenize("İstanbul IŞIK") == text.tokenize("istanbul ışık") == ["istanbul", "işik"]


def test_a_snippet_quotes_the_text_as_written_not_its_nfkc_form():
    """Matching runs on the NFKC form; the snippet shows the text's own characters, found where the
    match lies even where normalising changed lengths (a half-width kana is half a katakana)."""
    import unicodedata

    assert text.snippet("Order ＡＢＣ，ﬁled  today", ["abc"]) == "Order ＡＢＣ，ﬁled today"
    body = "填充的句子，" * 50 + "关键词：柏林机房。" + "另一个句子，" * 50
    snip = text.snippet(body, ["柏林"])
    assert "关键词：柏林机房" in snip and snip.strip("…") in body
    kana = "ｶﾞ" * 200 + "柏林" + "ｶﾞ" * 200  # one unspaced word: its NFKC form is 200 characters shorter before 柏林
    assert "柏林" in text.snippet(kana, ["柏林"])
    decomposed = unicodedata.normalize("NFD", "Ünïcödé fïllér " * 30 + "kümmelbrot " + "ëxtrà " * 30)
    snip = text.snippet(decomposed, text.query_terms("kümmelbrot"))
    assert unicodedata.normalize("NFD", "kümmelbrot") in snip and snip.strip("…") in decomposed


def test_each_thread_makes_its_own_stemmer_once():
    """A PyStemmer object is not thread-safe: a new thread makes one on first use and keeps it."""
    import threading

    seen = []

    def work():
        assert text.stem("running") == "run"
        first = text._local.stemmer
        assert text.stem("connected") == "connect"
        seen.append(first is text._local.stemmer)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [True]


def test_the_ascii_word_cache_is_consulted_and_bounded(monkeypatch):
    monkeypatch.setattr(text, "_FOLDED", {"zebra": "seen-before"})
    assert text.tokenize("zebra") == ["seen-before"]  # a known word is looked up, not stemmed again
    assert text.tokenize("zebras running") == ["zebra", "run"] and len(text._FOLDED) == 3
    monkeypatch.setattr(text, "_FOLDED", {f"w{i}": "x" for i in range((1 << 18) - 1)})
    assert text.tokenize("quagga") == ["quagga"] and len(text._FOLDED) == 1 << 18  # below the bound: kept
    assert text.tokenize("okapis") == ["okapi"] and text._FOLDED == {"okapis": "okapi"}  # at the bound: cleared


def test_normalize_and_match_terms():
    assert text.normalize("  Straße\n  ÜBER\tAlles ") == "strasse über alles"
    assert text.match_terms(["port", "auth", "zzz"], "The auth service PORTS") == ["port", "auth"]
    assert text.match_terms([], "anything") == []


def test_fingerprint_is_pinned():
    """Every store rebuilds its index when this changes: change it only with TOKENIZER_VERSION."""
    assert text.fingerprint() == "46fcd78c1ce48894"


# Snippets of texts made of one-letter words ("a a a ... key b b"): spaces sit at every other
# character, so any off-by-one in the window or the cut shows in the result.
def test_snippet_without_a_match_is_the_head_cut_at_a_space():
    body = " ".join(["x"] * 200)  # 399 characters
    assert text.snippet(body, ["zzz"]) == " ".join(["x"] * 119) + "…"  # 237 characters, a space at 237


def test_snippet_is_centred_on_its_match():
    body = "a " * 200 + "key" + " b" * 200  # key at 400..403 of 803
    # centre 401, start 401 - 119 = 282 starts a word (a space before it) and stays; end 520 is mid-word
    # and goes back to the space at 519
    assert text.snippet(body, ["key"]) == "…" + "a " * 59 + "key" + " b" * 58 + "…"


def test_a_text_exactly_as_long_as_a_snippet_is_its_own_snippet():
    assert text.snippet("a" * 240, ["zzz"]) == "a" * 240


def test_a_cluster_exactly_as_wide_as_the_window_keeps_both_ends():
    """alpha ... beta spanning the 238 characters between the ellipses: both stay whole (a window edge
    on a word boundary is not moved past the word); two more characters and they no longer fit."""
    fits = "x " * 150 + "alpha" + " y" * 114 + " beta" + " z" * 150
    assert text.snippet(fits, ["alpha", "beta"]) == "…alpha" + " y" * 114 + " beta…"
    wider = "x " * 150 + "alpha" + " y" * 115 + " beta" + " z" * 150
    snip = text.snippet(wider, ["alpha", "beta"])
    assert "alpha" in snip and "beta" not in snip  # the first of two equal clusters


def test_snippet_near_either_end_keeps_that_end():
    tail = "a " * 300 + "key"  # 603 characters: the window is the last 238, cut after the space at 365
    assert text.snippet(tail, ["key"]) == "…" + "a " * 117 + "key"
    head = "key" + " b" * 300
    assert text.snippet(head, ["key"]) == "key" + " b" * 117 + "…"


def test_snippet_prefers_more_distinct_terms_then_the_first_cluster():
    far = " a" * 300
    body = "alpha" + far + " beta" + far + " alpha beta" + far
    snip = text.snippet(body, ["alpha", "beta"])
    assert "alpha beta" in snip and not snip.startswith("alpha")
    twice = "alpha" + far + " alpha" + far
    assert text.snippet(twice, ["alpha"]).startswith("alpha a a")  # equal clusters: the first wins


def test_query_tokens_of_non_ascii_text_drop_stopwords_unless_nothing_is_left():
    assert text.query_tokens("Ｔｈｅ Ｆｕｌｌ 東京 of") == ["full", "東京"]
    assert text.query_tokens("Ｔｈｅ ｏｆ") == ["the", "of"]  # only stopwords: they are the query


def test_written_as_names_finds_capitals_digits_and_joined_words_but_not_plain_lowercase_words():
    from kenning.retrieval.text import query_terms, written_as_names
    query = "Did Yuki Tanaka move bramble-infra to us7 and change the interval?"
    assert written_as_names(query, query_terms(query)) == ["yuki", "tanaka", "brambl", "infra", "us7"]
    assert written_as_names(query, ["interv", "move"]) == []
    assert written_as_names("Zürich straße", query_terms("Zürich straße")) == ["zürich"]
    assert written_as_names("mail me@host", ["host"]) == ["host"]
    assert written_as_names("anything", []) == []


def test_a_hyphenated_phrase_joined_through_a_stopword_is_english_not_an_identifier():
    from kenning.retrieval.text import query_terms, written_as_names
    for query in ("How accurate is our speech-to-text?", "end-of-day report", "who is on-call", "state-of-the-art"):
        assert written_as_names(query, query_terms(query)) == [], query
    # identifiers join names; a capital or a digit still marks a name; a chain that goes on through / is one
    assert written_as_names("sift-indexer lag", query_terms("sift-indexer lag")) == ["sift", "index"]
    assert written_as_names("Speech-to-Text API", query_terms("Speech-to-Text API")) == ["speech", "text", "api"]
    assert written_as_names("out-of-band/x docs", ["band", "x"]) == ["band", "x"]


def test_a_pasted_query_of_many_hyphenated_words_reads_its_phrases_once():
    """Each joined word of a query looked through every hyphenated phrase of the query again: a
    100 KB query of 14,000 "w1-x" words (HTTP takes a query of any length) took 50 s to label."""
    from kenning.retrieval.text import search_tokens, written_as_names
    query = " ".join(f"w{i}-x" for i in range(40_000)) + " speech-to-text"  # 57 s for a third of it
    names = written_as_names(query, search_tokens(query))
    assert names[:3] == ["w0", "x", "w1"] and len(names) == 40_001 and "speech" not in names


def test_only_stopwords_is_a_query_with_no_content_word():
    from kenning.retrieval.text import only_stopwords
    assert only_stopwords("the") and only_stopwords("What is it?")
    assert not only_stopwords("the port") and not only_stopwords("") and not only_stopwords("???")


def test_a_search_writes_out_a_stopwords_contraction_and_keeps_a_possessive():
    """The apostrophe splits "what's" into "what" and "s": the stopword went, the piece stayed a
    query term that any "it's" or "doesn't" of a text holds (eval/baselines/README.md, "Thirteenth
    pass"). A search writes the contraction out; a possessive keeps its piece, and a stored text's
    own content terms (``query_tokens``) are unchanged."""
    assert text.search_tokens("What's my usual coffee?") == ["usual", "coffe"]
    assert text.query_tokens("What's my usual coffee?") == ["s", "usual", "coffe"]
    assert text.search_tokens("Who can't drink cow's milk?") == ["drink", "cow", "s", "milk"]
    assert text.search_tokens("Let's ship Nate's fix") == ["let", "s", "ship", "nate", "s", "fix"]
    assert text.uncontract("I'm sure they've said it won't") == "I sure they said it will not"
    assert text.uncontract("Doesn\u2019t it? Isn't it?") == "Does not it? Is not it?"
    assert text.uncontract("no apostrophe here") == "no apostrophe here"
    assert text.search_tokens("what's that") == ["what", "that"]  # stopwords alone: they are the query
    assert text.only_stopwords("what's that") and text.only_stopwords("Isn't it?")
    assert not text.only_stopwords("Nate's")


def test_a_hit_need_not_hold_the_piece_of_a_contraction(tmp_path):
    """Without the vector leg a ``high`` needs every query term: "What's" used to make "s" one of them."""
    import kenning
    with kenning.open_store(tmp_path / "s") as store:
        store.write("The Lisbon office is on the third floor, next to the lift.", scopes=["t"])
        hit = store.search("What's the floor of the Lisbon office?", mode="bm25", auto_scope=False).hits[0]
    assert hit.match_terms == ["floor", "lisbon", "office"] and hit.relevance == "high"


def test_a_word_longer_than_a_token_is_cut_alike_in_documents_and_queries():
    """A pasted hex dump is one word: its token is its first MAX_TOKEN_CHARS characters (a megabyte
    token was a megabyte index key), in every road the tokens take, so the dump still finds itself."""
    dump = "9f" * 500_000  # 1 MB, one word
    cut = dump[: text.MAX_TOKEN_CHARS]
    assert text.tokenize(f"core dump {dump} attached") == ["core", "dump", cut, "attach"]
    assert text.tokenize(f"core dump {dump} attaché")[:3] == ["core", "dump", cut]  # the non-ASCII road
    assert cut in text.query_tokens(dump) and text.tokens_and_terms(dump) == ([cut], [cut])
    assert [t for t, _, _ in text.token_spans(dump)] == [cut]
    long_word = "x" * 300  # alphabetic: not stemmed once cut
    assert text.tokenize(long_word) == ["x" * text.MAX_TOKEN_CHARS]
