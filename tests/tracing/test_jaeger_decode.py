"""Jaeger JSON decoding: real fixtures, envelopes, OpenTelemetry tags, errors naming the place."""

from __future__ import annotations

import base64
import json

from trace_samples import decode_file, error_of

from support.shared_fixtures import shared_fixture

from otel_agents.tracing.decoding import ORIGINAL_SPAN_ID, ORIGINAL_TRACE_ID
from otel_agents.tracing.jaeger_decode import decode_jaeger_json
from otel_agents.tracing.trace_text import decode_trace_text


def test_jaeger_test_trace_parents_kinds_links_and_error_tag():
    spans = decode_file(shared_fixture("jaeger", "testTrace.json"))
    assert len(spans) == 11
    original = {s.attributes[ORIGINAL_SPAN_ID]: s for s in spans}
    # Non-hex Jaeger ids map to stable hex ids and keep the original.
    assert all(s.attributes[ORIGINAL_TRACE_ID] == "trace-123" for s in spans)
    assert len({s.trace_id for s in spans}) == 1
    assert original["span-1"].parent_span_id is None
    for child in ("span-2", "span-2_1", "span-3", "span-6", "span-12"):
        assert original[child].parent_span_id == original["span-1"].span_id
    assert original["span-4"].parent_span_id == original["span-3"].span_id
    assert original["span-5"].parent_span_id == original["span-4"].span_id
    assert original["span-1"].kind == "SERVER" and original["span-2"].kind == "CLIENT"
    assert original["span-6"].kind == "PRODUCER" and original["span-7"].kind == "CONSUMER"
    assert original["span-5"].kind == "INTERNAL" and original["span-5"].attributes["db.type"] == "sql"
    assert "span.kind" not in original["span-1"].attributes
    # error=true (a bool tag whose value is the string "true") is the span's status.
    assert original["span-2"].status == "ERROR" and "error" not in original["span-2"].attributes
    assert original["span-3"].status == "UNSET"
    # FOLLOWS_FROM is a link, not a parent.
    span7 = original["span-7"]
    assert span7.parent_span_id is None
    assert [(l.span_id, l.attributes["jaeger.ref_type"]) for l in span7.links] == [(original["span-6"].span_id, "FOLLOWS_FROM")]
    # startTime/duration in microseconds.
    assert original["span-1"].start_ns == 1542666452979000 * 1000
    assert original["span-1"].end_ns - original["span-1"].start_ns == 390000 * 1000
    # process tags and service name become the resource.
    assert original["span-4"].resource == {"service.name": "service2", "hostname": "foobar.org"}
    # The same file decodes to the same ids every time (re-imports agree).
    assert [s.span_id for s in decode_file(shared_fixture("jaeger", "testTrace.json"))] == [s.span_id for s in spans]


def test_jaeger_ui_fixture_tags_logs_references_and_shared_span_ids():
    spans = decode_file(shared_fixture("jaeger", "ui_01.json"))
    assert [s.name for s in spans] == [
        "test-general-conversion", "some-operation", "some-operation", "reference-test", "preserveParentID-test",
    ]
    first, shared, child, refs, preserve = spans
    assert first.trace_id == "0" * 31 + "1" and first.span_id == "0000000000000002"  # 64-bit trace id padded
    # Two different spans share id 2 (Zipkin-style): the second gets a derived id, keeps the original.
    assert shared.span_id != first.span_id and shared.attributes[ORIGINAL_SPAN_ID] == "0000000000000002"
    assert child.parent_span_id == first.span_id
    # Typed tags: int64 given as a number and as a string beyond 2^53, float, binary as base64 text.
    assert shared.attributes["peer.ipv4"] == 23456
    assert shared.attributes["javascript_limit"] == 9223372036854775222
    assert shared.attributes["temperature"] == 72.5
    assert shared.attributes["blob"] == "AAAwOQ==" and base64.b64decode(shared.attributes["blob"]) == b"\x00\x000\x39"
    assert shared.status == "ERROR"
    # Logs are events: the "event" field names the event, other fields are attributes.
    assert [(e.name, e.attributes) for e in first.events] == [("some-event", {}), ("log", {"x": "y"})]
    assert first.events[0].time_ns == 1485467191639875 * 1000
    # The first CHILD_OF in the same trace is the parent; the rest are links.
    assert refs.parent_span_id == "0000000000000002"
    assert [(l.trace_id[-2:], l.span_id[-2:], l.attributes["jaeger.ref_type"]) for l in refs.links] == [
        ("ff", "ff", "CHILD_OF"), ("01", "02", "FOLLOWS_FROM")]
    assert preserve.parent_span_id == refs.span_id
    assert preserve.end_ns - preserve.start_ns == 4000


def test_the_same_trace_through_otlp_and_jaeger_decodes_equal():
    """otlp2jaeger-in.json and -out.json are one trace before and after Jaeger's translation."""
    otlp = decode_file(shared_fixture("otlp", "otlp2jaeger-in.json"))
    jaeger = decode_file(shared_fixture("jaeger", "otlp2jaeger-out.json"))
    assert len(otlp) == 1, "the exact duplicate span in the file counts once"
    assert otlp == jaeger
    assert otlp[0].parent_span_id == "909541b92cf05311"  # a parent outside the file stays as given


def test_jaeger_envelope_list_and_single_trace_agree():
    trace = json.loads((shared_fixture("jaeger", "testTrace.json")).read_text())
    single = decode_jaeger_json(trace, "single")
    assert decode_jaeger_json({"data": [trace]}, "envelope") == single
    assert decode_trace_text(json.dumps([trace]), "list") == single


def test_jaeger_otel_status_and_scope_tags():
    trace = {"traceID": "00000000000000000000000000000abc", "processes": {"p1": {"serviceName": "s", "tags": []}},
             "spans": [{"traceID": "abc", "spanID": "1", "operationName": "op", "startTime": 5, "duration": 2,
                        "processID": "p1", "references": [],
                        "tags": [{"key": "otel.status_code", "type": "string", "value": "ERROR"},
                                 {"key": "otel.status_description", "type": "string", "value": "bad"},
                                 {"key": "otel.scope.name", "type": "string", "value": "lib"},
                                 {"key": "span.kind", "type": "string", "value": "client"}]}]}
    (span,) = decode_jaeger_json(trace)
    assert span.trace_id == "0" * 29 + "abc" and span.span_id == "0" * 15 + "1"
    assert (span.status, span.status_message, span.scope, span.kind) == ("ERROR", "bad", "lib", "CLIENT")
    assert span.attributes == {} and (span.start_ns, span.end_ns) == (5000, 7000)


def test_jaeger_errors_name_the_place():
    trace = json.loads((shared_fixture("jaeger", "testTrace.json")).read_text())
    del trace["spans"][3]["spanID"]
    assert "data[0].spans[3]: missing spanID" in error_of(json.dumps({"data": [trace]}), "jaeger.json")
    trace = json.loads((shared_fixture("jaeger", "testTrace.json")).read_text())
    trace["spans"][2]["tags"][0]["type"] = "complex"
    assert "spans[2].tags[0].type: unknown tag type 'complex'" in error_of(json.dumps(trace))
    trace["spans"][2]["tags"] = [{"key": "n", "type": "int64", "value": "many"}]
    assert "spans[2].tags[0].value: expected an integer, got 'many'" in error_of(json.dumps(trace))
    trace = json.loads((shared_fixture("jaeger", "testTrace.json")).read_text())
    trace["spans"][0]["references"] = [{"refType": "CHILD_OF", "traceID": "trace-123", "spanID": "span-5"}]
    assert "cycle in parent links" in error_of(json.dumps(trace))
    assert "the Jaeger query reported errors" in error_of(json.dumps({"data": [], "errors": [{"msg": "no"}]}))


def test_jaeger_values_are_checked_too():
    trace = {"traceID": "ab" * 16, "processes": {"p1": {"serviceName": "s"}}, "spans": [
        {"traceID": "ab" * 16, "spanID": "cd" * 8, "operationName": "chat m", "startTime": 5, "duration": 3,
         "processID": "p1", "tags": [{"key": "a", "type": "string", "value": "b"},
                                     {"key": "gen_ai.usage.output_tokens", "type": "float64", "value": 2.5}]}]}
    text = json.dumps({"data": [trace]}, indent=2)
    line = [l.strip() for l in text.splitlines()].index('"key": "gen_ai.usage.output_tokens",')  # the line before opens the tag
    message = error_of(text, "j.json")
    assert message.startswith(f"j.json:{line}: data[0].spans[0].tags[1]: gen_ai.usage.output_tokens: expected a non-negative")
    trace["spans"][0]["tags"].pop()
    trace["spans"][0]["duration"] = -3
    assert "data[0].spans[0].duration: the span ends (2000) before it starts (5000)" in error_of(json.dumps({"data": [trace]}))

