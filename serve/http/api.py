"""The JSON routes: each validates its arguments, calls one Store method and returns its JSON shape."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from kenning.errors import InvalidInput, Stale
from kenning.store.models import LIVE_SETTINGS
from kenning.memory.facade import MAX_LIMIT, Store
from kenning.memory.requests import MAX_ID_CHARS

from .errors import http_result, write_status

router = APIRouter()

MAX_LISTED = 500
Category = Literal["fact", "user-inference", "ambient"]
# the MCP tool's bounds on an audit list (memory_verify's verified_commits / verified_versions)
AuditLabels = list[Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]] | None
AUDIT_FIELD = {"max_length": 64, "description": "Audit trail only: recorded with the verification, not checked. "
                                                 "Replaces the previous list (omit to keep, [] to clear)."}
ScopesQuery = Query(None, description="Only memories tagged with at least one of these scopes: repeat the parameter "
                                       "(scopes=a&scopes=b). A comma is part of a scope's name, so a value holding one "
                                       "is refused rather than split.")
AllQuery = Query(False, alias="all", description="Every repository's memories, not only the server's own and global ones.")


def _store(request: Request) -> Store:
    return request.app.state.store


def scopes_filter(scopes: list[str] | None = ScopesQuery) -> list[str] | None:
    """The ``scopes`` query list, one scope per parameter. ``scopes=infra,other`` is refused: a
    comma is a legal character of a scope (check_scopes keeps "team:a,b"), so splitting could
    change what a stored scope means, and as one scope it would silently match nothing."""
    for scope in scopes or ():
        if "," in scope:
            example = "&".join(f"scopes={part.strip()}" for part in scope.split(",") if part.strip())
            raise InvalidInput(f"scopes: {scope!r} holds a comma, which is part of a scope's name; give each "
                               f"scope as its own parameter, e.g. {example or 'scopes=a&scopes=b'}")
    return scopes


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is a 400, not silently ignored


class WriteBody(_Body):
    content: str
    scopes: list[str] | str
    category: str = "fact"
    confidence: str = "medium"
    source: str = "explicit-statement"
    metadata: dict[str, Any] | None = None
    links: list[dict[str, Any]] | None = None
    claims: list[str] | None = None
    acknowledge_transient: bool = False
    acknowledge_user_claim: bool = False
    # every override a refusal's hint can name is a field here, as on the MCP tool
    acknowledge_scope_mismatch: bool = False
    acknowledge_ungrounded: bool = False
    force: bool = False
    groundedness_check: bool = False
    source_transcript: str | None = None


class UpdateBody(_Body):
    content: str | None = Field(None, description="The new body (the field POST /memories takes); it passes the "
                                                  "content gates and clears verification and claims.")
    text: str | None = Field(None, description="Same as content (kept for older callers); give one of the two.")
    scopes: list[str] | None = None
    confidence: str | None = None
    category: str | None = None
    links: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] | None = None
    acknowledge_transient: bool = False
    acknowledge_user_claim: bool = False
    acknowledge_truncation: bool = False
    version: str | None = Field(None, description="The memory's version from show or search: a memory changed "
                                                  "since is refused with 409 instead of overwritten.")


class VerifyBody(_Body):
    note: str | None = None
    verified_paths: list[str] | None = None
    verified_absent_paths: list[str] | None = None
    claims: list[str] | None = None
    verified_commits: AuditLabels = Field(None, **AUDIT_FIELD)
    verified_versions: AuditLabels = Field(None, **AUDIT_FIELD)
    version: str | None = Field(None, description="The memory's version from show or search: a memory changed "
                                                  "since is refused with 409 and nothing is recorded.")


# ------------------------------------------------------------------------------------------ reads
@router.get("/search", tags=["memories"], summary="Ranked, explained, trust-annotated hits")
def search(
    request: Request,
    q: str = Query(..., description="The words a matching memory would contain."),
    limit: int = Query(5, description=f"1-{MAX_LIMIT} hits."),
    mode: str | None = Query(None, description="keyword | bm25 | semantic | hybrid; default: the store's default_mode."),
    scopes: list[str] | None = Depends(scopes_filter),
    category: str | None = Query(None, description="fact | user-inference | ambient"),
    all_repos: bool = AllQuery,
    expand_top: bool = Query(False, description="Inline the top hit's body when it is clearly the answer."),
    transcripts: bool = Query(False, description="Recall instead: memories, profile notes and past agent sessions' "
                                                 "messages, merged and labelled by role (as `kenning recall`)."),
    exclude_session: str | None = Query(None, max_length=MAX_ID_CHARS, description=(
        "With transcripts=true: the caller's own session, left out (its content is already in the caller's "
        "context); default: the server's $KENNING_CURRENT_SESSION.")),
) -> dict[str, Any]:
    if transcripts:
        if scopes or category or expand_top:
            raise InvalidInput("scopes, category and expand_top filter memories only; leave them out with transcripts=true")
        from kenning.recall.recall import recall

        return _store(request).run(recall, q, limit=limit, all_projects=all_repos, mode=mode,
                                   exclude_session=exclude_session or None)
    if exclude_session is not None:
        raise InvalidInput("exclude_session leaves a past session out of a recall; give it with transcripts=true")
    result = _store(request).search(q, mode=mode, scopes=scopes, limit=limit, category=category,
                                    expand_top=expand_top, auto_scope=not all_repos)
    return result.to_dict()


@router.get("/memories", tags=["memories"], summary="Live memories, newest update first")
def list_memories(
    request: Request,
    scopes: list[str] | None = Depends(scopes_filter),
    category: Category | None = None,
    limit: int = Query(50, ge=1, le=MAX_LISTED),
    offset: int = Query(0, ge=0, le=100_000),
    after: str | None = Query(None, max_length=1_000, description=(
        "The page before's next_after: the memories after its last one, nothing skipped or repeated when "
        "memories are written, changed or removed between pages (an offset shifts with them).")),
    all_repos: bool = AllQuery,
    body: bool = Query(False, description="Include each memory's full text."),
) -> dict[str, Any]:
    rows = _store(request).list(scopes=scopes, category=category, limit=offset + limit + 1, auto_scope=not all_repos,
                                after=after)
    page, more = rows[offset : offset + limit], len(rows) > offset + limit
    return {"memories": [m.listing(with_body=body) for m in page], "offset": offset, "limit": limit,
            "next_offset": offset + limit if more else None, "next_after": page[-1].cursor if more else None}


# Memory ids are ULIDs unless an import kept an external one, which may hold "/" (e.g. "wiki/ops/7"):
# the ``path`` converter lets such an id through, raw or encoded as %2F, on every /memories/{id} route.
@router.get("/memories/{id:path}", tags=["memories"], summary="One memory in full with its trust report")
def show(request: Request, id: str) -> dict[str, Any]:
    return _store(request).show(id)


@router.get("/tombstones", tags=["memories"], summary="Removed memories with why and when")
def tombstones(request: Request, scopes: list[str] | None = Depends(scopes_filter),
               limit: int = Query(50, ge=1, le=MAX_LISTED),
               after: str | None = Query(None, max_length=1_000, description="The page before's next_after.")
               ) -> dict[str, Any]:
    rows = _store(request).tombstones(scopes=scopes, limit=limit + 1, after=after)
    return {"tombstones": [t.model_dump(mode="json") for t in rows[:limit]],
            "next_after": rows[limit - 1].cursor if len(rows) > limit else None}


@router.get("/pending", tags=["pending writes"], summary="Staged writes awaiting confirmation (every session)")
def pending(request: Request) -> dict[str, Any]:
    return {"pending": _store(request).pending_writes(all_sessions=True)}


@router.get("/health", tags=["curation"], summary="The curation report: stale, never verified, drifted ...")
def health(request: Request, all_repos: bool = AllQuery, limit: int = Query(10, ge=1, le=MAX_LISTED)) -> dict[str, Any]:
    return _store(request).health(auto_scope=not all_repos, limit=limit)


# ------------------------------------------------------------------------------------------ writes
@router.post("/memories", tags=["memories"], summary="Write through the gates: committed, pending or refused",
             responses={201: {"description": "committed"}, 202: {"description": "pending confirmation"},
                        409: {"description": "refused by a setting, or a duplicate"},
                        422: {"description": "refused by a gate (gate, code, reason, hint)"}})
def write(request: Request, body: WriteBody) -> JSONResponse:
    result = _store(request).write(**body.model_dump())
    return JSONResponse(http_result(result), status_code=write_status(result))


@router.patch("/memories/{id:path}", tags=["memories"],
              summary="Change fields; new content (or text) passes the content gates")
def update(request: Request, id: str, body: UpdateBody) -> dict[str, Any]:
    """The new body is ``content``, as POST /memories names it, or ``text`` for older callers; two
    different ones are a 400 rather than one silently winning. With ``version``, a memory changed
    since is a 409 with ``code: stale`` and nothing is written."""
    fields = body.model_dump()
    content, text = fields.pop("content"), fields.pop("text")
    if content is not None and text is not None and content != text:
        raise InvalidInput("give the new body as content or as text, not two different ones")
    memory = _store(request).update(id, text=content if content is not None else text, **fields)
    return {"status": "updated", "memory": memory.model_dump(mode="json")}


@router.delete("/memories/{id:path}", tags=["memories"], summary="Tombstone a memory (restorable); needs a reason")
def remove(request: Request, id: str, reason: str = Query("", description="Why it is removed.")) -> dict[str, Any]:
    tombstone = _store(request).remove(id, reason)
    return {"status": "removed", "tombstone": tombstone.model_dump(mode="json")}


@router.post("/memories/{id:path}/restore", tags=["memories"], summary="Bring a tombstoned memory back")
def restore(request: Request, id: str) -> dict[str, Any]:
    return {"status": "restored", "memory": _store(request).restore(id).model_dump(mode="json")}


@router.post("/memories/{id:path}/verify", tags=["curation"], summary="Record a spot-check (paths and claims checked)")
def verify(request: Request, id: str, body: VerifyBody | None = None) -> dict[str, Any]:
    """With ``version``, a memory changed since is a 409 with ``code: stale`` as on PATCH, and nothing
    is recorded: a 200 would read as a check that was recorded."""
    result = _store(request).verify(id, **(body or VerifyBody()).model_dump())
    if result.get("status") == "stale":
        raise Stale(result["id"], result["version"], result["current_version"])
    return result


@router.post("/pending/{pending_id}/confirm", tags=["pending writes"], summary="Commit a staged write")
def confirm(request: Request, pending_id: str) -> JSONResponse:
    result = _store(request).confirm_write(pending_id)
    return _pending_answer(http_result(result), write_status(result) if result.status != "committed" else 200)


@router.post("/pending/{pending_id}/cancel", tags=["pending writes"], summary="Drop a staged write")
def cancel(request: Request, pending_id: str) -> JSONResponse:
    result = _store(request).cancel_write(pending_id)
    return _pending_answer(result, {"cancelled": 200, "expired": 410}.get(result["status"], 404))


def _pending_answer(body: dict[str, Any], status_code: int) -> JSONResponse:
    """A confirm or cancel answer; one for a staged write that is gone (404 never existed or already
    settled, 410 expired) carries ``error`` as every missing id's answer does, beside its status."""
    if status_code in (404, 410):
        body = {"error": body.get("reason") or (
            "this staged write expired (after an hour) and was dropped" if body["status"] == "expired" else
            "no pending write has this id: it never existed, or was already confirmed or cancelled"), **body}
    return JSONResponse(body, status_code=status_code)


# ------------------------------------------------------------------------------------------ housekeeping
@router.post("/clean", tags=["curation"],
             summary="Remove abandoned locks, temp files of interrupted writes and empty folders kenning made")
def clean(request: Request, dry_run: bool = Query(False, description="Only list what would be removed.")) -> dict[str, Any]:
    """``kenning clean`` for an admin: never a memory, a tombstone, a transcript or a person's file."""
    from kenning.recall.clean import clean as clean_up

    return clean_up(_store(request), dry_run=dry_run)


# ------------------------------------------------------------------------------------------ settings
@router.get("/config", tags=["settings"], summary="The live settings, as every process sees them now")
def get_config(request: Request) -> dict[str, Any]:
    return live_settings(_store(request))


@router.patch("/config", tags=["settings"], summary="Change live settings; the ones not named keep their values")
def patch_config(request: Request, changes: dict[str, Any]) -> dict[str, Any]:
    if not changes:
        raise InvalidInput(f"name at least one setting: {', '.join(LIVE_SETTINGS)}")
    unknown = sorted(set(changes) - set(LIVE_SETTINGS))
    if unknown:
        raise InvalidInput(f"unknown setting {unknown[0]!r}; the live settings are: {', '.join(LIVE_SETTINGS)}")
    for name in ("search_enabled", "write_enabled", "require_write_confirmation"):
        if name in changes and not isinstance(changes[name], bool):
            raise InvalidInput(f"{name} must be true or false, got {changes[name]!r}")
    store = _store(request)
    store.configure(**changes)
    return live_settings(store)


def live_settings(store: Store) -> dict[str, Any]:
    config = store.config
    return {name: getattr(config, name) for name in LIVE_SETTINGS}
