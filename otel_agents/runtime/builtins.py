"""Built-in tools: ``task`` creates a named sub-agent, ``discuss`` runs a discussion (seed 001).

Their schemas and argument checks come from these signatures, as for any ``@tool``. What a sub-agent
says reaches its caller as a tool result, through the session's transform hooks like any delivery.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from otel_agents.arguments import agent_name_problem

from otel_agents.runtime.logged_string import LoggedString
from otel_agents.runtime.tools import Tool, ToolContext, make_tool
from otel_agents.runtime.turn_taking import hold


def _agent_name(name: str) -> str:
    """A name as ``otel_agents.Agent`` takes one: a model's call with another fails, and the model reads why."""
    problem = agent_name_problem(name)
    if problem is not None:
        raise PydanticCustomError("agent_name", problem)
    return name


async def task(
    ctx: ToolContext,
    name: Annotated[str, Field(min_length=1), AfterValidator(_agent_name)],
    system_prompt: str | None = None,
    user_prompt: str | None = None,
) -> str:
    """Create a named sub-agent. With user_prompt, it answers at once and its answer is the result.

    name: the sub-agent's name, unique among this agent's sub-agents
    system_prompt: the sub-agent's system prompt; without it the sub-agent has none
    user_prompt: optional first message; the sub-agent's answer is returned
    """
    # system_prompt is optional: seed 001's example 3 calls task with a name alone.
    parent = ctx.agent
    if name in parent.subagents:
        return f"Error: subagent '{name}' already exists"
    session = parent.session
    child = session.create_agent(
        name,
        parent.model,
        system_prompt=system_prompt,
        parent=parent,
        cause=ctx.call_message_id,
        tools=parent.user_tools.values(),
    )
    if user_prompt is None:
        return f"Created subagent: {name}"
    async with hold(child.turn):  # told and asked in one exchange (turn_taking.py)
        piece = session.log_piece_of_text(parent.agent_id, user_prompt, cause=ctx.call_message_id)
        parent.inform(child, LoggedString(user_prompt, piece))
        # The answer is delivered to the parent as the call's result: transform hooks (a redaction) see it too.
        return session.hooks.transform(child, parent, str(await child.response()))


async def discuss(
    ctx: ToolContext, speakers: list[str], prompt: str | None = None, listeners: list[str] | None = None
) -> str | None:
    """Hold a discussion among sub-agents: each speaker answers in turn and is heard by the others.

    speakers: names of sub-agents who speak, in order
    prompt: optional opening text delivered to every participant
    listeners: names of sub-agents who only listen
    """
    agent = ctx.agent
    listeners = listeners or []
    participants = list(dict.fromkeys(speakers + listeners))
    unknown = [n for n in participants if n not in agent.subagents]
    if unknown:
        return f"Error: unknown subagent(s): {', '.join(unknown)}"
    if not speakers:
        return "Error: a discussion needs at least one speaker"
    session = agent.session
    # The participants are this discussion's until it ends: another one with any of them waits.
    async with hold(*(agent.subagents[n].turn for n in participants)):
        if prompt is not None:
            # Parent-generated text delivered to several agents: stored once, referred to by substance.
            piece = session.log_piece_of_text(agent.agent_id, prompt, cause=ctx.call_message_id)
            for n in participants:
                agent.inform(agent.subagents[n], LoggedString(prompt, piece))
        for speaker_name in speakers:
            speaker = agent.subagents[speaker_name]
            utterance = await speaker.response()
            ctx.reply(session.hooks.transform(speaker, agent, str(utterance)))  # the caller hears it too
            for n in participants:
                if n != speaker_name:
                    speaker.inform(agent.subagents[n], LoggedString(f"[{speaker_name}]: {utterance}", utterance.message_id))
    return None


def _builtin(func) -> Tool:
    made = make_tool(func)
    made.tool_type = "extension"
    return made


BUILTIN_TOOLS: dict[str, Tool] = {t.name: t for t in (_builtin(task), _builtin(discuss))}
