r"""The markdown memory file format: render memories as blocks, parse a person's edits back into segments.

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
characters and nothing else. Lines are split at ``\n`` only (a ``\r`` before it belongs to the line
ending), so a body's lines are the lines a text editor shows. A byte-order mark at the very start
(Notepad writes one) is not text: parsing starts after it, and sync, which rewrites only the
characters of blocks, keeps it.

A memory's text may itself hold a line that looks like a marker (a note about this format, say).
Written as it is, that line would end or start a block when the file is read back, and sync would
cut the memory short. So a body line that reads ``<!-- kenning:`` or ``<!-- /kenning:`` once its
indentation and any backslashes are set aside is written with one backslash more, right after its
indentation (``\<!-- /kenning:memory -->``; ``\<!-- …`` becomes ``\\<!-- …``), and parsing takes one
off again: the escape is exact both ways, for any text. A person writes such a line in a body or a
new paragraph the same way; every other line, backslashes and all, is read exactly as written.

A header that does not parse, a block without its end marker, an end marker without its header, or
an id given twice is *mangled*: reported, never guessed at. So is a block next to a broken one where
the break may have cut it: the block just before a stray end marker (its body may go on past its
end marker), and the block right after a block with no end marker (its header may be a line of
that body). Such a block is left as it is, never applied in part.
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
BOM = "\ufeff"  # a UTF-8 byte-order mark some editors (Notepad) put first: not text, kept where it is
HEADER_FIELDS = ("id", "scopes", "category", "created", "updated", "origin")
HOW_TO = ("Edit a body between its markers to update that memory; delete a whole block (header to end marker) "
          "to remove it; add a paragraph outside the blocks to write a new memory. Then run `kenning sync` "
          "on this folder. Keep the kenning comment lines as they are.")
_HEADER = re.compile(r"^<!-- kenning:memory (\{.*\}) -->$")
_MARKER_LIKE = re.compile(r"\\*<!-- /?kenning:")  # after the indentation: any backslashes, then a marker


def escape_body(text: str) -> str:
    """The body as the file holds it: a line that could read as a marker (or as an escaped one) gets
    one backslash more after its indentation. `unescape_body` is its exact inverse."""
    out = []
    for line in text.split("\n"):
        core = line.lstrip()
        out.append(f"{line[: len(line) - len(core)]}\\{core}" if _MARKER_LIKE.match(core) else line)
    return "\n".join(out)


def unescape_body(text: str) -> str:
    """The body as written in the file, back to the memory's text: one backslash off each escaped marker line."""
    out = []
    for line in text.split("\n"):
        core = line.lstrip()
        if core.startswith("\\") and _MARKER_LIKE.match(core, 1):
            line = line[: len(line) - len(core)] + core[1:]
        out.append(line)
    return "\n".join(out)


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
    """One block; ``newline`` ends every line of it, the body's own lines too (a CRLF file stays CRLF)."""
    body = escape_body(memory.content)
    if newline != "\n":
        body = re.sub(r"(?<!\r)\n", newline, body)
    return f"{render_header(memory)}{newline}{body}{newline}{END_LINE}{newline}"


def line_ending(text: str) -> str:
    """A file's line ending: its first line's, which kenning writes (the file comment) and an editor
    converting the file converts too. A CRLF inside a memory's own text says nothing of the file's."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def normalised(body: str) -> str:
    """A body with CRLF line endings read as LF: a file converted to CRLF says the same thing."""
    return body.replace("\r\n", "\n")


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
    """(start offset, line without its newline, end offset including the newline) for every line.
    A leading byte-order mark belongs to no line: the first line starts after it."""
    out, pos = [], len(BOM) if text.startswith(BOM) else 0
    for raw in text[pos:].split("\n"):
        end = min(pos + len(raw) + 1, len(text))
        if pos < end:
            out.append((pos, raw.rstrip("\r"), end))
        pos += len(raw) + 1
    return out


def parse(text: str) -> Parsed:
    lines = _lines(text)
    eol = line_ending(text)
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
    unterminated_end: int | None = None  # where the last block without an end marker stops
    paragraph: list[int] = []  # indexes of the lines of the current outside paragraph

    def close_paragraph() -> None:
        if paragraph:
            first, last = paragraph[0], paragraph[-1]
            body = unescape_body(text[lines[first][0] : lines[last][2]].strip("\r\n"))
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
            elif not problem and unterminated_end == start:
                problem = ("it follows a block with no end marker, so its header may be a line of that body; "
                           "fix that block first")
            unterminated_end = None if terminated else end
            if problem:
                segments.append(Segment("mangled", start, end, id=(header or {}).get("id"), problem=problem, line=i + 1))
            else:
                seen_ids.add(header["id"])
                body = text[lines[i][2] : lines[j][0]]
                # the file's own line ending ends the body: in an LF file a body's last CR is its text
                body = body[:-len(eol)] if body.endswith(eol) else body[:-1] if body.endswith("\n") else body
                segments.append(Segment("block", start, end, id=header["id"], header=header, body=unescape_body(body),
                                        line=i + 1))
            i = j + 1 if terminated else j
            continue
        if stripped == END_LINE:  # an end marker whose header is gone: the text above it was that block's body
            close_paragraph()
            orphan = Segment("mangled", start, lines[i][2], line=i + 1,
                             problem="an end marker without its header (was the header line deleted, or is it "
                                     "a line of the body above? such a line is written `\\<!-- /kenning:…`)")
            while segments and segments[-1].kind == "new":  # every paragraph back to the last block: body text
                taken = segments.pop()
                orphan.start, orphan.line = taken.start, taken.line
            if segments and segments[-1].kind == "block":  # its body may go on past its end marker: not applied
                cut = segments[-1]
                segments[-1] = Segment("mangled", cut.start, cut.end, id=cut.id, line=cut.line,
                                       problem="a stray end marker follows the block, so its body may go on past "
                                               "its end marker")
            segments.append(orphan)
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
