"""Load BEIR-format relevance collections: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels.tsv`` (or
BEIR's own ``qrels/test.tsv``).

A collection is a folder (or ``"builtin"`` / ``"memval"`` / ``"memval2"`` / ``"memval3"``, the memory-style sets shipped in the package). The
loader is strict about the files themselves - a missing file or a malformed line is an
``InvalidInput`` naming the file and line, and a collection without documents or queries is an
error too - and lenient about judgments: qrels rows naming a query or document the collection does
not have are counted (``Dataset.unknown_qrels``, for the caller to report), not fatal, because
published qrels often cover a larger corpus than the copy at hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from kenning.errors import InvalidInput
from kenning.memory.gates.limits import lone_surrogate
from kenning.store.ids import canonical

BUILTIN = "builtin"
# collections shipped in the package, by the name ``load_dataset`` takes
PACKAGED = {BUILTIN: "kenning.eval.builtin", "memval": "kenning.eval.memval", "memval2": "kenning.eval.memval2",
            "memval3": "kenning.eval.memval3"}
CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FILE = "qrels.tsv"
# BEIR's own layout (a download from the BEIR site): one qrels file per split; the test split is read
BEIR_QRELS_DIR = "qrels"
BEIR_QRELS_FILE = f"{BEIR_QRELS_DIR}/test.tsv"
# LoCoMo's question categories by the names commonly used for the released ids (see the
# collection's SOURCE.md); the dev split holds 1-4, a held-back file the adversarial ones (5).
LOCOMO_CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}


@dataclass(frozen=True)
class Document:
    """One corpus record; ``content`` is what gets indexed."""

    id: str
    title: str
    text: str
    where: str = field(default="", compare=False)  # file:line, for a message naming the document

    @property
    def content(self) -> str:
        """Title and body joined as ``title. text``.

        The title goes in because it helps wherever it adds text (rank-bm25 over the shared
        token stream, nDCG@10 with / without title): SciFact 0.686 / 0.669 (the title is the
        paper's finding in short; BEIR indexes it too, so figures stay comparable), LoCoMo per
        conversation 0.477 / 0.451 - there the title is the session date, which the temporal
        questions (category 2: 0.627 / 0.598) and, less, all others profit from. The vector leg
        pays for that date on LoCoMo (MiniLM 0.316 with it, 0.345 without) while the hybrid is
        level (0.499 / 0.496), so one rule for every collection stays. Where the body already
        starts with the title (Cranfield repeats it in ``.W``) it is not doubled.
        """
        title, text = self.title.strip(), self.text.strip()
        if not title or text.casefold().startswith(title.casefold()):
            return text
        if not text:
            return title
        return f"{title}{' ' if title[-1] in '.!?:;' else '. '}{text}"


@dataclass(frozen=True)
class Query:
    """One query; ``metadata`` is kept as given (category, answer, evidence …)."""

    id: str
    text: str
    metadata: dict = field(default_factory=dict)

    @property
    def category(self) -> str | None:
        """``metadata.category`` or ``metadata.kind`` as a string, for per-category breakdowns.

        LoCoMo numbers its question types; those are named (``LOCOMO_CATEGORIES``), so a report
        says "temporal" rather than "2". A LoCoMo question is known by its ``sample_id`` (the
        conversation), which every category has; an adversarial one may carry no evidence.
        """
        value = self.metadata.get("category", self.metadata.get("kind"))
        if value is None:
            return None
        if "sample_id" in self.metadata and str(value) in LOCOMO_CATEGORIES:
            return LOCOMO_CATEGORIES[str(value)]
        return str(value)


@dataclass
class Dataset:
    """A loaded collection. ``qrels[query_id][doc_id] = grade`` holds only known ids."""

    name: str
    documents: dict[str, Document]
    queries: dict[str, Query]
    qrels: dict[str, dict[str, int]]
    unknown_qrels: int = 0
    qrels_file: str = QRELS_FILE  # the judgments read, relative to the folder (qrels.tsv or qrels/<split>.tsv)
    # BEIR layout only: queries of queries.jsonl that the split's qrels never name (another split's), not run
    other_split_queries: int = 0
    # queries whose every relevant judgment names a document the corpus lacks: no answer can be found
    # and none is known to be absent, so they are neither scored nor counted as unanswerable; not run
    orphaned_queries: int = 0
    # (query, document) pairs judged twice with different grades: the higher grade is kept
    conflicting_judgments: int = 0

    def is_answerable(self, query_id: str) -> bool:
        """A query is answerable when at least one document is judged relevant (grade > 0)."""
        return any(grade > 0 for grade in self.qrels.get(query_id, {}).values())

    def outside_their_group(self, sep: str | None) -> tuple[int, int]:
        """(answerable queries with a group, those of them with a relevant document outside it) under
        ``sep``: a query searches only its group, so such a document can never be found."""
        grouped = outside = 0
        for query_id in self.queries:
            group = group_of(query_id, sep)
            relevant = [d for d, grade in self.qrels.get(query_id, {}).items() if grade > 0]
            if group is None or not relevant:
                continue
            grouped += 1
            outside += any(group_of(d, sep) != group for d in relevant)
        return grouped, outside

    @cached_property
    def collection_ids(self) -> dict[str, str]:
        """The collection's id of each document the store spells otherwise (a ULID-like id is stored in
        upper case, ``store/ids.canonical``), so a ranking is scored in the qrels' spelling."""
        return {stored: doc_id for doc_id in self.documents if (stored := canonical(doc_id)) != doc_id}

    @cached_property
    def unstorable(self) -> dict[str, str]:
        """Why the store would refuse a document with text, by id: its own checks (an id over 200
        characters or holding a control character; text too short, over 1 MiB, holding a NUL). Such a
        document is skipped and counted as an empty one is, so one bad line does not stop the run."""
        from kenning.memory.gates.limits import check_content
        from kenning.memory.requests import MAX_ID_CHARS, check_id

        out = {}
        for doc in self.documents.values():
            content = doc.content
            if not content.strip():
                continue
            try:
                check_id(doc.id)
            except InvalidInput:  # its message quotes the id, which the caller names already
                out[doc.id] = f"a memory id has at most {MAX_ID_CHARS} characters and no control character"
                continue
            try:
                check_content(content)
            except InvalidInput as exc:
                out[doc.id] = str(exc)
        return out

    def fingerprint(self) -> str:
        """A short hash of what the figures are measured on: every document's id, title and text,
        every query's id and text (in order) and every judgment. Two collections with the same
        counts but an edited judgment or document differ here, so their figures are not compared."""
        import hashlib

        digest = hashlib.sha256()
        # the files' text, not Document.content: a change to how a title is joined is the code's, not the data's
        for part in ([(d.id, d.title, d.text) for d in self.documents.values()], [(q.id, q.text) for q in self.queries.values()],
                     sorted((q, d, g) for q, judged in self.qrels.items() for d, g in judged.items())):
            digest.update(json.dumps(part, ensure_ascii=False).encode("utf-8"))
        return digest.hexdigest()[:16]

    def limit_queries(self, n: int) -> Dataset:
        """The first ``n`` queries (file order) with their judgments; the corpus is unchanged."""
        if n < 1:  # [:-2] would keep all but the last two
            raise InvalidInput("--limit-queries must be at least 1")
        kept = dict(list(self.queries.items())[:n])
        qrels = {q: j for q, j in self.qrels.items() if q in kept}
        return Dataset(self.name, self.documents, kept, qrels, self.unknown_qrels, self.qrels_file,
                       self.other_split_queries, self.orphaned_queries, self.conflicting_judgments)


FOREIGN = "foreign"


def with_foreign_queries(data: Dataset, other: Dataset) -> Dataset:
    """``data`` plus ``other``'s queries as unanswerable ones (category ``foreign``).

    A question about another collection has no answer here, so what a mode returns for it - empty,
    or a top hit labelled ``high`` - measures the no-match decision on realistic off-topic text.
    The ids carry no group separator, so a grouped collection answers them from every group.
    """
    queries = dict(data.queries)
    prefix = FOREIGN
    while any(q.startswith(prefix) for q in data.queries):  # a collection's own "foreign0" would be replaced
        prefix += "_"
    for i, query in enumerate(other.queries.values()):
        queries[f"{prefix}{i}"] = Query(f"{prefix}{i}", query.text, {"kind": FOREIGN, "from": other.name})
    return Dataset(f"{data.name}+{other.name} queries", data.documents, queries, data.qrels, data.unknown_qrels,
                   data.qrels_file, data.other_split_queries, data.orphaned_queries, data.conflicting_judgments)


def checked_group_sep(sep: str | None) -> str | None:
    """``sep`` as given, refused when empty: '' would group nothing while the run looked grouped
    (``--group-sep "$SEP"`` with SEP unset); not grouping is leaving the option out."""
    if sep == "":
        raise InvalidInput("--group-sep is empty: give the separator between group and id (such as ':'), "
                           "or leave the option out to group nothing")
    return sep


def group_of(item_id: str, sep: str | None) -> str | None:
    """The group an id belongs to: the part before the first ``sep``.

    None when not grouping, or when the id has no ``sep`` at all - such items are simply not
    grouped, so one ``--group-sep`` can serve a mix of grouped and plain collections.
    """
    if not sep or sep not in item_id:
        return None
    return item_id.split(sep, 1)[0]


def load_dataset(source: str | Path, split: str | None = None) -> Dataset:
    """Load a BEIR folder, or a memory-style set shipped in the package (``PACKAGED``: "builtin", "memval", "memval2", "memval3").

    ``split`` reads BEIR's ``qrels/<split>.tsv`` (such as dev) instead of ``qrels.tsv`` or the test split."""
    if str(source) in PACKAGED:
        if split is not None:
            raise InvalidInput(f"--split {split}: {source} is shipped with one {QRELS_FILE}, no BEIR splits")
        return _load(resources.files(PACKAGED[str(source)]), str(source))
    folder = Path(source).expanduser()
    if folder.is_file():  # e.g. the corpus.jsonl itself
        raise InvalidInput(f"{folder}: a file, not a collection folder; give the folder that holds {CORPUS_FILE}, "
                           f"{QUERIES_FILE} and {QRELS_FILE} (or {BEIR_QRELS_FILE})")
    if not folder.is_dir():
        raise InvalidInput(f"{folder}: no such collection folder (expected {CORPUS_FILE}, {QUERIES_FILE}, {QRELS_FILE} "
                           f"or {BEIR_QRELS_FILE}; "
                           f"the shipped sets are {', '.join(list(PACKAGED)[:-1])} and {list(PACKAGED)[-1]})")
    return _load(folder, folder.resolve().name, split)


def _load(folder: Path | Traversable, name: str, split: str | None = None) -> Dataset:
    documents: dict[str, Document] = {}
    stored: dict[str, tuple[str, str]] = {}  # the store's spelling of an id -> (id, file:line)
    for where, row in _json_lines(folder, CORPUS_FILE):
        doc_id = _id_of(row, where)
        title, text = _string(row, "title", where, required=False), _string(row, "text", where, required=False)
        if doc_id in documents:
            raise InvalidInput(f"{where}: duplicate document id {doc_id!r}")
        twin = stored.setdefault(canonical(doc_id), (doc_id, where))
        if twin[0] != doc_id:
            # kenning reads a ULID without regard to case (I, L, O as 1, 1, 0): the two would be one memory
            raise InvalidInput(f"{where}: document id {doc_id!r} is the same ULID as {twin[0]!r} ({twin[1]}) "
                               "written in another case; kenning cannot keep both, so rename one")
        documents[doc_id] = Document(doc_id, title, text, where)
    if not any(doc.content.strip() for doc in documents.values()):
        raise InvalidInput(f"{_display(folder, CORPUS_FILE)}: no document with text; nothing to search")

    queries: dict[str, Query] = {}
    for where, row in _json_lines(folder, QUERIES_FILE):
        query_id = _id_of(row, where)
        text = _string(row, "text", where, required=True)
        metadata = row.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise InvalidInput(f"{where}: 'metadata' must be an object")
        if query_id in queries:
            raise InvalidInput(f"{where}: duplicate query id {query_id!r}")
        queries[query_id] = Query(query_id, text, metadata)
    if not queries:
        raise InvalidInput(f"{_display(folder, QUERIES_FILE)}: no queries; nothing to evaluate")

    qrels_file = _qrels_file(folder, split)
    qrels, unknown, named, lost, conflicts = _qrels(folder, qrels_file, documents, queries)
    if unknown and not qrels:
        # not one row matches: the wrong file, or columns swapped; every query would run as "unanswerable"
        raise InvalidInput(f"{_display(folder, qrels_file)}: none of its {unknown} judgment(s) names a query of "
                           f"{QUERIES_FILE} and a document of {CORPUS_FILE} (columns: query-id, corpus-id, score)")
    orphaned = {q for q in lost if not any(grade > 0 for grade in qrels.get(q, {}).values())}
    if orphaned:
        queries = {q: query for q, query in queries.items() if q not in orphaned}
        qrels = {q: judged for q, judged in qrels.items() if q not in orphaned}
        if not queries:
            raise InvalidInput(f"{_display(folder, qrels_file)}: every query's relevant documents are missing from "
                               f"{_display(folder, CORPUS_FILE)}; nothing to evaluate")
    other_split = 0
    if qrels_file != QRELS_FILE:
        # BEIR's queries.jsonl holds every split's queries; one the split's qrels never name is another
        # split's, not an unanswerable question (this project's qrels.tsv leaves those unjudged on purpose)
        kept = {q: query for q, query in queries.items() if q in named}
        other_split, queries = len(queries) - len(kept), kept
        if not queries:
            raise InvalidInput(f"{_display(folder, qrels_file)}: names none of the queries in "
                               f"{_display(folder, QUERIES_FILE)}; nothing to evaluate")
    return Dataset(name, documents, queries, qrels, unknown, qrels_file, other_split, len(orphaned), conflicts)


def _qrels_file(folder: Path | Traversable, split: str | None = None) -> str:
    """BEIR's ``qrels/<split>.tsv`` when a split is named, else ``qrels.tsv``, else BEIR's ``qrels/test.tsv``;
    a ``qrels/`` folder holding only other splits (dev, train) is an error naming them and ``--split``,
    never a run on judgments nobody chose. (A copy of a split to ``qrels.tsv`` would run every other
    split's query as an unanswerable one.)"""
    beir = folder / BEIR_QRELS_DIR
    splits = sorted(p.stem for p in beir.glob("*.tsv")) if isinstance(beir, Path) and beir.is_dir() else []
    if split is not None:
        if split not in splits:
            raise InvalidInput(f"--split {split}: no {folder / BEIR_QRELS_DIR / (split + '.tsv')}"
                               + (f"; {BEIR_QRELS_DIR}/ holds the splits {', '.join(splits)}" if splits else ""))
        return f"{BEIR_QRELS_DIR}/{split}.tsv"
    if (folder / QRELS_FILE).is_file() or not isinstance(folder, Path):
        return QRELS_FILE
    if (folder / BEIR_QRELS_FILE).is_file():
        return BEIR_QRELS_FILE
    if splits:
        raise InvalidInput(f"{folder}: no {QRELS_FILE} nor {BEIR_QRELS_FILE}; {BEIR_QRELS_DIR}/ holds "
                           f"{', '.join(s + '.tsv' for s in splits)}: the test split is the one read unless --split "
                           f"names another (--split {splits[0]})")
    raise InvalidInput(f"{folder / QRELS_FILE}: file is missing (nor is there BEIR's {BEIR_QRELS_FILE})")


def _lines(folder: Path | Traversable, filename: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line, decoded one by one so a byte that is not UTF-8 is an
    error naming its line rather than a decoder traceback."""
    entry = folder / filename
    shown = _display(folder, filename)
    if not entry.is_file():
        raise InvalidInput(f"{shown}: file is missing")
    with entry.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8")  # a BOM an editor added
            except UnicodeDecodeError as exc:
                raise InvalidInput(f"{shown}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                                   f"{exc.start + 1}); save the file as UTF-8") from None


def _display(folder: Path | Traversable, filename: str) -> str:
    return str(folder / filename) if isinstance(folder, Path) else f"{folder.name}/{filename}"


# a \u escape of half a surrogate pair: json.loads joins whole pairs, so only a line with one can hold a lone one
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _json_lines(folder: Path | Traversable, filename: str) -> Iterator[tuple[str, dict]]:
    """(``file:line``, object) for every non-blank line; anything but a JSON object is an error, and
    so is a lone surrogate (``"\\ud800"``), which no UTF-8 text holds: refused as ``kenning import`` does."""
    shown = _display(folder, filename)
    for number, line in _lines(folder, filename):
        if not line.strip():
            continue
        where = f"{shown}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InvalidInput(f"{where}: expected a JSON object, got {type(row).__name__}")
        if _SURROGATE_ESCAPE.search(line) and lone_surrogate(json.dumps(row, ensure_ascii=False)):
            raise InvalidInput(f"{where}: not valid Unicode (a lone surrogate such as \\ud800, half of a character "
                               "pair); fix or remove it")
        yield where, row


def _id_of(row: dict, where: str) -> str:
    value = row.get("_id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value is not None and not isinstance(value, str):  # 1.0 is no id: the qrels could spell it "1.0" or "1"
        raise InvalidInput(f"{where}: '_id' must be a string or an integer, got {type(value).__name__} {value!r:.40}")
    if value is None or not value.strip():
        raise InvalidInput(f"{where}: missing or empty '_id'")
    return value.strip()  # as the qrels' fields are read: "d1 " in the corpus is the qrels' "d1"


def _string(row: dict, key: str, where: str, required: bool) -> str:
    value = row.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidInput(f"{where}: '{key}' must be {'non-empty ' if required else ''}text")
    return value


def _qrels(
    folder: Path | Traversable, filename: str, documents: dict[str, Document], queries: dict[str, Query]
) -> tuple[dict[str, dict[str, int]], int, set[str], set[str], int]:
    """Tab-separated ``query-id  corpus-id  score``; a header line is recognised and skipped.

    A (query, document) pair judged twice with different grades keeps the higher grade, whatever the
    rows' order, and is counted (the report says how many): a later 0 must not silently make a
    query unanswerable, and refusing the file would stop a run on a collection whose qrels merge
    several assessors' rows. The same grade twice is read once. Returns the judgments of known ids,
    the count of the others, every known query a row names, every known query judged relevant to a
    document the corpus lacks, and the count of pairs judged with different grades.
    """
    shown = _display(folder, filename)
    qrels: dict[str, dict[str, int]] = {}
    conflicting: set[tuple[str, str]] = set()
    named: set[str] = set()
    lost: set[str] = set()
    unknown = 0
    for number, line in _lines(folder, filename):
        if not line.strip():
            continue
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) != 3:
            raise InvalidInput(
                f"{shown}:{number}: expected 3 tab-separated fields (query-id, corpus-id, score), got {len(fields)}"
            )
        query_id, doc_id, score = (f.strip() for f in fields)
        try:
            value: float | None = float(score)  # a grade may be written 1.0, as some tools write TREC qrels
        except ValueError:
            if number == 1:
                continue  # the header: query-id corpus-id score (a first row graded 0.5 is no header)
            value = None
        if value is None or not value.is_integer():
            raise InvalidInput(f"{shown}:{number}: score {score!r} is not an integer")
        grade = int(value)
        if query_id in queries:
            named.add(query_id)
        if query_id not in queries or doc_id not in documents:
            if query_id in queries and grade > 0:
                lost.add(query_id)
            unknown += 1
            continue
        judged = qrels.setdefault(query_id, {})
        if doc_id in judged and judged[doc_id] != grade:
            conflicting.add((query_id, doc_id))
            grade = max(grade, judged[doc_id])
        judged[doc_id] = grade
    return qrels, unknown, named, lost, len(conflicting)
