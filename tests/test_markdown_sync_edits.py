"""The markdown mirror against the edits a hostile pass made: a save while kenning rewrites the file, a
header's id or scopes changed by hand, a file emptied, a paragraph given twice, a staged paragraph
corrected. Real files and a real store; a "person" saves the file from inside the store's own write."""

from __future__ import annotations

import pytest

import kenning
from kenning.errors import InvalidInput, Stale
from kenning.recall import markdown, profile
from kenning.recall.files import EditedMeanwhile, atomic_write
from kenning.recall.markdown_format import parse


@pytest.fixture
def mirror(store, tmp_path):
    ids = [store.write("The billing service retries webhooks three times", scopes=["projects:billing"]).id,
           store.write("The staging database host is pg-stage-2 in eu-west", scopes=["projects:billing"]).id]
    folder = tmp_path / "notes"
    markdown.export(store, folder)
    return folder, folder / "projects/billing/MEMORY.md", ids


class _SavesDuringWrite:
    """The store, with a person saving ``path`` (``change``) right after its first write commits."""

    def __init__(self, store, path, change):
        self._store, self._path, self._change, self.saved = store, path, change, False

    def write(self, *args, **kwargs):
        result = self._store.write(*args, **kwargs)
        if not self.saved:
            self._path.write_text(self._change(self._path.read_text()))
            self.saved = True
        return result

    def __getattr__(self, name):
        return getattr(self._store, name)


def _contents(store):
    return sorted(m.content for m in store.list(limit=100, auto_scope=False))


def test_atomic_write_lands_only_over_the_text_read(tmp_path):
    path = tmp_path / "MEMORY.md"
    path.write_text("read\n")
    atomic_write(path, "new\n", expected="read\n")
    assert path.read_text() == "new\n"
    path.write_text("saved by a person\n")
    with pytest.raises(EditedMeanwhile):
        atomic_write(path, "newer\n", expected="new\n")
    assert path.read_text() == "saved by a person\n"
    with pytest.raises(EditedMeanwhile):  # None: there was no file, and now there is one
        atomic_write(path, "x\n", expected=None)
    assert path.read_text() == "saved by a person\n" and len(list(tmp_path.iterdir())) == 1  # no temp file left


def test_a_save_during_sync_is_kept_and_the_next_sync_takes_it_in(store, mirror):
    folder, path, _ = mirror
    path.write_text(path.read_text() + "\nInvoices close at 02:00 UTC.\n\nRefunds go through Stripe.\n")
    person = _SavesDuringWrite(store, path, lambda text: text + "\nLATE: the zebra cron moved to 04:00 UTC.\n")
    report = markdown.sync(person, folder)
    assert person.saved and report["files_changed"] == []
    assert any("saved while this sync ran" in c["why"] for c in report["conflicts"])
    assert "LATE: the zebra cron" in path.read_text()  # the save is not overwritten
    again = markdown.sync(store, folder)
    assert not again["conflicts"] and not again["refused"]
    assert "LATE: the zebra cron moved to 04:00 UTC." in _contents(store)
    assert len(_contents(store)) == 5  # the two written before are not written twice
    blocks = parse(path.read_text()).blocks
    assert len(blocks) == 5 and len({b.id for b in blocks}) == 5 and not parse(path.read_text()).new
    assert markdown.export(store, folder)["written"] == []


def test_a_save_during_export_is_kept(store, mirror):
    folder, path, ids = mirror
    store.update(ids[0], text="The billing service retries webhooks five times")

    class SavesDuringList:
        def list(self, *args, **kwargs):
            path.write_text(path.read_text() + "\nA paragraph saved while exporting.\n")
            return store.list(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(store, name)

    with pytest.raises(InvalidInput, match="edited while this export ran"):
        markdown.export(SavesDuringList(), folder)
    assert "A paragraph saved while exporting." in path.read_text()
    markdown.sync(store, folder)
    assert "A paragraph saved while exporting." in _contents(store)
    markdown.export(store, folder)
    assert "five times" in path.read_text()


def test_a_typo_in_a_headers_id_holds_the_removal(store, mirror):
    folder, path, ids = mirror
    path.write_text(path.read_text().replace(ids[0], ids[0][:-1] + ("Z" if ids[0][-1] != "Z" else "Y")))
    report = markdown.sync(store, folder)
    assert not report["removed"] and [h["id"] for h in report["held"]] == [ids[0]]
    assert "names an id no memory has" in report["held"][0]["why"]
    assert "put the id back" in report["conflicts"][0]["why"]
    assert store.get(ids[0]).content.startswith("The billing service")


@pytest.mark.parametrize("emptied", ["", "\n\n", "Some unrelated notes\n"])
def test_a_file_that_lost_its_kenning_comment_removes_nothing(store, mirror, emptied):
    folder, path, ids = mirror
    path.write_text(emptied)
    report = markdown.sync(store, folder)
    assert not report["removed"] and sorted(h["id"] for h in report["held"]) == sorted(ids)
    assert "lost its kenning:file comment" in report["held"][0]["why"]
    assert all(store.get(i) for i in ids)
    markdown.export(store, folder, force=True)
    assert all(i in path.read_text() for i in ids)


def test_a_deleted_block_is_still_removed(store, mirror):  # what the holds above must not stop
    folder, path, ids = mirror
    text = path.read_text()
    (block,) = [b for b in parse(text).blocks if b.id == ids[1]]
    path.write_text(text[:block.start] + text[block.end:])
    assert [r["id"] for r in markdown.sync(store, folder)["removed"]] == [ids[1]]


def test_the_same_new_paragraph_twice_is_one_memory_and_one_block(store, mirror):
    folder, path, _ = mirror
    path.write_text(path.read_text() + "\nInvoices close at 02:00 UTC.\n\nRefunds go through Stripe.\n\n"
                    "Invoices close at 02:00 UTC.\n")
    report = markdown.sync(store, folder)
    assert len(report["written"]) == 2 and len(report["repeats"]) == 1
    text = path.read_text()
    assert text.count("Invoices close at 02:00 UTC.") == 1 and not parse(text).mangled
    assert _contents(store).count("Invoices close at 02:00 UTC.") == 1
    second = markdown.sync(store, folder)
    assert not second["mangled"] and not second["written"] and not second["held"]
    assert markdown.export(store, folder)["written"] == []


def test_a_headers_scopes_or_category_changed_by_hand_is_reported(store, mirror):
    folder, path, ids = mirror
    text = path.read_text()
    path.write_text(text.replace('"scopes": ["projects:billing"], "category": "fact"',
                                 '"scopes": ["projects:payments"], "category": "ambient"', 1))
    report = markdown.sync(store, folder)
    (refused,) = report["refused"]
    assert refused["id"] == ids[0] and "the header's scopes and category are kenning's record" in refused["why"]
    assert f"kenning update {ids[0]} --scope SCOPE --category CATEGORY" in refused["why"]
    memory = store.get(ids[0])
    assert memory.scopes == ["projects:billing"] and memory.category == "fact"
    path.write_text(text)  # the header put back: nothing to report
    assert not markdown.sync(store, folder)["refused"]


def test_a_headers_category_alone_changed_by_hand_names_only_it(store, mirror):
    folder, path, ids = mirror
    path.write_text(path.read_text().replace('"category": "fact"', '"category": "ambient"', 1))
    (refused,) = markdown.sync(store, folder)["refused"]
    assert "the header's category is kenning's record" in refused["why"]
    assert refused["why"].endswith(f"`kenning update {ids[0]} --category CATEGORY`, then export")


def test_a_header_out_of_date_after_a_store_change_is_no_edit(store, mirror):
    folder, path, ids = mirror
    store.update(ids[0], category="ambient")
    assert not markdown.sync(store, folder)["refused"]


def test_a_staged_paragraph_corrected_before_confirmation_withdraws_the_first(store, mirror):
    folder, _, _ = mirror
    user = folder / "USER.md"
    user.write_text(user.read_text() + "\nThe user works in the Berlin office.\n")
    (first,) = markdown.sync(store, folder)["pending"]
    user.write_text(user.read_text().replace("Berlin", "Lisbon"))
    report = markdown.sync(store, folder)
    assert [w["pending_id"] for w in report["withdrawn"]] == [first["pending_id"]]
    (staged,) = store.pending_writes(all_sessions=True)
    assert "Lisbon" in staged["summary"] and staged["pending_id"] == report["pending"][0]["pending_id"]


def test_a_confirmed_paragraph_is_reported_when_its_block_replaces_it(store, mirror):
    folder, _, _ = mirror
    user = folder / "USER.md"
    user.write_text(user.read_text() + "\nThe user prefers tabs in Makefiles.\n")
    (staged,) = markdown.sync(store, folder)["pending"]
    memory_id = store.confirm_write(staged["pending_id"]).id
    (written,) = markdown.sync(store, folder)["written"]
    assert written["id"] == memory_id and written["confirmed"] == staged["pending_id"]
    assert profile.is_profile(store.get(memory_id))


def test_a_block_deleted_while_an_agent_updates_its_memory_is_a_conflict_not_a_removal(store, mirror):
    folder, path, ids = mirror
    text = path.read_text()
    (block,) = [b for b in parse(text).blocks if b.id == ids[1]]
    path.write_text(text[:block.start] + text[block.end:])
    agent = kenning.open_store(store.directory)  # another connection, as another process would have

    class UpdatedMeanwhile:
        """The store, with an agent's update landing between sync's check of the memory and its removal."""

        def remove(self, *args, **kwargs):
            agent.update(ids[1], text="The staging database host is pg-stage-3 in eu-west")
            return store.remove(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(store, name)

    report = markdown.sync(UpdatedMeanwhile(), folder)
    assert not report["removed"] and [c["id"] for c in report["conflicts"]] == [ids[1]]
    assert "changed in the store during this sync" in report["conflicts"][0]["why"]
    assert store.get(ids[1]).content.endswith("pg-stage-3 in eu-west")
    agent.close()


def test_remove_with_an_old_version_is_stale_and_removes_nothing(store, mirror):
    _, _, ids = mirror
    seen = store.get(ids[0]).version
    store.update(ids[0], text="The billing service retries webhooks five times")
    with pytest.raises(Stale):
        store.remove(ids[0], "outdated", version=seen)
    assert store.get(ids[0])
    store.remove(ids[0], "outdated", version=store.get(ids[0]).version)
    assert ids[0] not in {m.id for m in store.list(limit=10, auto_scope=False)}


def test_what_sync_reports_names_the_file_and_line(store, mirror):
    """An entry without its file (or with its key misspelt) leaves the CLI and a tool unable to say where."""
    folder, path, ids = mirror
    user = folder / "USER.md"
    user.write_text(user.read_text() + "\nThe user works in the Berlin office.\n")
    markdown.sync(store, folder)
    user.write_text(user.read_text().replace("Berlin", "Lisbon"))
    text = path.read_text().replace(ids[0], ids[0][:-1] + ("Z" if ids[0][-1] != "Z" else "Y"))
    path.write_text(text + "\nInvoices close at 02:00 UTC.\n\nInvoices close at 02:00 UTC.\n")
    report = markdown.sync(store, folder)
    rel = "projects/billing/MEMORY.md"
    assert [(w["file"], "pending_id" in w) for w in report["withdrawn"]] == [("USER.md", True)]
    (repeat,) = report["repeats"]
    assert repeat["file"] == rel and repeat["line"] > 1 and "the same text as line" in repeat["why"]
    (held,) = report["held"]
    assert (held["file"], held["id"]) == (rel, ids[0])
    assert [(c["file"], c["line"]) for c in report["conflicts"]] == [(rel, 5)]


def test_a_pasted_block_leaves_the_blocks_after_it_synced(store, mirror, tmp_path):
    folder, path, ids = mirror
    other = store.write("The search cluster runs OpenSearch 2.11 on three nodes", scopes=["projects:search"]).id
    markdown.export(store, folder)
    search = folder / "projects/search/MEMORY.md"
    (block,) = parse(search.read_text()).blocks
    pasted = search.read_text()[block.start:block.end]
    text = path.read_text()
    first = parse(text).blocks[0]
    edited = text[:first.start] + pasted + "\n" + text[first.start:].replace("three times", "four times")
    path.write_text(edited)
    report = markdown.sync(store, folder)
    assert [c["id"] for c in report["conflicts"]] == [other]  # the pasted one: reported, not applied
    assert [u["id"] for u in report["updated"]] == [ids[0]]  # and the block after it still synced
    assert "four times" in store.get(ids[0]).content


def test_a_new_paragraph_in_a_crlf_file_becomes_a_crlf_block(store, mirror):
    folder, path, _ = mirror
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n") + b"\r\nInvoices close at 02:00 UTC.\r\n")
    assert markdown.sync(store, folder)["written"]
    data = path.read_bytes()
    assert b"Invoices close at 02:00 UTC." in data and b"\n" not in data.replace(b"\r\n", b"")


def test_a_repeat_right_under_a_block_leaves_the_blocks_end_marker_whole(store, mirror):
    """A repeat with no blank line above it (written under a block's end marker) is cut without the
    line ending before it, which is the end marker's."""
    folder, path, _ = mirror
    text = path.read_text()
    second = parse(text).blocks[1]
    assert text.endswith("-->\n")
    path.write_text(text[:second.start] + "Invoices close at 02:00 UTC.\n\n" + text[second.start:]
                    + "Invoices close at 02:00 UTC.\n")
    report = markdown.sync(store, folder)
    assert len(report["repeats"]) == 1
    after = parse(path.read_text())
    assert not after.mangled and not after.new and len(after.blocks) == 3


def test_a_mangled_block_is_reported_with_its_file_line_and_id(store, mirror):
    folder, path, ids = mirror
    text = path.read_text()
    path.write_text(text.replace(f'"id": "{ids[1]}", ', f'"id": "{ids[1]}" ', 1))  # the header's JSON breaks
    (mangled,) = markdown.sync(store, folder)["mangled"]
    assert mangled["file"] == "projects/billing/MEMORY.md" and mangled["line"] > 1 and mangled["problem"]
