"""``/api/sessions/{id}/nodes``: a node's children as paged rows, and one node's details (context, response, tool call)."""

from __future__ import annotations

from typing import Any, Mapping

from otel_agents.persistence.timestamps import iso_ts
from otel_agents.ui.loaded import UiSession
from otel_agents.ui.node_index import billed
from otel_agents.ui.security import ApiError, check_span_id, paging


def _known(session: UiSession, span_id: str) -> str:
    check_span_id(span_id)
    if span_id not in session.index.entries:
        raise ApiError(404, f"no node {span_id} in session {session.session_id}")
    return span_id


def nodes_api(session: UiSession, query: Mapping[str, str]) -> dict[str, Any]:
    offset, limit = paging(query, 200)
    parent = query.get("parent") or None
    if parent is not None:
        _known(session, parent)
    children = session.index.children_of(parent)
    return {
        "total": len(children),
        "offset": offset,
        "nodes": [session.index.row(span_id) for span_id in children[offset:offset + limit]],
        # The load this page comes from: a page read before the session's detail may be older than its cursor.
        "cursor": session.cursor,
    }


def _time(ns: Any) -> str | None:
    return iso_ts(ns) if isinstance(ns, int) and not isinstance(ns, bool) else None


def _events(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Log lines (hook decisions among them) with their levels, and the span's other events, in time order."""
    out = []
    for log in node.get("logs") or ():
        out.append({"name": log.get("event"), "time": _time(log.get("ts")), "level": log.get("level"),
                    "message": log.get("message"), "attributes": log.get("attributes") or {}, "_ts": log.get("ts")})
    for event in node.get("span_events") or ():
        out.append({"name": event.get("name"), "time": _time(event.get("ts") or event.get("ts_ns")),
                    "level": None, "message": None, "attributes": event.get("attributes") or {},
                    "_ts": event.get("ts") or event.get("ts_ns")})
    out.sort(key=lambda e: e["_ts"] if isinstance(e["_ts"], int) else 0)
    for event in out:
        del event["_ts"]
    return out


def _record(session: UiSession, message_id: Any) -> dict[str, Any] | None:
    if not isinstance(message_id, str):
        return None
    try:
        return dict(session.viewer().record(message_id))
    except (ApiError, ValueError, LookupError):
        return None


def _context(session: UiSession, span_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """``view context --json`` of an LLM attempt, or why there is none."""
    from otel_agents.views import ViewError
    from otel_agents.views.jsonout import context_json

    try:
        return context_json(session.viewer().chat_context(span_id)), None
    except (ViewError, ApiError) as exc:
        return None, str(exc)


def _tool(session: UiSession, node: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call's name, the arguments its assistant entry gave and the result its tool entry holds."""
    request = node.get("request") or {}
    response = node.get("response") or {}
    call = _record(session, request.get("call_message_id"))
    arguments = None
    for tool_call in (call or {}).get("tool_calls") or ():
        if isinstance(tool_call, Mapping) and tool_call.get("id") == request.get("tool_call_id"):
            arguments = (tool_call.get("function") or {}).get("arguments")
    # Its tool entries on the span: a discuss cut off has its replies and then the stop's result.
    result = _replies(node, request.get("tool_call_id"))
    if result is None:
        result = (_record(session, response.get("message_id")) or {}).get("content")
    name = (node.get("attributes") or {}).get("gen_ai.tool.name") or node.get("name")
    return {"name": name, "call_id": request.get("tool_call_id"), "arguments": arguments,
            "result": result, "status": response.get("status")}


def _replies(node: Mapping[str, Any], call_id: Any) -> str | None:
    """A tool that replied as it went (discuss: one tool entry per speaker) has no single result entry:
    its tool entries for this call, in order, joined by a blank line (one entry: a single result). Only the span's own records are
    searched: a scripted model's call ids repeat from run to run."""
    if not isinstance(call_id, str):
        return None
    contents = []
    for event in node.get("events") or ():
        record = event.get("record") if isinstance(event, Mapping) else None
        if (isinstance(record, Mapping) and record.get("role") == "tool" and record.get("tool_call_id") == call_id
                and isinstance(record.get("content"), str)):
            contents.append(record["content"])
    return "\n\n".join(contents) if contents else None


def node_api(session: UiSession, span_id: str) -> dict[str, Any]:
    _known(session, span_id)
    entry = session.index.entries[span_id]
    node = entry.node
    accounting = (node.get("accounting") or [None])[0]
    detail: dict[str, Any] = {
        "node": session.index.row(span_id),
        "attributes": node.get("attributes") or {},
        "events": _events(node),
        "records": [e.get("record") for e in node.get("events") or () if isinstance(e, Mapping)],
        "context": None,
        "context_error": None,
        "response": None,
        "reasoning": node.get("reasoning"),
        "usage": accounting.get("tokens") if isinstance(accounting, Mapping) else None,
        "cost_usd": billed(accounting),
        "price_source": accounting.get("price_source") if isinstance(accounting, Mapping) else None,
        "tool": None,
        "ancestors": session.index.ancestors(span_id),
    }
    if entry.kind == "llm":
        detail["context"], detail["context_error"] = _context(session, span_id)
        response = node.get("response") or {}
        detail["response"] = {**response, "record": _record(session, response.get("message_id"))}
    elif entry.kind == "tool":
        detail["tool"] = _tool(session, node)
    return detail
