"""Agents, dialog, perspective, trace and heard of a session: the views' own ``--json`` documents (views/jsonout.py)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from otel_agents.ui.loaded import UiSession
from otel_agents.ui.security import ApiError, check_agent, check_message_id, check_span_or_message_id, paging

PAGE = 200  # dialog and perspective items a page, when paged


def _answer(view: Callable[[], Any]) -> Any:
    """A view's refusal as the API's: unknown names and ids 404, ambiguous names 400, damaged data 422."""
    from otel_agents.views import AmbiguousAgent, SessionDataError, UnknownAgent, UnknownMessage, UnknownSpan, ViewError

    try:
        return view()
    except (UnknownAgent, UnknownMessage, UnknownSpan) as exc:
        raise ApiError(404, str(exc)) from None
    except AmbiguousAgent as exc:
        raise ApiError(400, str(exc)) from None
    except (SessionDataError, ViewError) as exc:
        raise ApiError(422, str(exc)) from None


def _paged(document: dict[str, Any], query: Mapping[str, str] | None) -> dict[str, Any]:
    """The view's document, its ``items`` cut to ``offset``/``limit`` (with ``total`` and ``offset``) when the
    query asks for a page: a busy agent's thousands of items need not cross the wire, nor the page, at once."""
    if not query or ("offset" not in query and "limit" not in query):
        return document
    offset, limit = paging(query, PAGE)
    items = document["items"]
    return {**document, "total": len(items), "offset": offset, "items": items[offset:offset + limit]}


def _view(session: UiSession, key: tuple, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A whole view document, built once per load of the session: paging it does not build it again."""
    return session.memo(key, lambda: _answer(build))


def agents_api(session: UiSession) -> dict[str, Any]:
    from otel_agents.views import jsonout

    viewer = session.viewer()
    return jsonout.agents_json(viewer.session_id, viewer.list_agents())


def dialog_api(session: UiSession, agents: list[str], query: Mapping[str, str] | None = None) -> dict[str, Any]:
    from otel_agents.views import jsonout

    if not agents:
        raise ApiError(400, "name the agents: ?agents=A&agents=B")
    viewer = session.viewer()
    infos = _answer(lambda: [viewer.agent(check_agent(a)) for a in agents])
    ids = tuple(i.agent_id for i in infos)
    document = _view(session, ("dialog", ids), lambda: jsonout.dialog_json(infos, viewer.extract_dialog(list(ids))))
    return _paged(document, query)


def perspective_api(session: UiSession, agent: str, query: Mapping[str, str] | None = None) -> dict[str, Any]:
    from otel_agents.views import jsonout

    viewer = session.viewer()
    info = _answer(lambda: viewer.agent(check_agent(agent)))
    document = _view(session, ("perspective", info.agent_id),
                     lambda: jsonout.perspective_json(info, viewer.extract_agent_perspective(info.agent_id)))
    return _paged(document, query)


def trace_api(session: UiSession, message_id: str) -> dict[str, Any]:
    from otel_agents.views import jsonout

    check_message_id(message_id)
    viewer = session.viewer()
    return jsonout.trace_json(message_id, _answer(lambda: viewer.trace_message_flow(message_id)))


def heard_api(session: UiSession, message_id: str) -> dict[str, Any]:
    from otel_agents.views import jsonout

    check_message_id(message_id)
    viewer = session.viewer()
    original = _answer(lambda: viewer.step(message_id))
    return jsonout.heard_json(original, _answer(lambda: viewer.trace_content_references(message_id)))


def context_api(session: UiSession, span_id: str) -> dict[str, Any]:
    """``view context --json``: by span id (or an assistant entry's message id, as the CLI takes)."""
    from otel_agents.views import jsonout

    check_span_or_message_id(span_id)
    return jsonout.context_json(_answer(lambda: session.viewer().chat_context(span_id)))
