"""The UI's Starlette app: routes of the pages, static files and the JSON API, behind the security middleware."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from otel_agents.ui import costs_api, live, sessions_api, tree_api, views_api
from otel_agents.ui.loaded import SessionCache
from otel_agents.ui.security import ApiError, Guard, check_session_id, error_response

STATIC_DIR = Path(__file__).with_name("static")


class OrjsonResponse(JSONResponse):
    """Rows of a large tree are many small dicts: orjson encodes them several times faster."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


def api(handler: Callable[..., Any]) -> Callable[[Request], Response]:
    """A sync JSON endpoint (run in Starlette's thread pool): its ApiError becomes ``{"error"}`` with its status."""

    @functools.wraps(handler)
    def endpoint(request: Request) -> Response:
        try:
            return OrjsonResponse(handler(request))
        except ApiError as exc:
            return error_response(exc.status, exc.message)

    return endpoint


def _warm(cache: SessionCache, session_id: str) -> None:
    try:
        cache.get(session_id).viewer()  # node details need the views' index too
    except ApiError:
        pass  # the page's own request reports it


def create_app(
    sessions_dir: Path, billing_files: list[Path], *, token: str | None = None, jaeger_url: str | None = None,
    static_dir: Path | None = None, hosts: Iterable[str] | None = (),
) -> Starlette:
    """The read-only app over ``sessions_dir`` and the ledgers ``billing_files`` (docs/ui.md).

    ``hosts``: the names a request's Host may give besides localhost, 127.0.0.1 and [::1]; None: any."""
    sessions_dir = Path(sessions_dir)
    static = Path(static_dir) if static_dir is not None else STATIC_DIR
    cache = SessionCache(sessions_dir)
    stopping = threading.Event()  # set as the server shuts down: the live streams end (serve.UiServer)

    def page(request: Request) -> Response:
        if "session_id" in request.path_params:
            try:
                check_session_id(request.path_params["session_id"])
            except ApiError as exc:
                return error_response(exc.status, exc.message)
            # The page asks for the tree once its scripts run: the (possibly seconds long) load starts now.
            threading.Thread(target=_warm, args=(cache, request.path_params["session_id"]), daemon=True).start()
        index = static / "index.html"
        if not index.is_file():
            return error_response(503, f"the UI's pages are missing: no {index}")
        return FileResponse(index, media_type="text/html; charset=utf-8")

    billing_files = [Path(p) for p in billing_files]

    def ledger_csv(request: Request) -> Response:
        try:
            session_id = cache.directory(request.path_params["session_id"]).name
            body = costs_api.ledger_csv(billing_files, session_id)
        except ApiError as exc:
            return error_response(exc.status, exc.message)
        return Response(body, media_type="text/csv; charset=utf-8",
                        headers={"content-disposition": f'attachment; filename="{session_id}-ledger.csv"'})

    async def live_events(request: Request) -> Response:
        try:
            session_id = request.path_params["session_id"]
            directory = cache.directory(session_id)
            given = request.headers.get("last-event-id") or request.query_params.get("cursor")
            # Without a cursor the stream starts at the files' ends as this request found them, before
            # the client has its answer: a line written after the client saw the headers is streamed.
            start = live.parse_cursor(given) if given else live.current_cursor(directory)
        except ApiError as exc:
            return error_response(exc.status, exc.message)
        return StreamingResponse(
            live.follow(cache, session_id, start, request.is_disconnected, stopping),
            media_type="text/event-stream", headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    def session_of(request: Request):
        return cache.get(request.path_params["session_id"])

    def perspective(request: Request):
        # {agent:path} takes slashes (main/Jill); a decoded %2F or a '..' never reaches it (Guard refuses them).
        return views_api.perspective_api(session_of(request), request.path_params["agent"], request.query_params)

    routes = [
        Route("/", page),
        Route("/s/{session_id}", page),
        Route("/api/sessions", api(lambda r: sessions_api.list_api(sessions_dir, r.query_params, cache))),
        Route("/api/sessions/{session_id}", api(lambda r: sessions_api.detail_api(session_of(r), jaeger_url))),
        Route("/api/sessions/{session_id}/nodes", api(lambda r: tree_api.nodes_api(session_of(r), r.query_params))),
        Route("/api/sessions/{session_id}/nodes/{span_id}",
              api(lambda r: tree_api.node_api(session_of(r), r.path_params["span_id"]))),
        Route("/api/sessions/{session_id}/agents", api(lambda r: views_api.agents_api(session_of(r)))),
        Route("/api/sessions/{session_id}/dialog",
              api(lambda r: views_api.dialog_api(session_of(r), r.query_params.getlist("agents"), r.query_params))),
        Route("/api/sessions/{session_id}/perspective/{agent:path}", api(perspective)),
        Route("/api/sessions/{session_id}/messages/{message_id}/trace",
              api(lambda r: views_api.trace_api(session_of(r), r.path_params["message_id"]))),
        Route("/api/sessions/{session_id}/messages/{message_id}/heard",
              api(lambda r: views_api.heard_api(session_of(r), r.path_params["message_id"]))),
        Route("/api/sessions/{session_id}/context/{key}",
              api(lambda r: views_api.context_api(session_of(r), r.path_params["key"]))),
        Route("/api/sessions/{session_id}/costs", api(lambda r: costs_api.costs_api(session_of(r)))),
        Route("/api/sessions/{session_id}/ledger", api(lambda r: costs_api.ledger_api(
            billing_files, cache.directory(r.path_params["session_id"]).name, r.query_params))),
        Route("/api/sessions/{session_id}/ledger.csv", ledger_csv),
        Route("/api/sessions/{session_id}/live", live_events),
        Mount("/static", app=StaticFiles(directory=static, check_dir=False), name="static"),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return error_response(404, f"no such page or endpoint: {request.url.path[:200]}")

    async def method_not_allowed(request: Request, exc: Exception) -> Response:
        return error_response(405, f"method {request.method} not allowed: this server is read-only")

    app = Starlette(
        routes=routes,
        middleware=[Middleware(Guard, token=token, hosts=hosts)],
        exception_handlers={404: not_found, 405: method_not_allowed},
    )
    # A trailing slash is an unknown endpoint (a 404 in JSON), not a 307 to the URL without it.
    app.router.redirect_slashes = False
    app.state.cache = cache
    app.state.stopping = stopping
    app.state.billing_files = billing_files
    return app
