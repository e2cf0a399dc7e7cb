"""One span's network copy: the attribute count, capped event values and status, the span budget, the content switch."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.trace import Status, StatusCode

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.export_caps import value_bytes
from otel_agents.tracing.export_rules import MAX_ATTRIBUTES, ExportLimits, filter_span
from otel_agents.tracing.export_size import encoded_size
from test_export_filter import GRPC_DEFAULT_MAX_MESSAGE, MARKER_START, _finished


def test_limits_reject_a_cap_too_small_for_the_marker():
    with pytest.raises(ValueError, match="at least 256"):
        ExportLimits(value_cap=10)


# --- spans ---


def test_attribute_count_is_bounded_first_set_first_and_the_rest_counted():
    def build(tracer):
        with tracer.start_as_current_span("s", attributes={sc.GEN_AI_OPERATION_NAME: "chat"}) as span:
            for i in range(300):
                span.set_attribute(f"k{i:03d}", i)
            span.add_event("e", {f"e{i}": i for i in range(200)})

    (span,) = _finished(build)
    out = filter_span(span)
    assert len(out.attributes) == MAX_ATTRIBUTES and out.attributes[sc.GEN_AI_OPERATION_NAME] == "chat"
    assert len(out.events[0].attributes) == MAX_ATTRIBUTES
    proto = encode_spans([out]).resource_spans[0].scope_spans[0].spans[0]
    assert proto.dropped_attributes_count == 301 - MAX_ATTRIBUTES
    assert proto.events[0].dropped_attributes_count == 200 - MAX_ATTRIBUTES
    assert len(span.attributes) == 301  # the local span is untouched


def test_without_content_a_runs_root_says_its_copy_holds_no_contents():
    # collect and import build a session from this copy: marked, it is not resumed with empty messages.
    def build(tracer):
        with tracer.start_as_current_span("invoke_agent main", attributes={sc.RUN_SOURCE: "cli"}):
            with tracer.start_as_current_span("chat m"):
                pass

    chat, root = _finished(build)
    assert filter_span(root, export_content=False).attributes[sc.RUN_REDACTED_SAVE] is True
    assert sc.RUN_REDACTED_SAVE not in filter_span(chat, export_content=False).attributes
    assert filter_span(root) is root  # with contents the copy is the span itself
    assert sc.RUN_REDACTED_SAVE not in root.attributes


def test_event_attributes_and_status_are_capped_and_content_can_stay_local():
    content_key = sc.EVENT_FIELD_PREFIX + "content"

    def build(tracer):
        with tracer.start_as_current_span("execute_tool t") as span:
            span.add_event("transcript_entry", {content_key: "x" * 100_000, sc.EVENT_FIELD_PREFIX + "message_id": "msg_000001"})
            span.add_event(sc.EVENT_LOG, {sc.LOG_LEVEL: "WRN", sc.LOG_MESSAGE: "m" * 70_000})
            span.set_status(Status(StatusCode.ERROR, "e" * 90_000))

    (span,) = _finished(build)
    out = filter_span(span, ExportLimits(value_cap=1000))
    entry, log = out.events
    assert value_bytes(entry.attributes[content_key]) <= 1000 and MARKER_START in entry.attributes[content_key]
    assert entry.attributes[sc.EVENT_FIELD_PREFIX + "message_id"] == "msg_000001"
    assert value_bytes(log.attributes[sc.LOG_MESSAGE]) <= 1000
    assert value_bytes(out.status.description) <= 1000 and out.status.status_code is StatusCode.ERROR

    private = filter_span(span, ExportLimits(), export_content=False)
    assert content_key not in private.events[0].attributes and sc.LOG_MESSAGE not in private.events[1].attributes
    assert private.events[0].attributes[sc.EVENT_FIELD_PREFIX + "message_id"] == "msg_000001"


def test_a_span_whose_events_exceed_the_budget_is_shrunk_evenly_keeping_short_values():
    def build(tracer):
        with tracer.start_as_current_span("execute_tool discuss") as span:
            for i in range(80):  # 80 replies just under the value cap: ~5 MB in one span
                span.add_event(
                    "transcript_entry",
                    {sc.EVENT_FIELD_PREFIX + "message_id": f"msg_{i:06d}", sc.EVENT_FIELD_PREFIX + "content": "r" * 63_000},
                )

    (span,) = _finished(build)
    assert encoded_size([span]) > GRPC_DEFAULT_MAX_MESSAGE
    limits = ExportLimits()
    out = filter_span(span, limits)
    assert encoded_size([out]) <= limits.span_bytes
    assert len(out.events) == 80  # every reply still there, each shortened the same way
    contents = [e.attributes[sc.EVENT_FIELD_PREFIX + "content"] for e in out.events]
    assert len({value_bytes(c) for c in contents}) == 1 and all(MARKER_START in c for c in contents)
    assert [e.attributes[sc.EVENT_FIELD_PREFIX + "message_id"] for e in out.events] == [f"msg_{i:06d}" for i in range(80)]
    # Shortened no more than needed: the shared length is within 10 % of the budget's share.
    assert value_bytes(contents[0]) > 0.9 * limits.span_bytes / 80 - 200


def test_a_span_with_too_many_events_even_when_shortened_drops_the_last_and_counts_them():
    def build(tracer):
        with tracer.start_as_current_span("s") as span:
            for i in range(5000):
                span.add_event(sc.EVENT_LOG, {sc.LOG_LEVEL: "VRB", sc.LOG_MESSAGE: f"{i:05d}" + "z" * 2000})

    (span,) = _finished(build)
    limits = ExportLimits(span_bytes=1024 * 1024)
    out = filter_span(span, limits)
    assert encoded_size([out]) <= limits.span_bytes
    kept = len(out.events)
    assert 0 < kept < 5000
    assert out.events[0].attributes[sc.LOG_MESSAGE].startswith("00000")  # the earliest are kept
    proto = encode_spans([out]).resource_spans[0].scope_spans[0].spans[0]
    assert proto.dropped_events_count == 5000 - kept
    # counted as cut too: a session built from the copy lacks those records (collect, import: never resumed)
    assert out.attributes[sc.EXPORT_TRUNCATED] >= 5000 - kept


def test_a_copy_with_values_cut_says_how_many():
    # collect and import build a session from this copy: marked, its markers are never sent to a model.
    def build(tracer):
        with tracer.start_as_current_span("chat m", attributes={"a": "x" * 600, "b": "short"}) as span:
            span.add_event("e", {"text": "y" * 600})
        with tracer.start_as_current_span("chat n", attributes={"a": "x" * 100}):
            pass

    cut, whole = _finished(build)
    limits = ExportLimits(value_cap=256)
    assert filter_span(cut, limits).attributes[sc.EXPORT_TRUNCATED] == 2
    assert filter_span(whole, limits) is whole
    assert sc.EXPORT_TRUNCATED not in cut.attributes  # the local span stays whole and unmarked


def test_the_standard_limits_cut_lengths_counts_events_and_links_and_the_copy_says_so():
    # OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT and the rest (span_limits.py): the first kept, the rest counted.
    def build(tracer):
        from opentelemetry.trace import Link, SpanContext

        links = [Link(SpanContext(7, n, is_remote=False), {"why": "previous run", "n": n}) for n in (1, 2)]
        with tracer.start_as_current_span("chat m", links=links,
                                          attributes={"a": "x" * 30, "b": ("yy", "z" * 30), "c": 1, "d": 2}) as span:
            for n in range(3):
                span.add_event(f"e{n}", {"text": "é" * 30, "n": n, "m": n})

    (span,) = _finished(build)
    limits = ExportLimits(max_attributes=4, span_value_length=10, value_length=5, max_events=2,
                          max_event_attributes=2, max_links=1, max_link_attributes=1)
    out = filter_span(span, limits)
    assert dict(out.attributes) == {"a": "x" * 10, "b": ("yy", "z" * 10), "c": 1, sc.EXPORT_TRUNCATED: 6}  # + 1 event
    assert [e.name for e in out.events] == ["e0", "e1"] and dict(out.events[1].attributes) == {"text": "é" * 5, "n": 1}
    assert [dict(link.attributes) for link in out.links] == [{"why": "previ"}]
    proto = encode_spans([out]).resource_spans[0].scope_spans[0].spans[0]
    assert (proto.dropped_attributes_count, proto.dropped_events_count, proto.dropped_links_count) == (1, 1, 1)
    assert proto.events[0].dropped_attributes_count == 1 and proto.links[0].dropped_attributes_count == 1
    assert len(span.events) == 3 and span.attributes["a"] == "x" * 30  # the local span is untouched
    assert filter_span(span, ExportLimits(span_value_length=30, value_length=30)) is span  # nothing over: not copied


def test_a_links_attributes_are_redacted_as_every_exported_value_is():
    # An application's own links may carry anything; they went out as they were.
    def build(tracer):
        from opentelemetry.trace import Link, SpanContext

        links = [Link(SpanContext(7, 1, is_remote=False), {"api_key": "k-123", "note": "password=hunter2",
                                                            "from": "10.1.2.3", "ok": ("a", "b")})]
        with tracer.start_as_current_span("s", links=links):
            pass

    (span,) = _finished(build)
    out = filter_span(span)
    (link,) = out.links
    assert dict(link.attributes) == {"api_key": "[REDACTED]", "note": "password=[REDACTED]", "from": "[IP]",
                                     "ok": ("a", "b")}
    assert dict(span.links[0].attributes)["api_key"] == "k-123"  # the local span is untouched

    def plain(tracer):
        from opentelemetry.trace import Link, SpanContext

        with tracer.start_as_current_span("s", links=[Link(SpanContext(7, 1, is_remote=False), {"ok": ("a", "b")})]):
            pass

    (span,) = _finished(plain)
    assert filter_span(span) is span  # nothing to redact: not copied


def test_the_ids_that_place_a_span_are_never_cut_nor_dropped_by_the_standard_limits():
    # Cut to 16 characters, two sessions started in the same second arrived at collect as one (the second's
    # spans refused as diverging); a count limit of 3 dropped the id, and the session was never placed.
    def build(tracer):
        with tracer.start_as_current_span("chat m", attributes={"a": "x" * 30, "b": 1, "c": 2}) as span:
            span.set_attribute(sc.GEN_AI_CONVERSATION_ID, "20261129-164535-a0855a")
            span.set_attribute(sc.SESSION_ID, "20261129-164535-a0855a")

    (span,) = _finished(build)
    out = filter_span(span, ExportLimits(span_value_length=16, max_attributes=3))
    # the others gave way (the last kept first), the count held; the mark of the cut "a" too
    assert dict(out.attributes) == {sc.GEN_AI_CONVERSATION_ID: "20261129-164535-a0855a",
                                    sc.SESSION_ID: "20261129-164535-a0855a", sc.EXPORT_TRUNCATED: 1}
    proto = encode_spans([out]).resource_spans[0].scope_spans[0].spans[0]
    assert proto.dropped_attributes_count == 3  # c, b, then a for the mark
    longer = filter_span(span, ExportLimits(span_value_length=16))
    assert longer.attributes[sc.SESSION_ID] == "20261129-164535-a0855a" and longer.attributes["a"] == "x" * 16
    zero = filter_span(span, ExportLimits(max_attributes=0))
    assert {sc.GEN_AI_CONVERSATION_ID, sc.SESSION_ID} <= set(zero.attributes)  # over a limit of 0, as the mark is
