"""The shortcuts taken for speed (issue 7) give exactly what the plain rules give.

Redaction skips text too short to hold a secret and looks known attribute keys up
in a set; ``from_readable`` converts and redacts in one pass; ``from_span_event``
looks fields up by key; ``parse_iso_ts`` checks the calendar with ``fromisoformat``;
``validate_record`` checks each present field by one check chosen in advance. Each is checked here against the plain rule it replaced.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, Status, StatusCode

from otel_agents.persistence.timestamps import iso_ts, parse_iso_ts
from otel_agents.tracing import redaction as R
from otel_agents.tracing.ip_masking import mask_ips
from otel_agents.tracing import semconv as sc
from otel_agents.tracing import records as RECORDS_MOD
from otel_agents.tracing.records import (
    RECORD_FIELDS,
    RecordError,
    from_span_event,
    make_record,
    to_span_attributes,
    validate_record,
)
from otel_agents.tracing.spandata import EventData, LinkData, SpanData, from_readable

# --------------------------------------------------------------------------- the plain rules


def plain_redact_text(text: str) -> str:
    """redact_text without the length shortcut, with the anchors as first written."""
    if not text:
        return text
    for anchor, pattern in R._VALUE_PATTERNS:
        if (anchor if anchor != "gh" else "_") in text:  # "_" was the anchor of the GitHub pattern
            text = pattern.sub(R.MARKER, text)
    lowered = text.lower()
    if "bearer" in lowered:
        text = R._BEARER.sub(R.MARKER, text)
    if any(anchor in lowered for anchor in R._KEY_ANCHORS):
        if "cookie" in lowered:
            text = R._COOKIE_HEADER.sub(lambda m: m.group(1) + R.MARKER, text)
        text = R._KEYED_VALUE.sub(lambda m: m.group(1) + R.MARKER, text)
    return mask_ips(text)  # IP addresses are part of the rule (seed 002), with no shortcut of their own


def plain_is_secret_key(key: str) -> bool:
    normal = key.lower().replace(" ", "")
    return normal in R.SECRET_KEYS or normal.rsplit(".", 1)[-1] in R.SECRET_KEYS


def plain_redact(value):
    if isinstance(value, str):
        return plain_redact_text(value)
    if isinstance(value, dict):
        return {k: (R.MARKER if isinstance(k, str) and plain_is_secret_key(k) else plain_redact(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if len(value) == 2 and isinstance(value[0], str) and plain_is_secret_key(value[0]):
            return [value[0], R.MARKER] if isinstance(value, list) else (value[0], R.MARKER)
        items = [plain_redact(v) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    return value


def plain_attributes(attributes) -> dict:
    plain = {k: list(v) if isinstance(v, tuple) else v for k, v in (attributes or {}).items()}
    return {k: (R.MARKER if plain_is_secret_key(k) else plain_redact(v)) for k, v in plain.items()}


# --------------------------------------------------------------------------- redaction

# Pieces of every secret shape, so random text often comes close to (or is) one.
SECRET_PIECES = [
    "sk-", "sk-ant-", "AKIA", "ghp_", "gho_", "github_pat_", "xoxb-", "AIza", "gsk_", "hf_", "xai-", "eyJ", ".",
    "Bearer ", "bearer\t", "api_key", "x-api-key", "token", "Authorization", "password", "secret", "cookie",
    "Cookie: ", "=", ":", '"', "'", "\\", " ", "a1B2c3D4e5F6g7H8", "Z" * 17, "0123456789", "_", "-",
]
texts = st.lists(st.one_of(st.sampled_from(SECRET_PIECES), st.text(max_size=6)), max_size=12).map("".join)


@settings(max_examples=3000, deadline=None)
@given(texts)
def test_redact_text_agrees_with_the_plain_rule(text):
    assert R.redact_text(text) == plain_redact_text(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-/ \"'", max_size=14))
def test_short_text_without_colon_equals_or_dot_is_never_changed_by_the_plain_rule(text):
    # The shortcut's premise: no secret shape fits in fewer than 15 such characters, and an IP
    # address needs a '.' or ':' (redact_text takes the shortcut only without ':', '=' and '.').
    assert plain_redact_text(text) == text


def test_the_shortest_secret_shapes_are_still_redacted():
    assert R.redact_text("xoxb-1234567890") == R.MARKER  # 15 characters
    assert R.redact_text("Bearer abcdefgh") == R.MARKER  # 15 characters
    assert R.redact_text("apikey=x") == "apikey=" + R.MARKER  # a keyed value: 8 characters
    assert R.redact_text("ghp_" + "a" * 30) == R.MARKER  # anchored on "gh" now, not "_"


def test_known_keys_are_exactly_the_ones_the_rule_calls_safe():
    assert R.KNOWN_SAFE_KEYS  # built from semconv and the record fields
    for key in R.KNOWN_SAFE_KEYS:
        assert not plain_is_secret_key(key)
    for key in [*R.SECRET_KEYS, "Authorization", "http.request.header.x-api-key", "X-Api-Key", "api key"]:
        assert R.is_secret_key(key) and plain_is_secret_key(key)
    for key in (sc.GEN_AI_INPUT_MESSAGES, sc.EVENT_FIELD_PREFIX + "content", "content", "service.name"):
        assert key in R.KNOWN_SAFE_KEYS and not R.is_secret_key(key)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from([sc.LOG_MESSAGE, "x-api-key", "tags", "count", "ratio", "flag", "content"]),
                       st.one_of(texts, st.integers(), st.floats(allow_nan=False), st.booleans(),
                                 st.lists(texts, max_size=3), st.tuples(st.just("authorization"), texts))))
def test_redact_attributes_agrees_with_the_plain_rule(attributes):
    assert R.redact_attributes(attributes) == {
        k: (R.MARKER if plain_is_secret_key(k) else plain_redact(v)) for k, v in attributes.items()
    }


# --------------------------------------------------------------------------- from_readable

SECRET = "sk-proj-" + "A" * 24


def _spans_with_everything():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("linked") as first:
        pass
    with tracer.start_as_current_span(
        f"chat {SECRET}",
        attributes={"plain": "agent_001", "tags": ("a", f"key={SECRET}"), "n": 3, "x": 1.5, "ok": True,
                    "http.request.header.authorization": "Basic abc", sc.LOG_MESSAGE: f"Bearer {SECRET}"},
        links=[Link(first.get_span_context(), {"why": f"api_key={SECRET}"})],
    ) as span:
        span.add_event("transcript_entry", {sc.EVENT_FIELD_PREFIX + "content": f"my key is {SECRET}",
                                            sc.EVENT_FIELD_PREFIX + "message_id": "msg_000001"})
        span.add_event(sc.EVENT_LOG, {sc.LOG_LEVEL: "WRN", sc.LOG_MESSAGE: "short"})
        span.set_status(Status(StatusCode.ERROR, f"401: Incorrect API key provided: {SECRET}"))
        with tracer.start_as_current_span("open child") as child:
            open_copy = from_readable(child)  # a span still open: no end time yet
    provider.shutdown()
    return exporter.get_finished_spans(), open_copy


def test_from_readable_is_the_plain_copy_with_every_part_redacted():
    spans, open_copy = _spans_with_everything()
    assert open_copy.end_ns is None and open_copy.name == "open child"
    for span in spans:
        data = from_readable(span)
        assert data == SpanData(
            trace_id=format(span.context.trace_id, "032x"),
            span_id=format(span.context.span_id, "016x"),
            parent_span_id=format(span.parent.span_id, "016x") if span.parent else None,
            name=plain_redact_text(span.name),
            kind="INTERNAL",
            start_ns=span.start_time,
            end_ns=span.end_time,
            attributes=plain_attributes(span.attributes),
            events=tuple(EventData(plain_redact_text(e.name), e.timestamp, plain_attributes(e.attributes))
                         for e in span.events),
            links=tuple(LinkData(format(l.context.trace_id, "032x"), format(l.context.span_id, "016x"),
                                 plain_attributes(l.attributes)) for l in span.links),
            status={"UNSET": "UNSET", "OK": "OK", "ERROR": "ERROR"}[span.status.status_code.name],
            status_message=plain_redact_text(span.status.description) if span.status.description else None,
            resource=plain_attributes(span.resource.attributes),
            scope="test",
        )
    chat = from_readable(next(s for s in spans if s.name.startswith("chat")))
    assert SECRET not in json.dumps([chat.name, chat.attributes, [e.attributes for e in chat.events],
                                     [l.attributes for l in chat.links], chat.status_message])
    assert chat.attributes["tags"] == ["a", f"key={R.MARKER}"]  # sequences become lists


# --------------------------------------------------------------------------- from_span_event


def plain_from_span_event(name, attributes):
    if name not in sc.SESSION_EVENT_TYPES:
        return None
    fields, message_id = {}, None
    for key, value in attributes.items():
        if not key.startswith(sc.EVENT_FIELD_PREFIX):
            continue
        field = key[len(sc.EVENT_FIELD_PREFIX):]
        if field == "message_id":
            message_id = value
            continue
        if field in ("tool_calls", "thinking_blocks") and isinstance(value, str):
            value = json.loads(value)
        elif isinstance(value, tuple):
            value = list(value)
        if field == "keep":
            value = int(value)
        fields[field] = value
    if message_id is None:
        raise RecordError("no message_id")
    return make_record(name, str(message_id), **{k: v for k, v in fields.items() if k in RECORD_FIELDS[name]})


RECORDS = [
    make_record("agent_created", "msg_000001", agent_id="agent_001", name="main", language_model="m"),
    make_record("transcript_entry", "msg_000002", agent_id="agent_001", role="assistant", content=None,
                tool_calls=[{"id": "c1", "type": "function", "function": {"name": "task", "arguments": "{}"}}],
                reasoning_content="hm", thinking_blocks=[{"type": "thinking", "thinking": "x"}]),
    make_record("transcript_entry", "msg_000003", agent_id="agent_002", role="user", content="hi", substance="msg_000002",
                source="external"),
    make_record("piece_of_text", "msg_000004", agent_id="agent_001", content="go", cause=["msg_000002", "msg_000003"]),
    make_record("transcript_truncated", "msg_000005", agent_id="agent_002", keep=3, cause="msg_000004"),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r["event_type"])
def test_from_span_event_round_trips_as_the_plain_decoder_does(record):
    attributes = to_span_attributes(record)
    as_tuples = {k: tuple(v) if isinstance(v, list) else v for k, v in attributes.items()}  # as the SDK stores them
    as_tuples[sc.EVENT_FIELD_PREFIX + "unknown_field"] = "ignored"
    as_tuples["other.attribute"] = 1
    for attrs in (attributes, as_tuples):
        decoded = from_span_event(record["event_type"], attrs)
        assert decoded == plain_from_span_event(record["event_type"], attrs) == record
        assert list(decoded) == list(record)  # the seed field order too


def test_from_span_event_refuses_what_the_plain_decoder_refuses():
    assert from_span_event(sc.EVENT_LOG, {}) is None
    with pytest.raises(RecordError, match="message_id"):
        from_span_event("transcript_entry", {sc.EVENT_FIELD_PREFIX + "role": "user"})
    # A field its event type does not have is left out, as before (no type has both substance and cause).
    stray = {sc.EVENT_FIELD_PREFIX + "message_id": "msg_1", sc.EVENT_FIELD_PREFIX + "agent_id": "a",
             sc.EVENT_FIELD_PREFIX + "role": "user", sc.EVENT_FIELD_PREFIX + "substance": "msg_0",
             sc.EVENT_FIELD_PREFIX + "cause": "msg_0"}
    assert from_span_event("transcript_entry", stray) == plain_from_span_event("transcript_entry", stray)
    assert "cause" not in from_span_event("transcript_entry", stray)


# --------------------------------------------------------------------------- timestamps


def plain_parse_iso_ts(text: str) -> int:
    """parse_iso_ts as first written: strptime for the date and the clock."""
    import re
    from datetime import datetime, timezone

    match = re.match(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$", text)
    if not match:
        raise ValueError(text)
    whole = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return int(whole.timestamp()) * 1_000_000_000 + int((match.group(2) or "").ljust(9, "0"))


def _outcome(parse, text: str):
    try:
        return parse(text)
    except ValueError:
        return "refused"


_DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=4)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.integers(min_value=-62_135_596_800 * 10**9, max_value=253_402_300_799 * 10**9).map(iso_ts),
        # Near misses: every field may be out of range (month 13, day 31 of a short month, hour 24, second 60).
        st.tuples(_DIGITS, _DIGITS, _DIGITS, _DIGITS, _DIGITS, _DIGITS, st.text(alphabet="0123456789", max_size=10)).map(
            lambda p: f"{p[0].zfill(4)}-{p[1].zfill(2)}-{p[2].zfill(2)}T{p[3].zfill(2)}:{p[4].zfill(2)}:{p[5].zfill(2)}"
            + (f".{p[6]}" if p[6] else "") + "Z"
        ),
        st.text(max_size=32),
    )
)
def test_parse_iso_ts_matches_strptime(text):
    assert _outcome(parse_iso_ts, text) == _outcome(plain_parse_iso_ts, text)


# --------------------------------------------------------------------------- validate_record


def plain_validate_record(record):
    """validate_record as first written: every field of the kind, one if after another."""
    if not isinstance(record, dict):
        raise RecordError("a record is a JSON object")
    kind = record.get("event_type")
    if not isinstance(kind, str) or kind not in RECORD_FIELDS:
        raise RecordError(f"unknown event_type {kind!r}")
    message_id = record.get("message_id")
    if not isinstance(message_id, str) or not RECORDS_MOD._MESSAGE_ID.match(message_id):
        raise RecordError(f"message_id {message_id!r} is not of the form msg_<digits>")
    if not isinstance(record.get("agent_id"), str):
        raise RecordError(f"{message_id}: agent_id must be a string")
    for field in RECORD_FIELDS[kind]:
        value = record.get(field)
        if value is None:
            continue
        if field in RECORDS_MOD._TEXT_FIELDS and not isinstance(value, str):
            raise RecordError(f"{message_id}: {field} must be a string")
        if field == "substance" and not RECORDS_MOD._MESSAGE_ID.match(value):
            raise RecordError(f"{message_id}: substance {value!r} is not a message id")
        if field == "cause" and not (
            (isinstance(value, str) and RECORDS_MOD._MESSAGE_ID.match(value))
            or (isinstance(value, list) and value and all(isinstance(v, str) and RECORDS_MOD._MESSAGE_ID.match(v) for v in value))
        ):
            raise RecordError(f"{message_id}: cause must be a message id or a list of them")
        if field == "content" and not isinstance(value, (str, list)):
            raise RecordError(f"{message_id}: content must be text (or a list of content parts)")
        if field == "keep" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise RecordError(f"{message_id}: keep must be a non-negative integer")
        if field == "thinking_blocks" and not isinstance(value, list):
            raise RecordError(f"{message_id}: thinking_blocks must be a list")
        if field == "tool_calls":
            RECORDS_MOD._check_tool_calls(message_id, value)
    role = record.get("role")
    if kind == "transcript_entry" and (not isinstance(role, str) or role not in RECORDS_MOD.ROLES):
        raise RecordError(f"{message_id}: role must be one of {sorted(RECORDS_MOD.ROLES)}")
    if kind == "transcript_truncated" and record.get("keep") is None:
        raise RecordError(f"{message_id}: a truncation needs keep")
    if kind == "host_notice" and not isinstance(record.get("notice"), str):
        raise RecordError(f"{message_id}: a host notice needs notice (its kind)")
    if record.get("substance") is not None and record.get("cause") is not None:
        raise RecordError(f"{message_id}: an event has substance or cause, never both")


_FIELD_NAMES = sorted({f for fields in RECORD_FIELDS.values() for f in fields} | {"message_id", "event_type", "extra"})
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 5),
    st.sampled_from(["msg_000001", "msg_x", "user", "tool", "assistant", "hi", ""]),
    st.lists(st.sampled_from(["msg_000002", "bad", 1]), max_size=3),
    st.lists(st.sampled_from([{"id": "c", "function": {"name": "f", "arguments": "{}"}}, {"id": 1}, "x"]), max_size=2),
)
_RECORDS = st.one_of(
    st.dictionaries(st.sampled_from(_FIELD_NAMES), _VALUES, max_size=8),
    st.builds(lambda kind, fields: {"message_id": "msg_000003", "event_type": kind, "agent_id": "agent_001", **fields},
              st.sampled_from([*RECORD_FIELDS, "other"]), st.dictionaries(st.sampled_from(_FIELD_NAMES), _VALUES, max_size=6)),
    st.sampled_from(RECORDS),
    st.integers(),
)


def _verdict(validate, record) -> str:
    try:
        validate(record)
    except RecordError as exc:
        return str(exc)
    return "valid"


@settings(max_examples=600, deadline=None)
@given(_RECORDS)
def test_validate_record_agrees_with_the_plain_rule(record):
    assert _verdict(validate_record, record) == _verdict(plain_validate_record, record)
