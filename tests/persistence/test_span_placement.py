"""span_placement: the session a trace's spans go to, and a span in the form a session stores it."""

from __future__ import annotations

import pytest

from otel_agents.persistence.span_placement import in_journal_form, record_lines, session_id_for, sessions_of_traces
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import make_record, to_span_attributes
from otel_agents.tracing.spandata import EventData, SpanData

TRACE = "0123456789abcdef0123456789abcdef"
PADDED = "0000000000000000fedcba9876543210"  # a 64-bit id (Jaeger, Zipkin) left-padded with zeros


def span(span_id: str, parent: str | None, trace: str = TRACE, start: int = 1_000, **attributes) -> SpanData:
    return SpanData(trace, span_id, parent, "op", "INTERNAL", start, start + 10, attributes)


def test_each_trace_goes_to_the_session_its_root_names_else_one_named_after_its_trace():
    root = span("00000000000000a1", None, **{sc.SESSION_ID: "from-root"})
    child = span("00000000000000a2", "00000000000000a1", start=900, **{sc.SESSION_ID: "from-child"})
    unnamed = span("00000000000000b1", None, trace=PADDED)
    assert sessions_of_traces([child, root, unnamed]) == {TRACE: "from-root", PADDED: "trace-fedcba9876543210"}
    assert session_id_for(None, TRACE) == "trace-0123456789abcdef"


def test_a_conversation_id_unusable_as_a_directory_gets_a_stable_name_of_its_own():
    named = session_id_for("../../etc", TRACE)
    assert named.startswith("conv-") and len(named) == len("conv-") + 16
    assert session_id_for("../../etc", "f" * 32) == named  # the conversation names it, not the trace
    assert session_id_for("../../etc/", TRACE) != named
    assert session_id_for("chat-42", TRACE) == "chat-42"


def test_a_span_in_journal_form_has_json_values_and_its_records_back_as_events_file_lines():
    record = make_record(sc.EVENT_TRANSCRIPT_ENTRY, "msg_3", agent_id="a", role="user", content="hi")
    event = EventData(sc.record_event_name(sc.EVENT_TRANSCRIPT_ENTRY), 5_000, to_span_attributes(record))
    original = span("00000000000000a1", None, tags=("x", "y"))
    original = SpanData(**{**original.__dict__, "events": (event, EventData("other", 6_000, {}))})
    (line,) = record_lines(original)  # the span event that is not a record stays on the span only
    assert (line.record, line.trace_id, line.span_id) == (record, TRACE, "00000000000000a1")
    stored = in_journal_form(original)
    assert stored.attributes["tags"] == ["x", "y"]  # as the journal's JSON gives it back
    assert [e.name for e in stored.events] == [e.name for e in original.events]
    assert record_lines(stored) == [line]


def test_a_span_the_journal_cannot_hold_is_a_value_error():
    too_late = SpanData(TRACE, "00000000000000a1", None, "op", "INTERNAL", 1, 2**64)
    with pytest.raises(ValueError):
        in_journal_form(too_late)
