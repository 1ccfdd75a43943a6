"""Query words the index lacks, respelt by a slip of the finger (retrieval/spelling.py), and what that
does to a search through a real store: the misspelt query finds its memory in the lexical legs, shows
the respelt word in ``match_terms``, and a word the store holds as written is never touched."""

from __future__ import annotations

import pytest

import kenning
from kenning.retrieval import spelling

TERRAFORM = "Terraform 1.7.4 manages the AWS accounts; state sits in S3 with DynamoDB locking."
BASTION = "The SSH bastion is bastion.fernbrook.internal on port 2222."
MIND = "Keep in mind that the office closes at six."


def counts(words):
    return lambda terms: {t: words.get(t, 0) for t in terms}


def test_slips_are_swaps_and_left_out_letters_only():
    assert "port" in spelling.slips("prot") and "terraform" in spelling.slips("terrafrom")
    assert "password" in spelling.slips("pasword") and "listen" in spelling.slips("lisen")
    assert "mind" not in spelling.slips("find")  # a substitution: one real word into another
    assert "always" not in spelling.slips("away")  # too short for a left-out letter
    assert "prot" not in spelling.slips("prot")
    assert "eleven" in spelling.slips("eelven")  # a swap right after a doubled letter
    # a letter put back anywhere but before the first: second, last but one, last
    assert "password" in spelling.slips("pssword") and "password" in spelling.slips("passwrd")
    assert "password" in spelling.slips("passwor")
    assert "password" not in spelling.slips("assword")  # a first letter left out is another word's start


def test_the_longest_words_and_versions_looked_at():
    longest = "a" * spelling.MAX_LENGTH
    assert spelling.examined([longest, longest + "a"]) == [longest]
    version = "1." * (spelling.MAX_LENGTH // 2 - 1) + "10"  # a dotted version of exactly MAX_LENGTH characters
    assert len(version) == spelling.MAX_LENGTH and spelling.other_writing(version) == "v" + version
    assert spelling.other_writing(version + ".1") is None


def test_only_an_unindexed_token_is_corrected_to_the_most_common_slip():
    df = counts({"port": 5, "terraform": 2, "state": 3, "interval": 1, "internal": 4, "trap": 1, "tarp": 3})
    assert spelling.corrections(["terrafrom", "state", "prot"], df, {}) == {"terrafrom": "terraform", "prot": "port"}
    assert spelling.corrections(["interval"], df, {}) == {}  # indexed as written: never second-guessed
    assert spelling.corrections(["tapr"], df, {}) == {"tapr": "tarp"}
    # two slips the store holds: the one more documents hold, whichever comes first in order
    assert spelling.corrections(["tset"], counts({"stet": 3, "test": 1}), {}) == {"tset": "stet"}
    assert spelling.corrections(["tset"], counts({"stet": 1, "test": 3}), {}) == {"tset": "test"}
    assert spelling.corrections(["abc", "3.12", "zzzz"], df, {}) == {}  # short, not a word, no indexed slip


def test_the_doc_freqs_it_asks_are_the_query_terms_then_the_candidates_of_the_unseen():
    asked = []

    def df(terms):
        asked.append(list(terms))
        return {t: {"port": 1}.get(t, 0) for t in terms}

    assert spelling.corrections(["prot", "prot", "host"], df, {}) == {"prot": "port"}
    assert asked[0] == ["prot", "host"] and "port" in asked[1] and len(asked) == 2
    asked.clear()
    assert spelling.corrections(["port"], df, {}) == {} and asked == [["port"]]


def test_respelt_keeps_the_written_ending():
    assert spelling.respelt("relase", "relas", "releas") == "release"
    assert spelling.respelt("many", "mani", "main") == "main"
    assert spelling.respelt("secruity", "secruiti", "secur") == "security"  # the swap undone in the word


def test_a_respelt_word_shown_is_one_the_hit_holds(tmp_path):
    """The respelt word ``match_terms`` shows tokenizes as the word the hit holds: "notifiactions"
    (stem "notifiact", fixed to "notif") was shown as "notifions", whose stem "notifion" no memory
    holds; it is now the word the query meant, and "libary" no longer shows the stem "librari"."""
    from kenning.retrieval.text import tokenize

    assert spelling.respelt("notifiactions", "notifiact", "notif") == "notifications"
    assert spelling.respelt("libary", "libari", "librari") == "library"
    with kenning.open_store(tmp_path / "s") as store:
        store.write("On 2024-09-01 the notifications migration moved requests to the new cluster", scopes=["x"])
        store.write("The library keeps its catalogue in Postgres", scopes=["x"])
        for query, shown in (("notifiactions migration", "notifications"), ("libary catalogue", "library")):
            for mode in ("keyword", "bm25"):
                [hit] = store.search(query, mode=mode, auto_scope=False).hits
                held = set(tokenize(store.get(hit.id).content))
                assert shown in hit.match_terms and all(set(tokenize(t)) <= held for t in hit.match_terms)


def test_the_word_meant_is_a_slip_of_the_written_word_not_the_stem():
    """``written_fix`` finds the word the query meant from the word as written ("libary" -> "library",
    not the stem "librari"), and nothing when no slip of the word is the fix."""
    assert spelling.written_fix("libary", "libari", "librari") == "library"
    assert spelling.written_fix("kenelbook", "kenelbook", "kennelbook") == "kennelbook"
    assert spelling.written_fix("secruity", "secruiti", "secur") == "security"
    assert spelling.written_fix("many", "mani", "main") is None  # no slip of "many" is "main"
    assert spelling.written_fix("port", "port", "port") is None


def test_the_vector_leg_reads_the_respelt_words_the_model_does_not_know_as_written():
    """``for_the_model``: a word the model reads as pieces is respelt as meant, in every place the
    query writes it and with its capital; a word the model knows whole ("moon") is a real word the
    store lacks, left as written whatever the lexicon made of it."""
    known = {"moon", "many", "port", "production"}.__contains__
    written = {"lantren": "lantren", "prodction": "prodction", "moon": "moon", "port": "port"}
    fixed = {"lantren": "lantern", "moon": "mono"}
    assert spelling.for_the_model("Lantren prodction port", written, fixed, known) == "Lantern prodction port"
    assert spelling.for_the_model("How far is the Moon?", written, fixed, known) == "How far is the Moon?"
    assert spelling.for_the_model("lantren, LANTREN and lantrens", written, fixed, known) == "lantern, Lantern and lantrens"
    assert spelling.for_the_model("nothing fixed", {}, {}, known) == "nothing fixed"


def test_a_swap_the_stemmer_hides_is_undone_in_the_word_as_written():
    """The real Snowball stemmer turns "kilbary" into "kilbari" and "secruity" into "secruiti"; no
    swap of those stems is a stored word, a swap of the written word is."""
    df = counts({"kilbray": 3, "secur": 2, "festiv": 1})
    assert "kilbray" not in spelling.slips("kilbari")
    assert spelling.corrections(["kilbari", "festiv"], df, {}) == {}  # without the written words
    assert spelling.corrections(["kilbari", "secruiti", "festiv"], df,
                                {"kilbari": "kilbary", "secruiti": "secruity"}) == {"kilbari": "kilbray", "secruiti": "secur"}
    assert spelling.written_swaps("kilbray", "kilbray") == []  # the stem is the word: its swaps are slips()'


def test_a_misspelt_query_finds_its_memory_with_the_respelt_words(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        ids = {"tf": s.write(TERRAFORM, scopes=["ops"]).id, "bastion": s.write(BASTION, scopes=["ops"]).id,
               "mind": s.write(MIND, scopes=["ops"]).id}
        result = s.search("terrafrom state locking", mode="bm25", auto_scope=False)
        assert [h.id for h in result.hits] == [ids["tf"]]
        assert result.hits[0].match_terms == ["terraform", "state", "locking"]
        assert result.hits[0].relevance == "high"  # every term found: the lexical `high`
        hit = s.search("bastoin host ssh prot", mode="keyword", auto_scope=False).hits[0]
        assert hit.id == ids["bastion"] and set(hit.match_terms) == {"bastion", "ssh", "port"}
        assert s.search("find the office", mode="bm25", auto_scope=False).hits[0].match_terms == ["office"]


@pytest.mark.embeddings  # the label's cosine comes from the vector leg
def test_a_query_word_no_memory_holds_does_not_count_against_the_answer(tmp_path):
    """"interval" is in no memory, so the answer holding every other query word is `high`; asked
    with "budget", a word another memory holds, the same answer misses part of the question. (No
    other memory names Prometheus: one that did, close behind, would make two candidates, neither
    `high` - tests/test_labels.py.)"""
    with kenning.open_store(tmp_path / "s") as s:
        answer = s.write("Prometheus scrapes every 15 seconds and keeps 30 days of metrics.", scopes=["ops"]).id
        s.write("Grafana dashboards read their metrics from Thanos.", scopes=["ops"])
        s.write("The observability budget for next year is 40,000 euros.", scopes=["ops"])
        top = s.search("scraping interval of Prometheus", mode="hybrid", auto_scope=False).hits[0]
        assert (top.id, top.match_terms, top.relevance) == (answer, ["scraping", "prometheus"], "high")
        top = s.search("scraping budget of Prometheus", mode="hybrid", auto_scope=False).hits[0]
        assert (top.id, top.match_terms, top.relevance) == (answer, ["scraping", "prometheus"], "medium")


def test_a_name_misspelt_where_the_stemmer_hides_the_slip_finds_its_memory(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        festival = s.write("A late 21:30 sailing from Kilbray was added for the music festival.", scopes=["ops"]).id
        lead = s.write("The security lead is Dana Whitfield.", scopes=["ops"]).id
        s.write("Sailings from Inchmorra stop at 16:30 in winter.", scopes=["ops"])
        hit = s.search("Kilbary music festival", mode="bm25", auto_scope=False).hits[0]
        assert (hit.id, hit.match_terms, hit.relevance) == (festival, ["kilbray", "music", "festival"], "high")
        hit = s.search("who is the secruity lead", mode="bm25", auto_scope=False).hits[0]
        assert (hit.id, hit.match_terms) == (lead, ["security", "lead"])


@pytest.mark.embeddings
def test_a_hybrid_search_asks_the_model_the_respelt_words_and_semantic_mode_the_written_ones(tmp_path):
    """The vector leg of "Burow backp schedule" reads "Burrow backup schedule" in a hybrid search, so
    the backup memory is closer to it and ranks higher in the vector leg than in semantic mode (the
    model alone, reading the slips as pieces); a word the model knows ("many", which the lexicon
    makes "main") is asked as written in both."""
    with kenning.open_store(tmp_path / "s") as s:
        backup = s.write("Burrow is backed up nightly at 01:30 with pgBackRest to the Azure storage account.",
                         scopes=["ops"]).id
        s.write("The data team runs two-week sprints starting on Wednesdays, with planning at 10:00.", scopes=["ops"])
        s.write("Data team stand-up is at 09:45 every weekday in the Slack huddle.", scopes=["ops"])
        s.write("Burrow ran on PostgreSQL 13 until October 2024.", scopes=["ops"])
        s.write("The main branch is protected; merges need one review.", scopes=["ops"])
        s.semantic.embed_pending()

        def vector_leg(query, mode):
            hits = s.search(query, mode=mode, auto_scope=False, limit=10).hits
            return {h.id: h.legs["vector"] for h in hits if "vector" in h.legs}

        hybrid, semantic = vector_leg("Burow backp schedule", "hybrid"), vector_leg("Burow backp schedule", "semantic")
        assert hybrid[backup].score > semantic[backup].score + 0.1 and hybrid[backup].rank < semantic[backup].rank
        assert vector_leg("how many branches", "hybrid") == vector_leg("how many branches", "semantic")


def test_a_correction_remembered_for_a_store_is_asked_again_after_a_write(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        s.write("Terraform state sits in S3.", scopes=["ops"])
        assert [h.match_terms for h in s.search("terrafrom", mode="bm25", auto_scope=False).hits] == [["terraform"]]
        shorthand = s.write("Terrafrom is the team's shorthand for the Terraform monorepo.", scopes=["ops"]).id
        # a stored word now: searched as written, no longer respelt (the remembered answer is gone)
        hits = s.search("terrafrom", mode="bm25", auto_scope=False).hits
        assert [(h.id, h.match_terms) for h in hits] == [(shorthand, ["terrafrom"])]


def test_a_run_of_letters_no_one_types_is_not_respelt():
    """A token's slips are 27 a letter, each as long as the token: a pasted DNA sequence of 8,000
    letters asked 1.7 GB of candidates (a longer one had the process killed). A word of over
    ``MAX_LENGTH`` letters is left as written, and a pasted page's unknown words past the first
    ``MAX_WORDS`` too, so the candidates asked stay bounded whatever the query."""
    asked = []

    def df(terms):
        asked.append(len(terms))
        return {t: {"port": 1}.get(t, 0) for t in terms}

    assert spelling.corrections(["acgt" * 300, "prot"], df, {}) == {"prot": "port"}
    assert asked[0] == 1  # "prot" only: the run was never looked at
    asked.clear()
    spelling.corrections([_made_up(i) + "x" * 25 for i in range(300)], df, {})
    assert asked[0] == spelling.MAX_WORDS and asked[1] <= spelling.MAX_WORDS * 28 * spelling.MAX_LENGTH


def test_a_word_past_the_first_looked_at_is_respelt_when_asked_alone(tmp_path):
    """Which words are respelt depends on the query alone: "terrafrom" left as written at the end of
    a long query is not remembered as having none (store/search.py remembers each word's answer)."""
    with kenning.open_store(tmp_path / "s") as s:
        s.write("Terraform state sits in S3.", scopes=["ops"])
        filler = " ".join(_made_up(i) for i in range(spelling.MAX_WORDS))
        assert s.search(f"{filler} terrafrom", mode="bm25", auto_scope=False).hits == []
        assert [h.match_terms for h in s.search("terrafrom", mode="bm25", auto_scope=False).hits] == [["terraform"]]


def _made_up(i: int) -> str:
    """The ``i``th of distinct words no store holds and the stemmer leaves whole ("zqbb", "zqbc", ...)."""
    letters = "bcdfghjklmnpqrtvwxz"
    return "zq" + letters[i // len(letters) % len(letters)] + letters[i % len(letters)]


def test_a_dotted_version_the_store_lacks_is_read_with_or_without_its_v(tmp_path):
    """"2.3.1" matched nothing in a store that writes "v2.3.1" (and "v4.5.6" nothing where it writes
    "4.5.6"): a version is written both ways. Only a dotted version the store lacks is read the
    other way; a bare "v20" or a decimal the store holds is left alone."""
    assert spelling.other_writing("v2.3.1") == "2.3.1" and spelling.other_writing("3.12") == "v3.12"
    assert spelling.other_writing("v20") is None and spelling.other_writing("node.js") is None
    df = counts({"v2.3.1": 2, "4.5.6": 1, "3.12": 4, "v3.12": 1})
    assert spelling.corrections(["2.3.1", "v4.5.6", "3.12", "v9.9"], df, {}) == {"2.3.1": "v2.3.1", "v4.5.6": "4.5.6"}
    with kenning.open_store(tmp_path / "s") as s:
        fixed = s.write("Release v2.3.1 fixed the retry storm in the billing worker", scopes=["ops"]).id
        added = s.write("Release 4.5.6 added the audit log export", scopes=["ops"]).id
        for mode in ("keyword", "bm25"):
            for query, found, shown in (("what did 2.3.1 fix", fixed, "v2.3.1"), ("V4.5.6 release", added, "4.5.6")):
                top = s.search(query, mode=mode, auto_scope=False).hits[0]
                assert top.id == found and shown in top.match_terms, (mode, query, top)
