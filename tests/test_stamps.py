"""A memory opening with a timestamp: the vector leg ranks it by its text without the stamp, and the
label reads the cosine of its whole text (retrieval/stamps.py, Semantic.label_cosines)."""

from __future__ import annotations

import numpy as np
import pytest

import kenning
from kenning.retrieval import engine, stamps
from kenning.store.integrity import check_embeddings, repair_embeddings
from kenning.store.semantic import STAMPS_META


@pytest.mark.parametrize("text, body", [
    ("1:56 pm on 8 May, 2023. Caroline: Hey Mel!", "Caroline: Hey Mel!"),
    ("2024-07-01 09:30 - deployed the gateway", "deployed the gateway"),
    ("[2024-07-01T09:30:00Z] deployed the gateway", "deployed the gateway"),
    ("14 October 2024: MV Brannock made a hard landing", "MV Brannock made a hard landing"),
    ("(May 8th, 2023) the retro moved to Fridays", "the retro moved to Fridays"),
    ("07/01/2024, 9:30 am; backups verified", "backups verified"),
    ("2024-07-01 09:30 deployed the gateway", "deployed the gateway"),
    ("2024-07-01T09:30:00Z INFO gateway deployed", "INFO gateway deployed"),
    ("8 May 2023 10:00 stand-up moved to the big room", "stand-up moved to the big room"),
    ("2024-07-01 09:30 amended the runbook", "amended the runbook"),
])
def test_a_leading_stamp_is_left_out(text, body):
    assert stamps.strip(text) == body and stamps.has_stamp(text)


@pytest.mark.parametrize("text", [
    "8 May is the deadline for the grant report",
    "10:00 stand-up every weekday in room 4",
    "8 May 10 people joined the call",
    "2024-07-01 the gateway was deployed",
    "The release on 2024-07-01 went out late",
    "2024-07-01",
    "2024-07-01 -",
    "[2024-07-01] ",  # a stamp and nothing after it: no text would be left to read
    "1:56 pm on 8 May, 2023.  ",
    "May the build be green",
    "",
])
def test_a_sentence_that_only_holds_a_date_stays_whole(text):
    assert stamps.strip(text) == text and not stamps.has_stamp(text)


def test_the_label_reads_the_whole_texts_cosine_and_the_leg_keeps_its_score():
    """A stamped hit whose stripped text is close (.70) but whose whole text is not (.20) is not
    promised; the leg's reported score stays the one it ranked by."""
    def labelled(whole):
        cand = engine.Candidate(key=1, score=1.0, legs={"vector": (1, 0.70)})
        return engine.explain(cand, ["support", "group"], "Caroline: the group met", vector_ran=True,
                              coverage=0.0, matched=[], lead=1.0, cosine_lead=0.5, label_cosine=whole)
    assert labelled(None).relevance == "high"
    hit = labelled(0.20)
    assert hit.relevance != "high" and hit.legs["vector"] == (1, 0.70)


STAMPED = "1:56 pm on 8 May, 2023. Caroline: I went to the LGBTQ support group yesterday and it was powerful."
PLAIN = "The deploy window is Tuesday and Thursday afternoons."
QUESTION = "What did Caroline do at the support group?"
FITTING = "Caroline paints lakes at sunrise."


def _rows(store):
    return {mem: (vector, whole) for mem, vector, whole in store.db.read(lambda c: c.execute(
        "SELECT m.content, e.vector, e.whole FROM embeddings e JOIN memories m ON m.rowid = e.mem").fetchall())}


def _unit(blob):
    return np.frombuffer(bytes(blob), np.float32)


@pytest.mark.embeddings
def test_a_stamped_memory_is_ranked_without_its_stamp_and_labelled_with_it(store):
    """Real model, real store: the indexed vector of a stamped memory is its text without the stamp,
    the stored whole vector its full text; a plain memory has one vector. A search's vector score
    is the stripped text's cosine, and ``label_cosines`` gives the whole text's."""
    for text in (STAMPED, PLAIN):
        store.write(text, scopes=["chat"], acknowledge_transient=True)
    store.semantic.embed_pending()
    encoder = store.semantic.encoder()
    rows = _rows(store)
    body, whole = encoder.encode([stamps.strip(STAMPED), STAMPED])
    assert np.allclose(_unit(rows[STAMPED][0]), body, atol=1e-5)
    assert np.allclose(_unit(rows[STAMPED][1]), whole, atol=1e-5)
    assert rows[PLAIN][1] is None and np.allclose(_unit(rows[PLAIN][0]), encoder.encode([PLAIN])[0], atol=1e-5)
    hit = store.search(QUESTION, mode="semantic", auto_scope=False).hits[0]
    q = encoder.encode_query(QUESTION)
    assert hit.snippet.startswith("1:56 pm") and abs(hit.legs["vector"].score - float(body @ q)) < 1e-4
    mem = store.db.read(lambda c: c.execute("SELECT rowid FROM memories WHERE content = ?", (STAMPED,)).fetchone()[0])
    cosines = store.semantic.label_cosines(QUESTION, [mem])
    assert list(cosines) == [mem] and abs(cosines[mem] - float(whole @ q)) < 1e-4
    assert cosines[mem] < hit.legs["vector"].score  # the stamp dilutes the whole text's meaning


@pytest.mark.embeddings
def test_a_store_embedded_with_the_stamp_requeues_its_stamped_memories_once_and_keeps_finding_them(store, tmp_path):
    """A store from before: its stamped memory's one vector is the whole text's and no meta key says
    otherwise (and, as under another stamp rule, a plain memory carries a whole vector). Loading the
    encoder queues both misfits (not a fitting third); searches find the stamped one by its old vector
    meanwhile; a drain gives each what the rule says; the next load queues nothing."""
    for text in (STAMPED, PLAIN, FITTING):
        store.write(text, scopes=["chat"], acknowledge_transient=True)
    store.semantic.embed_pending()
    encoder = store.semantic.encoder()
    old = encoder.encode([STAMPED])[0].astype(np.float32).tobytes()
    with store.db.transaction() as c:
        c.execute("UPDATE embeddings SET vector = ?, whole = NULL WHERE whole IS NOT NULL", (old,))
        c.execute("UPDATE embeddings SET whole = vector WHERE mem = (SELECT rowid FROM memories WHERE content = ?)",
                  (PLAIN,))
        c.execute("DELETE FROM meta WHERE key = ?", (STAMPS_META,))
    path = tmp_path / "store"  # the store fixture's
    store.close()
    with kenning.open_store(path) as again:
        assert again.search(QUESTION, mode="semantic", auto_scope=False).hits[0].snippet.startswith("1:56 pm")
        assert again.semantic.pending_count() == 2
        assert _rows(again)[STAMPED][1] is None
        assert again.semantic.embed_pending() == 2
        rows = _rows(again)
        assert rows[STAMPED][1] is not None and rows[PLAIN][1] is None and rows[FITTING][1] is None
        assert np.allclose(_unit(rows[STAMPED][0]), encoder.encode([stamps.strip(STAMPED)])[0], atol=1e-5)
        assert again.search(QUESTION, mode="semantic", auto_scope=False).hits[0].snippet.startswith("1:56 pm")
    with kenning.open_store(path) as third:
        third.semantic.encoder()
        assert third.semantic.pending_count() == 0


@pytest.mark.embeddings
def test_a_damaged_whole_vector_is_found_and_repaired(store):
    store.write(STAMPED, scopes=["chat"], acknowledge_transient=True)
    store.semantic.embed_pending()
    assert check_embeddings(store.db) == []
    with store.db.transaction() as c:
        c.execute("UPDATE embeddings SET whole = ?", (b"\x00" * 12,))
    problems = check_embeddings(store.db)
    assert [p.what for p in problems] == ["1 embedding rows with a damaged vector"]
    assert repair_embeddings(store.db) == 1
    assert store.semantic.embed_pending() == 1 and check_embeddings(store.db) == []
    assert _rows(store)[STAMPED][1] is not None


@pytest.mark.embeddings
def test_a_drain_counts_memories_not_encodings(store):
    """A stamped memory is encoded twice; the progress a drain reports still adds up to the memories."""
    store.import_records([{"content": f"{day} May, 2023: Caroline: note {day} about the garden", "scopes": ["chat"]}
                          for day in range(1, 8)] + [{"content": "A plain note about the garden", "scopes": ["chat"]}])
    told = []
    assert store.semantic.embed_pending(progress=told.append) == 8
    assert sum(told) == 8 and all(n > 0 for n in told)


@pytest.mark.embeddings
@pytest.mark.parametrize("explained", [True, False])
def test_a_search_labels_a_stamped_hit_by_its_whole_cosine(store, monkeypatch, explained):
    """Both paths of a hybrid search (explained hits, and the rank-only path the eval reads) hand the
    label the whole text's cosine for the stamped hit and nothing for the plain one (the real
    explain runs; this only records what it was given)."""
    for text in (STAMPED, PLAIN, FITTING):
        store.write(text, scopes=["chat"], acknowledge_transient=True)
    store.semantic.embed_pending()
    given = {}
    real = engine.explain

    def recording(candidate, *args, **kwargs):
        given[candidate.key] = kwargs.get("label_cosine")
        return real(candidate, *args, **kwargs)

    monkeypatch.setattr(engine, "explain", recording)
    if explained:
        store.search(QUESTION, mode="hybrid", auto_scope=False, limit=10)
    else:
        store.rank(QUESTION, mode="hybrid", depth=10, explain=False)
    keys = dict(store.db.read(lambda c: c.execute("SELECT content, rowid FROM memories").fetchall()))
    q = store.semantic.encoder().encode_query(QUESTION)
    whole = np.frombuffer(bytes(_rows(store)[STAMPED][1]), np.float32)
    assert abs(given[keys[STAMPED]] - float(whole @ q)) < 1e-4
    assert keys[FITTING] in given and given[keys[FITTING]] is None  # a plain hit: its one vector's score
    assert given.get(keys[PLAIN]) is None
