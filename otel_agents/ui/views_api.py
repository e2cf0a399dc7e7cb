"""Agents, dialog, perspective, trace and heard of a session: the views' own ``--json`` documents (views/jsonout.py)."""

from __future__ import annotations

from typing import Any, Callable

from otel_agents.ui.loaded import UiSession
from otel_agents.ui.security import ApiError, check_agent, check_message_id


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


def agents_api(session: UiSession) -> dict[str, Any]:
    from otel_agents.views import jsonout

    viewer = session.viewer()
    return jsonout.agents_json(viewer.session_id, viewer.list_agents())


def dialog_api(session: UiSession, agents: list[str]) -> dict[str, Any]:
    from otel_agents.views import jsonout

    if not agents:
        raise ApiError(400, "name the agents: ?agents=A&agents=B")
    viewer = session.viewer()
    infos = _answer(lambda: [viewer.agent(check_agent(a)) for a in agents])
    items = _answer(lambda: viewer.extract_dialog([i.agent_id for i in infos]))
    return jsonout.dialog_json(infos, items)


def perspective_api(session: UiSession, agent: str) -> dict[str, Any]:
    from otel_agents.views import jsonout

    viewer = session.viewer()
    info = _answer(lambda: viewer.agent(check_agent(agent)))
    return jsonout.perspective_json(info, _answer(lambda: viewer.extract_agent_perspective(info.agent_id)))


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

    return jsonout.context_json(_answer(lambda: session.viewer().chat_context(span_id)))
