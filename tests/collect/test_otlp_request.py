"""OTLP request bodies: whole ones decode span by span, cut or damaged ones are refused whole."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from otel_agents.collect.otlp_request import BadRequest, decode_body


def _request(n: int) -> ExportTraceServiceRequest:
    spans = [Span(trace_id=bytes.fromhex("ab" * 16), span_id=(i + 1).to_bytes(8, "big"), name=f"s{i}",
                  start_time_unix_nano=1_000 + i, end_time_unix_nano=2_000 + i) for i in range(n)]
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])


def test_protobuf_and_json_give_the_same_spans():
    message = _request(3)
    from_proto = decode_body(message.SerializeToString(), "application/x-protobuf")
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "ab" * 16, "spanId": f"{i + 1:016x}", "name": f"s{i}", "startTimeUnixNano": str(1_000 + i),
         "endTimeUnixNano": str(2_000 + i)} for i in range(3)]}]}]}
    from_json = decode_body(json.dumps(doc).encode(), "application/json")
    assert from_proto.spans == from_json.spans and len(from_proto.spans) == 3
    assert from_proto.rejected == from_json.rejected == 0


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 5), data=st.data())
def test_a_cut_body_is_refused_whole_or_is_a_whole_smaller_request(n, data):
    body = _request(n).SerializeToString()
    cut = data.draw(st.integers(1, len(body) - 1))
    try:
        decoded = decode_body(body[:cut], "application/x-protobuf")
    except BadRequest:
        return
    # Protobuf cannot tell a cut at a field boundary: then it is a smaller request whose every
    # span decodes or is rejected with a reason, never a half-read span taken as whole.
    assert len(decoded.spans) + decoded.rejected <= n
    whole = decode_body(body, "application/x-protobuf").spans
    for span in decoded.spans:
        assert span in whole


@given(st.binary(max_size=64))
def test_any_bytes_are_a_request_or_a_bad_request(body):
    try:
        decode_body(body, "application/x-protobuf")
    except BadRequest:
        pass


def test_a_bad_span_is_rejected_alone_with_its_reason():
    message = _request(2)
    message.resource_spans[0].scope_spans[0].spans[0].span_id = b"\x01\x02\x03"
    decoded = decode_body(message.SerializeToString(), "application/x-protobuf")
    assert [s.name for s in decoded.spans] == ["s1"] and decoded.rejected == 1
    assert "span" in decoded.message and "id" in decoded.message


@pytest.mark.parametrize("body", [b'{"resourceSpans": [', b"[1, 2]", b"\xff\xfe"])
def test_json_that_is_not_a_request_object_is_refused(body):
    with pytest.raises(BadRequest):
        decode_body(body, "application/json")
