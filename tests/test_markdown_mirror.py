"""The markdown mirror on real files: export, hand edits, sync through the gates, byte-for-byte safety."""

from __future__ import annotations

import json
import os
import re

import pytest

from kenning.errors import InvalidInput
from kenning.recall import markdown, profile
from kenning.recall.files import LOCK_NAME, TEMP_MARK, DirLock
from kenning.recall.markdown_format import END_LINE, parse, render_header


@pytest.fixture
def mirror(store, tmp_path):
    ids = {
        "port": store.write("The auth service listens on port 8443", scopes=["projects:auth"]).id,
        "deploy": store.write("Deploys go through the blue green switch on the staging cluster",
                              scopes=["projects:auth", "ops"]).id,
        "backup": store.write("Postgres backups keep 14 daily snapshots", scopes=["projects:auth"]).id,
        "ops": store.write("The on-call rota changes every Monday at 09:00 UTC", scopes=["ops"]).id,
    }
    staged = profile.remember(store, "The user prefers short answers with the code first")
    ids["profile"] = store.confirm_write(staged.pending_id).id
    folder = tmp_path / "notes"
    markdown.export(store, folder)
    return folder, ids


def _block_span(text: str, memory_id: str) -> tuple[int, int]:
    (block,) = [b for b in parse(text).blocks if b.id == memory_id]
    return block.start, block.end


def _sync(store, folder):
    report = markdown.sync(store, folder)
    assert not list(folder.rglob(f"*{TEMP_MARK}*")) and not (folder / LOCK_NAME).exists()
    return report


def test_export_layout_and_provenance_headers(store, mirror):
    folder, ids = mirror
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*.md")) == [
        "USER.md", "ops/MEMORY.md", "projects/auth/MEMORY.md"]
    auth = (folder / "projects/auth/MEMORY.md").read_text()
    (block,) = [b for b in parse(auth).blocks if b.id == ids["deploy"]]
    assert set(block.header) == {"id", "scopes", "category", "created", "updated", "origin"}
    assert block.header["scopes"] == ["projects:auth", "ops"] and block.body.startswith("Deploys go through")
    assert ids["profile"] in (folder / "USER.md").read_text() and ids["profile"] not in auth


def test_round_trip_sync_then_export_changes_nothing(store, mirror):
    folder, _ = mirror
    before = {p: p.read_bytes() for p in folder.rglob("*.md")}
    report = _sync(store, folder)
    assert not any(report[k] for k in ("updated", "written", "pending", "removed", "refused", "mangled", "files_changed"))
    again = markdown.export(store, folder)
    assert again["written"] == [] and {p: p.read_bytes() for p in folder.rglob("*.md")} == before


def test_edited_body_is_an_update_and_only_that_block_changes(store, mirror):
    folder, ids = mirror
    path = folder / "projects/auth/MEMORY.md"
    text = path.read_text()
    start, end = _block_span(text, ids["port"])
    path.write_text(text.replace("listens on port 8443", "listens on port 9443"))
    report = _sync(store, folder)
    assert report["updated"] == [{"file": "projects/auth/MEMORY.md", "id": ids["port"]}]
    assert store.get(ids["port"]).content == "The auth service listens on port 9443"
    after = path.read_text()
    new_start, new_end = _block_span(after, ids["port"])
    assert new_start == start and after[:start] == text[:start] and after[new_end:] == text[end:]  # byte for byte
    assert json.loads(after[start:new_end].split("\n")[0][len("<!-- kenning:memory "):-4])["updated"] > \
        json.loads(text[start:end].split("\n")[0][len("<!-- kenning:memory "):-4])["updated"]
    assert markdown.export(store, folder)["written"] == []  # the file already says what the store says


def test_deleted_block_is_a_tombstone_and_the_rest_is_untouched(store, mirror):
    folder, ids = mirror
    path = folder / "projects/auth/MEMORY.md"
    text = path.read_text()
    start, end = _block_span(text, ids["backup"])
    edited = text[:start] + text[end:]
    path.write_text(edited)
    report = _sync(store, folder)
    assert report["removed"] == [{"file": "projects/auth/MEMORY.md", "id": ids["backup"]}]
    (tomb,) = [t for t in store.tombstones() if t.memory.id == ids["backup"]]
    assert tomb.reason == "removed from MEMORY.md"
    assert path.read_text() == edited
    assert not _sync(store, folder)["removed"]  # the removal is taken in once


def test_new_paragraph_is_a_write_through_the_gates(store, mirror):
    folder, ids = mirror
    path = folder / "ops/MEMORY.md"
    text = path.read_text()
    path.write_text(text + "\nGrafana dashboards live in the ops-observability repository.\n"
                           "\nThe deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789\n")
    report = _sync(store, folder)
    (written,) = report["written"]
    assert store.get(written["id"]).scopes == ["ops"]
    assert [r.get("line") for r in report["refused"]] and "secret" in report["refused"][0]["why"].lower()
    after = path.read_text()
    assert after.startswith(text) and f'"id": "{written["id"]}"' in after
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" in after  # a refused paragraph stays for the person to fix
    assert not _sync(store, folder)["written"]  # the new block now has its header: not written twice


def test_new_paragraph_in_user_md_waits_for_confirmation(store, mirror):
    folder, _ = mirror
    path = folder / "USER.md"
    path.write_text(path.read_text() + "\nThe user works in the Berlin office.\n")
    first = _sync(store, folder)
    (staged,) = first["pending"]
    assert not staged["still"] and not first["written"]
    assert _sync(store, folder)["pending"][0]["still"]  # not staged a second time
    assert len(store.pending_writes(all_sessions=True)) == 1
    memory_id = store.confirm_write(staged["pending_id"]).id
    _sync(store, folder)
    assert f'"id": "{memory_id}"' in path.read_text()
    assert markdown.export(store, folder)["written"] == []


def test_mangled_header_is_reported_and_deletions_wait(store, mirror):
    folder, ids = mirror
    path = folder / "projects/auth/MEMORY.md"
    text = path.read_text()
    mangled = text.replace(f'{{"id": "{ids["port"]}"', f'{{"id" "{ids["port"]}"')
    start, end = _block_span(mangled, ids["backup"])
    mangled = mangled[:start] + mangled[end:]
    path.write_text(mangled)
    report = _sync(store, folder)
    assert report["mangled"][0]["problem"].startswith("the header's JSON does not parse")
    # the mangled header names no readable id, so it may be either block that vanished: both wait
    assert sorted(h["id"] for h in report["held"]) == sorted([ids["backup"], ids["port"]])
    assert not report["removed"] and not report["written"]
    assert store.get(ids["port"]).content.endswith("8443") and store.get(ids["backup"])
    assert path.read_text() == mangled
    with pytest.raises(InvalidInput, match="not synced"):
        markdown.export(store, folder)


def test_end_marker_without_header_is_mangled_not_new(store, mirror):
    folder, ids = mirror
    path = folder / "ops/MEMORY.md"
    text = path.read_text()
    header = next(line for line in text.splitlines() if ids["ops"] in line)
    path.write_text(text.replace(header + "\n", ""))
    report = _sync(store, folder)
    assert report["mangled"] and "without its header" in report["mangled"][0]["problem"]
    assert not report["written"] and not report["removed"]


def test_refused_edit_keeps_the_memory_and_the_text(store, mirror):
    folder, ids = mirror
    path = folder / "ops/MEMORY.md"
    path.write_text(path.read_text().replace("changes every Monday", "password=hunter2hunter2 changes every Monday"))
    report = _sync(store, folder)
    assert report["refused"] and report["refused"][0]["id"] == ids["ops"]
    assert "hunter2" not in store.get(ids["ops"]).content and "hunter2" in path.read_text()


def test_edit_in_both_places_is_a_conflict(store, mirror):
    folder, ids = mirror
    store.update(ids["ops"], text="The on-call rota changes every Tuesday at 09:00 UTC")
    path = folder / "ops/MEMORY.md"
    path.write_text(path.read_text().replace("every Monday", "every Friday"))
    report = _sync(store, folder)
    assert report["conflicts"][0]["id"] == ids["ops"]
    assert "Tuesday" in store.get(ids["ops"]).content


def test_a_block_deleted_here_after_its_memory_changed_in_the_store_is_a_conflict_not_a_removal(store, mirror):
    """The person deleted the text they saw; another agent's newer text (written after the export) was
    never in the file, so removing the memory would drop what nobody here read. It is a conflict."""
    folder, ids = mirror
    store.update(ids["backup"], text="Postgres backups keep 30 daily snapshots since the audit")
    path = folder / "projects/auth/MEMORY.md"
    text = path.read_text()
    start, end = _block_span(text, ids["backup"])
    path.write_text(text[:start] + text[end:])
    report = _sync(store, folder)
    assert not report["removed"] and [c["id"] for c in report["conflicts"]] == [ids["backup"]]
    assert "kenning remove" in report["conflicts"][0]["why"]
    assert store.get(ids["backup"]).content == "Postgres backups keep 30 daily snapshots since the audit"
    assert not _sync(store, folder)["removed"]  # held at the next sync too
    markdown.export(store, folder, force=True)  # brings the new text back into the file
    assert "30 daily snapshots" in path.read_text() and not any(_sync(store, folder)[k] for k in ("removed", "conflicts"))


def test_store_changes_reach_the_files_on_export(store, mirror):
    folder, ids = mirror
    store.update(ids["ops"], text="The on-call rota changes every Tuesday at 09:00 UTC")
    assert not _sync(store, folder)["updated"]  # an untouched block is not an edit
    assert markdown.export(store, folder)["written"] == ["ops/MEMORY.md"]
    assert "Tuesday" in (folder / "ops/MEMORY.md").read_text()


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX's")
def test_a_file_made_private_stays_private_when_export_or_sync_rewrites_it(store, mirror):
    """A new file follows the umask, as any file a tool writes where it is asked; a mode the user gave
    one is kept: chmod 600 on a MEMORY.md was undone (0644 again) by the next export that rewrote it."""
    folder, ids = mirror
    private = folder / "ops/MEMORY.md"
    private.chmod(0o600)
    store.update(ids["ops"], text="The on-call rota changes every Tuesday at 09:00 UTC")
    assert markdown.export(store, folder)["written"] == ["ops/MEMORY.md"]
    assert private.stat().st_mode & 0o777 == 0o600
    private.chmod(0o640)
    private.write_text(private.read_text().replace("Tuesday", "Wednesday"))
    assert _sync(store, folder)["updated"]
    assert private.stat().st_mode & 0o777 == 0o640
    mask = os.umask(0o027)
    try:
        store.write("Releases are cut from the main branch on Thursdays", scopes=["releases"])
        markdown.export(store, folder)
    finally:
        os.umask(mask)
    assert (folder / "releases/MEMORY.md").stat().st_mode & 0o777 == 0o640


def test_crlf_files_keep_their_line_endings(store, mirror):
    folder, ids = mirror
    path = folder / "ops/MEMORY.md"
    crlf = path.read_bytes().replace(b"\n", b"\r\n").replace(b"every Monday", b"every Sunday")
    path.write_bytes(crlf)
    assert _sync(store, folder)["updated"]
    data = path.read_bytes()
    assert b"every Sunday" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert store.get(ids["ops"]).content == "The on-call rota changes every Sunday at 09:00 UTC"


def test_sync_waits_for_the_folder_lock(store, mirror, monkeypatch):
    folder, _ = mirror
    monkeypatch.setattr("kenning.recall.files.LOCK_WAIT_S", 0.2)
    with DirLock(folder):
        with pytest.raises(InvalidInput, match="locked by pid"):
            markdown.sync(store, folder)
    (folder / LOCK_NAME).write_text(json.dumps({"pid": 2**22 + 12345, "host": os.uname().nodename, "at": 0}))
    assert markdown.sync(store, folder)["lock_taken_over"]["pid"] == 2**22 + 12345  # its owner is gone: taken over


def test_sync_of_a_folder_that_is_not_there(store, tmp_path):
    with pytest.raises(InvalidInput):
        markdown.sync(store, tmp_path / "nothing")
    assert END_LINE.startswith("<!--")


# ------------------------------------------------------------ bodies holding lines that look like kenning's markers
REPRO = "Release checklist\n<!-- /kenning:memory -->\nstep two: tag the build"
QUIET = ("updated", "written", "pending", "removed", "refused", "conflicts", "mangled", "held", "files_changed")
MARKERISH = re.compile(r"\\*<!-- /?kenning:")


def _marker_bodies(store) -> dict[str, str]:
    """Memory texts holding lines that look like kenning's own markers, or like the escaped form of one."""
    other = store.write("The staging cluster runs in eu-west-1", scopes=["ops"])
    header = render_header(store.get(other.id))  # a complete header naming a live memory
    return {
        "end": REPRO,
        "header": f"How a block starts:\n{header}\nand the body follows it",
        "file": 'Each file opens with\n<!-- kenning:file {"scope": "docs"}\nthen the how-to text -->',
        "escaped": "Written in the file as\n\\<!-- /kenning:memory -->\n\\\\<!-- kenning:memory {} -->\nkept as typed",
        "indented": "Indented markers too\n   <!-- /kenning:memory -->  \n\t<!-- kenning:memory {} -->\nend",
    }


def _assert_written_escaped(text: str, memory_id: str, body: str) -> None:
    """The file format: a body line that looks like a marker (or an escaped one) is written with one
    backslash more after its indentation; no line but kenning's own markers reads as a marker."""
    (block,) = [b for b in parse(text).blocks if b.id == memory_id]
    raw = text[block.start : block.end].split("\n")[1:-2]
    want = []
    for line in body.split("\n"):
        core = line.lstrip()
        want.append(line[: len(line) - len(core)] + "\\" + core if MARKERISH.match(core) else line)
    assert raw == want
    markers = [line.strip() for line in text.split("\n") if re.match(r"<!-- /?kenning:", line.strip())]
    blocks = len(parse(text).blocks)
    assert len(markers) == 1 + 2 * blocks and markers[0].startswith("<!-- kenning:file")


def test_export_then_sync_keeps_a_body_holding_an_end_marker_line(store, tmp_path):
    memory_id = store.write(REPRO, scopes=["docs"]).id
    folder = tmp_path / "md"
    markdown.export(store, folder)
    before = (folder / "docs/MEMORY.md").read_bytes()
    report = _sync(store, folder)
    assert not any(report[k] for k in QUIET), report
    assert store.get(memory_id).content == REPRO  # byte for byte
    assert not store.tombstones()
    assert (folder / "docs/MEMORY.md").read_bytes() == before
    assert markdown.export(store, folder)["written"] == []


@pytest.mark.parametrize("name", ["end", "header", "file", "escaped", "indented"])
def test_export_then_sync_keeps_bodies_with_marker_like_lines(store, tmp_path, name):
    bodies = _marker_bodies(store)
    memory_id = store.write(bodies[name], scopes=["docs"]).id
    folder = tmp_path / "md"
    markdown.export(store, folder)
    text = (folder / "docs/MEMORY.md").read_text()
    _assert_written_escaped(text, memory_id, bodies[name])
    (block,) = [b for b in parse(text).blocks if b.id == memory_id]
    assert block.body == bodies[name]
    report = _sync(store, folder)
    assert not any(report[k] for k in QUIET), report
    assert store.get(memory_id).content == bodies[name]
    assert markdown.export(store, folder)["written"] == []


@pytest.mark.parametrize("name", ["end", "header", "file", "escaped"])
def test_hand_edit_of_other_lines_of_such_a_body_syncs(store, tmp_path, name):
    bodies = _marker_bodies(store)
    memory_id = store.write(bodies[name], scopes=["docs"]).id
    folder = tmp_path / "md"
    markdown.export(store, folder)
    path = folder / "docs/MEMORY.md"
    first_line = bodies[name].split("\n")[0]
    path.write_text(path.read_text().replace(first_line + "\n", first_line + " (edited by hand)\n", 1))
    report = _sync(store, folder)
    assert report["updated"] == [{"file": "docs/MEMORY.md", "id": memory_id}] and not report["mangled"], report
    expected = bodies[name].replace(first_line, first_line + " (edited by hand)", 1)
    assert store.get(memory_id).content == expected
    _assert_written_escaped(path.read_text(), memory_id, expected)  # the block written back is escaped too
    assert not any(_sync(store, folder)[k] for k in QUIET)
    assert markdown.export(store, folder)["written"] == []


def test_a_marker_line_typed_escaped_by_hand_is_stored_as_the_marker(store, mirror):
    folder, ids = mirror
    path = folder / "ops/MEMORY.md"
    text = path.read_text()
    path.write_text(text.replace("at 09:00 UTC\n", "at 09:00 UTC\n\\<!-- /kenning:memory -->\nplain \\ text\n", 1))
    report = _sync(store, folder)
    assert report["updated"] == [{"file": "ops/MEMORY.md", "id": ids["ops"]}] and not report["mangled"]
    assert store.get(ids["ops"]).content == ("The on-call rota changes every Monday at 09:00 UTC\n"
                                             "<!-- /kenning:memory -->\nplain \\ text")
    assert not any(_sync(store, folder)[k] for k in QUIET)


def test_a_stray_end_marker_in_a_body_is_mangled_never_a_shortened_memory(store, tmp_path):
    """A file whose body holds a bare end marker (typed by hand, or written by an older export): the block
    before it may be cut short, so it is reported and left as is, not applied."""
    memory_id = store.write(REPRO, scopes=["docs"]).id
    folder = tmp_path / "md"
    markdown.export(store, folder)
    path = folder / "docs/MEMORY.md"
    raw = path.read_text().replace("\\<!-- /kenning:memory -->", "<!-- /kenning:memory -->")
    for gap in ("", "\n"):  # the rest of the body right after the stray marker, or after a blank line
        path.write_text(raw.replace("-->\nstep two", "-->\n" + gap + "step two"))
        report = _sync(store, folder)
        assert report["mangled"] and not report["updated"] and not report["written"] and not report["removed"]
        assert store.get(memory_id).content == REPRO and not store.tombstones()


def test_a_stray_header_in_a_body_never_updates_the_memory_it_names(store, tmp_path):
    """A body holding another memory's whole header, unescaped (typed by hand, or an older export): what
    follows it is not that memory's new text."""
    memory_id = store.write("placeholder", scopes=["docs"]).id
    other_id = store.write("The staging cluster runs in eu-west-1", scopes=["docs"]).id
    body = f"How a block starts:\n{render_header(store.get(other_id))}\nand the body follows it"
    store.update(memory_id, text=body)
    folder = tmp_path / "md"
    markdown.export(store, folder)
    path = folder / "docs/MEMORY.md"
    path.write_text(path.read_text().replace("\\<!-- kenning:memory", "<!-- kenning:memory"))
    report = _sync(store, folder)
    assert report["mangled"] and not report["updated"] and not report["written"] and not report["removed"]
    assert store.get(memory_id).content == body
    assert store.get(other_id).content == "The staging cluster runs in eu-west-1"


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_MARKERISH = st.sampled_from([
    "<!-- /kenning:memory -->", "<!-- kenning:memory ", '<!-- kenning:memory {"id": "x"} -->', "<!-- kenning:file ",
    "<!-- /kenning:", "<!-- kenning:", "\\", "\\\\", " ", "\t", "\x0c", "\x85", "\u2028", "-->", "# ", "", "\r",
])
_LINE = st.lists(st.one_of(_MARKERISH, st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=8)),
                 max_size=5).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=8).map("\n".join))
def test_render_then_parse_returns_any_text(content):
    from datetime import datetime, timezone

    from kenning.recall.markdown_format import render_file
    from kenning.store.models import Memory

    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    memories = [Memory(id=f"01TEST{i}", content=text, scopes=["docs"], created=now, updated=now)
                for i, text in enumerate([content, "a neighbour", content])]
    parsed = parse(render_file({"scope": "docs"}, "Memories · docs", memories))
    assert not parsed.mangled and not parsed.new
    assert [(b.id, b.body) for b in parsed.blocks] == [(m.id, m.content) for m in memories]


# ---------------------------------------------------------------- editors' habits: byte-order mark, CRLF, moved blocks
def test_a_byte_order_mark_is_not_text_and_stays_where_it_is(store, mirror):
    folder, ids = mirror
    path = folder / "projects/auth/MEMORY.md"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # what Notepad does on save
    before = {p: p.read_bytes() for p in folder.rglob("*.md")}
    report = _sync(store, folder)
    assert not any(report[k] for k in ("updated", "written", "pending", "removed", "refused", "mangled", "files_changed"))
    assert len(store.list(limit=100, auto_scope=False)) == 5  # the preamble is no new memory
    assert markdown.export(store, folder)["written"] == []
    assert {p: p.read_bytes() for p in folder.rglob("*.md")} == before
    path.write_bytes(path.read_bytes().replace(b"port 8443", b"port 9443"))
    assert _sync(store, folder)["updated"] == [{"file": "projects/auth/MEMORY.md", "id": ids["port"]}]
    assert path.read_bytes().startswith(b"\xef\xbb\xbf<!-- kenning:file")  # kept when sync rewrites a block
    store.update(ids["backup"], text="Postgres backups keep 30 daily snapshots")
    assert markdown.export(store, folder)["written"] == ["projects/auth/MEMORY.md"]
    assert path.read_bytes().startswith(b"\xef\xbb\xbf<!-- kenning:file")  # and when export rewrites the file


def test_crlf_conversion_alone_is_no_edit_and_a_rewritten_block_stays_crlf(store, tmp_path):
    memory_id = store.write("Deploy checklist:\n- run migrations\n- flip the feature flag\n\nThen watch the dashboards.",
                            scopes=["ops"]).id
    folder = tmp_path / "md"
    markdown.export(store, folder)
    path = folder / "ops/MEMORY.md"
    before = store.get(memory_id)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    crlf = path.read_bytes()
    report = _sync(store, folder)
    assert not report["updated"] and not report["files_changed"] and path.read_bytes() == crlf
    after = store.get(memory_id)
    assert (after.content, after.updated, after.version) == (before.content, before.updated, before.version)
    assert markdown.export(store, folder)["written"] == [] and path.read_bytes() == crlf  # nothing unsynced, kept CRLF
    path.write_bytes(crlf.replace(b"flip the feature flag", b"flip the rollout flag"))
    assert _sync(store, folder)["updated"] == [{"file": "ops/MEMORY.md", "id": memory_id}]
    assert store.get(memory_id).content == \
        "Deploy checklist:\n- run migrations\n- flip the rollout flag\n\nThen watch the dashboards."
    data = path.read_bytes()
    assert b"flip the rollout flag\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")  # no mixed endings


def test_a_body_holding_crlf_leaves_an_lf_file_lf(store, tmp_path):
    """The file's line ending is its own (its first line's), not a memory's: a body written on Windows
    made a second export of an unchanged store rewrite the whole file as CRLF, and a sync write new
    blocks with CRLF into an LF file."""
    windows = store.write("Windows notes use CRLF endings\r\nsecond line of the note", scopes=["ops"]).id
    store.write("The on-call rota changes every Monday at 09:00 UTC", scopes=["ops"])
    folder = tmp_path / "md"
    markdown.export(store, folder)
    path = folder / "ops/MEMORY.md"
    exported = path.read_bytes()
    assert markdown.export(store, folder)["written"] == [] and path.read_bytes() == exported
    path.write_bytes(exported + b"\nThe staging cluster is rebuilt every Friday night\n")
    report = _sync(store, folder)
    assert len(report["written"]) == 1 and not report["updated"]
    data = path.read_bytes()
    assert data.count(b"\r\n") == 1 and b"rebuilt every Friday night\n<!-- /kenning:memory -->\n" in data
    assert store.get(windows).content == "Windows notes use CRLF endings\r\nsecond line of the note"
    assert markdown.export(store, folder)["written"] == [] and _sync(store, folder)["files_changed"] == []


@pytest.mark.parametrize("crlf", [False, True], ids=["lf-file", "crlf-file"])
def test_a_body_ending_in_a_carriage_return_is_no_edit(store, tmp_path, crlf):
    """A text whose last line ends in a lone CR (a Windows line whose LF a caller cut off): the CR
    before the end marker's line ending was read as part of that line ending, so a sync with nothing
    edited updated the memory without it (its verification cleared)."""
    text = "Copied from a Windows terminal: run make reconcile\r"
    memory_id = store.write(text, scopes=["ops"]).id
    store.verify(memory_id, note="ran it")
    folder = tmp_path / "md"
    markdown.export(store, folder)
    path = folder / "ops/MEMORY.md"
    if crlf:
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    before = store.get(memory_id)
    report = _sync(store, folder)
    assert not report["updated"] and not report["files_changed"]
    assert store.get(memory_id) == before and before.content == text and before.last_verified_at is not None
    assert markdown.export(store, folder)["written"] == []


def _move_block(src, dst, memory_id: str, keep: bool = False) -> None:
    text = src.read_text()
    start, end = _block_span(text, memory_id)
    if not keep:
        src.write_text(text[:start] + text[end:])
    dst.write_text(dst.read_text() + "\n" + text[start:end])


def test_a_block_moved_to_another_file_is_never_a_removal(store, mirror):
    folder, ids = mirror
    auth, ops = folder / "projects/auth/MEMORY.md", folder / "ops/MEMORY.md"
    _move_block(auth, ops, ids["port"])
    for _ in range(2):  # and a second sync neither removes it nor calls the pasted block a dead one
        report = _sync(store, folder)
        assert not report["removed"] and not report["updated"]
        assert store.get(ids["port"]).content == "The auth service listens on port 8443"
        (held,) = report["held"]
        assert held["file"] == "projects/auth/MEMORY.md" and held["id"] == ids["port"] and "ops/MEMORY.md" in held["why"]
        (conflict,) = report["conflicts"]
        assert conflict["file"] == "ops/MEMORY.md" and conflict["id"] == ids["port"]
        assert "belongs in projects/auth/MEMORY.md" in conflict["why"]
        assert f"kenning update {ids['port']} --scope ops" in conflict["why"]
    with pytest.raises(InvalidInput, match="not synced yet"):  # export would drop the pasted block: it refuses
        markdown.export(store, folder)
    assert ids["port"] in ops.read_text()
    store.update(ids["port"], scopes=["ops"])  # the re-scope the report asks for
    report = _sync(store, folder)
    assert not any(report[k] for k in ("removed", "held", "conflicts", "updated"))
    markdown.export(store, folder)
    assert ids["port"] in ops.read_text() and ids["port"] not in auth.read_text()
    assert store.get(ids["port"]).scopes == ["ops"]


def test_a_block_copied_to_another_file_is_reported_and_export_keeps_it(store, mirror):
    folder, ids = mirror
    auth, ops = folder / "projects/auth/MEMORY.md", folder / "ops/MEMORY.md"
    _move_block(auth, ops, ids["port"], keep=True)
    ops.write_text(ops.read_text().replace("listens on port 8443", "listens on port 9443"))
    report = _sync(store, folder)
    assert [c["id"] for c in report["conflicts"]] == [ids["port"]] and not report["updated"] and not report["removed"]
    assert store.get(ids["port"]).content == "The auth service listens on port 8443"  # not applied from a foreign file
    with pytest.raises(InvalidInput, match="ops/MEMORY.md has edits not synced yet"):
        markdown.export(store, folder)
    ops.write_text(ops.read_text()[: _block_span(ops.read_text(), ids["port"])[0]].rstrip("\n") + "\n")
    report = _sync(store, folder)  # deleting the copy is no removal either: it never was that file's
    assert not report["removed"] and not report["conflicts"] and store.get(ids["port"])
    markdown.export(store, folder)


@pytest.mark.parametrize("part", ["é" * 60, "在庫管理システム" * 4, "ü%" * 60])
def test_a_scope_part_too_long_for_a_file_name_is_cut_and_still_syncs(store, tmp_path, part):
    scope = f"projects:{part}"
    mid = store.write("The inventory service listens on port 9000", scopes=[scope]).id
    folder = tmp_path / "notes"
    report = markdown.export(store, folder)
    (rel,) = [r for r in report["written"] if r.startswith("projects/")]
    assert all(len(name.encode()) <= markdown.MAX_NAME_BYTES for name in rel.split("/"))
    path = folder / rel
    assert mid in path.read_text()
    path.write_text(path.read_text() + "\nThe inventory service retries three times\n")
    (written,) = _sync(store, folder)["written"]
    assert store.get(written["id"]).scopes == [scope]
    assert markdown.scope_path(scope) != markdown.scope_path(scope + "x")  # told apart by a hash


def test_a_folder_that_cannot_be_made_is_one_error_naming_it(store, tmp_path):
    from kenning.errors import KenningError

    store.write("The auth service listens on port 8443", scopes=["projects:auth"])
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(KenningError, match=r"file/notes.*Not a directory"):
        markdown.export(store, blocker / "notes")
    with pytest.raises(InvalidInput, match="NUL"):
        markdown.export(store, str(tmp_path / "a\0b"))


# ------------------------------------------------------------ a path inside an export, not the export's own folder
def test_sync_of_a_scope_subfolder_is_refused_naming_the_export_and_writes_nothing(store, mirror):
    folder, _ = mirror
    sub = folder / "ops"
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with pytest.raises(InvalidInput, match=re.escape(f"inside the markdown export at {folder}")) as caught:
        markdown.sync(store, sub)
    assert f"kenning sync {folder}" in str(caught.value)
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before  # no manifest left in ops/
    assert _sync(store, folder)["conflicts"] == []


def test_sync_of_a_memory_file_names_the_folder_to_sync(store, mirror):
    folder, _ = mirror
    with pytest.raises(InvalidInput, match="is a file") as caught:
        markdown.sync(store, folder / "ops" / "MEMORY.md")
    assert f"kenning sync {folder}`" in str(caught.value) and "export --markdown" not in str(caught.value)


def test_export_into_a_folder_inside_an_export_is_refused(store, mirror):
    folder, _ = mirror
    with pytest.raises(InvalidInput, match=re.escape(f"inside the markdown export at {folder}")):
        markdown.export(store, folder / "ops")
    with pytest.raises(InvalidInput, match="inside the markdown export"):
        markdown.export(store, folder / "ops" / "new")
    assert not (folder / "ops" / "new").exists() and not (folder / "ops" / markdown.MANIFEST_NAME).exists()
    assert _sync(store, folder)["conflicts"] == []
    assert markdown.export(store, folder)["folder"] == str(folder)  # the export's own folder still exports


# the manifest lies in a folder people edit and share (a notes repository): it is read as untrusted
@pytest.mark.parametrize("named", ["../outside/MEMORY.md", "../victim.txt", "{abs}", "{abs_md}"])
def test_a_manifest_naming_a_file_outside_the_export_is_damaged_and_nothing_outside_is_touched(
        store, mirror, tmp_path, named):
    folder, _ = mirror
    (tmp_path / "outside").mkdir()
    victims = [tmp_path / "victim.txt", tmp_path / "outside" / "MEMORY.md"]
    for victim in victims:
        victim.write_text("precious, not kenning's\n")
    named = named.format(abs=tmp_path / "victim.txt", abs_md=tmp_path / "outside" / "MEMORY.md")
    manifest_path = folder / markdown.MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][named] = {"kind": {"scope": "x"}, "ids": {}}
    manifest_path.write_text(json.dumps(manifest))
    count = len(store.list(limit=100, auto_scope=False))
    for run in (lambda: markdown.sync(store, folder), lambda: markdown.export(store, folder)):
        with pytest.raises(InvalidInput, match="damaged.*inside the export.*--force"):
            run()
    markdown.export(store, folder, force=True)  # rebuilds the manifest; deletes only what it wrote itself
    assert all(v.read_text() == "precious, not kenning's\n" for v in victims)
    assert len(store.list(limit=100, auto_scope=False)) == count  # no outside file was read in as memories
    assert named not in json.loads(manifest_path.read_text())["files"]
    assert not any(_sync(store, folder)[k] for k in ("written", "updated", "removed"))


def test_a_manifest_linking_out_of_the_export_is_damaged(store, mirror, tmp_path):
    folder, _ = mirror
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "MEMORY.md").write_text("precious\n")
    (folder / "linked").symlink_to(tmp_path / "elsewhere")
    manifest = json.loads((folder / markdown.MANIFEST_NAME).read_text())
    manifest["files"]["linked/MEMORY.md"] = {"kind": {"scope": "x"}, "ids": {}}
    (folder / markdown.MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(InvalidInput, match="leads out of the export"):
        markdown.export(store, folder)
    assert (tmp_path / "elsewhere" / "MEMORY.md").read_text() == "precious\n"


@pytest.mark.parametrize("text", ["garbage", "[1, 2]", '{"files": {"USER.md": 5}}', '{"files": [], "folders": {}}',
                                  '{"files": {"USER.md": {"ids": {"a": 1}}}}', '{"folders": [7]}'])
def test_a_damaged_manifest_is_one_error_and_export_force_rebuilds_it(store, mirror, text):
    folder, ids = mirror
    (folder / markdown.MANIFEST_NAME).write_text(text)
    for run in (lambda: markdown.sync(store, folder), lambda: markdown.export(store, folder)):
        with pytest.raises(InvalidInput, match="damaged.*export again with --force"):
            run()
    markdown.export(store, folder, force=True)  # what the message says to do works
    assert set(json.loads((folder / markdown.MANIFEST_NAME).read_text())["files"]["projects/auth/MEMORY.md"]["ids"]) \
        == {ids["port"], ids["deploy"], ids["backup"]}
    assert not any(_sync(store, folder)[k] for k in ("written", "updated", "removed", "mangled"))


@pytest.mark.parametrize("where", ["ops/MEMORY.md", "stray/MEMORY.md"])
def test_a_fifo_named_like_a_memory_file_is_one_error_not_a_hang(store, mirror, where):
    """Opening a FIFO for reading blocks until someone writes to it: sync (and export, for a file it
    writes) refuse it in one line instead of waiting for ever, and nothing is written."""
    import threading

    folder, ids = mirror
    target = folder / where
    target.parent.mkdir(exist_ok=True)
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    runs = [lambda: markdown.sync(store, folder)] + ([lambda: markdown.export(store, folder, force=True)]
                                                      if where.startswith("ops/") else [])
    for run in runs:
        outcome: dict = {}

        def attempt(run=run, outcome=outcome):
            try:
                outcome["result"] = run()
            except InvalidInput as exc:
                outcome["error"] = str(exc)

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(timeout=120)  # a guard against hanging for ever, not a timing assertion
        try:
            assert not worker.is_alive(), "reading the folder blocked on the FIFO"
        finally:
            if worker.is_alive():  # let the blocked open() go, so the test run ends
                os.close(os.open(target, os.O_WRONLY | os.O_NONBLOCK))
                worker.join(timeout=30)
        assert "not a regular file" in outcome.get("error", ""), outcome
    assert store.get(ids["ops"]).content.startswith("The on-call rota")
    assert not (folder / LOCK_NAME).exists()



def test_export_writes_nothing_through_a_folder_linked_out_of_it(store, tmp_path):
    """A scope's folder planted as a link (committed to a repository: ops -> a folder of the user's)
    took export's MEMORY.md out of the export, and only the next export called the manifest damaged."""
    store.write("The on-call rota changes every Monday at 09:00 UTC", scopes=["ops"])
    folder, elsewhere = tmp_path / "notes", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    (folder / "ops").symlink_to(elsewhere)
    with pytest.raises(InvalidInput, match="leads out of .* through a link"):
        markdown.export(store, folder)
    assert list(elsewhere.iterdir()) == [] and sorted(p.name for p in folder.iterdir()) == ["ops"]
    (folder / "ops").unlink()
    markdown.export(store, folder)
    assert "on-call rota" in (folder / "ops" / "MEMORY.md").read_text()


def test_a_byte_that_is_no_utf8_is_one_error_naming_it_and_export_force_overwrites_it(store, mirror):
    """A stray byte in a memory file (a tool that saved it in Latin-1) made sync and export, even the
    suggested export --force, end in a UnicodeDecodeError traceback: no way out but finding the file."""
    folder, ids = mirror
    path = folder / "projects/auth/MEMORY.md"
    path.write_bytes(path.read_bytes() + "caf\xe9 note\n".encode("latin-1"))
    lines = path.read_bytes().count(b"\n")
    with pytest.raises(InvalidInput, match=rf"{re.escape(str(path))} is not valid UTF-8 \(byte 0xe9 at line "
                                           rf"{lines}, column 4\); save it as UTF-8$"):
        markdown.sync(store, folder)
    with pytest.raises(InvalidInput, match=r"not valid UTF-8 .*save it as UTF-8, then sync it \(or export with --force"):
        markdown.export(store, folder)
    assert store.get(ids["port"]).content == "The auth service listens on port 8443"  # nothing taken in or lost
    assert not (folder / LOCK_NAME).exists()
    report = markdown.export(store, folder, force=True)
    assert "projects/auth/MEMORY.md" in report["written"]
    assert "caf" not in path.read_text(encoding="utf-8")
    assert not any(_sync(store, folder)[k] for k in ("updated", "written", "removed", "mangled"))
