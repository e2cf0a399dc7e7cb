"""Seed-001 records: field order, the span-event encoding and back, chat messages."""

from __future__ import annotations

import pytest

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import (
    RECORD_FIELDS,
    RecordError,
    from_span_event,
    make_record,
    message_from_record,
    message_id_number,
    to_span_attributes,
)

CALLS = [{"id": "c1", "type": "function", "function": {"name": "task", "arguments": '{"name": "Jack"}'}}]


def test_make_record_orders_fields_and_drops_absent_ones():
    rec = make_record("agent_created", "msg_000004", language_model="m", name="Jack", agent_id="agent_002",
                      cause="msg_000003", parent=None)
    assert list(rec) == ["message_id", "event_type", "agent_id", "name", "cause", "language_model"]
    assert "parent" not in rec


def test_make_record_rejects_unknown_types_and_fields():
    with pytest.raises(RecordError, match="unknown event type 'chat'"):
        make_record("chat", "msg_000001")
    with pytest.raises(RecordError, match=r"piece_of_text has no field\(s\) \['role'\]"):
        make_record("piece_of_text", "msg_000001", agent_id="a", content="x", role="user")


def test_the_three_kinds_have_exactly_the_seed_fields():
    assert RECORD_FIELDS["agent_created"] == ("agent_id", "name", "cause", "language_model", "parent")
    assert RECORD_FIELDS["piece_of_text"] == ("agent_id", "content", "cause")
    assert RECORD_FIELDS["transcript_entry"][:7] == (
        "agent_id", "role", "content", "tool_calls", "tool_call_id", "name", "substance"
    )


@pytest.mark.parametrize(
    "record",
    [
        make_record("transcript_entry", "msg_000003", agent_id="agent_001", role="assistant", tool_calls=CALLS,
                    reasoning_content="hmm", thinking_blocks=[{"type": "thinking", "thinking": "t", "signature": "s"}]),
        make_record("transcript_entry", "msg_000017", agent_id="agent_003", role="user",
                    content="[Jack]: Hi", substance="msg_000015", source="external"),
        make_record("transcript_entry", "msg_000006", agent_id="agent_001", role="tool", content="",
                    tool_call_id="c1", name="task"),
        make_record("piece_of_text", "msg_000012", agent_id="agent_001", content="You meet", cause=["msg_1", "msg_2"]),
        make_record("agent_created", "msg_000001", agent_id="agent_001", language_model="m"),
        make_record("transcript_truncated", "msg_000040", agent_id="agent_001", keep=3, cause="msg_000039"),
    ],
    ids=lambda r: r["event_type"],
)
def test_span_event_round_trip(record):
    attrs = to_span_attributes(record)
    assert all(k.startswith(sc.EVENT_FIELD_PREFIX) for k in attrs)
    assert "otel_agents.event.event_type" not in attrs
    # Only values span attributes can hold natively.
    for value in attrs.values():
        assert isinstance(value, (str, int, float, bool)) or all(isinstance(v, str) for v in value)
    # Exporters hand attribute sequences back as tuples.
    exported = {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}
    assert from_span_event(record["event_type"], exported) == record


def test_from_span_event_ignores_other_events_and_foreign_attributes():
    assert from_span_event("otel_agents.log", {"otel_agents.log.level": "WRN"}) is None
    attrs = to_span_attributes(make_record("piece_of_text", "msg_000001", agent_id="a", content="x", cause="m"))
    attrs["otel_agents.event.future_field"] = "ignored"
    attrs["something.else"] = 1
    assert from_span_event("piece_of_text", attrs)["content"] == "x"
    with pytest.raises(RecordError, match="no message_id"):
        from_span_event("piece_of_text", {"otel_agents.event.content": "x"})


def test_message_from_record_keeps_what_the_model_sent_and_drops_host_fields():
    assistant = make_record("transcript_entry", "msg_000003", agent_id="a", role="assistant", tool_calls=CALLS,
                            reasoning_content="why")
    assert message_from_record(assistant) == {"role": "assistant", "content": None, "tool_calls": CALLS,
                                              "reasoning_content": "why"}
    user = make_record("transcript_entry", "msg_000004", agent_id="a", role="user", content="hi",
                       substance="msg_000001", source="system", name="ignored-for-users")
    assert message_from_record(user) == {"role": "user", "content": "hi"}
    tool = make_record("transcript_entry", "msg_000005", agent_id="a", role="tool", content="ok",
                       tool_call_id="c1", name="task")
    assert message_from_record(tool) == {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "task"}


def test_message_id_number():
    assert message_id_number("msg_000123") == 123
    assert message_id_number("msg_1234567") == 1234567


# --- validate_record: what readers of saved or imported data refuse ---

import pytest as _pytest

from otel_agents.tracing.records import RecordError as _RecordError
from otel_agents.tracing.records import validate_record as _validate


def _entry(**changes):
    record = {"message_id": "msg_000002", "event_type": "transcript_entry", "agent_id": "agent_001",
              "role": "assistant", "content": None,
              "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "task", "arguments": "{}"}}]}
    record.update(changes)
    return {k: v for k, v in record.items() if v is not None}


def test_well_formed_records_pass():
    _validate(_entry())
    _validate({"message_id": "msg_000003", "event_type": "piece_of_text", "agent_id": "agent_001",
               "content": "x", "cause": ["msg_000001", "msg_000002"]})
    _validate({"message_id": "msg_000004", "event_type": "transcript_truncated", "agent_id": "agent_001", "keep": 0})


@_pytest.mark.parametrize(
    "changes, needle",
    [
        ({"message_id": ["msg_1"]}, "message_id"),
        ({"message_id": "msg_x"}, "message_id"),
        ({"event_type": "gossip"}, "event_type"),
        ({"event_type": ["transcript_entry"]}, "event_type"),
        ({"agent_id": ["agent_001"]}, "agent_id"),
        ({"role": "narrator"}, "role"),
        ({"tool_calls": [{"id": 3}]}, "tool call"),
        ({"tool_calls": "task"}, "tool_calls"),
        ({"substance": "msg_000001", "source": 7}, "source"),
        ({"substance": "someone"}, "substance"),
        ({"content": {"text": "x"}}, "content"),
    ],
)
def test_malformed_records_are_refused_with_the_reason(changes, needle):
    with _pytest.raises(_RecordError, match=needle):
        _validate(_entry(**changes))


def test_truncation_keep_must_be_a_count():
    for keep in (-1, True, "2", None):
        record = {"message_id": "msg_000004", "event_type": "transcript_truncated", "agent_id": "agent_001"}
        if keep is not None:
            record["keep"] = keep
        with _pytest.raises(_RecordError):
            _validate(record)


def test_a_host_notice_round_trips_and_needs_its_kind():
    from otel_agents.tracing.records import (
        RecordError, from_span_event, make_record, to_span_attributes, validate_record,
    )

    notice = make_record("host_notice", "msg_000007", agent_id="agent_001", notice="retry", content="retrying")
    validate_record(notice)
    assert from_span_event("otel_agents.host_notice", to_span_attributes(notice)) == notice
    without_kind = {k: v for k, v in notice.items() if k != "notice"}
    with pytest.raises(RecordError, match="host notice needs notice"):
        validate_record(without_kind)
    with pytest.raises(RecordError, match="no field"):
        make_record("host_notice", "msg_000008", agent_id="agent_001", notice="retry", content="x", role="user")


def test_a_list_of_causes_survives_a_backend_that_stores_arrays_as_json_text():
    import json

    notice = make_record("host_notice", "msg_000009", agent_id="agent_001", notice="denial", content="no",
                         cause=["msg_000008", "msg_000006"])
    attributes = to_span_attributes(notice)
    assert from_span_event("otel_agents.host_notice", attributes) == notice
    # Jaeger has no arrays: its tag is the list as JSON text, and the record reads the same.
    as_text = {**attributes, sc.EVENT_FIELD_PREFIX + "cause": json.dumps(["msg_000008", "msg_000006"])}
    assert from_span_event("otel_agents.host_notice", as_text) == notice


def test_storable_text_joins_surrogate_pairs_and_replaces_lone_surrogates():
    from otel_agents.tracing.records import storable, storable_text

    assert storable_text("plain é \U0001f600") == "plain é \U0001f600"
    assert storable_text("a\ud83d\ude00b\ud800c\udcff") == "a\U0001f600b\ufffdc\ufffd"
    record = {"content": "x\ud800", "tool_calls": [{"function": {"arguments": "\udfff"}}], "keep": 1}
    assert storable(record) == {"content": "x\ufffd", "tool_calls": [{"function": {"arguments": "\ufffd"}}], "keep": 1}
