"""The model-facing tool surface: kenning over the Model Context Protocol (stdio), one session a process.

Every tool is a thin wrapper: parse typed, bounded arguments, call one library function, return
its JSON shape. A caller mistake (``KenningError``) becomes a tool error whose text says what to
fix; the SDK turns anything unexpected into a generic tool error, so no call can stop the server.
A stdio server serves exactly one connection, so one process = one ``Store`` object = one session
id (event log, disabled scopes, pending writes and handoff all key on it).

Deliberately no ``from __future__ import annotations``: the SDK builds each tool's input schema
from its evaluated signature, and the parameter types here are module-level ``Annotated`` aliases.
"""

import argparse
import functools
import inspect
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from kenning import __version__
from kenning.errors import InvalidInput, KenningError, Stale
from kenning.memory import audit, trust
from kenning.memory.curation import MAX_REASON_CHARS
from kenning.memory.gates import GateRefused
from kenning.memory.episodes import (
    HANDOFF_CAP,
    HANDOFF_DEFAULT,
    MAX_IDS,
    MAX_LABEL_CHARS,
    MAX_TAKEAWAY_BYTES,
    SEARCH_CAP,
    SEARCH_DEFAULT,
    Episodes,
)
from kenning.memory.gates.limits import MAX_SCOPE_CHARS, MAX_SCOPES
from kenning.store.models import Link
from kenning.memory.facade import MAX_LIMIT, Store
from kenning.serve import outputs as out
from kenning.serve.surface import StrictServer, for_tools

INSTRUCTIONS = """\
kenning is a long-term memory shared with the user and with other agent sessions.

Reading. Do not search by default: most turns need no memory. Call memory_search when the user \
points at shared context you do not have ("my project", "the script we wrote", "as usual", \
"like last time") or when a stored preference could settle an ambiguous request. Query with \
the nouns a stored note would contain (tool, file, service, error names), not with a question. \
relevance says what a hit promises: high = very likely the answer (close in meaning and holding \
the query's rare words, or a very close paraphrase, clearly ahead of the other hits, and not itself a question), medium = \
related, worth reading (two equally good hits are both medium), low = most likely not an answer. When staleness_verdict is not fresh, \
check one claim before relying on it. Call memory_scope_overview once at the start of a \
conversation; if its total is 0, skip searching unless asked.

Saying so. Whenever a memory shaped your reply, say so in the reply ("Using your stored \
preference for ..."). If the user rejects or corrects it, call memory_record_use with \
ignored, contradicted or corrected.

Writing. Write durable facts proactively with memory_write as soon as they come up: project \
and infrastructure facts, tool choices, conventions (category fact); context that should \
colour replies without being cited (ambient); anything about the user themself goes in as \
user-inference, which stays pending until you ask the user and call memory_write_confirm or \
memory_write_cancel. Use narrow scopes such as projects:<name> or tools, not "general". Run \
state - what this session tried, where it is blocked, the next step - is not a fact: journal \
it with episode_write. At the start of a loop iteration call episode_handoff to read what the \
previous session in this worktree concluded; promote a takeaway that proved durable with \
episode_promote.
"""

# ---------------------------------------------------------------------------------- parameter types
MemoryId = Annotated[str, Field(min_length=1, max_length=200, description="A memory id (ULID) from a search, list or write.")]
Scope = Annotated[str, Field(min_length=1, max_length=MAX_SCOPE_CHARS)]
ScopeFilter = Annotated[
    list[Scope] | None,
    Field(max_length=MAX_SCOPES, description="Only memories tagged with at least one of these scopes; omit for all."),
]
Mode = Annotated[
    Literal["keyword", "bm25", "semantic", "hybrid"] | None,
    Field(description="Retrieval mode; omit for the store's default_mode setting (hybrid unless the user changed "
                      "it). Without the embeddings extra, semantic and hybrid answer lexically and say so in `degraded`."),
]
Category = Annotated[
    Literal["fact", "user-inference", "ambient"],
    Field(description="fact: project/infra/tool knowledge, commits now. ambient: background that colours replies. "
                      "user-inference: a claim about the user, always pending until the user confirms."),
]
Confidence = Annotated[Literal["low", "medium", "high"], Field(description="How sure you are: low, medium or high.")]
Source = Annotated[
    Literal["explicit-statement", "inferred"],
    Field(description="explicit-statement: the user or a document said it. inferred: you concluded it."),
]
Ack = Annotated[bool, Field(description="Accept the risk this gate warns of (see the refusal's hint).")]
Force = Annotated[bool, Field(description="Write even though it is a duplicate, resembles a removed memory, or names "
                                          "another project's scope. Never overrides credentials, durability or user claims.")]
Version = Annotated[
    str | None,
    Field(max_length=100, description="The version token from memory_show / memory_search. When another agent changed "
                                      "the memory since, the call returns status stale and writes nothing."),
]
Note = Annotated[str | None, Field(max_length=500, description="What you checked or why, for the event log (max 500 chars).")]
Paths = Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]] | None, Field(max_length=256)]
Claims = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=4096)]] | None,
    Field(max_length=64, description="Checkable statements about this repository: `path`, `path:N-M` (the file "
                                     "has those lines), `path::symbol` or `path::NAME=literal`. Checked now; a false "
                                     "claim refuses the call."),
]
Links = Annotated[
    list[Link] | None,
    Field(max_length=64, description="Links to other memories, each {type, target_id, note?} (kind/target also "
                                     "accepted). type: supersedes | contradicts | extends | depends_on."),
]
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)]
Audit = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=200)]] | None,
    Field(max_length=64, description="Audit trail only: recorded with the verification, not checked."),
]
Folder = Annotated[str, Field(min_length=1, max_length=4096, description="The markdown folder: an absolute path, or one "
                                                                         "relative to the server's working directory.")]
PendingId = Annotated[str, Field(min_length=1, max_length=200, description="The pending_id a memory_write (or episode_promote) returned.")]


def _tool(server: StrictServer, *, read_only: bool, destructive: bool = False) -> Callable[[Callable], Callable]:
    """Register fn as a tool named after it, described by its docstring; KenningError -> a tool error.

    No memory tool is destructive in MCP's sense: removal is a restorable tombstone, updates are
    logged. Only the file tools are: a forced export overwrites a person's unsynced edits, clean
    deletes leftover files.
    """

    def register(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
            except KenningError as exc:
                raise ToolError(for_tools(str(exc))) from None
            if isinstance(result, dict):
                for key in ("hint", "reason"):
                    if isinstance(result.get(key), str):
                        result[key] = for_tools(result[key])
            return result

        server.add_tool(
            call, name=fn.__name__, description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, open_world_hint=False),
        )
        return fn

    return register


def gated(fn: Callable) -> Callable:
    """A gate's refusal answered as a status (writes_disabled when the user turned writes off), the way
    memory_write answers its gates, rather than a tool error: a model branches on status, and one
    refused change must look the same whichever tool made it. Nothing was changed."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GateRefused as refused:
            return refusal_status(refused)

    return call


def refusal_status(refused: GateRefused) -> dict[str, Any]:
    """A gate's refusal as the status answer every changing tool gives."""
    r = refused.refusal
    return {"status": r.status, "gate": r.gate, "reason": r.reason, "hint": r.hint, "matched": r.matched,
            "override": r.override}


# what search_enabled=false takes out of the agent's loop (called anyway, they answer that search is off)
SEARCH_TOOLS = ("memory_search", "session_search")


def build_server(store: Store, episodes: Episodes | None = None) -> StrictServer:
    """The MCP server for one session over ``store``; ``episodes`` defaults to the current directory's worktree."""
    # quiet stderr (it is the client's log): rejected arguments already reach the model as tool errors
    server = StrictServer("kenning", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    journal = episodes or Episodes(store)
    reader = _tool(server, read_only=True)
    writer = _tool(server, read_only=False)
    file_writer = _tool(server, read_only=False, destructive=True)

    # ------------------------------------------------------------------ reading memory
    @reader
    def memory_search(
        query: Annotated[str, Field(min_length=1, max_length=10_000, description="Nouns a matching memory would contain (tool, file, service, error names).")],
        scopes: ScopeFilter = None,
        max_results: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="How many hits (1-50).")] = 5,
        expand_top: Annotated[bool, Field(description="Inline the top hit's full body when it is clearly the answer (high relevance or a decisive score lead).")] = False,
        auto_scope: Annotated[bool, Field(description="True: only memories written from this repository and worktree, plus global ones. False: every project.")] = True,
        since_prior_session: Annotated[bool, Field(description="Only memories updated after the last activity of another session: what changed in this session.")] = False,
        mode: Mode = None,
    ) -> out.SearchOut:
        """Search the stored memories. Do not call by default: only when the user refers to context you lack
        ("my project", "the deploy script we wrote") or a stored preference could settle an ambiguous request.
        When a hit shapes your reply, tell the user you used it.

        Returns {query, mode, legs_run, degraded, pending_embeddings, hits, note?}. degraded is null, or says the
        semantic leg could not run (reason, message, fix) and the search ran lexically; reason embeddings_loading
        means the server is still preparing its encoder (once after install) and a later search has it. pending_embeddings counts
        memories the semantic leg could not see yet (they are being embedded in the background, or, when degraded,
        wait until the encoder is fixed). note explains an empty result that is not
        "nothing matched" (e.g. since_prior_session with no prior session yet). Per hit:
        - relevance high|medium|low: high = very likely the answer (close in meaning and holding your query's
          rare words, or a very close paraphrase, clearly ahead of the other hits, and not itself a question); medium = related, worth
          reading (two equally good hits are both medium); low = most likely not an answer. matched_leg (lexical | semantic | both) says which legs found it.
        - match_terms: the query words that occur; legs: each leg's rank and score (why it ranked here). In hybrid,
          feedback_legs names the legs that ran with feedback (their scores are not their own mode's), and a hit
          holding none of your words that bm25 found through its feedback words lists them in feedback_terms.
        - snippet: the passage around the matches (content = full body, only with expand_top on the top hit).
        - staleness_verdict fresh | spot_check_recommended | spot_check_required: when not fresh, check one
          claim before relying on it (path_drift / commit_drift_count say what moved), then memory_verify it
          if it holds or memory_update it if it drifted.
        - recent_negative_outcomes (when present): the user recently rejected this memory; do not re-surface it
          without new reason. depends_on_resolved (when present): memories this one only makes sense with
          (at most 3 a hit, 10 a search; depends_on_more counts the links left out: memory_show lists them).
        No hits or only low ones: retry with different nouns rather than trusting a weak match.
        """
        return store.search(query, mode=mode, scopes=scopes, limit=max_results, expand_top=expand_top,
                            auto_scope=auto_scope, since_prior_session=since_prior_session).to_dict()

    @reader
    def memory_show(id: MemoryId) -> out.MemoryOut:
        """One memory in full, usually after a search snippet looked relevant.

        Returns the memory's fields (content, scopes, category, confidence, source, created, updated, origin,
        claims) plus verification (status never | stale | fresh with a recommendation), staleness_verdict,
        path_drift (which cited paths are missing), commit_drift (commits since the last verification, when
        measurable), links and reverse_links. If the verdict is not fresh, spot-check a claim: memory_verify
        when it holds, memory_update when it drifted (an update clears verification; verify again after).
        """
        return store.show(id)

    @reader
    def memory_list(
        scopes: ScopeFilter = None,
        category: Annotated[Category | None, Field(description="Only this category.")] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="How many, newest update first (1-50).")] = MAX_LIMIT,
        with_bodies: Annotated[bool, Field(description="Include full bodies. Pulls every listed memory into your context: only for small stores.")] = False,
        auto_scope: Annotated[bool, Field(description="True: only memories written from this repository and worktree, plus global ones. False: every project.")] = True,
        after: Annotated[str | None, Field(max_length=1_000, description="next_after of the list before: the memories that come after its last one.")] = None,
    ) -> out.ListOut:
        """List live memories, newest update first, as one-line summaries (id, scopes, category, summary, updated,
        and superseded_by when a live memory replaces it: rely on that one instead).

        Cheap triage when you need to see what exists rather than find one thing; filter by scopes to narrow.
        Like memory_search it shows this repository's and global memories unless auto_scope=false.
        with_bodies=true inlines every body - use it only when the listed set is small, otherwise show the few
        ids you need with memory_show. Scopes disabled for this session are left out. next_after is set when
        more memories follow: pass it as after for the next page (none is skipped or repeated meanwhile).
        """
        memories = store.list(scopes=scopes, category=category, limit=limit + 1, auto_scope=auto_scope, after=after)
        rows = [m.listing(with_body=with_bodies) for m in memories[:limit]]
        replaced = trust.superseded_by(store.db, [row["id"] for row in rows])
        for row in rows:  # as a search hit says it: a decision listed beside the one replacing it is not current
            if row["id"] in replaced:
                row["superseded_by"] = replaced[row["id"]]
        return {"count": len(rows), "with_bodies": with_bodies, "memories": rows,
                "next_after": memories[limit - 1].cursor if len(memories) > limit else None}

    @reader
    def memory_scope_overview(
        auto_scope: Annotated[bool, Field(description="True: count this repository's and global memories only. False: every project.")] = True,
    ) -> out.OverviewOut:
        """Counts per scope and the curation backlog, without any memory content. Call once at the start of a
        conversation: if total is 0, skip memory_search for the rest of it unless asked.

        Returns current_repo, scopes {scope: count}, total, disabled_scopes (for this session), pending_writes
        (this session's writes awaiting memory_write_confirm / memory_write_cancel), curation_pending (counts of
        stale, never_verified, drifted, conflicts, silent_misses ...) and the same counts limited to what is new
        since the previous session (null on the very first session). Non-zero drifted or silent_misses is a
        reason to suggest a curation pass when there is time. moved_checkouts lists folders, gone now, whose
        memories auto_scope hides ({worktree, memories}): if this checkout was moved or renamed from one of them,
        `kenning rehome <worktree>` run here gives them back (before that, search with auto_scope false).
        """
        return store.scope_overview(auto_scope=auto_scope)

    @reader
    def memory_list_tombstones(
        scopes: ScopeFilter = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="How many, most recently removed first (1-50).")] = 20,
        after: Annotated[str | None, Field(max_length=1_000, description="next_after of the list before: the tombstones that come after its last one.")] = None,
    ) -> out.TombstonesOut:
        """Removed memories with the reason and time of removal, most recent first. Check here before
        re-suggesting something the user may have deliberately removed; memory_restore undoes a removal.
        next_after is set when more follow: pass it as after for the next page.
        """
        found = store.tombstones(scopes=scopes, limit=limit + 1, after=after)
        rows = [t.model_dump(mode="json") for t in found[:limit]]
        return {"count": len(rows), "tombstones": rows, "next_after": found[limit - 1].cursor if len(found) > limit else None}

    # ------------------------------------------------------------------ writing memory
    @writer
    def memory_write(
        content: Annotated[str, Field(min_length=1, description="The memory body: one self-contained fact, in words a later search would use.")],
        scopes: Annotated[list[Scope], Field(min_length=1, max_length=MAX_SCOPES, description="Narrow tags such as projects:<name>, tools, infrastructure. Avoid 'general'.")],
        category: Category = "fact",
        confidence: Confidence = "medium",
        source: Source = "explicit-statement",
        claims: Claims = None,
        links: Links = None,
        acknowledge_transient: Annotated[bool, Field(description="Override the durability gate when wording that sounds temporary is in fact durable.")] = False,
        acknowledge_user_claim: Annotated[bool, Field(description="Override the user-claim gate when the body is about someone other than the user.")] = False,
        acknowledge_scope_mismatch: Annotated[bool, Field(description="Override scope_mismatch: the fact really is about the other project the scopes name.")] = False,
        groundedness_check: Annotated[bool, Field(description="Check every sentence against source_transcript; unsupported ones return status ungrounded.")] = False,
        source_transcript: Annotated[str | None, Field(max_length=1_000_000, description="The conversation text the memory comes from (needed with groundedness_check).")] = None,
        acknowledge_ungrounded: Annotated[bool, Field(description="Override ungrounded when the grounding came from outside the transcript (a file read, a tool result).")] = False,
        force: Force = False,
    ) -> out.WriteOut:
        """Remember something durable. Call proactively when a lasting fact, decision, convention or preference
        comes up; the gates below catch bad writes, so writing eagerly is safe. Run state goes to episode_write.

        Returns status:
        - committed: stored; id is the new memory, related lists similar existing memories.
        - pending: user-inference (or the store requires confirmation; pending_reason says which): ask the
          user in plain words, then memory_write_confirm or memory_write_cancel with pending_id (expires in 1 h).
        - duplicate: a live memory (id, match) already says this; nothing was written, but that memory was
          credited a corroboration (corroboration_recorded true, once per session). force=True writes anyway.
        - previously_removed: a similar memory was removed before; match.reason says why. Reconsider, or force=True.
        - transient_warning (durability), credential_warning, user_claim_warning, scope_mismatch (the scopes name
          another project than this repository), ungrounded (claims lists the unsupported sentences),
          claim_false / claims_uncheckable, writes_disabled: a gate stopped it. gate names the check, reason says
          what it saw, hint how to fix it, override the acknowledge_* flag (or force) that applies if the gate is
          wrong. Run state refused as transient belongs in episode_write instead.
        committed and pending also carry removed_matches: removed memories that resemble this one (below the
        previously_removed threshold), with why they were removed.
        Nothing is written unless status is committed (or pending, until confirmed).
        """
        return store.write(content, scopes=scopes, category=category, confidence=confidence, source=source,
                           claims=claims, links=links, acknowledge_transient=acknowledge_transient,
                           acknowledge_user_claim=acknowledge_user_claim,
                           acknowledge_scope_mismatch=acknowledge_scope_mismatch,
                           acknowledge_ungrounded=acknowledge_ungrounded, force=force,
                           groundedness_check=groundedness_check, source_transcript=source_transcript).to_dict()

    @writer
    def memory_write_confirm(pending_id: PendingId) -> out.WriteOut:
        """Commit a pending write after the user agreed. The write is re-checked against the store as it is now,
        so duplicate or previously_removed can come back instead of committed. status expired / not_found means
        the pending write is gone (pending writes last an hour): write it again if it still matters; another
        session's pending write is not_found here too. Confirming a promoted episode also deletes that episode
        (episode_deleted).
        """
        return journal.confirm_write(pending_id, own_session=True)

    @writer
    def memory_write_cancel(pending_id: PendingId) -> out.CancelOut:
        """Drop a pending write, e.g. when the user said the inference about them is wrong. Returns status
        cancelled, or expired / not_found when there was nothing left to cancel. A promoted episode is kept.
        """
        return store.cancel_write(pending_id, own_session=True)

    @writer
    @gated
    def memory_update(
        id: MemoryId,
        content: Annotated[str | None, Field(min_length=1, description="The new body. Clears verification and claims: call memory_verify again after.")] = None,
        text: Annotated[str | None, Field(min_length=1, description="Same as content (kept for older callers); give one of the two.")] = None,
        scopes: Annotated[list[Scope] | None, Field(max_length=MAX_SCOPES, description="The complete new scope list (replaces the old one).")] = None,
        confidence: Annotated[Literal["low", "medium", "high"] | None, Field(description="New confidence: low, medium or high.")] = None,
        category: Annotated[Literal["fact", "ambient"] | None, Field(description="fact or ambient; a memory cannot become user-inference by update.")] = None,
        links: Annotated[list[Link] | None, Field(max_length=64, description="The complete new link list, each {type, target_id, note?} (replaces the old one; [] clears).")] = None,
        version: Version = None,
        acknowledge_transient: Annotated[bool, Field(description="Override the durability gate for a new text that only sounds temporary.")] = False,
        acknowledge_user_claim: Annotated[bool, Field(description="Override the user-claim gate when the new text is about someone other than the user.")] = False,
        acknowledge_truncation: Annotated[bool, Field(description="Accept a shorter body that ends mid-sentence: the cut is deliberate.")] = False,
    ) -> out.UpdateOut:
        """Correct a memory that drifted or was wrong. Give only what changes; scopes and links replace the
        old lists whole. A body edit bumps updated and clears last_verified_at and every attestation (paths,
        claims, commits, versions); a scope-only edit keeps verification. Returns {status: updated, memory}, or
        without writing anything:
        - a gate's status (transient_warning, credential_warning, user_claim_warning, truncation_warning when a
          shorter body ends mid-sentence, writes_disabled) with reason, hint and the acknowledge_* override;
        - stale when version is given and another agent changed the memory since: re-fetch with memory_show
          (current_version) and retry.
        """
        if content is not None and text is not None and content != text:
            raise KenningError("give the new body as content or as text, not two different ones")
        try:
            memory = store.update(id, text=content if content is not None else text, scopes=scopes,
                                  confidence=confidence, category=category, links=links, version=version,
                                  acknowledge_transient=acknowledge_transient,
                                  acknowledge_user_claim=acknowledge_user_claim,
                                  acknowledge_truncation=acknowledge_truncation)
        except Stale as stale:
            return {"status": "stale", "id": stale.memory_id, "version": stale.given, "current_version": stale.current,
                    "hint": "another agent changed this memory since you read it; nothing was written. Re-read it "
                            "with memory_show and retry with the new version."}
        return {"status": "updated", "memory": memory.model_dump(mode="json"), "version": memory.version}

    @writer
    @gated
    def memory_remove(
        id: MemoryId,
        reason: Annotated[str, Field(min_length=1, max_length=MAX_REASON_CHARS, description="Why it is wrong or no longer relevant; shown when a similar fact is written again.")],
    ) -> out.RemoveOut:
        """Retire a memory that is wrong or obsolete. Nothing is deleted: it becomes a tombstone with your reason,
        leaves search, is listed by memory_list_tombstones, warns later writes of similar text (previously_removed),
        and memory_restore brings it back. status writes_disabled (gate, reason, hint): the user turned writes off
        and nothing changed.
        """
        tombstone = store.remove(id, reason)
        return {"status": "removed", "id": tombstone.memory.id, "reason": tombstone.reason,
                "removed_at": tombstone.model_dump(mode="json")["removed_at"],
                "removed_by_session": tombstone.removed_by_session}

    @writer
    @gated
    def memory_restore(id: MemoryId) -> out.RestoreOut:
        """Undo memory_remove: the memory returns to search exactly as it was. Returns {status: restored, memory},
        or status writes_disabled (gate, reason, hint) when the user turned writes off and nothing changed.
        """
        return {"status": "restored", "memory": store.restore(id).model_dump(mode="json")}

    @writer
    @gated
    def memory_verify(
        id: MemoryId,
        note: Note = None,
        verified_paths: Annotated[Paths, Field(description="Paths you checked exist (relative to the memory's worktree); the drift checks watch exactly these. Replaces the previous list.")] = None,
        verified_absent_paths: Annotated[Paths, Field(description="Paths that are meant to be absent here (another host or platform); never use for real drift.")] = None,
        claims: Claims = None,
        verified_commits: Audit = None,
        verified_versions: Audit = None,
        version: Version = None,
    ) -> out.VerifyOut:
        """Record that you spot-checked a memory and it still holds: sets last_verified_at to now (content and
        updated stay as they are). Prefer listing the paths you checked; a path that does not exist, or a false
        claim, refuses the call - memory_update the memory first. Lists replace the previous attestation whole
        (omit to keep, [] to clear). verified_commits / verified_versions are an audit trail only. With version,
        a memory another agent changed since returns status stale (current_version) and nothing is recorded;
        status writes_disabled (gate, reason, hint) means the user turned writes off and nothing is recorded.
        """
        return store.verify(id, note=note, verified_paths=verified_paths,
                            verified_absent_paths=verified_absent_paths, claims=claims,
                            verified_commits=verified_commits, verified_versions=verified_versions, version=version)

    @writer
    def memory_record_use(
        memory_ids: Annotated[list[MemoryId], Field(min_length=1, max_length=50, description="The ids of the memories the outcome is about (1-50).")],
        outcome: Annotated[Literal["applied", "ignored", "contradicted", "corrected"], Field(description="applied: it shaped the reply. ignored: surfaced but not relevant. contradicted: the user or the facts say it is wrong. corrected: you fixed it with memory_update.")],
        note: Note = None,
        claim_excerpts: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=500)] | None] | None,
            Field(max_length=50, description="Parallel to memory_ids: the phrase of each memory that mattered (e.g. the claim that was wrong), null where none."),
        ] = None,
        excerpts: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=500)] | None] | None,
            Field(max_length=50, description="Same as claim_excerpts (kept for older callers)."),
        ] = None,
    ) -> out.OutcomeOut:
        """Override the automatic outcome of memories you were shown. Every search hit settles as applied on its
        own at the end of the turn, so call this only for ignored, contradicted or corrected (or applied to settle
        early): later hits then carry recent_negative_outcomes so the memory is not pushed again.
        Returns {status: recorded, outcome, memory_ids, at}.
        """
        if claim_excerpts is not None and excerpts is not None and claim_excerpts != excerpts:
            raise InvalidInput("claim_excerpts and excerpts are the same argument: give one of them")
        return store.record_use(memory_ids, outcome, note=note,
                                excerpt=claim_excerpts if claim_excerpts is not None else excerpts)

    @writer
    def memory_audit_turn(
        user_message: Annotated[str, Field(min_length=1, max_length=100_000, description="The user's message of the turn being audited.")],
        assistant_response: Annotated[str | None, Field(max_length=1_000_000, description="The assistant's reply, if any: probed too, so a memory its wording points at is a candidate.")] = None,
        lookback_seconds: Annotated[int, Field(ge=1, le=audit.MAX_LOOKBACK_SECONDS, description="How far back a search, show or list counts as looking it up.")] = audit.DEFAULT_LOOKBACK_SECONDS,
        mode: Annotated[
            Literal["keyword", "bm25", "semantic", "hybrid"] | None,
            Field(description="The probe's retrieval mode; omit for the store's default_mode setting (hybrid unless "
                              "the user changed it). Without the embeddings extra, semantic and hybrid probe lexically."),
        ] = None,
    ) -> out.AuditOut:
        """End-of-turn telemetry for a client hook; a model in conversation should not call it.

        Runs the probe search memory_search would have run for the turn and reports verdict: miss (a
        high-relevance memory existed and nothing was searched, shown or listed in this session within
        lookback_seconds), ok (it was looked up) or no_signal (no high-relevance memory). hits are the top probe
        hits. Logs turn_audited, and search_miss on a miss (counted as silent_misses in memory_scope_overview).
        The turn is over: this session's search hits not yet settled settle as applied (auto_applied counts them).
        """
        return audit.audit_turn(store, user_message, assistant_response=assistant_response,
                                lookback_seconds=lookback_seconds, mode=mode)

    @writer
    def memory_disable_scope(scope: Annotated[Scope, Field(description="The scope to hide for this session; it must exist.")]) -> out.ScopesOut:
        """Hide a scope for the rest of this session (search, list, overview, handoff), e.g. when the user says
        a project is unrelated. Lasts until memory_enable_scope or the server restarts. Returns disabled_scopes.
        """
        return {"disabled_scopes": store.disable_scope(scope)}

    @writer
    def memory_enable_scope(scope: Annotated[Scope, Field(description="A scope memory_disable_scope hid.")]) -> out.ScopesOut:
        """Show a scope again that memory_disable_scope hid in this session. Returns disabled_scopes."""
        return {"disabled_scopes": store.enable_scope(scope)}

    @reader
    def memory_health(
        auto_scope: Annotated[bool, Field(description="True: this repository's and global memories only. False: every project.")] = True,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="How many memories to list per bucket (1-50).")] = 10,
    ) -> out.HealthOut:
        """The full curation report behind memory_scope_overview's counts: which memories are stale, never
        verified, drifted, cold, dead, contradicted or in conflict, with ids, so a curation pass can act on them
        (memory_verify what still holds, memory_update what drifted, memory_remove what is dead,
        memory_conflicts for contradiction pairs).
        """
        return store.health(auto_scope=auto_scope, limit=limit)

    @writer
    @gated
    def memory_conflicts(
        action: Annotated[Literal["list", "resolve"], Field(description="list: the contradiction pairs. resolve: settle one pair.")] = "list",
        id: Annotated[str | None, Field(max_length=200, description="resolve: one memory of the pair.")] = None,
        other_id: Annotated[str | None, Field(max_length=200, description="resolve: the other memory of the pair.")] = None,
        resolution: Annotated[Literal["supersede", "keep_both"] | None, Field(description="resolve: supersede (keep_id wins) or keep_both (both hold; say how in note).")] = None,
        keep_id: Annotated[str | None, Field(max_length=200, description="supersede: the memory that stays true.")] = None,
        note: Note = None,
        auto_scope: Annotated[bool, Field(description="list: True for this repository's and global memories, False for every project.")] = True,
    ) -> out.ConflictsOut:
        """Contradiction pairs (memories linked with contradicts) awaiting a verdict: the conflicts count of
        memory_scope_overview. action=list returns {count, conflicts: [{id, other_id, note, summary,
        other_summary}]}. action=resolve settles one pair: supersede makes keep_id supersede the other (later hits
        of the other carry superseded_by), keep_both turns the pair into an extends link carrying your note.
        Nothing is removed; memory_remove the loser separately if it is simply wrong. status writes_disabled
        (gate, reason, hint): the user turned writes off and nothing changed.
        """
        if action == "list":
            rows = store.conflicts(auto_scope=auto_scope)
            return {"status": "listed", "count": len(rows), "conflicts": rows}
        if not id or not other_id or resolution is None:
            raise KenningError("resolve needs id, other_id and resolution (supersede with keep_id, or keep_both with note)")
        return store.resolve_conflict(id, other_id, resolution, keep_id=keep_id, note=note)

    @writer
    @gated
    def memory_rename_scope(
        old: Annotated[Scope, Field(description="The scope to rename, as memories carry it now.")],
        new: Annotated[Scope, Field(description="Its new name; memories that already carry it just lose the old one.")],
    ) -> out.RenameOut:
        """Relabel a scope on every memory and tombstone that carries it (e.g. a project was renamed). A relabel,
        not an edit: updated and verification stay as they were. Returns {status: renamed, old, new, count}, or
        status writes_disabled (gate, reason, hint) when the user turned writes off and nothing changed. A scope
        nothing carries (a mistyped name) is an error: memory_scope_overview lists the scopes in use.
        """
        count = store.rename_scope(old, new)
        if not count:  # "renamed, count 0" read as done, as the CLI's "renamed ... on 0 memories" did
            raise InvalidInput(f"no memory or tombstone carries the scope {old!r}, so nothing was renamed; "
                               "memory_scope_overview lists the scopes in use")
        return {"status": "renamed", "old": old, "new": new, "count": count}

    # ------------------------------------------------------------------ the episodes journal
    @writer
    def episode_write(
        body: Annotated[str, Field(min_length=1, description="Free-form markdown: what was tried, what happened, what is next (max 1 MB).")],
        # no max_length: pydantic counts characters, the journal bytes (UTF-8, after trimming), and a
        # limit said in two units refused different takeaways with different words; the journal's check is the one
        takeaway: Annotated[str | None, Field(description=f"One sentence a later session should read first (at most {MAX_TAKEAWAY_BYTES:,} bytes of UTF-8).")] = None,
        scopes: Annotated[list[Scope] | None, Field(max_length=MAX_SCOPES, description="Scope tags for filtering later; [] is fine (handoff keys on the session).")] = None,
        swarm_id: Annotated[Label | None, Field(description="Cohort label: a sub-agent passes its coordinator's session id so the coordinator can gather every takeaway with episode_search(swarm_id=...).")] = None,
        parent_session_id: Annotated[Label | None, Field(description="The session this one continues or was spawned by; defaults to the one episode_handoff resolved.")] = None,
    ) -> out.EpisodeWriteOut:
        """Journal run state for this session: what was tried, where it is blocked, the next step, this
        iteration's conclusion. Use it for whatever memory_write would refuse as transient. Episodes expire after
        30 days and never appear in memory_search or memory_list; later sessions read them with episode_handoff
        or episode_search, and episode_promote turns a takeaway that hardened into a memory.

        Returns {status: committed, id, session_id, created, expires, scopes, takeaway, swarm_id, pruned_sessions}
        where pruned_sessions are sessions whose expired entries this write cleaned up (usually []), or status
        writes_disabled (gate, reason, hint) when the user turned writes off and nothing was journaled.
        """
        try:
            return journal.write(body, takeaway=takeaway, scopes=scopes, swarm_id=swarm_id,
                                 parent_session_id=parent_session_id)
        except GateRefused as refused:
            if refused.refusal.gate != "write_enabled":
                raise  # a secret in the entry stays a tool error naming the field, as it always was
            return refusal_status(refused)

    @reader
    def episode_handoff(
        prior_session_id: Annotated[Label | None, Field(description="Read this session instead of the automatically resolved one (e.g. a parent agent's id).")] = None,
        max_episodes: Annotated[int, Field(ge=1, le=HANDOFF_CAP, description="How many of its latest entries (1-50).")] = HANDOFF_DEFAULT,
    ) -> out.HandoffOut:
        """What did the previous session here conclude? Call first at the start of a loop iteration or a resumed task.

        Resolves the other session that most recently journaled in exactly this worktree and returns
        {prior_session_id, worktree, episodes: [{id, created, takeaway, body, scopes}] oldest first, note?}.
        takeaway falls back to the body's first line. Entries in scopes disabled for this session are hidden.
        note appears when the previous session shows nothing and says why (nothing journaled, everything
        promoted into memories, or every entry in a disabled scope); episodes may then come from an older session.
        """
        return journal.handoff(prior_session_id=prior_session_id, max_episodes=max_episodes)

    @reader
    def episode_search(
        scopes: Annotated[list[Scope] | None, Field(max_length=MAX_SCOPES, description="Keep episodes with at least one of these scopes.")] = None,
        parent_session_id: Annotated[Label | None, Field(description="Only this session's journal (the session that wrote the episodes, e.g. a parent agent's id).")] = None,
        session_id: Annotated[Label | None, Field(description="Same as parent_session_id (kept for older callers).")] = None,
        spawned_by: Annotated[Label | None, Field(description="Only episodes of sessions that continued or were spawned by this session.")] = None,
        swarm_id: Annotated[Label | None, Field(description="Only episodes tagged with this cohort id, from any session.")] = None,
        since: Annotated[str | None, Field(max_length=64, description="ISO-8601 time; only episodes created at or after it.")] = None,
        ids: Annotated[list[Label] | None, Field(max_length=MAX_IDS, description="Only these episode ids (unknown ids are simply absent).")] = None,
        auto_scope: Annotated[bool, Field(description="For a walk without session/parent/swarm/ids: drop episodes from clearly different checkouts. False: every worktree.")] = True,
        max_results: Annotated[int, Field(ge=1, le=SEARCH_CAP, description="Keep the most recent N (1-200).")] = SEARCH_DEFAULT,
        include_bodies: Annotated[bool, Field(description="False: takeaway-only rows; re-read one in full via ids.")] = True,
    ) -> out.EpisodeSearchOut:
        """Look up journal entries across sessions by filters (not ranked; episodes are chronological).
        For "what did the last session conclude" prefer episode_handoff.

        Returns {count, episodes: [{id, session_id, parent_session_id, swarm_id, worktree, created, expires,
        scopes, takeaway, body?}]}: the most recent max_results matches, oldest first. Entries in scopes disabled
        for this session are hidden, as in memory_search and episode_handoff.
        """
        if session_id is not None and parent_session_id is not None and session_id != parent_session_id:
            raise KenningError("parent_session_id and session_id name the same filter; give one")
        rows = journal.search(scopes=scopes, session_id=parent_session_id or session_id, parent_session_id=spawned_by,
                              swarm_id=swarm_id, since=since, ids=ids, auto_scope=auto_scope,
                              max_results=max_results)
        return {"count": len(rows), "episodes": [e.to_dict(include_body=include_bodies) for e in rows]}

    @writer
    def episode_promote(
        episode_id: Annotated[Label, Field(description="The episode's id (from episode_handoff or episode_search).")],
        scopes: Annotated[list[Scope], Field(min_length=1, max_length=MAX_SCOPES, description="Scopes for the new memory.")],
        category: Category = "fact",
        confidence: Confidence = "medium",
        source: Source = "explicit-statement",
        use_body: Annotated[bool, Field(description="Promote the full body instead of the takeaway (required when the episode has no takeaway).")] = False,
        acknowledge_transient: Annotated[bool, Field(description="Override the durability gate when the takeaway is durable as worded.")] = False,
        acknowledge_user_claim: Annotated[bool, Field(description="Override the user-claim gate when the text is about someone other than the user.")] = False,
        acknowledge_scope_mismatch: Annotated[bool, Field(description="Override scope_mismatch: the fact is about the other project the scopes name.")] = False,
        force: Force = False,
    ) -> out.WriteOut:
        """Turn a journal takeaway that proved durable into a memory. It goes through memory_write with every
        gate, so the answer has memory_write's shape plus promoted_from_episode_id and episode_deleted. The
        episode is deleted only when the memory commits; on pending it is deleted by memory_write_confirm (and
        kept by memory_write_cancel); on any refusal it stays so you can adjust and promote again.
        """
        return journal.promote(episode_id, scopes=scopes, category=category, confidence=confidence,
                               source=source, use_body=use_body, acknowledge_transient=acknowledge_transient,
                               acknowledge_user_claim=acknowledge_user_claim,
                               acknowledge_scope_mismatch=acknowledge_scope_mismatch, force=force)

    # ------------------------------------------------------------------ recall across sessions
    @reader
    def session_search(
        query: Annotated[str, Field(min_length=1, max_length=10_000, description="Nouns a past message or note would contain (error, file, service names).")],
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="How many hits (1-50).")] = 8,
        all: Annotated[bool, Field(description="False: this project's sessions and memories. True: every project's.")] = False,
    ) -> out.RecallOut:
        """Recall what earlier agent sessions said (Claude Code, Codex CLI and other registered transcripts),
        together with curated memories and profile notes about the user. Call it when the user refers to
        earlier work ("like we did last week", "the bug we fixed yesterday") that memory_search does not cover.
        Your own session is left out (the server reads $KENNING_CURRENT_SESSION).

        Returns {query, all, scope, excluded_session, legs_run, degraded, pending_embeddings, hits}, and note
        when the ledgers' newest lines could not be read in (a read-only store, a full disk): it says why.
        pending_embeddings (per tier, when the vector leg ran) counts texts it could not see yet: they are
        being embedded in the background, and the keyword legs find them meanwhile. Each hit has role profile |
        memory | transcript, recall_score (the share of your query words it contains; transcripts slightly
        discounted, so on equal match curated notes come first), relevance, matched_leg, match_terms, legs and
        snippet. A transcript hit adds session, parent_session (a sidechain/worker's parent), timestamp,
        speaker (user | assistant | tool), ledger and line; a memory or profile hit adds id, scopes and its
        trust fields, as memory_search returns them. A transcript is what was said then, not a checked fact.
        """
        from kenning.recall.recall import recall

        return recall(store, query, limit=limit, all_projects=all)

    # ------------------------------------------------------------------ the markdown mirror and housekeeping
    @file_writer
    def memory_export_markdown(
        directory: Folder,
        force: Annotated[bool, Field(description="Overwrite edits a person made in the folder that were not synced yet. "
                                                 "Without it the export refuses and names the file; sync first.")] = False,
    ) -> out.ExportOut:
        """Write every live memory as markdown a person can read and edit: one MEMORY.md per scope (in folders
        named after the scope's parts) and USER.md for the profile notes, each memory a block under a
        provenance header (id, scopes, category, created, updated, origin). Only files whose text changes are
        rewritten (atomically, under the folder's lock). Call memory_sync_markdown later to take edits back.

        Returns {folder, written, unchanged, removed, memories, lock_taken_over}: files (relative to folder)
        rewritten, left as they were, and removed because their scope holds no memory any more;
        lock_taken_over is {pid, host, at} when the folder's lock was left by a process now gone, else null.
        """
        from kenning.recall.markdown import export

        return export(store, directory, force=force)

    @writer
    def memory_sync_markdown(directory: Folder) -> out.SyncOut:
        """Take a person's edits to an exported folder back into the store, every change through the write
        gates: an edited body is an update, a deleted block a tombstone (reason "removed from MEMORY.md",
        restorable), a paragraph without a header a new memory (in USER.md a profile note, pending until the
        user confirms it with memory_write_confirm; one changed before that withdraws its staged write). A
        block whose header was mangled is reported, never guessed at, and the file's deletions wait until it
        is mended. A file saved while the sync ran is left as saved (a conflict: sync again).

        Returns {folder, updated, written, pending, withdrawn, repeats, removed, refused, conflicts, mangled,
        held, missing_files,
        files_changed, lock_taken_over}; each entry names the file and, where there is one, the line, id or pending_id, and
        refused / conflicts / mangled / held say why. With no edits every list is empty.
        """
        from kenning.recall.markdown import sync

        report = sync(store, directory)
        for entries in report.values():  # the reasons name kenning commands: restated as tools here
            for entry in entries if isinstance(entries, list) else ():
                if isinstance(entry, dict) and isinstance(entry.get("why"), str):
                    entry["why"] = for_tools(entry["why"])
        return report

    @file_writer
    def memory_clean(
        dry_run: Annotated[bool, Field(description="Only list what would be removed.")] = False,
    ) -> out.CleanOut:
        """Remove what kenning left behind by accident: lock files whose process is gone, temporary files of
        interrupted writes, and empty folders kenning made in an exported markdown folder. It never removes a
        memory, a tombstone, a MEMORY.md or anything because it is old.

        Returns {dry_run, removed: [{path, what}]} (with dry_run: what would be removed).
        """
        from kenning.recall.clean import clean

        return clean(store, dry_run=dry_run)

    server.seal_schemas()
    server.hidden = lambda: set() if store.config.search_enabled else set(SEARCH_TOOLS)
    return server


def serve(store_dir: str | os.PathLike | None = None) -> None:
    """Serve one MCP session over stdio until the client disconnects; a SIGTERM or SIGINT ends it
    the same way (the store closed, its queued read events written), then exits 128 + the signal."""
    import anyio

    from kenning.recall.transcripts import index_for
    from kenning.serve import stdio_guard

    with Store(store_dir) as store:
        store.semantic.start_background()  # embeds what bulk imports queued; searches never wait for it
        index_for(store)  # and, through it, transcript messages that have no vector yet
        stopped_by = anyio.run(stdio_guard.run, build_server(store))
    if stopped_by is not None:
        raise SystemExit(128 + stopped_by)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kenning.server", description="kenning's MCP server over stdio.")
    parser.add_argument("--store", default=None, help="store directory (default: $KENNING_HOME, ./.kenning, or the user data dir)")
    store = parser.parse_args(argv).store
    try:
        serve(store)
    except KenningError as exc:  # a store path that is a file, a damaged store: one line, as `kenning serve` says it
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
