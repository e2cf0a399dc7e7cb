"""Seed-001 event records: their fields, their span-event encoding, and messages.

A record is a plain dict with exactly the seed-001 field names (plus optional
verbatim-model fields). The same functions turn a record into a span event,
back into a record, and into the chat message sent to the model, so that the
runtime, the exporter and the viewer can never disagree about a message's bytes.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

import orjson

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.cut_json import loads_cut

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
    sc.EVENT_HOST_NOTICE: ("agent_id", "notice", "content", "cause"),  # notice: one of sc.HOST_NOTICE_KINDS
}
# Structured fields that span attributes cannot hold natively travel as JSON text.
_JSON_FIELDS = frozenset({"tool_calls", "thinking_blocks"})
# Span-event attribute key of every record field (constant: computed once).
_ATTRIBUTE_KEYS: dict[str, str] = {
    f: sc.EVENT_FIELD_PREFIX + f for f in ("message_id", *{f for fs in RECORD_FIELDS.values() for f in fs})
}
_MESSAGE_ID_KEY = _ATTRIBUTE_KEYS["message_id"]
_FIELD_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    event_type: tuple((f, _ATTRIBUTE_KEYS[f]) for f in fields) for event_type, fields in RECORD_FIELDS.items()
}


# A lone surrogate: a str can hold one (a tool's text cut mid-pair, bytes decoded with surrogateescape),
# but UTF-8 cannot, so no file or exporter could store the record.
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """``text`` as UTF-8 can hold it: a surrogate pair joined into its character, a lone surrogate
    replaced by U+FFFD. Text the application does not control (a tool's result, a hook's text, a
    model's reply) is made storable where it enters a record, so the session is never lost to it."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def storable(value: Any) -> Any:
    """``value`` (a record, or any of its fields) with every string made :func:`storable_text`."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {key: storable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = [storable(item) for item in value]
        return tuple(items) if isinstance(value, tuple) else items
    return value


def storable_json(value: Any, **options: Any) -> bytes:
    """``orjson.dumps(value)``; a value it refuses for a lone surrogate (an exception's text on a span) is
    encoded again made :func:`storable`, so the writers of session files and exports store U+FFFD, not fail.
    The common case pays for one encoding only."""
    try:
        return orjson.dumps(value, **options)
    except orjson.JSONEncodeError:
        return orjson.dumps(storable(value), **options)


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
        attrs[_ATTRIBUTE_KEYS.get(key) or sc.EVENT_FIELD_PREFIX + key] = value
    return attrs


def from_span_event(name: str, attributes: Mapping[str, Any]) -> dict[str, Any] | None:
    """Inverse of :func:`to_span_attributes`; None for span events that are not records.

    ``name`` is the span event's: ``otel_agents.transcript_entry``, or the bare record type
    that sessions and traces saved before the namespacing carry.

    Tree building decodes every record event of a session, often: the fields are
    looked up by their attribute keys (in seed order) instead of scanning the attributes.
    """
    event_type = sc.RECORD_TYPE_OF_EVENT.get(name)
    if event_type is None:
        return None
    message_id = attributes.get(_MESSAGE_ID_KEY)
    if message_id is None:
        raise RecordError(f"span event {name!r} has no message_id")
    record: dict[str, Any] = {"message_id": str(message_id), "event_type": event_type}
    for field, key in _FIELD_KEYS[event_type]:
        value = attributes.get(key)
        if value is None:
            continue
        if field in _JSON_FIELDS and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:  # a network copy's length limit cut it: what it kept is read
                value = _cut_field(field, loads_cut(value))
        elif field == "cause" and isinstance(value, str) and value.startswith("["):
            value = json.loads(value)  # a list of causes through a backend without arrays (Jaeger): JSON text
        elif isinstance(value, tuple):
            value = list(value)
        if field == "keep":
            value = int(value)
        record[field] = value
    if record.get("substance") is not None and record.get("cause") is not None:
        raise RecordError("an event has substance or cause, never both")
    return record


def _cut_field(field: str, value: Any) -> Any:
    """A JSON-valued field as a cut copy kept it, in the shape records have: tool calls cut before their id are
    left out, the rest keep their id and what they had of their function (a name or arguments cut away: empty)."""
    if not isinstance(value, list):
        return value  # refused by the record's check, as before
    if field == "tool_calls":
        calls = []
        for call in value:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                function = call.get("function") if isinstance(call.get("function"), dict) else {}
                calls.append({**call, "function": {**function, "name": str(function.get("name") or ""),
                                                   "arguments": str(function.get("arguments") or "")}})
        return calls
    return [block for block in value if isinstance(block, dict)]


_MESSAGE_ID = re.compile(r"^msg_\d+$")
ROLES = frozenset({"system", "user", "assistant", "tool"})  # of a transcript entry
_TEXT_FIELDS = frozenset(
    {"agent_id", "name", "language_model", "parent", "tool_call_id", "substance", "source", "reasoning_content",
     "notice"}
)


def is_message_id(value: Any) -> bool:
    """``msg_<digits>``: what ordering by :func:`message_id_number` needs."""
    return isinstance(value, str) and _MESSAGE_ID.match(value) is not None


def validate_record(record: Any) -> None:
    """Raise RecordError unless ``record`` is a well-formed seed-001 record.

    Readers of saved or imported data call this, so damaged input is refused with
    a clear message instead of surfacing later as a crash deep inside a view.
    Fields are checked in seed order, each by the one check its kind of value needs
    (readers call this once per line: a 100k-entry session is 100k calls).
    """
    if type(record) is not dict and not isinstance(record, Mapping):
        raise RecordError("a record is a JSON object")
    kind = record.get("event_type")
    if not isinstance(kind, str) or kind not in RECORD_FIELDS:
        raise RecordError(f"unknown event_type {kind!r}")
    message_id = record.get("message_id")
    if not is_message_id(message_id):
        raise RecordError(f"message_id {message_id!r} is not of the form msg_<digits>")
    if not isinstance(record.get("agent_id"), str):
        raise RecordError(f"{message_id}: agent_id must be a string")
    for field, check in _FIELD_CHECKS[kind]:
        value = record.get(field)
        if value is not None:
            check(message_id, field, value)
    role = record.get("role")
    if kind == "transcript_entry" and (not isinstance(role, str) or role not in ROLES):
        raise RecordError(f"{message_id}: role must be one of {sorted(ROLES)}")
    if kind == "transcript_truncated" and record.get("keep") is None:
        raise RecordError(f"{message_id}: a truncation needs keep")
    if kind == "host_notice" and not isinstance(record.get("notice"), str):
        raise RecordError(f"{message_id}: a host notice needs notice (its kind)")
    if record.get("substance") is not None and record.get("cause") is not None:
        raise RecordError(f"{message_id}: an event has substance or cause, never both")


def _check_text(message_id: str, field: str, value: Any) -> None:
    if not isinstance(value, str):
        raise RecordError(f"{message_id}: {field} must be a string")


def _check_substance(message_id: str, field: str, value: Any) -> None:
    _check_text(message_id, field, value)
    if not _MESSAGE_ID.match(value):
        raise RecordError(f"{message_id}: substance {value!r} is not a message id")


def _check_cause(message_id: str, field: str, value: Any) -> None:
    if not (is_message_id(value) or (isinstance(value, list) and value and all(map(is_message_id, value)))):
        raise RecordError(f"{message_id}: cause must be a message id or a list of them")


def _check_content(message_id: str, field: str, value: Any) -> None:
    if not isinstance(value, (str, list)):
        raise RecordError(f"{message_id}: content must be text (or a list of content parts)")


def _check_keep(message_id: str, field: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordError(f"{message_id}: keep must be a non-negative integer")


def _check_thinking_blocks(message_id: str, field: str, value: Any) -> None:
    if not isinstance(value, list):
        raise RecordError(f"{message_id}: thinking_blocks must be a list")


def _field_check(field: str) -> Callable[[str, str, Any], None] | None:
    special = {
        "substance": _check_substance,
        "cause": _check_cause,
        "content": _check_content,
        "keep": _check_keep,
        "thinking_blocks": _check_thinking_blocks,
        "tool_calls": lambda message_id, _field, value: _check_tool_calls(message_id, value),
    }
    if field in special:
        return special[field]
    return _check_text if field in _TEXT_FIELDS else None  # role: checked after the fields, as it is required


# kind -> (field, check) in seed order: what validate_record checks of each present field.
_FIELD_CHECKS: dict[str, tuple[tuple[str, Callable[[str, str, Any], None]], ...]] = {
    kind: tuple((field, check) for field in fields if (check := _field_check(field)) is not None)
    for kind, fields in RECORD_FIELDS.items()
}


def _check_tool_calls(message_id: str, calls: Any) -> None:
    if not isinstance(calls, list):
        raise RecordError(f"{message_id}: tool_calls must be a list")
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments", ""), str)
        ):
            raise RecordError(f"{message_id}: a tool call needs an id and a function with a name and arguments")


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
