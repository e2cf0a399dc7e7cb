"""The stable ``--json`` shapes of each view (docs/views.md). Every key is always present."""

from __future__ import annotations

import json
from typing import Any, Sequence

from otel_agents.views.index import causes_of
from otel_agents.views.model import (
    AgentInfo,
    ChatContext,
    DialogItem,
    FlowStep,
    PerspectiveItem,
    Reference,
    Speaker,
    TranscriptLine,
)

SCHEMA_VERSION = 1


def dumps(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2)


def _speaker(speaker: Speaker | None) -> dict[str, Any]:
    return {"speaker": speaker.label if speaker else None, "speaker_agent_id": speaker.agent_id if speaker else None}


def agents_json(session_id: str | None, agents: Sequence[AgentInfo]) -> dict[str, Any]:
    return {
        "version": SCHEMA_VERSION,
        "session": session_id,
        "agents": [
            {
                "agent_id": a.agent_id,
                "name": a.name,
                "display_name": a.display_name,
                "parent": a.parent,
                "model": a.model,
                "role": a.role,
                "path": a.path,
                "created_by": a.created_by,
                "cause": a.cause,
                "system_prompt": a.system_prompt,
                "entries": a.entries,
            }
            for a in agents
        ],
    }


def transcript_json(agent: AgentInfo, lines: Sequence[TranscriptLine]) -> dict[str, Any]:
    return {
        "version": SCHEMA_VERSION,
        "agent_id": agent.agent_id,
        "agent": agent.display_name,
        "entries": [
            {
                "message_id": line.message_id,
                "ts": line.ts,
                "substance": line.substance,
                "source": line.source,
                "tool": line.tool,
                "message": line.message,
            }
            for line in lines
        ],
    }


def dialog_json(agents: Sequence[AgentInfo], items: Sequence[DialogItem]) -> dict[str, Any]:
    return {
        "version": SCHEMA_VERSION,
        "agents": [a.agent_id for a in agents],
        "items": [
            {
                "message_id": item.message_id,
                **_speaker(item.speaker),
                "content": item.content,
                "heard_by": list(item.heard_by),
                "entries": list(item.entries),
                "hooks": [
                    {"action": m.action, "hook": m.hook, "message_id": m.message_id, "agent_id": m.agent_id,
                     "agent": m.agent}
                    for m in item.hooks
                ],
            }
            for item in items
        ],
    }


def perspective_json(agent: AgentInfo, items: Sequence[PerspectiveItem]) -> dict[str, Any]:
    return {
        "version": SCHEMA_VERSION,
        "agent_id": agent.agent_id,
        "agent": agent.display_name,
        "items": [
            {
                "message_id": item.message_id,
                "kind": item.kind,
                "ts": item.ts,
                "content": item.content,
                **_speaker(item.speaker),
                "substance": item.substance,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in item.tool_calls],
                "tool": item.tool,
                "tool_call_id": item.tool_call_id,
                "keep": item.keep,
            }
            for item in items
        ],
    }


def step_json(step: FlowStep) -> dict[str, Any]:
    return {
        "message_id": step.message_id,
        "event_type": step.event_type,
        "agent_id": step.agent_id,
        "agent": step.agent,
        "link": step.link,
        "parent": step.parent,
        "parent_known": step.parent_known,
        "causes": list(causes_of(step.record)),
        **_speaker(step.speaker),
        "tool": step.tool,
        "record": step.record,
    }


def trace_json(message_id: str, steps: Sequence[FlowStep]) -> dict[str, Any]:
    return {"version": SCHEMA_VERSION, "message_id": message_id, "chain": [step_json(s) for s in steps]}


def heard_json(original: FlowStep, refs: Sequence[Reference]) -> dict[str, Any]:
    return {
        "version": SCHEMA_VERSION,
        "message_id": original.message_id,
        "original": step_json(original),
        "references": [
            {
                "message_id": r.message_id,
                "agent_id": r.agent_id,
                "agent": r.agent,
                "ts": r.ts,
                "role": r.role,
                "content": r.content,
            }
            for r in refs
        ],
    }


def context_json(context: ChatContext) -> dict[str, Any]:
    return {
        "version": SCHEMA_VERSION,
        "span_id": context.span_id,
        "name": context.name,
        "agent_id": context.agent_id,
        "agent": context.agent,
        "attempt": context.attempt,
        "last_message_id": context.last_message_id,
        "message_count": context.message_count,
        "messages": context.messages,
        "tools": context.tools,
    }
