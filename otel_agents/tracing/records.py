"""Seed-001 event records: their fields, their span-event encoding, and messages.

A record is a plain dict with exactly the seed-001 field names (plus optional
verbatim-model fields). The same functions turn a record into a span event,
back into a record, and into the chat message sent to the model, so that the
runtime, the exporter and the viewer can never disagree about a message's bytes.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from otel_agents.tracing import semconv as sc

# Field order is the order written to events.jsonl.
RECORD_FIELDS: dict[str, tuple[str, ...]] = {
    sc.EVENT_AGENT_CREATED: ("agent_id", "name", "cause", "language_model", "parent"),
    sc.EVENT_TRANSCRIPT_ENTRY: (
        "agent_id",
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "name",
        "substance",
        "source",
        "reasoning_content",
        "thinking_blocks",
    ),
    sc.EVENT_PIECE_OF_TEXT: ("agent_id", "content", "cause"),
    sc.EVENT_TRANSCRIPT_TRUNCATED: ("agent_id", "keep", "cause"),
}
# Structured fields that span attributes cannot hold natively travel as JSON text.
_JSON_FIELDS = frozenset({"tool_calls", "thinking_blocks"})


class RecordError(ValueError):
    """A record that breaks the seed-001 rules."""


def make_record(event_type: str, message_id: str, **fields: Any) -> dict[str, Any]:
    """Build a record with the seed field order, dropping absent (None) fields."""
    if event_type not in RECORD_FIELDS:
        raise RecordError(f"unknown event type {event_type!r}")
    unknown = set(fields) - set(RECORD_FIELDS[event_type])
    if unknown:
        raise RecordError(f"{event_type} has no field(s) {sorted(unknown)}")
    if fields.get("substance") is not None and fields.get("cause") is not None:
        raise RecordError("an event has substance or cause, never both")
    record: dict[str, Any] = {"message_id": message_id, "event_type": event_type}
    for name in RECORD_FIELDS[event_type]:
        value = fields.get(name)
        if value is not None:
            record[name] = value
    return record


def to_span_attributes(record: Mapping[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for key, value in record.items():
        if key == "event_type":
            continue
        if key in _JSON_FIELDS:
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        elif isinstance(value, (list, tuple)):
            value = [str(v) for v in value]
        attrs[sc.EVENT_FIELD_PREFIX + key] = value
    return attrs


def from_span_event(name: str, attributes: Mapping[str, Any]) -> dict[str, Any] | None:
    """Inverse of :func:`to_span_attributes`; None for span events that are not records."""
    if name not in sc.SESSION_EVENT_TYPES:
        return None
    fields: dict[str, Any] = {}
    message_id = None
    for key, value in attributes.items():
        if not key.startswith(sc.EVENT_FIELD_PREFIX):
            continue
        field = key[len(sc.EVENT_FIELD_PREFIX) :]
        if field == "message_id":
            message_id = value
            continue
        if field in _JSON_FIELDS and isinstance(value, str):
            value = json.loads(value)
        elif isinstance(value, tuple):
            value = list(value)
        if field == "keep":
            value = int(value)
        fields[field] = value
    if message_id is None:
        raise RecordError(f"span event {name!r} has no message_id")
    known = {k: v for k, v in fields.items() if k in RECORD_FIELDS[name]}
    return make_record(name, str(message_id), **known)


def message_from_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The chat message a transcript entry stands for, exactly as sent to the model.

    Host-side fields (``source``, ``substance``, ids) never reach the model.
    """
    message: dict[str, Any] = {"role": record["role"], "content": record.get("content")}
    for key in ("tool_calls", "tool_call_id", "reasoning_content", "thinking_blocks"):
        if record.get(key) is not None:
            message[key] = record[key]
    if record["role"] == "tool" and record.get("name") is not None:
        message["name"] = record["name"]
    return message


def message_id_number(message_id: str) -> int:
    """``msg_000123`` -> 123; used for ordering and counter restoration."""
    return int(message_id.rsplit("_", 1)[1])
