"""An agent as an approval hook (seed 001 example 3): the prompt it hears, its verdict read, the hook that asks it."""

from __future__ import annotations

import json
import re

from otel_agents.arguments import check_agent_name, check_text, names_of
from otel_agents.runtime.hooks import ApprovalHook, Decision, ToolRequest
from otel_agents.runtime.turn_taking import hold


def approval_prompt(request: ToolRequest) -> str:
    agent = request.agent
    if request.tool == "task":
        name = request.arguments.get("name", "?")
        return (
            f"Agent '{agent.agent_id}' is attempting to create subagent '{name}'. "
            f"Current subagent count: {len(agent.subagents)}. Approve?"
        )
    args = json.dumps(request.arguments, ensure_ascii=False, sort_keys=True)
    return f"Agent '{agent.agent_id}' is attempting to call tool '{request.tool}' with arguments {args}. Approve?"


# The verdict is the answer's first word, however it is dressed (``**DENIED**:``, ``Approved.``).
_WORD = r"(APPROVE[SD]?|APPROVAL|DEN(?:Y|IED|IES|IAL))(?![A-Z])"
_VERDICT = re.compile(rf"[\W_]*{_WORD}([\W_]*)(.*)", re.IGNORECASE | re.DOTALL)
# What follows a verdict word that makes it a choice put back, not a verdict ("Approve or deny", "APPROVE/DENY").
_OTHER_WORD = re.compile(rf"(?:or\s+)?{_WORD}", re.IGNORECASE)


def parse_verdict(answer: str) -> Decision:
    """``APPROVE`` approves; ``DENY. reason`` (``DENIED: reason``) denies with that reason. An answer
    that is neither denies too, saying so: a guard whose verdict cannot be read fails closed, as an
    approval hook that raises does (the scripted fallback "I have nothing further to add." is no yes,
    nor is "Approve?" or "Approve or deny")."""
    text, said = str(answer).strip(), getattr(answer, "message_id", None)  # a LoggedString knows its record
    found = _VERDICT.match(text)
    if found is not None and _undecided(found.group(2), found.group(3)):
        found = None
    if found is None:
        shown = text if len(text) <= 200 else text[:200] + "…"
        return Decision(False, f"the hook agent answered neither APPROVE nor DENY: {shown!r}", said)
    if found.group(1).upper().startswith("APPROV"):
        return Decision(True, found.group(3).strip(), said)
    return Decision(False, found.group(3).strip() or "denied", said)


def _undecided(between: str, rest: str) -> bool:
    """Whether a verdict word is asked ("Approve?") or offered with the other ("Approve or deny")."""
    if "?" in between:
        return True
    other = _OTHER_WORD.match(rest)
    return other is not None and (other.group(0)[:2].lower() == "or" or between.strip().endswith("/"))


def agent_approval_hook(
    agent_name: str,
    tools: frozenset[str] | None = None,
    name: str | None = None,
    agents: frozenset[str] | None = None,
) -> ApprovalHook:
    """An approval hook answered by the agent of that name, once it exists.

    The hook agent is looked up in the session when consulted, so it can be
    created later by ``task`` (as in seed example 3); until then the hook approves.
    """

    check_agent_name("agent_approval_hook", "agent_name", agent_name)
    check_text("agent_approval_hook", "name", name)
    tools, agents = names_of("agent_approval_hook", "tools", tools), names_of("agent_approval_hook", "agents", agents, agent_names=True)

    async def check(request: ToolRequest) -> Decision:
        hook_agent = request.agent.session.find_agent(agent_name)
        if hook_agent is None or hook_agent is request.agent:
            return Decision(True, f"hook agent {agent_name!r} does not exist yet")
        # Asked and answered in one exchange: a second request waits, then is put against the state
        # this one's outcome left (seed example 3's subagent count).
        async with hold(hook_agent.turn):
            hook_agent.harken(approval_prompt(request), source="system")
            answer = await hook_agent.response()
        return parse_verdict(answer)

    return ApprovalHook(name or agent_name, check, tools, agents, agent=agent_name)
