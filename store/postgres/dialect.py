"""kenning's portable SQL: the SQLite statements the lifecycle modules write, said in PostgreSQL.

The store and lifecycle modules speak one small dialect, SQLite's, restricted to what this module
can say again in PostgreSQL (docs/architecture.md, "Backends", lists it): ``?`` parameters,
``json_extract(col, '$.a.b')``, ``json_each(col[, '$.a'])`` in FROM with its ``value`` column,
``json_array_length(col, '$.a')``, ``instr(a, b)``, ``x IS [NOT] ?``, ``INSERT OR IGNORE``, ``INSERT OR
REPLACE`` on a table listed in ``REPLACE_KEYS``, ``+col`` (an SQLite planner hint, dropped), blob literals ``x'0102'``, the
two PRAGMAs a store reads and ``BEGIN`` (a read snapshot). Translation is pure text work, done once per statement text and cached.
"""

from __future__ import annotations

import functools
import re

# INSERT OR REPLACE needs the conflict target PostgreSQL wants named; a table whose key is "never
# reused" (AUTOINCREMENT in SQLite) takes a fresh id when its row is replaced, as SQLite's delete+insert does
REPLACE_KEYS: dict[str, tuple[str, ...]] = {
    "lex_segments": ("term", "seg"),
    "tlex_segments": ("term", "seg"),
    "lex_counts": ("term",),
    "tlex_counts": ("term",),
    "embeddings": ("mem", "model_id"),
    "transcript_embeddings": ("mem", "model_id"),
}
# how the unique index PostgreSQL must infer is written, where it is not the plain columns
CONFLICT_TARGETS = {"lex_segments": "(md5(term)), seg", "tlex_segments": "(md5(term)), seg",
                    "lex_counts": "(md5(term))", "tlex_counts": "(md5(term))"}
FRESH_ID_ON_REPLACE = {"embeddings", "transcript_embeddings"}

# the key an INSERT hands back as ``lastrowid``
ROW_KEYS: dict[str, str] = {
    "memories": "rowid", "events": "rowid", "episodes": "rowid", "transcript_messages": "rowid",
    "transcript_sources": "id", "transcript_ledgers": "id", "lex_docs": "lexid", "tlex_docs": "lexid",
    "embeddings": "id", "transcript_embeddings": "id",
}

PRAGMAS = {
    "PRAGMA user_version": "SELECT version FROM kenning_schema",
    "PRAGMA quick_check": "SELECT 'ok'",
}
# SQLite's BEGIN starts a transaction whose reads all see one snapshot (a copy of every table whose
# rows agree while others write); under READ COMMITTED each PostgreSQL statement would see its own
SNAPSHOT_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ"

_JSON_PATH = r"'\$((?:\.\w+)*)'"
_JSON_EXTRACT = re.compile(r"json_extract\(\s*([\w.]+)\s*,\s*" + _JSON_PATH + r"\s*\)")
_JSON_EACH = re.compile(r"json_each\(\s*([\w.]+)\s*(?:,\s*" + _JSON_PATH + r")?\s*\)(\s+(?:AS\s+)?(?!(?:WHERE|GROUP|ORDER|JOIN|ON|LIMIT|UNION|INNER|LEFT|CROSS)\b)(\w+))?",
                        re.IGNORECASE)
_JSON_LENGTH = re.compile(r"json_array_length\(\s*([\w.]+)\s*,\s*" + _JSON_PATH + r"\s*\)")
_INSERT = re.compile(r"^\s*INSERT\s+OR\s+(IGNORE|REPLACE)\s+INTO\s+(\w+)\s*\(([^)]*)\)", re.IGNORECASE)
_UPSERT_KEY = re.compile(r"(?<=^INSERT INTO )(\w+)(\(.*?\)\s+VALUES\s+\(.*?\)\s+)ON\s+CONFLICT\s*\(([^)]*)\)",
                         re.IGNORECASE | re.DOTALL)
_BLOB = re.compile(r"(?<![\w'])[xX]'([0-9a-fA-F]*)'")
_LITERAL = re.compile(r"('(?:[^']|'')*')")
_KEYWORD_COLUMNS = re.compile(r"\b(offset)\b")  # columns whose names PostgreSQL reserves (lower case only)


def _pg_path(path: str) -> str:
    return "{" + ",".join(path.strip(".").split(".")) + "}" if path else "{}"


def _json_extract(m: re.Match) -> str:
    return f"({m.group(1)}::jsonb #>> '{_pg_path(m.group(2))}')"


def _json_each(m: re.Match) -> str:
    source = f"{m.group(1)}::jsonb" + (f" #> '{_pg_path(m.group(2))}'" if m.group(2) else "")
    alias = m.group(4) or "je"
    return f"jsonb_array_elements_text({source}) AS {alias}(value)"


def _json_length(m: re.Match) -> str:
    return f"jsonb_array_length({m.group(1)}::jsonb #> '{_pg_path(m.group(2))}')"


def _outside_literals(sql: str, fn) -> str:
    parts = _LITERAL.split(sql)
    return "".join(p.replace("%", "%%") if i % 2 else fn(p) for i, p in enumerate(parts))


def _plain(text: str) -> str:
    text = text.replace("%", "%%").replace("?", "%s")
    text = re.sub(r"\bIS\s+NOT\s+%s", "IS DISTINCT FROM %s", text)
    text = re.sub(r"\bIS\s+%s", "IS NOT DISTINCT FROM %s", text)
    text = re.sub(r"\binstr\(", "strpos(", text)
    text = re.sub(r"(?<=[\s(,])\+(?=[a-z_])", "", text)
    return _KEYWORD_COLUMNS.sub(r'"\1"', text)


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """The PostgreSQL text of one statement of kenning's dialect."""
    stripped = sql.strip().rstrip(";")
    if stripped in PRAGMAS:
        return PRAGMAS[stripped]
    if stripped.upper() == "BEGIN":
        return SNAPSHOT_BEGIN
    if stripped.upper().startswith("PRAGMA"):
        raise ValueError(f"no PostgreSQL form for {stripped!r}")
    text = _BLOB.sub(lambda m: f"'\\x{m.group(1)}'::bytea", stripped)
    text = _JSON_EXTRACT.sub(_json_extract, text)
    text = _JSON_EACH.sub(_json_each, text)
    text = _JSON_LENGTH.sub(_json_length, text)
    found = _INSERT.match(text)
    if found:
        verb, table, columns = found.group(1).upper(), found.group(2), found.group(3)
        text = f"INSERT INTO {table}({columns})" + text[found.end():]
        if verb == "IGNORE":
            text += " ON CONFLICT DO NOTHING"
        else:
            key = REPLACE_KEYS.get(table)
            if key is None:
                raise ValueError(f"INSERT OR REPLACE INTO {table}: name its key in dialect.REPLACE_KEYS")
            names = [c.strip() for c in columns.split(",")]
            sets = [f"{c} = EXCLUDED.{c}" for c in names if c not in key]
            if table in FRESH_ID_ON_REPLACE:
                sets.append("id = DEFAULT")
            target = CONFLICT_TARGETS.get(table, ", ".join(key))
            text += f" ON CONFLICT ({target}) DO UPDATE SET {', '.join(sets)}"
    else:
        text = _UPSERT_KEY.sub(_upsert_key, text)
    return _outside_literals(text, _plain)


def _upsert_key(m: re.Match) -> str:
    """``ON CONFLICT(key)`` of an upsert, with the key as PostgreSQL's unique index writes it."""
    table, key = m.group(1), tuple(c.strip() for c in m.group(3).split(","))
    target = CONFLICT_TARGETS.get(table) if REPLACE_KEYS.get(table) == key else None
    return m.group(0) if target is None else f"{m.group(1)}{m.group(2)}ON CONFLICT ({target})"


_BULK_INSERT = re.compile(r"^INSERT INTO (\w+)\(([^)]*)\) VALUES \((?:%s\s*,\s*)*%s\)\s*(ON CONFLICT .*)?$",
                          re.IGNORECASE | re.DOTALL)


def bulk_insert(pg_sql: str) -> tuple[str, str, str] | None:
    """(table, columns, ON CONFLICT tail or "") of a one-row INSERT of parameters only, which COPY
    can load in bulk; None for anything else (RETURNING, expressions, SELECT)."""
    found = _BULK_INSERT.match(pg_sql.strip())
    if not found:
        return None
    return found.group(1), found.group(2), (found.group(3) or "").strip()


def last_per_key(table: str, columns: str, rows: list) -> list:
    """The rows of an INSERT OR REPLACE with only the last of each key left, in order (row-by-row
    upserts end the same way)."""
    names = [c.strip() for c in columns.split(",")]
    at = [names.index(k) for k in REPLACE_KEYS[table]]
    last = {tuple(row[i] for i in at): n for n, row in enumerate(rows)}
    return [row for n, row in enumerate(rows) if last[tuple(row[i] for i in at)] == n]


_INSERT_TABLE = re.compile(r"^\s*INSERT\s+INTO\s+(\w+)", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def with_returning(pg_sql: str) -> tuple[str, bool]:
    """An INSERT into a table with a row key, made to hand that key back (SQLite's ``lastrowid``)."""
    found = _INSERT_TABLE.match(pg_sql)
    if not found or " RETURNING " in pg_sql.upper() or found.group(1) not in ROW_KEYS:
        return pg_sql, False
    return f"{pg_sql} RETURNING {ROW_KEYS[found.group(1)]}", True
