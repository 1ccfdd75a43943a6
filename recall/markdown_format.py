"""The markdown memory file format: render memories as blocks, parse a person's edits back into segments.

A file (``MEMORY.md`` of one scope, or ``USER.md``) is::

    <!-- kenning:file {"scope": "projects:kenning"}
    (how to edit it) -->
    # Memories · projects:kenning

    <!-- kenning:memory {"id": "01J…", "scopes": ["projects:kenning"], "category": "fact", "created": "…", "updated": "…", "origin": "/repo@abc1234"} -->
    The memory's text, exactly as stored.
    <!-- /kenning:memory -->

Between the header (the provenance: id, scopes, category, created, updated, origin) and the end
marker is the body. Text outside every block is new: each paragraph becomes a memory. Parsing
keeps exact character offsets, so a change can be written back by replacing one block's
characters and nothing else. A header that does not parse, a block without its end marker, an end
marker without its header, or an id given twice is *mangled*: reported, never guessed at.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kenning.store.models import Memory, iso

HEADER_PREFIX = "<!-- kenning:memory"
END_LINE = "<!-- /kenning:memory -->"
FILE_PREFIX = "<!-- kenning:file"
HEADER_FIELDS = ("id", "scopes", "category", "created", "updated", "origin")
HOW_TO = ("Edit a body between its markers to update that memory; delete a whole block (header to end marker) "
          "to remove it; add a paragraph outside the blocks to write a new memory. Then run `kenning sync` "
          "on this folder. Keep the kenning comment lines as they are.")
_HEADER = re.compile(r"^<!-- kenning:memory (\{.*\}) -->$")


def origin_text(memory: Memory) -> str | None:
    if memory.origin is None:
        return None
    commit = f"@{memory.origin.commit[:12]}" if memory.origin.commit else ""
    return f"{memory.origin.worktree}{commit}"


def render_header(memory: Memory) -> str:
    fields = {"id": memory.id, "scopes": memory.scopes, "category": memory.category, "created": iso(memory.created),
              "updated": iso(memory.updated), "origin": origin_text(memory)}
    return f"{HEADER_PREFIX} {json.dumps(fields, ensure_ascii=False)} -->"


def render_block(memory: Memory, newline: str = "\n") -> str:
    return f"{render_header(memory)}{newline}{memory.content}{newline}{END_LINE}{newline}"


def render_file(kind: dict[str, Any], title: str, memories: list[Memory]) -> str:
    """A whole file: preamble, title, then one block per memory separated by a blank line."""
    head = f"{FILE_PREFIX} {json.dumps(kind, ensure_ascii=False)}\n{HOW_TO} -->\n# {title}\n"
    return head + "".join("\n" + render_block(m) for m in memories)


@dataclass
class Segment:
    kind: str               # preamble | block | new | mangled
    start: int              # character offsets into the file's text, end exclusive
    end: int
    id: str | None = None
    header: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    problem: str = ""
    line: int = 0           # 1-based line where it starts


@dataclass
class Parsed:
    kind: dict[str, Any] | None   # the file comment's JSON ({"scope": …} or {"tier": "profile"})
    segments: list[Segment]

    @property
    def blocks(self) -> list[Segment]:
        return [s for s in self.segments if s.kind == "block"]

    @property
    def new(self) -> list[Segment]:
        return [s for s in self.segments if s.kind == "new"]

    @property
    def mangled(self) -> list[Segment]:
        return [s for s in self.segments if s.kind == "mangled"]


def _lines(text: str) -> list[tuple[int, str, int]]:
    """(start offset, line without its newline, end offset including the newline) for every line."""
    out, pos = [], 0
    for raw in text.splitlines(keepends=True):
        out.append((pos, raw.rstrip("\r\n"), pos + len(raw)))
        pos += len(raw)
    return out


def parse(text: str) -> Parsed:
    lines = _lines(text)
    segments: list[Segment] = []
    kind = None
    i = 0
    if lines and lines[0][1].startswith(FILE_PREFIX):  # the preamble: file comment, then the title line
        j = 0
        while j < len(lines) and not lines[j][1].rstrip().endswith("-->"):
            j += 1
        comment = "\n".join(line for _, line, _ in lines[: j + 1])
        try:
            kind, _ = json.JSONDecoder().raw_decode(comment[len(FILE_PREFIX):].lstrip())
        except ValueError:
            kind = None
        j += 1
        if j < len(lines) and lines[j][1].startswith("# "):
            j += 1
        segments.append(Segment("preamble", 0, lines[j - 1][2] if j else 0, line=1))
        i = j
    seen_ids: set[str] = set()
    paragraph: list[int] = []  # indexes of the lines of the current outside paragraph

    def close_paragraph() -> None:
        if paragraph:
            first, last = paragraph[0], paragraph[-1]
            body = text[lines[first][0] : lines[last][2]].strip("\r\n")
            segments.append(Segment("new", lines[first][0], lines[last][2], body=body, line=first + 1))
            paragraph.clear()

    while i < len(lines):
        start, line, _ = lines[i]
        stripped = line.strip()
        if stripped.startswith(HEADER_PREFIX):
            close_paragraph()
            j = i + 1
            while j < len(lines) and lines[j][1].strip() != END_LINE and not lines[j][1].strip().startswith(HEADER_PREFIX):
                j += 1
            terminated = j < len(lines) and lines[j][1].strip() == END_LINE
            end = lines[j][2] if terminated else lines[j - 1][2]
            header, problem = _header(stripped)
            if not terminated:
                problem = problem or f"the block has no end marker {END_LINE!r}"
            elif header and header["id"] in seen_ids:
                problem = f"id {header['id']} appears in more than one block"
            if problem:
                segments.append(Segment("mangled", start, end, id=(header or {}).get("id"), problem=problem, line=i + 1))
            else:
                seen_ids.add(header["id"])
                body = text[lines[i][2] : lines[j][0]]
                body = body[:-2] if body.endswith("\r\n") else body[:-1] if body.endswith("\n") else body
                segments.append(Segment("block", start, end, id=header["id"], header=header, body=body, line=i + 1))
            i = j + 1 if terminated else j
            continue
        if stripped == END_LINE:  # an end marker whose header is gone: the text above it was that block's body
            segs = Segment("mangled", lines[paragraph[0]][0] if paragraph else start, lines[i][2],
                           problem="an end marker without its header (was the header line deleted?)",
                           line=(paragraph[0] if paragraph else i) + 1)
            paragraph.clear()
            segments.append(segs)
            i += 1
            continue
        if stripped:
            paragraph.append(i)
        else:
            close_paragraph()
        i += 1
    close_paragraph()
    return Parsed(kind, segments)


def _header(line: str) -> tuple[dict[str, Any] | None, str]:
    match = _HEADER.match(line)
    if not match:
        return None, "the header is not `<!-- kenning:memory {…} -->`"
    try:
        header = json.loads(match.group(1))
    except ValueError as exc:
        return None, f"the header's JSON does not parse ({exc.msg})"
    if not isinstance(header, dict) or not isinstance(header.get("id"), str) or not header["id"]:
        return None, "the header names no id"
    missing = [f for f in HEADER_FIELDS if f not in header]
    if missing:
        return header, f"the header lacks {', '.join(missing)}"
    return header, ""
