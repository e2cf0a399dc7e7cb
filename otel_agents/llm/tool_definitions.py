"""The tool definitions a chat span names: their content id and names on every span, the definitions once per trace."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace

from otel_agents.llm.once_per_trace import OncePerTrace
from otel_agents.tracing import content_capture, semconv as sc


def tools_id(definitions_json: str) -> str:
    """Content id of tool definitions as sent (their compact JSON): equal definitions, equal id."""
    return "tools_" + hashlib.sha256(definitions_json.encode("utf-8")).hexdigest()[:16]


@dataclass
class ToolDefinitions:
    """Which definitions the chat spans of the latest traces already carry."""

    _sent: OncePerTrace = field(default_factory=OncePerTrace)  # definitions ids on a chat span of a trace

    def attributes(self, tools: list[dict[str, Any]], full: bool) -> dict[str, str]:
        """The definitions' id and the tools' names (``gen_ai.tool.definitions``, whole with ``full``) on every
        chat span; the definitions themselves (``otel_agents.request.tools``, which views read) once per trace.

        Agents send the same definitions on every call: repeating them made a quarter of
        the journal. Once per trace (not per session), so a trace fetched alone from
        Jaeger or a Collector still holds every definition its spans refer to.
        """
        text = json.dumps(tools, separators=(",", ":"))
        definitions_id = tools_id(text)
        definitions = content_capture.tool_definitions(tools, full=full)
        attrs = {sc.REQUEST_TOOLS_ID: definitions_id, sc.GEN_AI_TOOL_DEFINITIONS: content_capture.as_json(definitions)}
        if self._sent.first(trace.get_current_span().get_span_context().trace_id, definitions_id):
            attrs[sc.REQUEST_TOOLS] = text
        return attrs
