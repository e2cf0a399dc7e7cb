"""Spans written in the filter's pass: the same request bytes as filtering then encoding, on any spans."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Link, SpanContext, Status, StatusCode

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.export_filter import NetworkExportFilter
from otel_agents.tracing.export_rules import CONTENT_EVENT_KEYS, ExportLimits, export_attributes, keeps_attribute
from otel_agents.tracing.otlp_proto_encode import EncodedSpan, encode_request
from test_otlp_proto_encode import spans as any_spans
from test_otlp_proto_encode import stock, values

SECRET = "sk-" + "Q1w2E3r4" * 4
SMALL = ExportLimits(value_cap=256, max_attributes=4, span_bytes=4096, batch_bytes=8192)
# The standard OTEL_*_LIMIT variables' bounds (span_limits.py) on top: a span they cut takes the copying path.
STANDARD = ExportLimits(value_cap=256, max_attributes=4, span_bytes=4096, batch_bytes=8192, max_event_attributes=2,
                        span_value_length=12, value_length=6, max_events=1, max_links=1, max_link_attributes=1)
# Keys the filter treats specially (secret, content on spans and events) among plain ones.
keys = st.sampled_from([
    "gen_ai.operation.name", "otel_agents.agent.id", "n", "authorization", "x.api_key",
    sc.GEN_AI_INPUT_MESSAGES, sc.EVENT_FIELD_PREFIX + "content", sc.EVENT_FIELD_PREFIX + "message_id",
])
texts = st.one_of(
    st.text(max_size=20), st.just(f"my key is {SECRET}"), st.just("from 10.1.2.3"),
    st.text(alphabet="ab", min_size=250, max_size=300),  # around the small value cap
)
attribute_values = st.one_of(texts, st.integers(-3, 3), st.booleans(), st.sampled_from([0.0, -0.0, 1.0, 2.5]), st.none(),
                             st.lists(texts, max_size=3).map(tuple))
attribute_maps = st.dictionaries(keys, attribute_values, max_size=6)


class Collecting(SpanExporter):
    """Encodes each request as the HTTP exporter would; ``takes`` says whether it takes spans already written."""

    def __init__(self, takes: bool):
        self.takes_encoded_spans = takes
        self.requests: list[bytes] = []
        self.items: list = []

    def export(self, spans):
        self.items += spans
        self.requests.append(encode_request(spans))
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def requests(batches, takes: bool, **filter_options) -> tuple[list[bytes], list, list[str | None]]:
    """The requests sent for ``batches``, what the exporter was given, and why each export failed (None: it did not)."""
    inner = Collecting(takes)
    exporter = NetworkExportFilter(inner, **filter_options)
    failures = []
    for batch in batches:
        exporter.failure = None
        exporter.export(batch)
        failures.append(exporter.failure)
    return inner.requests, inner.items, failures


@st.composite
def filtered_spans(draw) -> ReadableSpan:
    """Spans with secrets, content, long texts, many attributes and the values that compare equal across types."""
    events = [Event(draw(st.sampled_from(["transcript_entry", f"said {SECRET}", "log"])), draw(attribute_maps), 5)
              for _ in range(draw(st.integers(0, 3)))]
    code = draw(st.sampled_from([StatusCode.UNSET, StatusCode.ERROR]))
    return ReadableSpan(
        name=draw(st.sampled_from(["chat m", "execute_tool t", f"x {SECRET}"])),
        context=SpanContext(1, draw(st.integers(1, 2**64 - 1)), is_remote=False),
        attributes=draw(attribute_maps), events=events,
        links=[Link(SpanContext(2, i + 1, is_remote=False), draw(st.dictionaries(keys, texts, max_size=2)))
               for i in range(draw(st.integers(0, 2)))],
        status=Status(code, draw(texts) if code is StatusCode.ERROR else None),
        start_time=1, end_time=2,
    )


@settings(max_examples=200)
@given(st.lists(st.lists(filtered_spans(), min_size=1, max_size=4), min_size=1, max_size=3), st.booleans())
def test_written_spans_make_the_requests_filtering_then_encoding_makes(batches, content):
    for limits in (SMALL, STANDARD, ExportLimits()):
        fast = requests(batches, True, limits=limits, export_content=content)
        assert fast[2] == [None] * len(batches)
        assert fast[0] == requests(batches, False, limits=limits, export_content=content)[0]


@settings(max_examples=100)
@given(st.lists(any_spans(), min_size=1, max_size=5))
def test_any_span_unchanged_by_the_filter_is_written_as_the_stock_encoder_writes_it(batch):
    sent, items, failures = requests([batch], True)
    assert (sent, failures) == requests([batch], False)[::2]  # the same requests, or the same failure
    if sent and all(type(item) is EncodedSpan for item in items):
        assert sent == [stock(batch)]


@settings(max_examples=300)
@given(keys, st.one_of(attribute_values, values), st.booleans(), st.booleans())
def test_the_one_attribute_verdict_is_the_filter_passes_verdict(key, value, content, on_event):
    content_keys = CONTENT_EVENT_KEYS if on_event else sc.CONTENT_ATTRIBUTES
    for limits in (SMALL, STANDARD, ExportLimits()):
        changed = export_attributes({key: value}, limits, content, content_keys, 0, {}, on_event)[2]
        assert keeps_attribute(key, value, limits, content, content_keys, {}, on_event) is not changed


def test_values_equal_across_types_keep_their_own_encoding_within_one_export():
    def span(number: int, value) -> ReadableSpan:
        return ReadableSpan(name="s", context=SpanContext(1, number, is_remote=False), attributes={"v": value},
                            start_time=1, end_time=2)

    batch = [span(1, True), span(2, 1), span(3, 1.0), span(4, 0.0), span(5, -0.0), span(6, False), span(7, 0),
             span(8, (True,)), span(9, (1,)), span(10, ("a",)), span(11, ("a",)), span(12, (1.0,))]
    (request,), items, _ = requests([batch], True)
    assert all(type(item) is EncodedSpan for item in items)
    assert request == stock(batch)


def test_a_real_sessions_spans_are_written_in_the_filters_pass_and_sent_as_filtering_sends_them(memory_tracing):
    from otel_agents.llm.scripts import load_script
    from otel_agents.runtime.scenario import build_session

    session = build_session(load_script("jack-and-jill"), telemetry=memory_tracing.telemetry)
    asyncio.run(session.run("Create Jack and Jill for a cafe discussion"))
    recorded = list(memory_tracing.spans())
    batches = [recorded[:7], recorded[7:]]
    fast, items, _ = requests(batches, True)
    assert fast == requests(batches, False)[0]
    assert fast == [stock(batch) for batch in batches]  # nothing in this session needed a change
    assert len(recorded) > 20 and len(items) == len(recorded)
    # Every span is written in the filter's pass but those with a status message (the filter rewrites those).
    assert [type(item) is EncodedSpan for item in items] == [not span.status.description for span in recorded]
    assert any(span.status.description for span in recorded)  # a failed attempt, a tool a hook blocked
