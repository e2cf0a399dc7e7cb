"""Protobuf requests read field by field equal their JSON mapping read by otlp_decode.py."""

from __future__ import annotations

from google.protobuf.json_format import MessageToDict
from hypothesis import example, given, settings, strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from otel_agents.tracing.decoding import ImportFormatError, Where
from otel_agents.tracing.otlp_decode import decode_otlp_document
from otel_agents.tracing.otlp_proto_decode import decode_proto_spans

scalars = st.one_of(
    st.builds(lambda v: AnyValue(string_value=v), st.text(max_size=5)),
    st.builds(lambda v: AnyValue(bool_value=v), st.booleans()),
    st.builds(lambda v: AnyValue(int_value=v), st.integers(-2**63, 2**63 - 1)),
    st.builds(lambda v: AnyValue(double_value=v), st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(lambda v: AnyValue(bytes_value=v), st.binary(max_size=5)),
    st.just(AnyValue()),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.builds(lambda vs: AnyValue(array_value=ArrayValue(values=vs)), st.lists(inner, max_size=3)),
    st.builds(lambda kv: AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kv.items()])),
              st.dictionaries(st.text(min_size=1, max_size=3), inner, max_size=3)),
), max_leaves=6)
# Keys not empty: protobuf's JSON mapping drops an empty key, which the JSON reader then refuses.
attributes = st.dictionaries(st.text(min_size=1, max_size=4), values, max_size=3).map(
    lambda d: [KeyValue(key=k, value=v) for k, v in d.items()])
ids = st.one_of(st.binary(min_size=8, max_size=8), st.just(b""), st.just(b"\0" * 8), st.binary(max_size=9))
spans = st.builds(
    lambda trace, span, parent, name, kind, start, end, attrs, code, message: Span(
        trace_id=trace, span_id=span, parent_span_id=parent, name=name, kind=kind, start_time_unix_nano=start,
        end_time_unix_nano=end, attributes=attrs, status=Status(code=code, message=message)),
    st.one_of(st.binary(min_size=16, max_size=16), st.just(b"")), ids, ids, st.text(max_size=5),
    st.integers(0, 6), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), attributes, st.integers(0, 3),
    st.text(max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(spans, min_size=1, max_size=3), attributes)
# Found by a CI run: a one-byte zero parent id, which the JSON reader refuses, was read as no parent.
@example([Span(trace_id=b"\0" * 15 + b"\1", span_id=b"\0" * 7 + b"\1", parent_span_id=b"\0", start_time_unix_nano=1)], [])
def test_the_proto_reading_equals_the_json_mappings(span_list, resource):
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        resource={"attributes": resource}, scope_spans=[ScopeSpans(spans=span_list)])])
    fast, _, errors = decode_proto_spans(request)
    slow, slow_errors = [], 0
    for i, span in enumerate(span_list):  # the JSON path, span by span
        one = ExportTraceServiceRequest(resource_spans=[ResourceSpans(
            resource={"attributes": resource}, scope_spans=[ScopeSpans(spans=[span])])])
        try:
            slow += decode_otlp_document(MessageToDict(one), Where("request", 1))[0]
        except ImportFormatError:
            slow_errors += 1
    assert fast == slow
    assert len(errors) == slow_errors
