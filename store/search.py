"""Search over the store: filters (scopes, category, what the caller may see) -> legs -> fusion -> explained hits.

The caller validates the request (memory/reads.py) and says what the caller may not see (the
keys its view hides, an updated-after bound); this module only ranks what the store holds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from kenning.retrieval import answer_types, bm25, engine, feedback, keyword, labels, query_reading, spelling
from kenning.retrieval.lexical import contains, unknown
from kenning.retrieval.text import query_tokens, snippet, surface_forms

from .db import Database
from .lexicon import Lexicon
from .memo import memo
from .plain import PlainMemory, PlainResult, plain_memory
from .records import filter_sql

if TYPE_CHECKING:
    from kenning.retrieval.embeddings import Availability

    from .models import Degraded, Memory, SearchResult, StoreConfig
    from .semantic import Ahead, Semantic


@dataclass(frozen=True)
class Filters:
    """What a search may return: scopes (any of), a category, updated after, keys hidden from the caller."""

    scopes: list[str] | None = None
    category: str | None = None
    updated_after: str | None = None
    hidden: Sequence[int] = field(default_factory=tuple)


@dataclass
class Ranked:
    """One hit of the rank-only path: the memory id and its score (relevance for the top ten only)."""

    id: str
    score: float
    relevance: str | None = None


@dataclass
class Ranking:
    """What the rank-only path returns: the ranked ids, without snippets, trust or events."""

    query: str
    mode: str
    legs_run: list[str]
    degraded: Degraded | None
    hits: list[Ranked]


# Hits of the rank-only path that get a relevance label: the eval's reliability table reads ten.
LABELLED = 10


def run(
    db: Database,
    lexicon_store: Lexicon,
    semantic: Callable[[], Semantic],
    config: StoreConfig,
    now: datetime,
    query: str,
    mode: str,
    depth: int,
    filters: Filters,
    explain: bool = True,
) -> tuple[SearchResult, dict[str, Memory]]:
    """Rank and explain a validated request; returns the result and the hits' memories (for trust annotation).

    ``explain=False`` is the rank-only path evaluation times: the hits carry ids, scores and legs,
    and no snippet, match terms or relevance label (no memory is read or parsed). ``semantic``
    gives the semantic leg when the mode asks for vectors (made on first use: a lexical search
    never loads the vector code).
    """
    answer = _answer(db, lexicon_store, semantic, config, now, query, mode, depth, filters, explain, parsed)
    if not explain:
        return answer
    from .models import SearchResult

    fields, by_id = answer
    # one validation of the whole answer (hits and their leg scores built inside pydantic-core)
    # instead of a model __init__ per Hit and LegScore: the same models, a third less time
    return SearchResult.model_validate(fields), by_id


def run_plain(
    db: Database,
    lexicon_store: Lexicon,
    config: StoreConfig,
    now: datetime,
    query: str,
    mode: str,
    depth: int,
    filters: Filters,
) -> tuple[PlainResult, dict[str, PlainMemory]]:
    """``run`` for a keyword or bm25 search answered as plain data (store/plain.py), without
    pydantic; NotPlain when a hit's stored record is one only the model reads the same way."""
    if mode not in ("keyword", "bm25"):
        raise ValueError(f"a plain search ranks lexically, not in mode {mode!r}")
    fields, by_id = _answer(db, lexicon_store, _no_semantic, config, now, query, mode, depth, filters, True,
                            plain_memory)
    return PlainResult(fields), by_id


def _corrections(db: Database, lexicon: Lexicon, tokens: list[str], written: dict[str, str]) -> dict[str, str]:
    """``spelling.corrections`` of the query's tokens, each (token, written word)'s answer remembered
    until the store changes: an unknown word's slips are a few hundred look-ups (0.3 ms of CPU) every
    time it is asked."""
    held = memo(db, "spelling")
    keys = {t: (t, written.get(t, t)) for t in spelling.examined(tokens)}
    todo = [t for t, key in keys.items() if key not in held]
    if todo:
        found = spelling.corrections(todo, lexicon.doc_freqs, written)
        held.update({keys[t]: found.get(t) for t in todo})
    return {t: held[key] for t, key in keys.items() if held[key]}


def _no_semantic() -> Semantic:
    raise AssertionError("a lexical search never asks for the semantic leg")


def _answer(db, lexicon_store, semantic, config, now, query, mode, depth, filters, explain, parse):
    """The ranking and explanation ``run`` and ``run_plain`` share: a Ranking when not ``explain``,
    else the result's fields (hits as dicts) and the hits' memories as ``parse`` reads records."""
    lexicon = lexicon_store.refresh()
    reading = query_reading.read(query, lambda tokens, written: _corrections(db, lexicon, tokens, written))
    tokens, terms = reading.tokens, reading.terms
    # asked once: a server's encoder may finish loading during the search (Semantic.availability)
    availability = semantic().availability() if mode in ("semantic", "hybrid") else None
    leg_names, degraded = engine.legs_for_mode(mode, availability is not None and availability.working)
    allowed = _allowed_mask(db, lexicon, filters)
    at = now.timestamp()
    depth_per_leg = max(depth, config.leg_depth)

    runs: dict[str, engine.LegRun] = {}
    ahead, asked, moved = None, query, False
    expansion: dict[str, float] = {}  # the feedback words hybrid's BM25 leg added, with their weights
    if "vector" in leg_names:
        asked = reading.for_the_model(mode, semantic().knows_word)
        # a long question's vector leg in evidence-fused hybrid ranks by the question moved toward its nearest texts
        moved = mode == "hybrid" and config.fusion == "evidence" and len(terms) >= feedback.VECTOR_FEEDBACK_TERMS
        runs["vector"], ahead = _vector_leg(semantic(), lexicon, asked, terms, mode, allowed, depth_per_leg, moved)
    if "keyword" in leg_names:
        runs["keyword"] = lambda n: keyword.search(
            lexicon, terms, n, allowed, phrase=query, text_of=lambda keys: _texts(db, keys), now=at)
    if "bm25" in leg_names:
        runs["bm25"] = lambda n: bm25.search(lexicon, tokens, n, allowed, k1=config.bm25_k1, b=config.bm25_b)
        if "vector" in leg_names and config.fusion == "evidence":
            runs["bm25"] = _with_feedback(db, lexicon, tokens, allowed, config, expansion)
    runs = {leg: runs[leg] for leg in leg_names}  # the legs' order: fusion's ties and the answer follow it
    evidence = None
    if config.fusion == "evidence":
        evidence = {"alpha": config.evidence_alpha, "cos_floor": config.evidence_cos_floor,
                    "power": config.evidence_power}
    try:
        candidates, lead, cosine_lead = engine.rank_with_lead(
            runs, depth_per_leg, depth, rrf_k=config.rrf_k, weights=config.weights, evidence=evidence,
            coverage_of=lambda keys: bm25.fusion_coverage(lexicon, terms, keys))
    finally:
        if ahead is not None:  # its worker reads the vector index: done before the caller unlocks the store
            ahead.settle()
    # without the vector leg a high needs every term, so only a vector search asks which are unknown
    ceiling = labels.ceiling(query, unknown(lexicon, terms) if "vector" in runs else ())
    names_something = labels.names_something(query, reading.as_written) if "vector" in runs else False
    amounts = answer_types.amounts_asked(query, terms)
    if not explain:
        ids = _ids(db, [c.key for c in candidates])
        candidates = [c for c in candidates if c.key in ids]  # an orphaned index entry is no memory
        ranked = [Ranked(ids[c.key], round(c.score, 6)) for c in candidates]
        head = candidates[:LABELLED]  # the labels of the top ten are reported eval figures
        matched, coverage, known = _matches(lexicon, terms, [c.key for c in head], "vector" in runs)
        cosines, cosine_lead = (_label_cosines(semantic, asked, head, moved, cosine_lead) if "vector" in runs
                                else ({}, cosine_lead))
        for item, cand in zip(ranked, head):
            item.relevance = engine.explain(cand, terms, None, top_score=candidates[0].score, vector_ran="vector" in runs,
                                            coverage=coverage.get(cand.key, 0.0), matched=matched[cand.key],
                                            known_coverage=known.get(cand.key), lead=lead,
                                            text_of=lambda key: _texts(db, [key])[key], ceiling=ceiling,
                                            names_something=names_something, cosine_lead=cosine_lead,
                                            label_cosine=cosines.get(cand.key), amounts=amounts).relevance
        return Ranking(query, mode, list(runs), _degraded_note(availability) if degraded else None, ranked), {}
    memories = _memories(db, [c.key for c in candidates], parse)
    candidates = [c for c in candidates if c.key in memories]  # an orphaned index entry is no memory
    shown = reading.shown()
    matched, coverage, known = _matches(lexicon, terms, [c.key for c in candidates], "vector" in runs)
    cosines, cosine_lead = (_label_cosines(semantic, asked, candidates, moved, cosine_lead) if "vector" in runs
                            else ({}, cosine_lead))
    through = _feedback_words(lexicon, expansion, candidates, matched, memories)
    hits, by_id = [], {}
    for cand in candidates:
        memory = memories[cand.key]
        by_id[memory.id] = memory
        engine.explain(cand, terms, memory.content, shown, top_score=candidates[0].score,
                       vector_ran="vector" in runs, coverage=coverage.get(cand.key, 0.0), matched=matched[cand.key],
                       known_coverage=known.get(cand.key), lead=lead, ceiling=ceiling,
                       names_something=names_something, cosine_lead=cosine_lead, label_cosine=cosines.get(cand.key),
                       amounts=amounts)
        hit = {
            "id": memory.id, "score": round(cand.score, 6), "matched_leg": cand.matched_leg,
            "relevance": cand.relevance, "match_terms": cand.match_terms, "snippet": cand.snippet,
            "legs": {leg: {"rank": r, "score": round(s, 6)} for leg, (r, s) in cand.legs.items()},
            "scopes": memory.scopes, "category": memory.category, "confidence": memory.confidence,
            "created": memory.created, "updated": memory.updated,
        }
        if cand.key in through:  # found by feedback words alone: name them, and quote the text around them
            words = through[cand.key]
            hit["feedback_terms"] = [shown for _, shown in words]
            hit["snippet"] = snippet(memory.content, [token for token, _ in words])
        hits.append(hit)
    fields = {
        "query": query, "mode": mode, "legs_run": list(runs),
        "degraded": _degraded_note(availability).model_dump() if degraded else None,
        "pending_embeddings": semantic().pending_count() if "vector" in runs else None, "hits": hits,
    }
    # legs whose scores are not their own mode's: bm25 on the expanded query, vector on the moved one
    fed = [leg for leg, on in (("bm25", bool(expansion)), ("vector", moved)) if on]
    if fed:
        fields["feedback_legs"] = fed
    return fields, by_id


def _matches(lexicon: Lexicon, terms: list[str], keys: list[int], vector_ran: bool):
    """For the returned hits only: the query terms each contains, its IDF-weighted coverage, and that
    coverage of the terms some live text holds or that ask for a quantity (``answer_types.asks_quantity``;
    empty when that is all of them), from one look at the
    postings (no text is tokenized). The coverages only when the vector leg ran: a label without a
    cosine reads the term share alone (``labels.label``), so a lexical search does not compute them."""
    if not keys:
        return {}, {}, {}
    present = contains(lexicon, terms, keys)
    if vector_ran:
        asking = [t for t in terms if answer_types.asks_quantity(t)]  # counted even where no text holds them
        coverage, known_coverage = bm25.coverages(lexicon, terms, keys, present, asking)
    else:
        coverage, known_coverage = {}, {}
    return ({key: [t for t, hit in zip(terms, row) if hit] for key, row in zip(keys, present.tolist())}, coverage,
            known_coverage)


def _label_cosines(semantic: Callable[[], Semantic], asked: str, labelled: list, moved: bool,
                   cosine_lead: float) -> tuple[dict[int, float], float]:
    """The cosines the labels read for the ``labelled`` hits (best first) whose vector-leg score is
    another one - the whole text's of a memory ranked without its leading timestamp, the question's
    own when the leg ranked by it ``moved`` (``Semantic.label_cosines``; ``asked`` is the text the leg
    encoded) - and the cosine lead the labels read: the ranking's, or for a moved search the one on
    the question's own cosines (``_asked_cosine_lead``)."""
    cosines = semantic().label_cosines(asked, [c.key for c in labelled if "vector" in c.legs])
    if moved and labelled:
        cosine_lead = _asked_cosine_lead(semantic(), asked, labelled[0], cosines, cosine_lead)
    return cosines, cosine_lead


def _asked_cosine_lead(semantic: Semantic, asked: str, best, cosines: dict[int, float], ranked: float) -> float:
    """``engine.cosine_lead`` on the question's own cosines, for a vector leg that ranked by the
    question moved toward its nearest texts: how much closer in meaning the best hit is than the
    nearest other text to the question as asked (on the vectors the leg ranks by, as the lead of an
    unmoved search is); a best hit outside those nearest texts leads none of them. ``ranked`` (the
    lead on the moved cosines) when this thread's last search was not that one (the encoder was
    switched meanwhile)."""
    nearest = semantic.nearest_asked(asked)
    if nearest is None:
        return ranked
    if not nearest:
        return 0.0
    rival = next((score for key, score in nearest if key != best.key), None)
    if rival is None:
        return 1.0
    held = dict(nearest)
    if best.key in held:
        return held[best.key] - rival
    return min(0.0, cosines.get(best.key, 0.0) - rival)


def _vector_leg(semantic: Semantic, lexicon, query: str, terms: list[str], mode: str, allowed,
                depth: int, moved: bool = False) -> tuple[engine.LegRun, Ahead | None]:
    """The vector leg of a search whose vectors work. A hybrid search starts it now: the query's
    encoding and the index's ranking may run on a worker while the lexical legs run, when their
    work (``semantic.lexical_work``; the postings are the legs' own, cached for them) or a free core
    makes that pay (``Semantic.search_ahead``; the caller settles it). ``moved``: it ranks by the
    query moved toward its nearest texts (``Semantic.search``)."""
    allowed_mems = None if allowed is None else np.unique(lexicon.doc_key[allowed])
    if mode != "hybrid":
        return (lambda n: semantic.search(query, n, allowed_mems)), None
    from .semantic import lexical_work

    work = lexical_work(lexicon.n_docs, sum(ids.size for ids, _ in lexicon.postings(terms).values()))
    ahead = semantic.search_ahead(query, depth, allowed_mems, work, moved)
    return (lambda n: ahead() if n == depth else semantic.search(query, n, allowed_mems, moved=moved)), ahead


def _degraded_note(availability: Availability) -> Degraded:
    from kenning.retrieval.embeddings import degraded_note

    from .models import Degraded

    return Degraded.model_validate(degraded_note(availability))


def _allowed_mask(db: Database, lexicon, filters: Filters) -> np.ndarray | None:
    """Which index entries a search may return (a mask over lexids), or None when nothing restricts it.

    Filters that keep few memories (scopes, category, updated after a time) are read as the keys
    they keep; what the view hides (other repositories, disabled scopes) is read as the keys it
    hides, so the common case costs an index probe, not a scan of the store.
    """
    allowed = None
    scopes, category, updated_after = filters.scopes, filters.category, filters.updated_after
    if scopes or category or updated_after is not None:
        where, params = filter_sql(scopes, category)
        if updated_after is not None:
            where, params = where + " AND m.updated > ?", params + [updated_after]
        rows = db.read(lambda c: c.execute(
            f"SELECT m.rowid FROM memories m WHERE removed_at IS NULL {where}", params).fetchall())
        allowed = np.isin(lexicon.doc_key, np.array([r[0] for r in rows], dtype=np.int64)) & lexicon.live
    hidden = filters.hidden
    if len(hidden):
        visible = ~np.isin(lexicon.doc_key, np.array(hidden, dtype=np.int64))
        allowed = (lexicon.live if allowed is None else allowed) & visible
    return allowed


def _with_feedback(db: Database, lexicon, tokens: list[str], allowed, config: StoreConfig,
                   expansion: dict[str, float]) -> engine.LegRun:
    """Evidence-fused hybrid's BM25 leg: a first pass, its best texts' words mixed into the query
    (``retrieval.feedback``, RM3), a second pass with those weights. The words it added, with their
    weights, are left in ``expansion``: a hit holding none of the query's words was found by them."""
    def run(n: int) -> list[tuple[int, float]]:
        first = bm25.search(lexicon, tokens, feedback.FEEDBACK_DOCS, allowed, k1=config.bm25_k1, b=config.bm25_b)
        texts = _texts(db, [k for k, _ in first])
        held = memo(db, "content_counts")  # tokenizing and counting the feedback texts is most of its cost
        for k, _ in first:
            if k not in held and k in texts:
                held[k] = feedback.counted(query_tokens(texts[k]))
        weights = feedback.expanded_query(tokens, [(s, held[k]) for k, s in first if k in held])
        expansion.update((t, w) for t, w in weights.items() if t not in tokens)
        if not weights:
            return []
        return bm25.search_expanded(lexicon, weights, n, tokens, allowed, k1=config.bm25_k1, b=config.bm25_b)
    return run


def _feedback_words(lexicon: Lexicon, expansion: dict[str, float], candidates: list, matched: dict[int, list[str]],
                    memories: dict[int, Any]) -> dict[int, list[tuple[str, str]]]:
    """The hits hybrid's BM25 leg found holding none of the query's words, each with the feedback words
    (``expansion``, ``_with_feedback``) it holds, heaviest first, as (token, the word as its text writes
    it): what brought it in, where its ``match_terms`` are empty and its lexical evidence is nil."""
    keys = [c.key for c in candidates if "bm25" in c.legs and not matched[c.key]]
    if not keys or not expansion:
        return {}
    words = sorted(expansion, key=lambda t: (-expansion[t], t))
    out = {}
    for key, row in zip(keys, contains(lexicon, words, keys).tolist()):
        held = [t for t, hit in zip(words, row) if hit]
        if held:
            written = _written_forms(memories[key].content)
            out[key] = [(t, written.get(t, t)) for t in held]
    return out


@functools.lru_cache(maxsize=64)
def _written_forms(text: str) -> dict[str, str]:
    """``surface_forms`` of a memory's text, remembered: a 1 MB text takes 0.4 s, and a hit found by
    feedback words recurs search after search (as its snippet's spans do, ``text._spanned``)."""
    return surface_forms(text, str.lower)


def _texts(db: Database, keys: list[int]) -> dict[int, str]:
    """The texts of rowids (the keyword leg's phrase check); those read since the store last changed come from the memo."""
    held = memo(db, "texts")
    out = {k: held[k] for k in keys if k in held}
    missing = [k for k in keys if k not in out]
    for i in range(0, len(missing), 500):
        chunk = missing[i : i + 500]
        marks = ",".join("?" * len(chunk))
        rows = db.read(lambda c: c.execute(
            f"SELECT rowid, content FROM memories WHERE rowid IN ({marks})", chunk).fetchall())
        out.update(rows)
        held.update(rows)
    return out


def _memories(db: Database, keys: list[int], parse: Callable[[str], Any]) -> dict[int, Any]:
    """The memories of rowids as ``parse`` reads a record (``parsed``, ``plain_memory``); those read
    since the store last changed come from the memo. A rowid the table lacks is left out (``_ids``)."""
    held = memo(db, "records" if parse is parsed else "plain_records")
    out = {k: held[k] for k in keys if k in held}
    missing = [k for k in keys if k not in out]
    for i in range(0, len(missing), 500):
        chunk = missing[i : i + 500]
        marks = ",".join("?" * len(chunk))
        rows = db.read(lambda c: c.execute(
            f"SELECT rowid, record FROM memories WHERE rowid IN ({marks})", chunk).fetchall())
        for r, rec in rows:
            out[r] = held[r] = parse(rec)
    return out


def _ids(db: Database, keys: list[int]) -> dict[int, str]:
    """The memory ids of rowids. A rowid the memories table lacks is left out: an index entry a
    damaged or hand-edited file kept for a memory that is gone (`kenning check` names it and its fix)."""
    out: dict[int, str] = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        out.update(db.read(lambda c: c.execute(
            f"SELECT rowid, id FROM memories WHERE rowid IN ({marks})", chunk).fetchall()))
    return out


_VERSIONS: dict[int, tuple[Memory, str]] = {}  # id(memory) -> (memory, its version); holds the object so ids stay unique


@functools.lru_cache(maxsize=4096)
def _parsed(record: str) -> tuple[Memory, str]:
    from .models import Memory

    memory = Memory.from_record(record)
    if len(_VERSIONS) > 8192:
        _VERSIONS.clear()
    _VERSIONS[id(memory)] = (memory, memory.version)
    return memory, _VERSIONS[id(memory)][1]


def parsed(record: str) -> Memory:
    """A stored record as a Memory, parsed once per process for the records searches keep returning.

    The cache is keyed by the record's full text, so an edit (a new text) is never served stale;
    the Memory is shared between searches and must not be mutated.
    """
    return _parsed(record)[0]


def version_of(memory: Memory) -> str:
    """``memory.version`` (a hash of its JSON), remembered for memories parsed by ``parsed``."""
    known = _VERSIONS.get(id(memory))
    return known[1] if known is not None and known[0] is memory else memory.version
