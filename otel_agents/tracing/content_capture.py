"""Opt-in GenAI content on spans: the switch that turns it on and the registry's parts-based JSON shape.

With ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` on (the variable the
opentelemetry-python-contrib GenAI instrumentations read; ``OTEL_AGENTS_CAPTURE_INPUT_MESSAGES``
is an alias), chat spans carry ``gen_ai.system_instructions``, ``gen_ai.input.messages``,
``gen_ai.output.messages`` and full ``gen_ai.tool.definitions``, and tool spans
``gen_ai.tool.call.arguments``/``result``, as the JSON schemas of
open-telemetry/semantic-conventions-genai (model/gen-ai/gen-ai-*.json) describe them, recorded as
JSON text. Off by default: every chat span then repeats the agent's whole context.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from otel_agents.tracing.records import storable_text

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CAPTURE_ENV_ALIAS = "OTEL_AGENTS_CAPTURE_INPUT_MESSAGES"
# The contrib instrumentations' values too: SPAN_ONLY / SPAN_AND_EVENT put content on spans; we emit
# no GenAI log events, so EVENT_ONLY puts none on spans.
_ON = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})
_OFF = frozenset({"false", "0", "no", "off", "no_content", "event_only"})


class CaptureSettingError(ValueError):
    """A capture variable with a value that is neither on nor off."""


def capture_content(environ: Mapping[str, str]) -> bool:
    """Whether content is captured: the standard variable if set, else the alias; off when neither is."""
    for name in (CAPTURE_ENV, CAPTURE_ENV_ALIAS):
        raw = (environ.get(name) or "").strip()
        if not raw:
            continue
        value = raw.lower()
        if value in _ON:
            return True
        if value in _OFF:
            return False
        raise CaptureSettingError(
            f"{name} must be true, false, SPAN_ONLY, SPAN_AND_EVENT, EVENT_ONLY or NO_CONTENT, not {raw!r}"
        )
    return False


def as_json(value: Any) -> str:
    """Span attributes hold no nested structures: the registry allows JSON text on spans. A lone
    surrogate (a model's tool arguments) becomes U+FFFD: the span is saved, and UTF-8 cannot hold one."""
    return storable_text(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def _json_or_text(text: str | None) -> Any:
    """Tool arguments and results are objects when their text is JSON (the registry asks for a best effort)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return text
    return value if isinstance(value, (dict, list)) else text


def _content_parts(content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for item in content if isinstance(content, list) else [content]:
        if isinstance(item, Mapping) and item.get("type") == "text":
            parts.append({"type": "text", "content": str(item.get("text") or "")})
        elif isinstance(item, Mapping) and isinstance(item.get("type"), str):
            parts.append(dict(item))  # image_url, input_audio, ...: a generic part keeps the provider's shape
        else:
            parts.append({"type": "text", "content": str(item)})
    return parts


def message_parts(message: Mapping[str, Any]) -> dict[str, Any]:
    """One OpenAI-shaped chat message (as litellm sends it) as a ChatMessage of the registry."""
    role = message.get("role") or "user"
    parts: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        parts.append({"type": "reasoning", "content": str(message["reasoning_content"])})
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": message.get("tool_call_id"),
                      "response": _json_or_text(message.get("content")) if message.get("content") is not None else ""})
    else:
        parts.extend(_content_parts(message.get("content")))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name") or "",
                      "arguments": _json_or_text(function.get("arguments") or None)})
    out: dict[str, Any] = {"role": role, "parts": parts}
    if role != "tool" and message.get("name"):
        out["name"] = message["name"]
    return out


def request_content(messages: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system instructions, input messages): the leading system messages are the agent's instructions;
    everything after them is the history, in the order sent."""
    messages = list(messages)
    lead = 0
    while lead < len(messages) and messages[lead].get("role") == "system":
        lead += 1
    instructions = [part for m in messages[:lead] for part in _content_parts(m.get("content"))]
    return instructions, [message_parts(m) for m in messages[lead:]]


def output_messages(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The reply as the one output message of the choice used (finish reasons are on the span)."""
    return [message_parts({**message, "role": message.get("role") or "assistant"})]


def tool_definitions(tools: Iterable[Mapping[str, Any]], full: bool) -> list[dict[str, Any]]:
    """The tools sent: type and name always (the schema's required properties); description and
    parameters only with content capture on, as the registry recommends for their size."""
    out = []
    for tool in tools:
        function = tool.get("function") if tool.get("type", "function") == "function" else None
        if function is None:
            out.append({"type": str(tool.get("type")), "name": str(tool.get("name") or tool.get("type"))})
            continue
        definition: dict[str, Any] = {"type": "function", "name": function.get("name") or ""}
        if full:
            definition["description"] = function.get("description")
            definition["parameters"] = function.get("parameters")
        out.append(definition)
    return out


def tool_call_arguments(raw_arguments: str) -> Any:
    return _json_or_text(raw_arguments) if raw_arguments else {}


def tool_call_result(content: str | None) -> Any:
    return _json_or_text(content)
