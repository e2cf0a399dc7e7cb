"""The attributes a run's root span (``invoke_agent``) starts with: what resume, billing and the views read of a run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_agents.llm.api_base import recorded_api_base
from otel_agents.tracing import semconv as sc

if TYPE_CHECKING:
    from otel_agents.runtime.agent import Agent
    from otel_agents.runtime.session import RunContext, Session


def run_attributes(session: "Session", known: "Agent | None", target_name: str, root_id: str | None,
                   context: "RunContext") -> dict[str, Any]:
    """``known``: the answering agent if it exists yet; else ``root_id``, the id its root will get."""
    attrs: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
        sc.GEN_AI_AGENT_NAME: target_name,
        sc.GEN_AI_CONVERSATION_ID: session.id,
        sc.SESSION_ID: session.id,
        sc.RUN_INDEX: session.runs,
        sc.RUN_SOURCE: context.source,
    }
    if context.script:
        attrs[sc.RUN_SCRIPT] = context.script
    if context.model_override:
        attrs[sc.RUN_MODEL] = context.model_override
    if getattr(session.llm, "api_base", None):  # where its calls go: a resume goes there too
        attrs[sc.RUN_API_BASE] = recorded_api_base(session.llm.api_base)
    attrs[sc.RUN_HOOKS] = sorted(session.hooks.names())  # always, so that none is known from an older run's lack
    if session.budget is not None and session.budget.budget.limits_anything:  # a replay's meter may limit nothing
        attrs[sc.RUN_BUDGET] = session.budget.budget.to_json()
    if session.carried_budget is not None:
        attrs[sc.RUN_BUDGET_CARRIED] = session.carried_budget.to_json()
    if session.previous_run is not None:
        attrs[sc.RESUMED_FROM] = f"{session.previous_run.trace_id:032x}:{session.previous_run.span_id:016x}"
    if known is not None or root_id is not None:
        attrs[sc.AGENT_ID] = attrs[sc.GEN_AI_AGENT_ID] = known.agent_id if known is not None else root_id
        # Its call path too: the run's ledger records name the agent by it (a new root's is its name).
        attrs[sc.CALL_PATH] = known.call_path if known is not None else target_name
    attrs.update(context.extra)
    return attrs
