"""Build a ready-to-run Session from a script: root agent, hooks and model.

Used by ``run`` and by ``resume`` (which passes the restored counters and agents).
"""

from __future__ import annotations

from typing import Iterable

from otel_agents.llm.script_hooks import HookSpec
from otel_agents.llm.scripts import Script
from otel_agents.runtime.agent_approval import agent_approval_hook
from otel_agents.runtime.eviction import eviction_policy
from otel_agents.runtime.hooks import (
    ApprovalHook, Decision, RemindHook, ReviewHook, TransformHook, check_tools_named, remind, reset,
)
from otel_agents.runtime.session import AgentSpec, Session
from otel_agents.runtime.tools import Tool


def _approval(spec: HookSpec) -> ApprovalHook:
    if spec.agent:
        return agent_approval_hook(spec.agent, spec.tools, spec.name, spec.agents)  # the hook makes the name sets
    denied = frozenset(spec.deny_tools)
    return ApprovalHook(
        spec.name,
        # an allowed call's event says no reason: "is not allowed" on an allow read as a denial
        lambda request: Decision(False, f"tool '{request.tool}' is not allowed") if request.tool in denied
        else Decision(True),
        spec.tools,
        spec.agents,
    )


def _review(spec: HookSpec) -> ReviewHook:
    needle = spec.reject_if_contains or ""

    def review(agent, utterance: str) -> Decision:
        if needle and needle in utterance:
            return Decision(False, f"the answer must not contain {needle!r}")
        return Decision(True)

    return ReviewHook(spec.name, review, spec.agents)


def _transform(spec: HookSpec) -> TransformHook:
    replacements = dict(spec.replace or {})

    def transform(sender, recipient, text: str) -> str:
        for old, new in replacements.items():
            text = text.replace(old, new)
        return text

    return TransformHook(spec.name, transform)


def _reset(spec: HookSpec) -> ReviewHook:
    return reset(spec.max_entries or 0, spec.keep, name=spec.name, agents=spec.agents)


def _remind(spec: HookSpec) -> RemindHook:
    return remind(spec.message or "", name=spec.name, agents=spec.agents, after_turns=spec.after_turns,
                  tools=spec.tools, every_seconds=spec.every_seconds)


def install_hooks(session: Session, specs: Iterable[HookSpec]) -> None:
    """Each spec made a hook of the session, once its tool names are known to be tools the session has."""
    known = session.tool_names()
    for spec in specs:
        check_tools_named(f"hook {spec.name!r}: tools", spec.tools, known)
        check_tools_named(f"hook {spec.name!r}: deny_tools", spec.deny_tools, known)
        if spec.kind == "approval":
            session.hooks.approvers.append(_approval(spec))
        elif spec.kind == "review":
            session.hooks.reviewers.append(_review(spec))
        elif spec.kind == "reset":
            session.hooks.reviewers.append(_reset(spec))
        elif spec.kind == "remind":
            session.hooks.reminders.append(_remind(spec))
        else:
            session.hooks.transformers.append(_transform(spec))


def resolve_model(script: Script, model: str | None) -> str:
    """The model every agent uses: the override, else the script's scripted model
    (which the session's LLM client answers from the script: ``LLMClient.use_script``)."""
    if model and not model.startswith("scripted/"):
        return model
    return script.model


def build_session(
    script: Script,
    *,
    model: str | None = None,
    tools: Iterable[Tool] = (),
    **session_kwargs,
) -> Session:
    resolved = resolve_model(script, model)
    root = AgentSpec(script.root_name, resolved, script.root_system_prompt, tuple(tools))
    session_kwargs.setdefault("eviction", eviction_policy(script.eviction))  # the caller's (options) first
    session = Session(root=root, agent_settings=script.agent_settings(script.root_name),
                      agent_budgets=script.budgets_by_name(script.root_name), **session_kwargs)
    session.llm.stream = session.llm.stream or script.stream
    session.llm.use_script(script)  # registered at the first scripted call only: none with a real model
    install_hooks(session, script.hooks)
    return session
