"""Memories in the world's scripts, found again through the store by a word they hold: the lexical
legs must see a Hindi, Thai or Turkish word as the word it is, not as its letters."""

import pytest


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_a_hindi_word_finds_only_the_memory_that_holds_it(store, mode):
    delhi = store.write("दिल्ली सर्वर पर बैकअप हर रात चलता है", scopes=["ops"]).id
    store.write("मुंबई के दफ्तर में प्रिंटर खराब हो गया है", scopes=["ops"])  # shares the letter द, not the word
    hits = store.search("दिल्ली", mode=mode).hits
    assert [h.id for h in hits] == [delhi] and hits[0].match_terms == ["दिल्ली"]


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_a_one_letter_chinese_word_is_found_inside_a_sentence(store, mode):
    cat = store.write("我的猫叫小白，每天早上七点喂它", scopes=["ops"]).id
    drug = store.write("用户对青霉素过敏，不能用这种药", scopes=["ops"]).id
    assert [h.id for h in store.search("猫", mode=mode).hits] == [cat]
    hits = store.search("药", mode=mode).hits
    assert [h.id for h in hits] == [drug] and hits[0].match_terms == ["药"]


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_a_thai_word_is_found_inside_its_unspaced_sentence(store, mode):
    bangkok = store.write("เซิร์ฟเวอร์หลักอยู่ที่กรุงเทพ", scopes=["ops"]).id
    store.write("เครื่องพิมพ์ในสำนักงานเชียงใหม่เสียแล้ว", scopes=["ops"])
    assert [h.id for h in store.search("กรุงเทพ", mode=mode).hits] == [bangkok]


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_pointed_arabic_and_hebrew_are_found_by_the_plain_spelling(store, mode):
    arabic = store.write("الخَادِمُ يَعْمَلُ عَلَى المَنْفَذِ الرَّئِيسِيِّ", scopes=["ops"]).id
    hebrew = store.write("הַשָּׁרָת הָרָאשִׁי נִמְצָא בְּפְרַנְקְפוּרְט", scopes=["ops"]).id
    assert [h.id for h in store.search("الخادم", mode=mode).hits] == [arabic]
    assert [h.id for h in store.search("השרת", mode=mode).hits] == [hebrew]


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_a_port_written_in_arabic_indic_digits_is_found_by_its_number(store, mode):
    port = store.write("خادم قاعدة البيانات يعمل على المنفذ ٥٤٣٢", scopes=["ops"]).id
    store.write("The cache listens on port 6379", scopes=["ops"])
    assert [h.id for h in store.search("5432", mode=mode).hits] == [port]


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_a_matched_german_word_is_shown_with_its_sharp_s(store, mode):
    """``match_terms`` shows the words as the query writes them, in lower case: "Fußgänger" was shown
    "fussgänger", the casefold the index compares, a spelling neither the query nor the memory holds."""
    store.write("Die Straße bleibt für Fußgänger bis Montag gesperrt", scopes=["ops"])
    [hit] = store.search("STRASSE Fußgänger", mode=mode).hits
    assert hit.match_terms == ["strasse", "fußgänger"]


@pytest.mark.parametrize("query", ["istanbul", "ISTANBUL", "ışık", "işik"])
def test_a_turkish_word_is_found_whatever_its_dotted_or_dotless_i(store, query):
    office = store.write("İstanbul ofisindeki yazıcının adı IŞIK", scopes=["ops"]).id
    assert [h.id for h in store.search(query, mode="bm25").hits] == [office]


def test_a_hit_quotes_full_width_characters_as_the_memory_writes_them(store):
    store.write("注文番号はＡＢＣ－１２３です：倉庫は大阪", scopes=["ops"])
    hit = store.search("ABC", mode="bm25").hits[0]
    assert hit.snippet == "注文番号はＡＢＣ－１２３です：倉庫は大阪" and hit.match_terms == ["abc"]


def test_a_removal_reason_and_a_scope_may_hold_an_emoji_sequence_or_a_persian_word(store):
    """Joiners (👩‍💻, Persian's ZWNJ) and right-to-left marks are text, not control characters."""
    mid = store.write("The pairing rota lives in the team wiki", scopes=["team:👩‍💻"]).id
    assert [h.id for h in store.search("pairing rota", scopes=["team:👩‍💻"], mode="bm25").hits] == [mid]
    tomb = store.remove(mid, reason="دیگر لازم نیست، می‌خواهم پاکش کنم 👩‍💻")
    assert tomb.reason == "دیگر لازم نیست، می‌خواهم پاکش کنم 👩‍💻"


@pytest.mark.parametrize("mode", ["keyword", "bm25"])
def test_a_pasted_dump_is_found_by_itself_and_indexed_by_its_head(store, mode, tmp_path):
    """A memory holding a 200 KB hex dump (one word) and one imported with another: each is found by
    its dump as a query, and no index key is longer than a token may be."""
    from kenning.retrieval.text import MAX_TOKEN_CHARS

    dump, other = "deadbeef" * 25_000, "cafebabe" * 25_000
    written = store.write(f"The crash left this core: {dump}", scopes=["ops"]).id
    [imported] = store.import_records([{"content": f"Another crash core: {other}", "scopes": ["ops"]}])
    assert [h.id for h in store.search(dump, mode=mode).hits] == [written]
    assert [h.id for h in store.search(other, mode=mode).hits] == [imported]
    longest = store._s.db.read(lambda c: c.execute(
        "SELECT MAX(LENGTH(term)) FROM (SELECT term FROM lex_segments UNION ALL SELECT term FROM lex_delta)").fetchone())
    assert longest[0] <= MAX_TOKEN_CHARS


def test_a_scope_written_decomposed_is_the_scope_it_looks_like(tmp_path):
    """macOS HFS+ stores a folder name decomposed, so the default scope of a repository "café" was
    "cafe" + U+0301, which no filter typed "café" matched. Scopes are composed (NFC) when given, and
    a store holding decomposed ones (an older kenning's) is relabelled once when opened."""
    import json
    import unicodedata

    import kenning
    from kenning.memory.episodes import Episodes
    from kenning.memory.scopes import COMPOSED_META
    from kenning.store.models import Memory

    composed, decomposed = "projects:café", unicodedata.normalize("NFD", "projects:café")
    assert composed != decomposed
    with kenning.open_store(tmp_path / "s") as store:
        mid = store.write("The bistro menu changes on Mondays", scopes=[decomposed], force=True).id
        assert store.show(mid)["scopes"] == [composed]
        assert [h.id for h in store.search("bistro menu", mode="bm25", scopes=[decomposed]).hits] == [mid]
        Episodes(store).write("tried the new menu layout", scopes=[decomposed])
        with store._s.db.transaction() as c:  # as an older kenning stored them
            record = c.execute("SELECT record FROM memories WHERE id = ?", (mid,)).fetchone()[0]
            old = Memory.from_record(record, mid).model_copy(update={"scopes": [decomposed]}).model_dump_json()
            c.execute("UPDATE memories SET record = ? WHERE id = ?", (old, mid))
            c.execute("UPDATE memory_scopes SET scope = ?", (decomposed,))
            c.execute("UPDATE episodes SET scopes = ?", (json.dumps([decomposed]),))
            c.execute("DELETE FROM meta WHERE key = ?", (COMPOSED_META,))
    with kenning.open_store(tmp_path / "s") as store:
        assert [h.id for h in store.search("bistro menu", mode="bm25", scopes=[composed]).hits] == [mid]
        assert store.show(mid)["scopes"] == [composed]
        assert store.scope_overview(auto_scope=False)["scopes"] == {composed: 1}
        assert [e.scopes for e in Episodes(store).search(scopes=[composed])] == [[composed]]
