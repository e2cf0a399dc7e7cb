"""Human-readable text for each view (formats documented in docs/views.md).

One line per item; continuation lines of multi-line content are indented by
four spaces so every item still starts at the left margin.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from otel_agents.tracing import semconv as sc
from otel_agents.views.index import causes_of, tool_calls_of
from otel_agents.views.model import (
    AgentInfo,
    ChatContext,
    DialogItem,
    FlowStep,
    HookMark,
    PerspectiveItem,
    Reference,
    Speaker,
    ToolCallView,
    TranscriptLine,
)

INDENT = "    "
# json.dumps(v, ensure_ascii=False) builds this encoder on every call; one is enough (same output).
_encode = json.JSONEncoder(ensure_ascii=False).encode
TAGS = {
    "heard": "[Heard]",
    "thought": "[Thought]",
    "said": "[Said]",
    "action": "[Action]",
    "received": "[Received]",
    "truncated": "[Truncated]",
    "host": "[Host]",  # a host notice: shown to the user, never sent to the model
}


def block(text: Any, indent: str = INDENT) -> str:
    """Content on one logical line: later lines indented (a list of content parts as its text)."""
    return content_text(text).replace("\r\n", "\n").replace("\n", "\n" + indent)


def content_text(content: Any) -> str:
    """Message content as text: a string as it is; content parts (``[{"type": "text", "text": ...},
    {"type": "image_url", ...}]``) as their texts, with ``[type]`` for the others."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_part_text(part) for part in content)
    return json.dumps(content, ensure_ascii=False, default=str)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        if isinstance(part.get("text"), str):
            return part["text"]
        return f"[{part.get('type') if isinstance(part.get('type'), str) else 'part'}]"
    return json.dumps(part, ensure_ascii=False, default=str)


def format_ts(ts: Any) -> str:
    """ISO 8601 UTC with milliseconds for epoch ns/s numbers; strings as given."""
    if ts is None:
        return "-"
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        seconds = ts / 1e9 if ts > 1e14 else float(ts)  # ns since the epoch, else seconds
        moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return str(ts)


def format_arguments(raw: str) -> str:
    """``{"name": "Jack", "n": 2}`` -> ``name="Jack", n=2``; anything else verbatim."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw
    if not isinstance(value, dict):
        return raw
    return ", ".join(f"{k}={_encode(v)}" for k, v in value.items())


def format_calls(calls: Sequence[ToolCallView]) -> str:
    return "; ".join(f"{c.name}({format_arguments(c.arguments)})" for c in calls)


def action_text(content: str | None, calls: Sequence[ToolCallView]) -> str:
    return f"{content} -> {format_calls(calls)}" if content else format_calls(calls)


def _message_text(message: Mapping[str, Any], tool: str | None) -> str:
    role = message["role"]
    calls = tool_calls_of(message)
    if role == "assistant" and calls:
        content = message.get("content")
        return f"assistant: {block(content)} -> {format_calls(calls)}" if content else f"assistant -> {format_calls(calls)}"
    if role == "tool":
        return f"tool {tool or message.get('name') or '?'}: {block(message.get('content'))}"
    return f"{role}: {block(message.get('content'))}"


# --- one renderer per view ---
def render_agents(agents: Sequence[AgentInfo]) -> str:
    if not agents:
        return ""  # "(nothing)", as every empty view, not a header over no rows
    names = {a.agent_id: a.display_name for a in agents}
    rows = [("ID", "NAME", "PARENT", "ROLE", "MODEL")] + [
        (a.agent_id, a.display_name, names.get(a.parent, a.parent) if a.parent else "-", a.role, a.model or "-")
        for a in agents
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4] for row in rows
    )


def render_transcript(lines: Sequence[TranscriptLine]) -> str:
    return "\n".join(f"{line.message_id} {_message_text(line.message, line.tool)}" for line in lines)


def heard_text(speaker: Speaker | None, content: Any) -> str:
    """``speaker: content``; a delivery that already names its speaker (``[Jack]: Hi``, as ``discuss``
    formats it) is not tagged twice: the line reads ``Jack: Hi`` (--json keeps the content as received)."""
    if speaker is not None and speaker.name and isinstance(content, str):
        content = content.removeprefix(f"[{speaker.name}]: ")
    return f"{speaker.label if speaker else 'unknown'}: {block(content)}"


def render_dialog(items: Sequence[DialogItem]) -> str:
    return "\n".join(
        f"{item.message_id} {item.speaker.label}: {block(item.content)}{hook_note(item.hooks)}" for item in items
    )


def hook_note(marks: Sequence[HookMark]) -> str:
    """``  [rejected by hook 'X']``, ``  [not delivered: review hook 'X' failed]``,
    ``  [delivered to Jill as rewritten by hook 'Y']``: a dialog line
    shows the original words, so what a hook did to them is said beside them."""
    notes: dict[str, list[str]] = {}  # note -> recipients, in order
    for mark in marks:
        if mark.action == "rejected":
            notes.setdefault(f"rejected by hook '{mark.hook}'", [])
        elif mark.action == "undelivered":
            notes.setdefault(f"not delivered: review hook '{mark.hook}' failed", [])
        else:
            recipients = notes.setdefault(f"as rewritten by hook '{mark.hook}'", [])
            if mark.agent not in recipients:
                recipients.append(mark.agent or "?")
    return "".join(
        f"  [delivered to {', '.join(recipients)} {note}]" if recipients else f"  [{note}]"
        for note, recipients in notes.items()
    )


def perspective_line(item: PerspectiveItem) -> str:
    tag = TAGS[item.kind]
    if item.kind == "heard":
        text = heard_text(item.speaker, item.content)
    elif item.kind == "action":
        text = action_text(block(item.content), item.tool_calls)
    elif item.kind == "received":
        text = f"{item.tool or '?'}: {block(item.content)}"
    elif item.kind == "truncated":
        text = f"kept the first {item.keep} entries"
    elif item.kind == "host":
        text = f"{item.notice}: {block(item.content)} (not sent to the model)"
    else:
        text = block(item.content)
    return f"{item.message_id} {tag} {text}"


def render_perspective(items: Sequence[PerspectiveItem]) -> str:
    return "\n".join(perspective_line(item) for item in items)


def event_text(step: FlowStep) -> str:
    """``[Tag] text`` for any record: the perspective tags plus [Created] and [Text]."""
    record = step.record
    event_type = record["event_type"]
    if event_type == sc.EVENT_AGENT_CREATED:
        name = record.get("name") or record.get("agent_id")
        model = f" model {record['language_model']}" if record.get("language_model") else ""
        return f"[Created] {name} ({record.get('agent_id')}){model}"
    if event_type == sc.EVENT_PIECE_OF_TEXT:
        return f"[Text] {block(record.get('content'))}"
    if event_type == sc.EVENT_TRANSCRIPT_TRUNCATED:
        return f"[Truncated] kept the first {record.get('keep')} entries"
    if event_type == sc.EVENT_HOST_NOTICE:
        return f"[Host] {record.get('notice')}: {block(record.get('content'))} (not sent to the model)"
    role = record.get("role")
    if role in ("user", "system"):
        return f"[Heard] {heard_text(step.speaker, record.get('content'))}"
    if role == "tool":
        return f"[Received] {step.tool or '?'}: {block(record.get('content'))}"
    calls = tool_calls_of(record)
    if calls:
        return f"[Action] {action_text(block(record.get('content')), calls)}"
    return f"[Said] {block(record.get('content'))}"


def step_line(step: FlowStep) -> str:
    return f"{step.message_id} {step.agent or '-'} {event_text(step)}"


def render_trace(steps: Sequence[FlowStep]) -> str:
    """One line per step; each says how it follows from its parent (the line above)."""
    lines = []
    for step in steps:
        line = step_line(step)
        if step.link is not None:
            others = [c for c in causes_of(step.record) if c != step.parent]
            also = f", also {', '.join(others)}" if others else ""
            missing = "" if step.parent_known else ", not in this session"
            line += f"  ({step.link}: {step.parent}{also}{missing})"
        lines.append(line)
    return "\n".join(lines)


def render_references(original: FlowStep, refs: Sequence[Reference]) -> str:
    head = step_line(original)
    if not refs:
        return f"{head}\nno transcript entry refers to it"
    lines = [head, "heard as:"]
    for ref in refs:
        when = f" at {format_ts(ref.ts)}" if ref.ts is not None else ""
        lines.append(f"{INDENT}{ref.message_id} {ref.agent}{when}: {block(ref.content, INDENT * 2)}")
    return "\n".join(lines)


def render_context(context: ChatContext) -> str:
    upto = f" up to {context.last_message_id}" if context.last_message_id else ""
    attempt = f", attempt {context.attempt}" if context.attempt is not None else ""
    head = (
        f"chat span {context.span_id}{attempt}: {context.message_count} messages sent by "
        f"{context.agent} ({context.agent_id}){upto}"
    )
    return "\n".join([head] + [f"[{i}] {_message_text(m, None)}{_reasoning_text(m)}"
                               for i, m in enumerate(context.messages)])


def _reasoning_text(message: Mapping[str, Any]) -> str:
    """The reasoning sent back with an assistant message, on its own indented line: it is part of
    the request (``--json`` has it), so the text view hides none of it."""
    reasoning = message.get("reasoning_content")
    if not reasoning:
        return ""
    return f"\n{INDENT}reasoning_content: {block(reasoning, INDENT * 2)}"
