"""memory/gates/pipeline.py through the library: a repeat of a live memory is refused as a duplicate
and one like a removed memory as previously_removed, each with its exact fields; force writes either
anyway and still reports the removed match; a gate's own refusal keeps its code and override."""

from __future__ import annotations

import kenning

TEXT = "The auth service listens on port 8443 behind nginx"


def test_duplicate_previously_removed_and_force_through_the_pipeline(tmp_path):
    with kenning.open_store(tmp_path / "s") as s:
        first = s.write(TEXT, scopes=["ops"]).id
        repeat = s.write(TEXT, scopes=["ops"])
        assert repeat.model_dump(include={"status", "id", "gate", "code", "reason", "hint", "override", "match",
                                          "related", "removed_matches"}) == {
            "status": "duplicate", "id": first, "gate": "duplicates", "code": "duplicate",
            "reason": f"memory {first} already says this (100% of their words are shared); nothing was written",
            "hint": f"Rely on {first}, or memory_update it if the new text adds something; "
                    "pass force=True only if both must exist.",
            "override": "force", "match": {"id": first, "overlap": 1.0}, "related": [], "removed_matches": []}
        forced = s.write(TEXT, scopes=["ops"], force=True)
        assert forced.status == "committed" and forced.id != first and forced.related == [first]
        s.remove(forced.id, reason="written twice")
        s.remove(first, reason="moved to port 9443")
        again = s.write(TEXT, scopes=["ops"])
        removed = [{"id": first, "overlap": 1.0, "reason": "moved to port 9443"},
                   {"id": forced.id, "overlap": 1.0, "reason": "written twice"}]
        assert again.model_dump(include={"status", "id", "gate", "code", "reason", "hint", "override", "match",
                                         "related", "removed_matches"}) == {
            "status": "previously_removed", "id": None, "gate": "duplicates", "code": "previously_removed",
            "reason": f"a memory like this ({again.match['id']}) was removed: {again.match['reason']}",
            "hint": f"If the removal was a mistake, memory_restore {again.match['id']}; if the fact changed since, "
                    "say how it differs, or pass force=True to write it anyway.",
            "override": "force", "match": again.match, "related": [],
            "removed_matches": again.removed_matches}
        assert again.match in removed and sorted(again.removed_matches, key=lambda m: m["id"]) == \
            sorted(removed, key=lambda m: m["id"])
        written = s.write(TEXT, scopes=["ops"], force=True)
        assert written.status == "committed" and written.related == [] and written.removed_matches == \
            again.removed_matches
        refused = s.write("The user prefers tabs over spaces in every file", scopes=["ops"])
        assert (refused.status, refused.gate, refused.code, refused.override) == \
            ("user_claim_warning", "user_claims", "user_claim_warning", "acknowledge_user_claim")
        assert refused.claims is None and refused.id is None and refused.matched == ["the user …: 'The user prefers'"]
        assert refused.hint == ("Re-issue the write with category='user-inference' so the user can confirm it; if the "
                                "subject is someone else (an application's users, a colleague), pass "
                                "acknowledge_user_claim=True.")
        assert s.write("The user prefers tabs over spaces in every file", scopes=["ops"],
                       acknowledge_user_claim=True).status == "committed"
        assert s.count() == 2


def test_a_long_text_is_probed_by_its_rarest_terms_and_still_found_as_a_duplicate(tmp_path):
    """More distinct terms than RAREST_PROBE_TERMS: the duplicate probe keeps the rarest ones."""
    long_text = ("The nightly backup job copies the billing database to the cold storage bucket in "
                 "the frankfurt region and verifies each archive checksum before pruning old snapshots")
    with kenning.open_store(tmp_path / "s") as s:
        for i in range(3):  # common words get a higher document frequency than the rare ones
            s.write(f"The billing database job number {i} runs in the region before the archive", scopes=["ops"])
        first = s.write(long_text, scopes=["ops"])
        assert first.status == "committed"
        repeat = s.write(long_text, scopes=["ops"])
        assert (repeat.status, repeat.id, repeat.match["overlap"]) == ("duplicate", first.id, 1.0)
