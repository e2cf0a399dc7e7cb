"""What the views return: plain dataclasses, rendered as text or JSON elsewhere.

Field order is the order of keys in ``--json`` output (docs/views.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AgentInfo:
    agent_id: str
    name: str | None
    display_name: str  # the name, "name (id)" when the name is shared, else the id
    parent: str | None  # parent agent id
    model: str | None
    role: str  # root | subagent | unregistered (seen in transcripts only, no agent_created)
    path: str  # names (ids for unnamed agents) from the root: "main/Jill/Inner"
    created_by: str | None  # message id of the agent_created record
    cause: str | None  # the tool call message that created it
    system_prompt: str | None  # content of its first system entry
    entries: int  # transcript entries ever logged for it


@dataclass(frozen=True)
class Speaker:
    """Who a message came from: an agent, or ``user`` / ``external`` / ``system`` / ``unknown``."""

    label: str
    agent_id: str | None = None
    # The agent's own name, as a formatted delivery tags it ("[Jack]: ..."); derived from agent_id, so not compared.
    name: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ToolCallView:
    id: str | None
    name: str
    arguments: str  # the raw JSON text the model produced


@dataclass(frozen=True)
class TranscriptLine:
    message_id: str
    ts: Any
    message: dict[str, Any]  # exactly what the model is sent for this entry
    substance: str | None = None
    source: str | None = None
    tool: str | None = None  # tool results: the tool's name, also when the record omits it


@dataclass(frozen=True)
class HookMark:
    """A hook's verdict on one transcript entry: the utterance a review hook rejected, or the delivery
    a transform hook rewrote (the recipient got other words than the original's)."""

    action: str  # rejected | undelivered (a review hook failed on it) | rewritten
    hook: str  # the hook's name
    message_id: str  # the entry: the rejected utterance, or the rewritten delivery
    agent_id: str | None  # the speaker (rejected) or the recipient (rewritten)
    agent: str | None = None  # its display name


@dataclass(frozen=True)
class DialogItem:
    message_id: str  # the substance: the original content's own message id
    speaker: Speaker
    content: str | None  # the original content, not a formatted copy
    heard_by: tuple[str, ...]  # selected agents that received it (ids)
    entries: tuple[str, ...]  # the selected agents' transcript entries that stand for it
    hooks: tuple[HookMark, ...] = ()  # what hooks did to those entries (rejected, rewritten on delivery)


@dataclass(frozen=True)
class PerspectiveItem:
    message_id: str
    kind: str  # heard | thought | said | action | received | truncated | host (a host notice, not in the transcript)
    ts: Any = None
    content: str | None = None
    speaker: Speaker | None = None  # heard: who it came from
    substance: str | None = None
    tool_calls: tuple[ToolCallView, ...] = ()  # action
    tool: str | None = None  # received: the tool's name
    tool_call_id: str | None = None  # received
    keep: int | None = None  # truncated
    notice: str | None = None  # host: the notice's kind


@dataclass(frozen=True)
class CauseLink:
    """Why a message exists: its parent and by which link."""

    message_id: str
    parent: str | None
    link: str | None  # cause | substance | denial | tool_call
    causes: tuple[str, ...] = ()  # every cause when ``cause`` is a list


@dataclass(frozen=True)
class FlowStep:
    message_id: str
    event_type: str
    agent_id: str | None
    agent: str | None  # display name
    link: str | None  # how this step points to its parent (the previous step)
    parent: str | None
    parent_known: bool
    record: dict[str, Any]
    speaker: Speaker | None = None  # heard entries: who the content came from
    tool: str | None = None  # tool results: the tool's name


@dataclass(frozen=True)
class Reference:
    """A transcript entry that represents a given message."""

    message_id: str
    agent_id: str
    agent: str  # display name
    ts: Any
    role: str
    content: str | None  # the form in which it was received


@dataclass(frozen=True)
class ChatContext:
    span_id: str
    name: str | None
    agent_id: str
    agent: str
    last_message_id: str | None
    message_count: int
    attempt: int | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
