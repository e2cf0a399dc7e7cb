"""The recorder process's frames: SpanData fields picked from SDK spans, read in the child as in-process."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, Status, StatusCode

from otel_agents.persistence.recorder import SessionTraces
from otel_agents.persistence.recorder_link import HEADER, decode_frame, encode_frame, span_fields
from otel_agents.persistence.recorder_process import _span_data
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanReader

def _through_the_pipe(message):
    """A message as the child gets it: framed, then its payload decoded."""
    frame = encode_frame(message)
    (size,) = HEADER.unpack_from(frame)
    assert len(frame) == HEADER.size + size
    return decode_frame(memoryview(frame)[HEADER.size:])


SECRET = "sk-ant-" + "y" * 40
values = st.one_of(
    st.text(max_size=30), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.booleans(),
    st.floats(allow_nan=False), st.lists(st.text(max_size=10), max_size=3), st.just(f"key {SECRET}"),
)
attributes = st.dictionaries(st.sampled_from(["note", "api_key", "gen_ai.prompt", "count", "x.y"]), values, max_size=5)


def _one_span(attrs, event_attrs, status_text):
    provider = TracerProvider(resource=Resource({"service.name": "svc", "token": SECRET}))
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("otel_agents")
    with tracer.start_as_current_span("linked") as other:
        pass
    started = {}
    with tracer.start_as_current_span(f"op {status_text}", attributes=attrs,
                                      links=[Link(other.get_span_context(), {"why": status_text})]) as span:
        started["fields"] = _through_the_pipe(span_fields(span, ended=False))
        span.set_attribute("later", status_text)
        span.add_event(f"event {status_text}", event_attrs)
        span.set_status(Status(StatusCode.ERROR, status_text))
    finished = exporter.get_finished_spans()[-1]
    return finished, started["fields"]


@settings(max_examples=40, deadline=None)
@given(attrs=attributes, event_attrs=attributes, status_text=st.one_of(st.text(max_size=20), st.just(SECRET)),
       patterns=st.booleans())
def test_the_child_reads_the_sent_fields_as_the_inline_recorder_reads_the_span(attrs, event_attrs, status_text,
                                                                              patterns):
    finished, start_fields = _one_span(attrs, event_attrs, status_text)
    resource = dict(finished.resource.attributes)
    scope = finished.instrumentation_scope.name
    inline, child = SpanReader(redact_patterns=patterns), SpanReader(redact_patterns=patterns)
    # The start, then the end read against it: the same SpanData on both sides.
    inline_start = inline.read(finished, (), None)
    child_start = child.clean(_span_data(start_fields, resource, scope))
    assert child_start.attributes == {k: v for k, v in inline_start.attributes.items() if k != "later"}
    end_fields = _through_the_pipe(span_fields(finished, ended=True))
    assert child.clean(_span_data(end_fields, resource, scope), (), child_start) == inline.read(finished, (), inline_start)
    if patterns:
        assert SECRET not in repr(child.clean(_span_data(end_fields, resource, scope)))


class Label(str):
    """A str subclass, as a user's code may put in a record: marshal refuses it."""


@settings(max_examples=60, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda inner: st.lists(inner) | st.tuples(inner, inner) | st.dictionaries(st.text(), inner), max_leaves=20,
))
def test_built_in_values_arrive_equal_and_of_the_same_types(value):
    message = (3, "trace", "span", value, 1)
    arrived = _through_the_pipe(message)
    assert arrived == message and repr(arrived) == repr(message)  # a tuple stays a tuple, a list a list
    assert encode_frame(message)[HEADER.size:HEADER.size + 1] == b"m"


def test_a_value_marshal_refuses_arrives_through_pickle_with_its_type():
    message = (3, None, None, {"who": Label("jill"), "n": 1}, 7)
    frame = encode_frame(message)
    assert frame[HEADER.size:HEADER.size + 1] == b"p"
    arrived = _through_the_pipe(message)
    assert arrived == message and type(arrived[3]["who"]) is Label


def test_only_the_sessions_traces_are_admitted():
    provider = TracerProvider()
    tracer = provider.get_tracer("otel_agents")
    traces = SessionTraces("s-1")
    with tracer.start_as_current_span("invoke_agent main", attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.SESSION_ID: "s-1"}) as mine:
        assert traces.admit_start(mine)
        with tracer.start_as_current_span("chat") as child:
            assert traces.admit_start(child)
    with tracer.start_as_current_span("invoke_agent main", attributes={sc.SESSION_ID: "s-2"}) as theirs:
        assert not traces.admit_start(theirs)
    assert traces.admits(mine.get_span_context().trace_id)
    assert not traces.admits(theirs.get_span_context().trace_id)
