"""otlp_proto_encode writes exactly the bytes the stock OTLP encoder serialises, for any spans."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from otel_agents.tracing.otlp_proto_encode import encode_request


def stock(spans) -> bytes:
    return encode_spans(spans).SerializePartialToString()


texts = st.text(max_size=40)  # any code point but lone surrogates: what a str attribute can be sent as
scalars = st.one_of(
    texts, st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False), st.binary(max_size=20), st.none(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)
keys = st.one_of(st.sampled_from(["gen_ai.operation.name", "gen_ai.usage.input_tokens", "otel_agents.agent.id"]),
                 st.text(min_size=1, max_size=30))
attribute_maps = st.dictionaries(keys, values, max_size=6)
times = st.integers(min_value=0, max_value=2**64 - 1)
ids = st.integers(min_value=0, max_value=2**64 - 1)


@st.composite
def contexts(draw) -> SpanContext:
    state = draw(st.lists(st.tuples(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True),
                                    st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True)), max_size=2, unique_by=lambda kv: kv[0]))
    return SpanContext(draw(st.integers(min_value=0, max_value=2**128 - 1)), draw(ids), is_remote=draw(st.booleans()),
                       trace_flags=TraceFlags(draw(st.sampled_from([0, 1]))), trace_state=TraceState(state))


RESOURCES = [Resource.create({"service.name": "a"}), Resource({"service.name": "b", "n": 3}, schema_url="https://s/1"),
             Resource({})]
SCOPES = [None, InstrumentationScope("otel_agents", "0.1.0"), InstrumentationScope("other", None, "https://s/2"),
          InstrumentationScope("with-attrs", "1", None, {"k": "v"})]


@st.composite
def spans(draw) -> ReadableSpan:
    attributes = draw(attribute_maps)
    if draw(st.booleans()):  # a BoundedAttributes that dropped some: its count travels
        bounded = BoundedAttributes(maxlen=2, attributes=None, immutable=False)
        for key, value in attributes.items():
            bounded[key] = value if value is not None else "x"
        attributes = bounded
    events = [Event(draw(texts), draw(attribute_maps), draw(times)) for _ in range(draw(st.integers(0, 3)))]
    links = [Link(draw(contexts()), draw(attribute_maps)) for _ in range(draw(st.integers(0, 2)))]
    code = draw(st.sampled_from([StatusCode.UNSET, StatusCode.OK, StatusCode.ERROR]))
    status = Status(code, draw(texts) if code is StatusCode.ERROR else None)
    return ReadableSpan(
        name=draw(texts), context=draw(contexts()), parent=draw(st.one_of(st.none(), contexts())),
        resource=draw(st.sampled_from(RESOURCES)), attributes=attributes, events=events, links=links,
        kind=draw(st.sampled_from(list(SpanKind))), status=status,
        start_time=draw(st.one_of(st.none(), times)), end_time=draw(st.one_of(st.none(), times)),
        instrumentation_scope=draw(st.sampled_from(SCOPES)),
    )


@settings(max_examples=150)
@given(st.lists(spans(), max_size=5))
def test_any_spans_encode_to_the_stock_encoders_bytes(batch):
    assert encode_request(batch) == stock(batch)


def test_a_real_sessions_spans_encode_to_the_stock_encoders_bytes(memory_tracing):
    import asyncio

    from otel_agents.llm.scripts import load_script
    from otel_agents.runtime.scenario import build_session

    session = build_session(load_script("jack-and-jill"), telemetry=memory_tracing.telemetry)
    asyncio.run(session.run("Create Jack and Jill for a cafe discussion"))
    recorded = list(memory_tracing.spans())
    assert len(recorded) > 20 and any(span.events for span in recorded)
    assert encode_request(recorded) == stock(recorded)
    for cut in (1, 7, len(recorded) // 2):  # batches as the batch processor cuts them
        assert encode_request(recorded[:cut]) == stock(recorded[:cut])


def test_long_fields_use_multi_byte_lengths_and_the_request_parses():
    big = {"text": "x" * 70_000, "many": tuple(range(300)), "nested": {"a": ["é" * 200]}}
    span = ReadableSpan("n" * 200, SpanContext(1, 2, False), attributes=big, events=[Event("e", big, 5)],
                        resource=RESOURCES[0], start_time=1, end_time=2)
    data = encode_request([span])
    assert data == stock([span])
    parsed = ExportTraceServiceRequest.FromString(data)
    assert parsed.resource_spans[0].scope_spans[0].spans[0].name == "n" * 200


@pytest.mark.parametrize("bad", [2**63, -(2**63) - 1, object()])
def test_a_value_the_stock_encoder_refuses_loses_its_key_only_as_there(bad, caplog):
    span = ReadableSpan("s", SpanContext(1, 2, False), attributes={"before": 1, "bad": bad, "after": "x"},
                        resource=RESOURCES[0], start_time=1, end_time=2)
    with caplog.at_level(logging.ERROR):
        ours = encode_request([span])
    assert "Failed to encode key bad" in caplog.text
    assert ours == stock([span])
    attributes = ExportTraceServiceRequest.FromString(ours).resource_spans[0].scope_spans[0].spans[0].attributes
    assert [kv.key for kv in attributes] == ["before", "after"]


def test_no_spans_is_an_empty_request():
    assert encode_request([]) == stock([]) == b""
