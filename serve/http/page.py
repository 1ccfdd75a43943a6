"""The curation page at ``/``: server-rendered templates, one small script, no build step, no CDN.

Reads render on the server (search, a memory, tombstones, pending writes, health); every change
(edit, remove, restore, verify, confirm, cancel, the live toggles) is a ``fetch`` from
static/page.js to the JSON API, so the page obeys exactly what an API client obeys. Templates
and static files come only from this package's folders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from kenning import __version__
from kenning.errors import KenningError, NotFound
from kenning.store.models import LIVE_SETTINGS, MODES

from .api import live_settings

HERE = Path(__file__).resolve().parent
TEMPLATES = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(TEMPLATES.get_template(name).render(version=__version__, **context), status_code=status)


def mount(app: FastAPI) -> None:
    app.mount("/static", StaticFiles(directory=HERE / "static", follow_symlink=False), name="static")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request, q: str = "", mode: str = "", all_repos: bool = Query(True, alias="all")) -> HTMLResponse:
        store = request.app.state.store
        result, error = None, None
        if q.strip():
            try:
                result = store.search(q, mode=mode or None, limit=20, auto_scope=not all_repos).to_dict()
            except KenningError as exc:
                error = str(exc)
        return render("index.html", q=q, mode=mode, modes=MODES, all_repos=all_repos, result=result, error=error,
                      settings=live_settings(store), live=LIVE_SETTINGS)

    @app.get("/ui/memories/{id:path}", response_class=HTMLResponse, include_in_schema=False)
    def memory(request: Request, id: str) -> HTMLResponse:
        try:
            shown = request.app.state.store.show(id)
        except NotFound as exc:
            return render("missing.html", status=404, message=str(exc), id=id)
        return render("memory.html", m=shown)

    @app.get("/ui/tombstones", response_class=HTMLResponse, include_in_schema=False)
    def tombstones(request: Request) -> HTMLResponse:
        rows = [t.model_dump(mode="json") for t in request.app.state.store.tombstones(limit=200)]
        return render("tombstones.html", tombstones=rows)

    @app.get("/ui/pending", response_class=HTMLResponse, include_in_schema=False)
    def pending(request: Request) -> HTMLResponse:
        return render("pending.html", pending=request.app.state.store.pending_writes(all_sessions=True))

    @app.get("/ui/health", response_class=HTMLResponse, include_in_schema=False)
    def health(request: Request, all_repos: bool = Query(True, alias="all")) -> HTMLResponse:
        return render("health.html", health=request.app.state.store.health(auto_scope=not all_repos, limit=50))

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs(request: Request) -> HTMLResponse:
        """The API reference rendered here from the OpenAPI schema: works offline, loads nothing outside."""
        return render("docs.html", schema=request.app.openapi(), operations=_operations(request.app.openapi()))


def _operations(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per route for the docs page: method, path, summary, parameters, body fields."""
    rows = []
    components = schema.get("components", {}).get("schemas", {})
    for path, methods in schema.get("paths", {}).items():
        for method, op in methods.items():
            body_ref = (op.get("requestBody", {}).get("content", {}).get("application/json", {})
                        .get("schema", {}))
            body = components.get(body_ref.get("$ref", "").rsplit("/", 1)[-1], {}) if "$ref" in body_ref else body_ref
            rows.append({
                "method": method.upper(), "path": path, "summary": op.get("summary", ""),
                "tag": (op.get("tags") or [""])[0],
                "parameters": [{"name": p["name"], "in": p["in"], "required": p.get("required", False),
                                "description": p.get("description", "") or p.get("schema", {}).get("description", "")}
                               for p in op.get("parameters", [])],
                "body": sorted((body.get("properties") or {}).keys()),
                "body_required": body.get("required", []),
                "responses": sorted(op.get("responses", {}).keys()),
            })
    return rows
