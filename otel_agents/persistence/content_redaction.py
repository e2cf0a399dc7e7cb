"""``--redacted-save``: message contents never reach the session files.

Secrets are always redacted; this goes further for privacy-sensitive runs and
replaces what agents said, heard and thought with a marker, keeping the shape
(roles, ids, tool names, substance and cause links, timings, tokens, costs)
so that trees, views and billing still work. Such a session cannot be resumed:
the transcripts are gone by design.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.redaction import MARKER
from otel_agents.tracing.spandata import EventData, SpanData

CONTENT_FIELDS = ("content", "reasoning_content", "thinking_blocks")


def redact_record_contents(record: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(record)
    for field in CONTENT_FIELDS:
        if out.get(field) is not None:
            out[field] = MARKER
    if out.get("tool_calls"):
        out["tool_calls"] = [
            {**call, "function": {**call.get("function", {}), "arguments": MARKER}} for call in out["tool_calls"]
        ]
    return out


def _event_contents(event: EventData) -> EventData:
    attributes = dict(event.attributes)
    if event.name in sc.SESSION_EVENT_NAMES:
        for field in CONTENT_FIELDS:
            key = sc.EVENT_FIELD_PREFIX + field
            if attributes.get(key) is not None:
                attributes[key] = MARKER
        key = sc.EVENT_FIELD_PREFIX + "tool_calls"
        if attributes.get(key) is not None:
            import json

            calls = json.loads(attributes[key]) if isinstance(attributes[key], str) else attributes[key]
            attributes[key] = json.dumps(redact_record_contents({"tool_calls": calls})["tool_calls"])
    elif event.name == sc.EVENT_LOG and attributes.get(sc.LOG_LEVEL) in ("THK", "TRC"):
        attributes[sc.LOG_MESSAGE] = MARKER  # reasoning and payload traces are contents too
    return EventData(event.name, event.time_ns, attributes)


def redact_span_contents(span: SpanData) -> SpanData:
    attributes = dict(span.attributes)
    # The opt-in GenAI content, and the agent's description (its system prompt's first line).
    for key in (*sorted(sc.GEN_AI_CONTENT_ATTRIBUTES), sc.GEN_AI_AGENT_DESCRIPTION):
        if key in attributes:
            attributes[key] = MARKER
    return dataclasses.replace(span, attributes=attributes, events=tuple(_event_contents(e) for e in span.events))
