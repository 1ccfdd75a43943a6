"""The markdown mirror: ``export`` writes the store as MEMORY.md files a person can edit, ``sync`` reads the edits back.

Layout of the folder: ``<scope parts>/MEMORY.md`` per scope (``projects:kenning`` ->
``projects/kenning/MEMORY.md``; a memory lives in the file of its first scope), ``USER.md`` for the
profile tier, and ``.kenning-export.json``, the manifest: for every file, the body kenning last
wrote for each id. The manifest is what tells a person's edit (the body differs from what kenning
wrote) from a change made in the store since (the store differs from what kenning wrote), and a
deleted block from a memory written after the export.

Sync goes through the library, so through the gates: an edited body is an update, a deleted
block a tombstone ("removed from MEMORY.md"), a paragraph outside the blocks a write (in
USER.md a profile note, staged until the user confirms it; a staged paragraph changed before it is
confirmed withdraws its staged write). The same new paragraph twice in a file is one memory. A
mangled block is reported and left as it is; while a file has one, its deletions are held, since the
mangled block may be one of them; so are they while a block names an id no memory has (a header's id
edited by mistake) and while the file has lost its ``kenning:file`` comment (emptied). A header's
scopes and category are kenning's record: changed by hand, they are reported as not taken in. A block moved (or copied) by hand into a file it does not belong in (its memory's first
scope has another file) is reported as a conflict, not applied, and its removal from its own file
is held: a memory whose block is still somewhere in the folder is never removed, and export refuses
to overwrite the pasted block until the memory is re-scoped (`kenning update ID --scope …`) or the
block moved back. Changes are written back by replacing exactly the characters of the blocks
concerned, under the folder's lock, through a temp file and a rename, in the file's own line
endings (and after its byte-order mark, if it has one). The lock keeps out other kenning processes,
not an editor: a rename lands only over the very text that was read (``atomic_write``'s
``expected``), so a person's save during a sync or an export is kept, never overwritten.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kenning.errors import InvalidInput, KenningError, NotFound, Stale, StorageError
from kenning.store.models import Memory, iso

from . import profile
from .files import DirLock, EditedMeanwhile, NotUtf8, atomic_write, read_text
from .markdown_format import BOM, Parsed, Segment, line_ending, normalised, parse, render_block, render_file

if TYPE_CHECKING:
    from kenning.memory.facade import Store

MANIFEST_NAME = ".kenning-export.json"
MEMORY_FILE = "MEMORY.md"
USER_FILE = "USER.md"
PROFILE_KIND = {"tier": "profile"}
USER_TITLE = "About the user"
ALL_MEMORIES = 10**9
DIRS_META_KEY = "markdown_dirs"
_ANY_TEXT = object()  # export --force, or a file that was not there: written whatever is there now
# the manifest's record of an export under way: each file it rewrites (the entry and a hash of the new
# text) and each it removes, saved before the first of them is touched (see ``_settle_interrupted``)
WRITING = "writing"


def _filesystem_errors(fn):
    """The folder's own failures as the project's errors, naming the path: a folder that cannot be made
    (a path through a file, /proc), a name the file system refuses, a full disk, a NUL in the path.
    Every file is replaced whole (atomic_write), so what was written before the failure is intact."""
    @functools.wraps(fn)
    def guarded(store, directory, *args, **kwargs):
        if isinstance(directory, str) and "\0" in directory:
            raise InvalidInput("the folder path holds a NUL character")
        if isinstance(directory, str) and not directory.strip():  # Path("") is ".": it would mean this directory
            raise InvalidInput("the markdown folder is empty; give the folder's path")
        try:
            return fn(store, directory, *args, **kwargs)
        except KenningError:
            raise
        except OSError as exc:
            where = exc.filename or directory
            raise StorageError(f"{where}: {exc.strerror or exc}; files written before it are complete, "
                               "and a second run after the fix finishes the job") from exc
    return guarded


# a file system's limit for one name (ext4, APFS, NTFS): a longer scope part is cut and told apart by a hash
MAX_NAME_BYTES = 255


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def scope_path(scope: str) -> str:
    """A scope's file, relative to the folder: its ``:``-separated parts as folders, each made path-safe."""
    parts = []
    for part in scope.split(":"):
        safe = quote(part, safe=" -_.@+=,")
        safe = {"": "%20", ".": "%2E", "..": "%2E%2E"}.get(safe, safe)
        if len(safe.encode()) > MAX_NAME_BYTES:  # 29 CJK characters quote to 255 bytes
            cut = safe[:MAX_NAME_BYTES - 20]
            cut = cut[:cut.rfind("%")] if "%" in cut[-2:] else cut  # never half an escape
            safe = f"{cut}~{sha(part)[:12]}"
        parts.append(safe)
    return "/".join(parts + [MEMORY_FILE])


def removal_reason(rel: str) -> str:
    return f"removed from {Path(rel).name}"


# ---------------------------------------------------------------------------------------- manifest
def _load(folder: Path, rebuild: bool = False) -> dict[str, Any]:
    """The folder's manifest. It lies in a folder people edit and share, so it is read as untrusted: a
    file or folder it names must be a ``MEMORY.md``/``USER.md`` (or a folder) inside the export, never
    an absolute path, a ``..`` or a link out of it (export deletes and sync rewrites what it names). A
    manifest that is not JSON, not of this shape, or names such a path is damaged: refused, or with
    ``rebuild`` (export --force) started afresh."""
    path = folder / MANIFEST_NAME
    fresh = {"version": 1, "files": {}, "pending": {}, "folders": []}
    if not _is_file(path):
        return fresh
    try:
        data = json.loads(read_text(path))
        _check_manifest(folder, data)
    except ValueError as exc:
        if rebuild:
            return fresh
        raise InvalidInput(f"{path} is damaged ({str(exc)[:200]}); export again with --force to rebuild it") from None
    _settle_interrupted(folder, data)
    return data


def _text_or_none(path: Path) -> str | None:
    try:
        return read_text(path)
    except NotUtf8:
        return None  # not the text kenning wrote


def _settle_interrupted(folder: Path, data: dict[str, Any]) -> None:
    """Take in what an interrupted export (killed, a full disk) wrote. Its files are replaced one by one and
    the manifest saved at the end, so a file it rewrote held kenning's new text against the old entry: the
    next export refused it as a person's edit, and sync read a block that export moved to another file (its
    memory re-scoped) as deleted, and removed the memory. Each file is whole, old or new (``atomic_write``):
    one whose text is the new one gets its new entry, one the export removed loses its entry."""
    writing = data.pop(WRITING, None)
    if not writing:
        return
    for rel, entry in writing["files"].items():
        text = _text_or_none(folder / rel) if _is_file(folder / rel) else None
        if text is not None and sha(text) == entry["text"]:
            data["files"][rel] = {"kind": entry.get("kind"), "ids": entry["ids"]}
    for rel in writing["removing"]:
        if not _is_file(folder / rel):
            data["files"].pop(rel, None)
            data["pending"].pop(rel, None)


def _is_file(path: Path) -> bool:
    """True for a regular file (or a link to one), False when nothing is there; InvalidInput for anything
    else where kenning reads or writes a file: opening a FIFO named MEMORY.md would block for ever."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    if not S_ISREG(mode):
        raise InvalidInput(f"{path} is not a regular file (a folder, FIFO, socket or device); move it out of the way")
    return True


def _check_manifest(folder: Path, data: Any) -> None:
    """ValueError when ``data`` is not a manifest export wrote, or names a path outside ``folder``."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    data.setdefault("files", {})
    data.setdefault("pending", {})
    data.setdefault("folders", [])
    files, pending, folders = data["files"], data["pending"], data["folders"]
    if not isinstance(files, dict) or not isinstance(pending, dict) or not isinstance(folders, list):
        raise ValueError("files, pending and folders are not a mapping, a mapping and a list")
    for rel, entry in files.items():
        _check_rel(folder, rel, file=True)
        if not (isinstance(entry, dict) and isinstance(entry.get("ids", {}), dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in entry.get("ids", {}).items())):
            raise ValueError(f"the entry of {rel!r} is not {{kind, ids}}")
    for rel, staged in pending.items():
        _check_rel(folder, rel, file=True)
        if not isinstance(staged, dict):
            raise ValueError(f"the pending writes of {rel!r} are not a mapping")
    for rel in folders:
        _check_rel(folder, rel, file=False)
    writing = data.get(WRITING)
    if writing is not None:
        if not (isinstance(writing, dict) and isinstance(writing.get("files"), dict)
                and isinstance(writing.get("removing"), list)):
            raise ValueError("its record of an export under way is not {files, removing}")
        for rel, entry in writing["files"].items():
            _check_rel(folder, rel, file=True)
            if not (isinstance(entry, dict) and isinstance(entry.get("text"), str) and isinstance(entry.get("ids"), dict)
                    and all(isinstance(k, str) and isinstance(v, str) for k, v in entry["ids"].items())):
                raise ValueError(f"the export record of {rel!r} is not {{kind, ids, text}}")
        for rel in writing["removing"]:
            _check_rel(folder, rel, file=True)


def _check_rel(folder: Path, rel: Any, file: bool) -> None:
    if not isinstance(rel, str) or not rel or "\0" in rel:
        raise ValueError(f"{rel!r} is no path")
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts or (file and parts[-1] not in (MEMORY_FILE, USER_FILE)):
        raise ValueError(f"{rel!r} is not a {'MEMORY.md or USER.md' if file else 'folder'} inside the export")
    root = folder.resolve()
    if not (folder / rel).resolve().is_relative_to(root):
        raise ValueError(f"{rel!r} leads out of the export (a link)")


def _holds_export(folder: Path) -> bool:
    try:
        return (folder / MANIFEST_NAME).is_file()
    except OSError:  # a folder this user may not look into holds no export of ours
        return False


def _export_above(folder: Path) -> Path | None:
    """The export folder that ``folder`` lies inside, when ``folder`` holds no export of its own (a
    scope's subfolder such as ``global/``): syncing or exporting there reads or writes the export's
    own files as a second export's, and every block is then in the wrong file."""
    if _holds_export(folder):
        return None
    return next((parent for parent in folder.parents if _holds_export(parent)), None)


def _save(folder: Path, manifest: dict[str, Any]) -> None:
    atomic_write(folder / MANIFEST_NAME, json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _remember_folder(store: "Store", folder: Path) -> None:
    """Record the folder in the store, so `kenning clean` knows where kenning writes (a store this user may
    only read, or on a full disk, cannot: its export is still written, as a read of the store)."""
    known = json.loads(store.db.get_meta(DIRS_META_KEY) or "[]")
    if str(folder) not in known and not store.db.read_only:
        try:
            with store.db.transaction() as c:
                type(store.db).set_meta(c, DIRS_META_KEY, json.dumps(sorted({*known, str(folder)})))
        except StorageError:  # a full disk refused the record: the export of a store that searches still works
            pass


def known_folders(store: "Store") -> list[Path]:
    return [Path(p) for p in json.loads(store.db.get_meta(DIRS_META_KEY) or "[]")]


# ---------------------------------------------------------------------------------------- export
@_filesystem_errors
def export(store: "Store", directory: str | os.PathLike, force: bool = False) -> dict[str, Any]:
    """Write every live memory into the folder (only files whose text changes are rewritten).

    Refuses while a file holds edits not synced yet (they would be overwritten); ``force`` overwrites.
    """
    folder = Path(directory).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise InvalidInput(f"{folder} is a file; give a folder for the markdown files")
    root = _export_above(folder)
    if root is not None:  # a second export inside the first: the first's sync read its files as moved blocks
        raise InvalidInput(f"{folder} is inside the markdown export at {root}; export there "
                           f"(`kenning export --markdown {root}`) or into a folder outside it")
    created = [] if folder.exists() else [folder]
    folder.mkdir(parents=True, exist_ok=True)
    with DirLock(folder) as lock:
        manifest = _load(folder, rebuild=force)
        if not force:
            try:
                unsynced = [rel for rel in sorted(manifest["files"]) if _unsynced(folder / rel, manifest["files"][rel], store)]
            except NotUtf8 as exc:
                raise NotUtf8(f"{exc}, then sync it (or export with --force to overwrite it)") from None
            if unsynced:
                raise InvalidInput(f"{unsynced[0]} has edits not synced yet; run `kenning sync {folder}` first "
                                   "(or export with --force to overwrite them)")
        wanted = _files_for(store)
        for rel in wanted:  # a folder linked elsewhere (ops -> ~/.ssh, committed to a repository) took the file there
            if not (folder / rel).resolve().is_relative_to(folder):
                raise InvalidInput(f"{folder / rel} leads out of {folder} through a link (to "
                                   f"{(folder / rel).resolve().parent}); remove the link, then export again")
        plan: list[tuple[str, str | None, dict[str, Any], Any]] = []  # rel, new text (None: unchanged), entry, text read
        for rel, (kind, title, memories) in sorted(wanted.items()):
            path = folder / rel
            text = render_file(kind, title, memories)
            for parent in reversed(path.relative_to(folder).parents[:-1]):
                if not (folder / parent).exists():
                    created.append(folder / parent)
            try:
                old = read_text(path) if _is_file(path) else None
            except NotUtf8:
                old = None  # only --force gets here: the file is overwritten, its encoding with it
            if old is not None:  # a file a person's editor saved with CRLF or a byte-order mark keeps them
                text = _in_style_of(old, text)
            if not force and old is not None and _unsynced_text(old, manifest["files"].get(rel), store):
                raise InvalidInput(f"{rel} was edited while this export ran; run `kenning sync {folder}` "
                                   "first (or export with --force to overwrite it)")
            plan.append((rel, None if old == text else text, {"kind": kind, "ids": {m.id: sha(m.content) for m in memories}},
                         _ANY_TEXT if force or (old is None and _is_file(path)) else old))
        going = sorted(set(manifest["files"]) - set(wanted))
        manifest["folders"] = sorted({*manifest["folders"], *(str(p.relative_to(folder)) for p in created if p != folder)})
        if going or any(text is not None for _, text, _, _ in plan):
            _remember_folder(store, folder)  # before the first file: `kenning clean` looks here after a crash
            manifest[WRITING] = {"files": {rel: {**entry, "text": sha(text)} for rel, text, entry, _ in plan if text},
                                 "removing": going}
            _save(folder, manifest)
        written, unchanged = [], []
        for rel, text, entry, seen in plan:
            if text is None:
                unchanged.append(rel)
            else:
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                try:  # only over the text the check above read: a person's save since then is kept
                    atomic_write(folder / rel, text, **({} if seen is _ANY_TEXT else {"expected": seen}))
                except EditedMeanwhile:
                    raise EditedMeanwhile(f"{rel} was saved while this export ran, and is kept as saved; files "
                                          f"before it are written; run `kenning sync {folder}`, then export "
                                          "again") from None
                written.append(rel)
            manifest["files"][rel] = entry
        removed = []
        for rel in going:
            if not force and _unsynced(folder / rel, manifest["files"][rel], store):
                raise EditedMeanwhile(f"{rel} was edited while this export ran, and is kept; run "
                                      f"`kenning sync {folder}`, then export again")
            (folder / rel).unlink(missing_ok=True)
            removed.append(rel)
            del manifest["files"][rel]
            manifest["pending"].pop(rel, None)
        manifest.pop(WRITING, None)
        _prune_folders(folder, manifest)
        _save(folder, manifest)
    _remember_folder(store, folder)
    return {"folder": str(folder), "written": written, "unchanged": unchanged, "removed": removed,
            "memories": sum(len(m) for _, _, m in wanted.values()), "lock_taken_over": lock.taken_over}


def _in_style_of(old: str, text: str) -> str:
    """``text`` (LF, no byte-order mark) with the line endings and the leading byte-order mark of ``old``."""
    if line_ending(old) == "\r\n":
        text = text.replace("\n", "\r\n")
    return BOM + text if old.startswith(BOM) else text


def home_file(memory: Memory) -> str:
    """The file a memory's block belongs in: USER.md for a profile note, else its first scope's MEMORY.md."""
    return USER_FILE if profile.is_profile(memory) else scope_path(memory.scopes[0])


def _files_for(store: "Store") -> dict[str, tuple[dict, str, list[Memory]]]:
    """rel path -> (file kind, title, memories in creation order) for every live memory. USER.md is
    always there, empty or not: it is where a person adds a fact about themself."""
    memories = store.list(limit=ALL_MEMORIES, auto_scope=False, record=False)
    files: dict[str, tuple[dict, str, list[Memory]]] = {USER_FILE: (PROFILE_KIND, USER_TITLE, [])}
    for memory in sorted(memories, key=lambda m: (m.created, m.id)):
        if profile.is_profile(memory):
            rel, kind, title = USER_FILE, PROFILE_KIND, USER_TITLE
        else:
            scope = memory.scopes[0]
            rel, kind, title = scope_path(scope), {"scope": scope}, f"Memories · {scope}"
        files.setdefault(rel, (kind, title, []))[2].append(memory)
    return files


def _unsynced(path: Path, entry: dict[str, Any], store: "Store") -> bool:
    """Does the file hold a person's change kenning has not taken in (edit, new text, deletion, damage)?"""
    return _is_file(path) and _unsynced_text(read_text(path), entry, store)


def _unsynced_text(text: str, entry: dict[str, Any] | None, store: "Store") -> bool:
    if entry is None:
        return False  # a file kenning never wrote: the check before the plan found none
    parsed = parse(text)
    if parsed.new or parsed.mangled:
        return True
    present = {b.id for b in parsed.blocks}
    for block in parsed.blocks:
        written = entry["ids"].get(block.id)
        if written is None:  # a block kenning did not write here: pasted by hand (moved from another file)
            return True
        if sha(block.body) != written and sha(normalised(block.body)) != written:
            return True
    gone = set(entry["ids"]) - present
    return any(_live(store, mid) for mid in gone)


def _live(store: "Store", memory_id: str) -> bool:
    try:
        store.get(memory_id)
    except NotFound:
        return False
    return True


def _prune_folders(folder: Path, manifest: dict[str, Any]) -> None:
    """Remove the folders kenning made that are empty now (deepest first)."""
    for rel in sorted(manifest["folders"], key=lambda p: -p.count("/")):
        path = folder / rel
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
            manifest["folders"].remove(rel)


# ---------------------------------------------------------------------------------------- sync
@_filesystem_errors
def sync(store: "Store", directory: str | os.PathLike) -> dict[str, Any]:
    """Read a person's edits back into the store; returns what happened, file by file."""
    folder = Path(directory).expanduser().resolve()
    if folder.is_file():  # MEMORY.md itself, say: the hint below would export onto the file
        root = folder.parent if _holds_export(folder.parent) else _export_above(folder.parent)
        raise InvalidInput(f"{folder} is a file; give the folder the export wrote"
                           + (f": `kenning sync {root}`" if root is not None else ""))
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder; export into it first with `kenning export --markdown {folder}`")
    root = _export_above(folder)
    if root is not None:  # a scope's subfolder: read as an export of its own, every block was a "conflict"
        raise InvalidInput(f"{folder} is inside the markdown export at {root}; sync that folder: `kenning sync {root}`")
    report: dict[str, list] = {"updated": [], "written": [], "pending": [], "withdrawn": [], "repeats": [],
                               "removed": [], "refused": [], "conflicts": [], "mangled": [], "held": [],
                               "missing_files": [], "files_changed": []}
    with DirLock(folder) as lock:
        manifest = _load(folder)
        files = set(manifest["files"])
        for path in folder.rglob("*.md"):
            if path.name in (MEMORY_FILE, USER_FILE):
                files.add(str(path.relative_to(folder)))
        where: dict[str, dict[str, str | None]] = {}  # id -> {file holding a block with it: that file's scope}
        for rel in sorted(files):
            if _is_file(folder / rel):
                parsed = parse(read_text(folder / rel))
                scope = (parsed.kind or {}).get("scope") if isinstance(parsed.kind, dict) else None
                for seg in parsed.segments:
                    if seg.id:  # a block, or a mangled one naming an id
                        where.setdefault(seg.id, {})[rel] = scope if isinstance(scope, str) else None
        for rel in sorted(files):
            path = folder / rel
            if not _is_file(path):
                report["missing_files"].append(rel)  # deleting a file is not read as deleting its memories
                continue
            _sync_file(store, folder, rel, manifest, report, where)
        _save(folder, manifest)
    _remember_folder(store, folder)
    return {"folder": str(folder), **report, "lock_taken_over": lock.taken_over}


def _sync_file(store: "Store", folder: Path, rel: str, manifest: dict[str, Any], report: dict[str, list],
               where: dict[str, dict[str, str | None]]) -> None:
    path = folder / rel
    text = read_text(path)
    newline = line_ending(text)
    parsed = parse(text)
    entry = manifest["files"].get(rel) or {"kind": parsed.kind, "ids": {}}
    kind = parsed.kind or entry.get("kind")
    if not isinstance(kind, dict) or not (kind.get("scope") or kind.get("tier") == "profile"):
        report["mangled"].append({"file": rel, "line": 1, "problem": "the file has no kenning:file comment naming its scope"})
        return
    written_ids: dict[str, str] = dict(entry.get("ids", {}))
    edits: list[tuple[int, int, str]] = []
    ids_now: dict[str, str] = {}
    for seg in parsed.mangled:
        report["mangled"].append({"file": rel, "line": seg.line, "id": seg.id, "problem": seg.problem})
    for block in parsed.blocks:
        if block.id not in written_ids and _pasted_here(store, rel, kind, block, report):
            continue  # not applied and not this file's: deleting it here later is no removal
        ids_now[block.id] = _sync_block(store, rel, block, written_ids.get(block.id), newline, edits, report)
    pending = manifest["pending"].setdefault(rel, {})
    _withdraw_edited(store, rel, pending, {sha(seg.body) for seg in parsed.new}, report)
    first_line: dict[str, int] = {}  # a paragraph's text -> the line it was first met on, in this file
    for seg in parsed.new:
        if seg.body in first_line:  # the same paragraph twice: one memory, and its block says it
            blank = len(newline) if text[:seg.start].endswith(newline * 2) else 0  # with the blank line before it
            edits.append((seg.start - blank, seg.end, ""))
            report["repeats"].append({"file": rel, "line": seg.line, "why": f"the same text as line "
                                      f"{first_line[seg.body]}, so it was taken in once and this copy dropped"})
            continue
        first_line[seg.body] = seg.line
        memory = _sync_new(store, rel, kind, seg, pending, report, where)
        if memory is not None:
            edits.append((seg.start, seg.end, render_block(memory, newline)))
            ids_now[memory.id] = sha(memory.content)
    # deletions are held while the file may still hold the block under a broken header: a mangled block,
    # a block naming an id no memory has (a typo in its header), or a file that lost its kenning:file
    # comment (emptied by `> MEMORY.md` or a crash, replaced by another file)
    orphans = [b for b in parsed.blocks if b.id not in written_ids and not _live(store, b.id)]
    hold = ("the file has a mangled block, which may be this one" if parsed.mangled else
            f"the block on line {orphans[0].line} names an id no memory has, and may be this one with its "
            "header's id edited; put the id back, or delete that block" if orphans else
            "the file lost its kenning:file comment (emptied, or replaced by another file), so nothing it "
            "lacks is read as deleted; remove a memory with `kenning remove`, or export with --force "
            "to write the file afresh" if parsed.kind is None else None)
    gone = [mid for mid in written_ids if mid not in ids_now and mid not in {s.id for s in parsed.mangled}]
    for mid in gone:
        elsewhere = sorted(set(where.get(mid, {})) - {rel})
        if elsewhere:  # the block was moved (or copied) to another file: never a removal
            home = _home_of(store, mid)
            if home is not None and home != rel and home in elsewhere:
                continue  # re-scoped, and its block is in its new file: it just left this one
            hint = _move_hint(mid, rel, where[mid][elsewhere[0]])
            report["held"].append({"file": rel, "id": mid,
                                   "why": f"its block is in {elsewhere[0]} now, so the memory is not removed; {hint}"})
            ids_now[mid] = written_ids[mid]
            continue
        if hold:
            report["held"].append({"file": rel, "id": mid, "why": hold})
            ids_now[mid] = written_ids[mid]
            continue
        try:
            current = store.get(mid)
        except NotFound:
            continue  # already removed in the store
        if sha(current.content) != written_ids[mid]:  # the block deleted was an older text than the store's now
            report["conflicts"].append({"file": rel, "id": mid, "why": (
                "deleted here and changed in the store since the export, so it was not removed; "
                f"remove it with `kenning remove {mid}`, or export with --force to see its new text")})
            ids_now[mid] = written_ids[mid]
            continue
        try:  # only the memory as compared: one an agent updates meanwhile is a conflict, not removed
            store.remove(mid, removal_reason(rel), version=current.version)
            report["removed"].append({"file": rel, "id": mid})
        except NotFound:
            pass  # already removed in the store
        except Stale:
            report["conflicts"].append({"file": rel, "id": mid, "why": (
                "deleted here and changed in the store during this sync, so it was not removed; "
                f"remove it with `kenning remove {mid}`, or export with --force to see its new text")})
            ids_now[mid] = written_ids[mid]
    for seg in parsed.mangled:
        if seg.id and seg.id in written_ids:
            ids_now[seg.id] = written_ids[seg.id]
    if not pending:
        manifest["pending"].pop(rel, None)
    new_text = text
    for start, end, replacement in sorted(edits, reverse=True):
        new_text = new_text[:start] + replacement + new_text[end:]
    if new_text != text:
        try:
            atomic_write(path, new_text, expected=text)
        except EditedMeanwhile:  # what was read is taken in; the file (and its entry) stay as they are
            report["conflicts"].append({"file": rel, "why": (
                "the file was saved while this sync ran, so its blocks were not rewritten and the new save is "
                "kept as it is; what it held before was taken in; sync again to take in the rest")})
            return
        report["files_changed"].append(rel)
    manifest["files"][rel] = {"kind": kind, "ids": ids_now}


def _withdraw_edited(store: "Store", rel: str, pending: dict[str, str], paragraphs: set[str],
                     report: dict[str, list]) -> None:
    """A staged paragraph no longer in the file (corrected or deleted before it was confirmed): its staged
    write is cancelled, so confirming what is staged never brings back the text the person replaced."""
    live = None
    for key in [k for k in pending if k not in paragraphs]:
        staged = pending.pop(key)
        live = {p["pending_id"] for p in store.pending_writes(all_sessions=True)} if live is None else live
        if staged in live:
            store.cancel_write(staged)
            report["withdrawn"].append({"file": rel, "pending_id": staged,
                                        "why": "its paragraph was changed or deleted before it was confirmed"})


def _home_of(store: "Store", memory_id: str) -> str | None:
    try:
        return home_file(store.get(memory_id))
    except NotFound:
        return None


def _move_hint(memory_id: str, home: str, scope: str | None) -> str:
    """How to settle a block a person moved from ``home`` into the file of ``scope`` (None: USER.md or unknown)."""
    move = (f"to file it under {scope}, run `kenning update {memory_id} --scope {scope}` (repeat --scope for any "
            f"other scope it keeps), then sync again; " if scope else "")
    return f"{move}otherwise move the block back to {home}"


def _pasted_here(store: "Store", rel: str, kind: dict, block: Segment, report: dict[str, list]) -> bool:
    """A block kenning did not write in this file, for a memory that belongs in another one (a person
    moved or copied it here): reported, not applied, not recorded as this file's. False when it is
    this file's after all (or names no live memory: `_sync_block` reports that)."""
    home = _home_of(store, block.id)
    if home is None or home == rel:
        return False
    hint = _move_hint(block.id, home, kind.get("scope"))
    report["conflicts"].append({"file": rel, "id": block.id, "line": block.line,
                                "why": f"the block belongs in {home}, so it was not applied here and its removal "
                                       f"from {home} is held; {hint}"})
    return True


def _sync_block(store: "Store", rel: str, block: Segment, written: str | None, newline: str,
                edits: list, report: dict[str, list]) -> str:
    """Apply one block's edit; returns the body hash the manifest keeps for it."""
    try:
        memory = store.get(block.id)
    except NotFound:
        report["conflicts"].append({"file": rel, "id": block.id, "line": block.line,
                                    "why": "no live memory has this id: if it was removed in the store, "
                                           "`kenning restore` it or delete the block; if its header was "
                                           "edited, put the id back"})
        return written or sha(block.body)
    _header_edited(rel, block, memory, report)
    body = normalised(block.body) if newline == "\r\n" else block.body
    if block.body == memory.content or body == memory.content:
        return sha(memory.content)  # the same text (a CRLF file's line endings are no edit)
    if written is not None and written in (sha(block.body), sha(body)):
        return written  # the store changed since the export, the file did not: export brings it in
    if written is not None and sha(memory.content) != written:
        report["conflicts"].append({"file": rel, "id": block.id, "line": block.line,
                                    "why": "edited here and changed in the store since the export; "
                                           "settle it with `kenning update`, then export with --force"})
        return written
    text = body.strip("\r\n")
    if not text.strip():
        report["refused"].append({"file": rel, "id": block.id, "line": block.line,
                                  "why": "the body is empty; delete the whole block to remove the memory"})
        return written or sha(memory.content)
    try:
        # conditional on the memory this block was compared with: one changed in the store since (an
        # agent's update landing during the sync) is a conflict, never overwritten by the file
        updated = store.update(block.id, text=text, version=memory.version)
    except Stale:
        report["conflicts"].append({"file": rel, "id": block.id, "line": block.line,
                                    "why": "edited here and changed in the store during this sync; "
                                           "settle it with `kenning update`, then export with --force"})
        return written or sha(memory.content)
    except KenningError as exc:
        report["refused"].append({"file": rel, "id": block.id, "line": block.line} | _why(exc))
        return written or sha(memory.content)
    edits.append((block.start, block.end, render_block(updated, newline)))
    report["updated"].append({"file": rel, "id": block.id})
    return sha(updated.content)


def _header_edited(rel: str, block: Segment, memory: Memory, report: dict[str, list]) -> None:
    """A header's scopes or category changed by hand, while the memory is as exported (same ``updated``): the
    header is kenning's record, not read, so the change is reported as not taken in (export would undo it)."""
    if block.header.get("updated") != iso(memory.updated):
        return  # the memory changed in the store since: the header is only out of date
    changed = [name for name, now in (("scopes", memory.scopes), ("category", memory.category))
               if block.header.get(name) != now]
    if changed:
        options = " ".join({"scopes": "--scope SCOPE", "category": "--category CATEGORY"}[n] for n in changed)
        report["refused"].append({"file": rel, "id": block.id, "line": block.line, "why": (
            f"the header's {' and '.join(changed)} {'are' if len(changed) > 1 else 'is'} kenning's record, not read "
            f"from the file; change {'them' if len(changed) > 1 else 'it'} with `kenning update {block.id} "
            f"{options}`, then export")})


def _sync_new(store: "Store", rel: str, kind: dict, seg: Segment, pending: dict[str, str],
              report: dict[str, list], where: dict[str, dict[str, str | None]]) -> Memory | None:
    """Write a paragraph outside the blocks; the new memory when it committed (its block replaces the paragraph)."""
    key = sha(seg.body)
    staged = pending.get(key)
    if staged:
        live = {p["pending_id"] for p in store.pending_writes(all_sessions=True)}
        if staged in live:
            report["pending"].append({"file": rel, "line": seg.line, "pending_id": staged, "still": True})
            return None
        confirmed = _confirmed_memory(store, staged)
        pending.pop(key)
        if confirmed is not None:  # its block replaces the paragraph now
            report["written"].append({"file": rel, "id": confirmed.id, "line": seg.line, "confirmed": staged})
            return confirmed
    text = seg.body.replace("\r\n", "\n")
    try:
        if kind.get("tier") == "profile":
            result = profile.remember(store, text)
        else:
            result = store.write(text, scopes=[kind["scope"]])
    except KenningError as exc:
        report["refused"].append({"file": rel, "line": seg.line, "why": str(exc)})
        return None
    if result.status == "committed":
        report["written"].append({"file": rel, "id": result.id, "line": seg.line})
        return store.get(result.id)
    twin = _written_before(store, rel, text, result.id, where) if result.status == "duplicate" else None
    if twin is not None:
        where.setdefault(twin.id, {})[rel] = kind.get("scope")
        report["written"].append({"file": rel, "id": twin.id, "line": seg.line, "by_an_earlier_sync": True})
        return twin
    if result.status == "pending":
        pending[key] = result.pending_id
        report["pending"].append({"file": rel, "line": seg.line, "pending_id": result.pending_id, "still": False})
        return None
    hint = USER_CLAIM_HINT if result.gate == "user_claims" else result.hint
    report["refused"].append({"file": rel, "line": seg.line, "status": result.status,
                              "why": result.reason or result.status, "match": result.id}
                             | ({"hint": hint, "override": result.override} if hint else {}))
    return None


def _written_before(store: "Store", rel: str, text: str, memory_id: str | None,
                    where: dict[str, dict[str, str | None]]) -> Memory | None:
    """The memory a sync killed before it rewrote this file wrote from this very paragraph: the one the
    duplicates gate names, holding exactly its text, filed here and with no block anywhere in the folder.
    Without it a second sync refused the paragraph as that memory's duplicate and left it in the file, where
    every export then refused it as an edit not synced. Nothing is lost by taking it: its block says the same."""
    if memory_id is None or memory_id in where:
        return None
    try:
        memory = store.get(memory_id)
    except NotFound:
        return None
    return memory if memory.content == text and home_file(memory) == rel else None


# a MEMORY.md paragraph about the user: the mirror's own place for it is USER.md, which stages it for the user
USER_CLAIM_HINT = (f"A note about the user belongs in {USER_FILE}, where sync stages it for the user to confirm: "
                   "move the paragraph there and sync again; if the subject is someone else (an application's "
                   "users, a colleague), pass acknowledge_user_claim=True.")


def _why(exc: KenningError) -> dict[str, str | None]:
    """A refused edit's reason, and a gate's hint and override as fields of their own (as a refused
    new paragraph has them): the command line restates the hint and says what sync cannot do."""
    refusal = getattr(exc, "refusal", None)
    if refusal is None:
        return {"why": str(exc)}
    return {"why": f"{refusal.gate} gate refused it: {refusal.reason}", "hint": refusal.hint,
            "override": refusal.override}


def _confirmed_memory(store: "Store", pending_id: str) -> Memory | None:
    for event in store.events(kinds=["confirm"]):
        if (event.get("payload") or {}).get("pending_id") == pending_id and event.get("memory_id"):
            try:
                return store.get(event["memory_id"])
            except NotFound:
                return None
    return None


__all__ = ["export", "sync", "scope_path", "known_folders", "Parsed"]
