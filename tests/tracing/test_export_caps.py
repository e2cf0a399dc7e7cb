"""Shrinking one over-budget span: within the budget, short values intact, a span that fits left alone."""

from __future__ import annotations

from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_agents.tracing.export_caps import MIN_SHARED_CAP, TRUNCATION_MARKER, encoded_size, fit_span, value_bytes


def _span(replies: int, reply_bytes: int):
    memory = InMemorySpanExporter()
    unset = SpanLimits.UNSET
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=unset, max_event_attributes=unset, max_events=unset))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("execute_tool discuss") as span:
        span.set_attribute("tool", "discuss")
        for i in range(replies):
            span.add_event("transcript_entry", {"message_id": f"msg_{i:06d}", "content": "r" * reply_bytes})
    provider.shutdown()
    (finished,) = memory.get_finished_spans()
    return finished


def test_a_span_within_its_budget_is_returned_as_it_is():
    span = _span(3, 1000)
    assert fit_span(span, 64 * 1024, 64 * 1024) is span


def test_an_over_budget_span_is_shrunk_to_the_budget_with_one_shared_cap():
    span = _span(40, 20_000)
    budget = 200 * 1024
    assert encoded_size([span]) > 3 * budget
    out = fit_span(span, budget, 64 * 1024)
    assert encoded_size([out]) <= budget
    contents = [e.attributes["content"] for e in out.events]
    assert len(contents) == 40 and len({value_bytes(c) for c in contents}) == 1
    assert MIN_SHARED_CAP <= value_bytes(contents[0]) < 20_000
    assert TRUNCATION_MARKER.split("{")[0] in contents[0]
    assert [e.attributes["message_id"] for e in out.events] == [f"msg_{i:06d}" for i in range(40)]
    assert out.attributes["tool"] == "discuss" and len(span.events[0].attributes["content"]) == 20_000
