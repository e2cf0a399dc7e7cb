"""Size bounds of OTLP-encoded spans: never below what the exporters' own encoder produces."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from otel_agents.tracing.export_size import EnvelopeSizes, span_bound

texts = st.text(max_size=300)  # every code point, surrogates excluded by hypothesis' default alphabet
scalars = st.one_of(
    texts,
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
)
values = st.one_of(scalars, st.lists(texts, max_size=5), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5))
attribute_maps = st.dictionaries(st.text(min_size=1, max_size=40), values, max_size=12)
ids = st.integers(min_value=1, max_value=2**64 - 1)


def _context(span_id: int, state: dict[str, str] | None = None) -> SpanContext:
    return SpanContext(2**127 + span_id, span_id, is_remote=False, trace_flags=TraceFlags(1),
                       trace_state=TraceState(list((state or {}).items())))


@st.composite
def spans(draw) -> ReadableSpan:
    events = [Event(draw(texts), draw(attribute_maps), draw(st.integers(0, 2**63))) for _ in range(draw(st.integers(0, 4)))]
    links = [Link(_context(draw(ids)), draw(attribute_maps)) for _ in range(draw(st.integers(0, 2)))]
    parent = _context(draw(ids)) if draw(st.booleans()) else None
    return ReadableSpan(
        name=draw(texts),
        context=_context(draw(ids), {"vendor": draw(st.from_regex(r"[a-z0-9]{0,20}", fullmatch=True))}),
        parent=parent,
        resource=Resource.create({"service.name": draw(texts), "host": draw(texts)}),
        attributes=draw(attribute_maps),
        events=events,
        links=links,
        kind=draw(st.sampled_from(list(SpanKind))),
        status=Status(StatusCode.ERROR, draw(texts)) if draw(st.booleans()) else Status(StatusCode.UNSET),
        start_time=draw(st.integers(0, 2**63)),
        end_time=draw(st.integers(0, 2**63)),
        instrumentation_scope=InstrumentationScope(draw(texts), draw(texts)),
    )


@settings(max_examples=300, deadline=None)
@given(spans())
def test_the_bound_is_never_below_the_encoded_request(span):
    exact = encode_spans([span]).ByteSize()
    bound = EnvelopeSizes()(span) + span_bound(span)
    assert bound >= exact
    # ... and close enough to be useful as a budget: the overestimate is per field, not per byte
    # (the envelope counts the span ids a second time).
    fields = 1 + len(span.attributes) + sum(1 + len(e.attributes) for e in span.events) + 2 * len(span.links)
    fields += sum(len(v) for v in span.attributes.values() if isinstance(v, list))
    fields += sum(len(ln.attributes) for ln in span.links)
    assert bound <= exact + 40 * fields + 1024


def test_the_envelope_is_measured_once_per_resource_and_scope():
    sizes = EnvelopeSizes()
    resource = Resource.create({"service.name": "x" * 1000})
    scope = InstrumentationScope("otel_agents")
    first = ReadableSpan("a", _context(1), resource=resource, instrumentation_scope=scope)
    second = ReadableSpan("b", _context(2), resource=resource, instrumentation_scope=scope)
    other = ReadableSpan("c", _context(3), resource=Resource.create({"service.name": "y"}), instrumentation_scope=scope)
    assert sizes(first) == sizes(second) > 1000 > sizes(other)


maps = st.recursive(st.dictionaries(st.text(max_size=20), values, max_size=4),
                    lambda inner: st.dictionaries(st.text(max_size=20), st.one_of(values, inner), max_size=3), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(maps, maps)
def test_map_values_are_bounded_too(on_span, on_link):
    # OTLP's kvlist values: a span, an event or a link may carry them (the SDK allows maps as attributes).
    span = ReadableSpan(name="s", context=_context(1), resource=Resource({}), attributes={"m": on_span},
                        events=[Event("e", {"m": on_span}, 1)], links=[Link(_context(2), {"m": on_link})])
    assert EnvelopeSizes()(span) + span_bound(span) >= encode_spans([span]).ByteSize()
