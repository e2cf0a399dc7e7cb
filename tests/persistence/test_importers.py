"""Trace files read for import and decoded (tracing/trace_text.py and the decoders): real Jaeger/OTLP fixtures, our own OTLP/JSON round trip, malformed input."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from otel_agents.persistence.importers import read_trace_file
from otel_agents.tracing.decoding import ORIGINAL_SPAN_ID, ORIGINAL_TRACE_ID, ImportFormatError
from otel_agents.tracing.jaeger_decode import decode_jaeger_json
from otel_agents.tracing.otlp_decode import decode_otlp_json
from otel_agents.tracing.trace_text import decode_trace_text
from otel_agents.tracing.otlp_json import OtlpJsonFileExporter, encode_resource_spans
from otel_agents.tracing.redaction import MARKER
from otel_agents.tracing.spandata import from_readable

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
ALL_FIXTURES = sorted(p for p in FIXTURES.rglob("*") if p.is_file())


def by_name(spans):
    return {s.name: s for s in spans}


# --- every real fixture -----------------------------------------------------------------


def test_the_fixture_set_is_there():
    names = {p.name for p in ALL_FIXTURES}
    assert {"testTrace.json", "ui_01.json", "otlp2jaeger-out.json", "example_trace.json"} <= names


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_decodes_into_well_formed_spans(path):
    spans = read_trace_file(path)
    assert spans
    raw = json.loads(path.read_text())
    assert "resourceSpans" in raw or "data" in raw or "spans" in raw
    keys = set()
    for span in spans:
        assert len(span.trace_id) == 32 and int(span.trace_id, 16)
        assert len(span.span_id) == 16 and int(span.span_id, 16)
        assert span.parent_span_id is None or len(span.parent_span_id) == 16
        assert span.kind in {"INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}
        assert span.status in {"UNSET", "OK", "ERROR"}
        assert span.end_ns is None or span.end_ns >= span.start_ns > 10**18  # ns since 1970, after 2001
        assert span.resource.get("service.name")
        keys.add((span.trace_id, span.span_id))
    assert len(keys) == len(spans), "span ids are unique after decoding"


def test_jaeger_test_trace_parents_kinds_links_and_error_tag():
    spans = read_trace_file(FIXTURES / "jaeger" / "testTrace.json")
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
    assert [s.span_id for s in read_trace_file(FIXTURES / "jaeger" / "testTrace.json")] == [s.span_id for s in spans]


def test_jaeger_ui_fixture_tags_logs_references_and_shared_span_ids():
    spans = read_trace_file(FIXTURES / "jaeger" / "ui_01.json")
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


def test_otlp_example_trace_resources_kinds_and_nameless_events():
    spans = read_trace_file(FIXTURES / "otlp" / "example_trace.json")
    assert [(s.span_id[-1], s.resource["service.name"], s.kind) for s in spans] == [
        ("4", "example-service-2", "INTERNAL"),
        ("5", "example-service-3", "INTERNAL"),
        ("3", "example-service-1", "INTERNAL"),
        ("6", "example-service-1", "SERVER"),
        ("7", "example-service-1", "CLIENT"),
    ]
    assert all(len(s.events) == 2 and s.events[0].name == "" for s in spans)
    assert all(s.end_ns - s.start_ns == 100_000 and s.scope is None for s in spans)


def test_otlp_proto_example_uppercase_hex_numeric_times_and_scope():
    (span,) = read_trace_file(FIXTURES / "otlp" / "proto_example_trace.json")
    assert span.trace_id == "5b8efff798038103d269b633813fc60c"
    assert span.span_id == "eee19b7ec3c1b174" and span.parent_span_id == "eee19b7ec3c1b173"
    assert span.start_ns == 1544712660000000000 and span.end_ns == 1544712661000000000
    assert span.kind == "SERVER" and span.scope == "my.library"
    assert span.attributes == {"my.span.attr": "some value"}


def test_otlp_span_tags_typed_values():
    (span,) = read_trace_file(FIXTURES / "otlp" / "span_tags_trace.json")
    assert span.attributes == {
        "sameplacetag1": "sameplacevalue",
        "sameplacetag2": 123,
        "sameplacetag4": True,
        "sameplacetag3": 72.5,
        "blob": "AAAwOQ==",
    }
    assert type(span.attributes["sameplacetag2"]) is int


def test_the_same_trace_through_otlp_and_jaeger_decodes_equal():
    """otlp2jaeger-in.json and -out.json are one trace before and after Jaeger's translation."""
    otlp = read_trace_file(FIXTURES / "otlp" / "otlp2jaeger-in.json")
    jaeger = read_trace_file(FIXTURES / "jaeger" / "otlp2jaeger-out.json")
    assert len(otlp) == 1, "the exact duplicate span in the file counts once"
    assert otlp == jaeger
    assert otlp[0].parent_span_id == "909541b92cf05311"  # a parent outside the file stays as given


# --- our own output ---------------------------------------------------------------------


@pytest.fixture
async def demo_spans(memory_tracing, no_sleep):
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.retry import RetryPolicy
    from otel_agents.llm.scripts import load_script
    from otel_agents.runtime.scenario import build_session
    from otel_agents.runtime.session import RunContext

    script = load_script("jack-and-jill")
    llm = LLMClient(memory_tracing.telemetry, retry=RetryPolicy(max_attempts=4), sleep=no_sleep)
    session = build_session(script, telemetry=memory_tracing.telemetry, llm=llm)
    await session.run("Create Jack and Jill for a cafe discussion", context=RunContext(source="cli"))
    return memory_tracing.spans()


def test_round_trip_of_a_real_demo_run(demo_spans):
    expected = [from_readable(s) for s in demo_spans]
    assert len(expected) > 20
    assert any(s.status == "ERROR" for s in expected) and any(s.events for s in expected)
    decoded = decode_otlp_json(encode_resource_spans(expected), "demo")
    key = lambda s: s.span_id  # noqa: E731 - grouping by resource may reorder
    assert sorted(decoded, key=key) == sorted(expected, key=key)


def test_otlp_file_exporter_output_reads_back(demo_spans, tmp_path):
    path = tmp_path / "spans.jsonl"
    exporter = OtlpJsonFileExporter(path)
    half = len(demo_spans) // 2
    exporter.export(demo_spans[:half])
    exporter.export(demo_spans[half:])
    assert path.read_text().count("\n") == 2
    spans = read_trace_file(path)
    assert sorted(spans, key=lambda s: s.span_id) == sorted((from_readable(s) for s in demo_spans), key=lambda s: s.span_id)


# --- other shapes of valid input ----------------------------------------------------------


def otlp_doc(*spans, resource=None, scope="lib"):
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": resource or "svc"}}]},
                "scopeSpans": [{"scope": {"name": scope}, "spans": list(spans)}],
            }
        ]
    }


def otlp_span(span_id="00000000000000a1", parent=None, trace_id="0123456789abcdef0123456789abcdef", **extra):
    span = {"traceId": trace_id, "spanId": span_id, "name": f"op {span_id[-2:]}", "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000", "kind": 1, "status": {}}
    if parent:
        span["parentSpanId"] = parent
    span.update(extra)
    return span


def test_base64_ids_enum_names_int_values_and_unfinished_spans():
    trace = bytes(range(1, 17))
    span_id, parent = bytes(range(21, 29)), bytes(range(31, 39))
    doc = otlp_doc(
        {
            "traceId": base64.b64encode(trace).decode(),
            "spanId": base64.b64encode(span_id).decode(),
            "parentSpanId": base64.b64encode(parent).decode(),
            "name": "chat gpt",
            "kind": "SPAN_KIND_CLIENT",
            "startTimeUnixNano": 1700000000000000001,
            "attributes": [
                {"key": "n", "value": {"intValue": 7}},
                {"key": "big", "value": {"intValue": "9007199254740993"}},
                {"key": "inf", "value": {"doubleValue": "Infinity"}},
                {"key": "list", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "2"}, {}]}}},
                {"key": "map", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}}},
                {"key": "empty", "value": {}},
            ],
            "status": {"code": "STATUS_CODE_ERROR", "message": "boom"},
        }
    )
    (span,) = decode_otlp_json(doc, "b64.json")
    assert (span.trace_id, span.span_id, span.parent_span_id) == (trace.hex(), span_id.hex(), parent.hex())
    assert span.kind == "CLIENT" and span.status == "ERROR" and span.status_message == "boom"
    assert span.end_ns is None and span.start_ns == 1700000000000000001
    assert span.attributes == {"n": 7, "big": 9007199254740993, "inf": float("inf"), "list": ["a", 2, None],
                               "map": {"k": False}, "empty": None}


def test_snake_case_field_names_are_accepted():
    doc = {"resource_spans": [{"resource": {}, "scope_spans": [{"scope": {}, "spans": [
        {"trace_id": "0123456789abcdef0123456789abcdef", "span_id": "00000000000000a1", "parent_span_id": "",
         "name": "x", "start_time_unix_nano": "5", "end_time_unix_nano": "9"}]}]}]}
    (span,) = decode_trace_text(json.dumps(doc), "snake.json")
    assert span.parent_span_id is None and (span.start_ns, span.end_ns) == (5, 9)


def test_collector_json_lines_and_v3_result_envelopes(tmp_path):
    lines = [
        json.dumps(otlp_doc(otlp_span("00000000000000a1"))),
        json.dumps({"result": otlp_doc(otlp_span("00000000000000a2", parent="00000000000000a1"))}),
        "",
        json.dumps(otlp_doc(otlp_span("00000000000000a3", parent="00000000000000a2"))),
    ]
    path = tmp_path / "collector.jsonl"
    path.write_text("\n".join(lines) + "\n")
    spans = read_trace_file(path)
    assert [s.span_id[-2:] for s in spans] == ["a1", "a2", "a3"]
    # Concatenated pretty-printed documents work too.
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(otlp_doc(otlp_span("00000000000000b1")), indent=2) + "\n"
                      + json.dumps({"result": otlp_doc(otlp_span("00000000000000b2"))}, indent=2))
    assert [s.span_id[-2:] for s in read_trace_file(pretty)] == ["b1", "b2"]


def test_jaeger_envelope_list_and_single_trace_agree():
    trace = json.loads((FIXTURES / "jaeger" / "testTrace.json").read_text())
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


def test_secrets_in_imported_traces_are_redacted():
    doc = otlp_doc(otlp_span(attributes=[
        {"key": "http.request.header.authorization", "value": {"arrayValue": {"values": [{"stringValue": "Basic dXNlcjpwYXNz"}]}}},
        {"key": "llm.args", "value": {"stringValue": "api_key=sk-canary0123456789abcdefXYZ"}},
    ], events=[{"timeUnixNano": "1", "name": "log", "attributes": [
        {"key": "message", "value": {"stringValue": "Authorization: Bearer abcdefgh12345678"}}]}]))
    (span,) = decode_otlp_json(doc)
    text = repr(span)
    assert "canary" not in text and "abcdefgh12345678" not in text and "dXNlcjpwYXNz" not in text
    assert span.attributes["http.request.header.authorization"] == MARKER


def test_exact_duplicates_count_once_and_conflicts_get_stable_new_ids():
    a = otlp_span("00000000000000a1")
    b = otlp_span("00000000000000a1", name="other")
    spans = decode_otlp_json(otlp_doc(a, a, b))
    assert len(spans) == 2 and spans[0].name == "op a1" and spans[1].name == "other"
    assert spans[1].span_id != "00000000000000a1" and spans[1].attributes[ORIGINAL_SPAN_ID] == "00000000000000a1"
    assert decode_otlp_json(otlp_doc(a, a, b))[1].span_id == spans[1].span_id


# --- malformed input: clear errors naming the file and the position -----------------------


def error_of(text: str, name: str = "bad.json") -> str:
    with pytest.raises(ImportFormatError) as info:
        decode_trace_text(text, name)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_json_names_file_and_line(tmp_path):
    good = json.dumps(otlp_doc(otlp_span()))
    path = tmp_path / "broken.jsonl"
    path.write_text(good + "\n" + good + "\n" + '{"resourceSpans": [ {"oops"\n')
    with pytest.raises(ImportFormatError) as info:
        read_trace_file(path)
    assert str(info.value).startswith(f"{path}:3: invalid JSON at column")
    # Nothing partial: the two good lines before it are not returned either.
    assert error_of("{\n  \"resourceSpans\": [,]\n}").startswith("bad.json:2: invalid JSON at column 21")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: s.pop("traceId"), "resourceSpans[0].scopeSpans[0].spans[1].traceId: missing id"),
        (lambda s: s.pop("spanId"), "spans[1].spanId: missing id"),
        (lambda s: s.update(spanId="0000000000000000"), "spans[1].spanId: invalid all-zero id"),
        (lambda s: s.update(spanId="xyz"), "spans[1].spanId: invalid id 'xyz'"),
        (lambda s: s.update(traceId=12), "spans[1].traceId: id must be a string, got int"),
        (lambda s: s.update(startTimeUnixNano="soon"), "spans[1].startTimeUnixNano: expected an integer, got 'soon'"),
        (lambda s: s.pop("startTimeUnixNano"), "spans[1]: missing startTimeUnixNano"),
        (lambda s: s.update(kind=9), "spans[1].kind: unknown span_kind 9"),
        (lambda s: s.update(name=["x"]), "spans[1].name: expected a string, got a list"),
        (lambda s: s.update(attributes={"k": "v"}), "spans[1].attributes: expected a list, got an object"),
        (lambda s: s.update(attributes=[{"key": "k", "value": {"intValue": "1.5"}}]),
         "spans[1].attributes[0].value.intValue: expected an integer, got '1.5'"),
        (lambda s: s.update(events=[{"timeUnixNano": True}]), "spans[1].events[0].timeUnixNano: expected an integer, got a boolean"),
    ],
)
def test_otlp_structure_errors_name_the_place(mutate, expected):
    bad = otlp_span("00000000000000a2")
    mutate(bad)
    doc = otlp_doc(otlp_span("00000000000000a1"), bad)
    text = "\n" + json.dumps(otlp_doc(otlp_span("00000000000000ff"))) + "\n" + json.dumps(doc) + "\n"
    message = error_of(text, "trace.jsonl")
    assert message.startswith("trace.jsonl:3: ")
    assert expected in message


def test_parent_cycles_are_refused():
    cycle = otlp_doc(
        otlp_span("00000000000000a1", parent="00000000000000a3"),
        otlp_span("00000000000000a2", parent="00000000000000a1"),
        otlp_span("00000000000000a3", parent="00000000000000a2"),
        otlp_span("00000000000000a4", parent="00000000000000a3"),
    )
    message = error_of(json.dumps(cycle), "cycle.json")
    assert message.startswith("cycle.json:1: resourceSpans")
    assert "cycle in parent links" in message and "00000000000000a1" in message and "00000000000000a3" in message
    assert "cycle in parent links: span 00000000000000a5 -> 00000000000000a5" in error_of(
        json.dumps(otlp_doc(otlp_span("00000000000000a5", parent="00000000000000a5"))))


def test_jaeger_errors_name_the_place():
    trace = json.loads((FIXTURES / "jaeger" / "testTrace.json").read_text())
    del trace["spans"][3]["spanID"]
    assert "data[0].spans[3]: missing spanID" in error_of(json.dumps({"data": [trace]}), "jaeger.json")
    trace = json.loads((FIXTURES / "jaeger" / "testTrace.json").read_text())
    trace["spans"][2]["tags"][0]["type"] = "complex"
    assert "spans[2].tags[0].type: unknown tag type 'complex'" in error_of(json.dumps(trace))
    trace["spans"][2]["tags"] = [{"key": "n", "type": "int64", "value": "many"}]
    assert "spans[2].tags[0].value: expected an integer, got 'many'" in error_of(json.dumps(trace))
    trace = json.loads((FIXTURES / "jaeger" / "testTrace.json").read_text())
    trace["spans"][0]["references"] = [{"refType": "CHILD_OF", "traceID": "trace-123", "spanID": "span-5"}]
    assert "cycle in parent links" in error_of(json.dumps(trace))
    assert "the Jaeger query reported errors" in error_of(json.dumps({"data": [], "errors": [{"msg": "no"}]}))


def test_files_that_are_not_traces(tmp_path):
    assert "not a trace document" in error_of('{"hello": "world"}')
    assert error_of("").startswith("bad.json:1: no spans")
    assert "no spans" in error_of('{"resourceSpans": []}')
    assert "expected {\"resourceSpans\"" in error_of('{"result": {"spans": 3}}')
    path = tmp_path / "latin1.json"
    path.write_bytes(b'\n\n{"name": "caf\xe9"}')
    with pytest.raises(ImportFormatError, match=r"latin1\.json:3: not UTF-8"):
        read_trace_file(path)
    with pytest.raises(ImportFormatError, match=r"missing\.json:0: cannot read"):
        read_trace_file(tmp_path / "missing.json")


def test_a_key_with_a_line_break_is_quoted_in_the_one_line_error():
    """Found by the fuzz suite: a process id holding a newline broke the error over two lines."""
    from otel_agents.tracing.decoding import ImportFormatError
    from otel_agents.tracing.trace_text import decode_trace_text

    doc = {"data": [{"traceID": "ab" * 16, "spans": [], "processes": {"p\n1": None}}]}
    with pytest.raises(ImportFormatError) as info:
        decode_trace_text(json.dumps(doc), "fuzzed.json")
    message = str(info.value)
    assert "\n" not in message and 'processes["p\\n1"]' in message, message


# --- values the tree and ledger read: refused with the line of the value -----------------


def _attr(key, kind, value):
    return {"key": key, "value": {kind: value}}


RECORD_EVENT = {"timeUnixNano": "1700000000500000000", "name": "transcript_entry", "attributes": [
    _attr("otel_agents.event.message_id", "stringValue", "msg_000001"),
    _attr("otel_agents.event.agent_id", "stringValue", "agent_001"),
    _attr("otel_agents.event.role", "stringValue", "user"), _attr("otel_agents.event.content", "stringValue", "hi")]}

# (what to change on the second span, the place the error names, what it says)
INVALID_FIELDS = [
    ({"attributes": [_attr("gen_ai.usage.input_tokens", "intValue", "-5")]},
     "attributes[0]", "gen_ai.usage.input_tokens: expected a non-negative integer, got -5"),
    ({"attributes": [_attr("x", "stringValue", "y"), _attr("gen_ai.usage.output_tokens", "doubleValue", 2.5)]},
     "attributes[1]", "gen_ai.usage.output_tokens: expected a non-negative integer, got 2.5"),
    ({"attributes": [_attr("gen_ai.usage.cost", "doubleValue", "NaN")]},
     "attributes[0]", "gen_ai.usage.cost: expected a finite non-negative number, got nan"),
    ({"attributes": [_attr("gen_ai.usage.cost", "doubleValue", -1)]},
     "attributes[0]", "gen_ai.usage.cost: expected a finite non-negative number, got -1.0"),
    ({"attributes": [_attr("gen_ai.usage.cost", "stringValue", "cheap")]},
     "attributes[0]", "gen_ai.usage.cost: expected a finite non-negative number, got 'cheap'"),
    ({"attributes": [_attr("otel_agents.response.message_id", "stringValue", "reply-1")]},
     "attributes[0]", "otel_agents.response.message_id: expected a message id msg_<digits>"),
    ({"attributes": [_attr("otel_agents.tool.chars_in", "stringValue", "many")]},
     "attributes[0]", "otel_agents.tool.chars_in: expected a non-negative integer, got 'many'"),
    ({"attributes": [_attr("gen_ai.conversation.id", "intValue", "7")]},
     "attributes[0]", "gen_ai.conversation.id: expected a string, got 7"),
    ({"events": [{**RECORD_EVENT, "attributes": RECORD_EVENT["attributes"][1:]
                  + [_attr("otel_agents.event.message_id", "stringValue", "m1")]}]},
     "events[0]", "record: message_id 'm1' is not of the form msg_<digits>"),
    ({"startTimeUnixNano": "1700000002000000000"},
     "endTimeUnixNano", "the span ends (1700000001000000000) before it starts (1700000002000000000)"),
    ({"traceId": "0123456789abcdef0123456789abcde"}, "traceId", "invalid id"),
    ({"spanId": "a1"}, "spanId", "invalid id 'a1'"),
]


@pytest.mark.parametrize("change, place, expected", INVALID_FIELDS)
def test_values_the_tree_reads_are_checked_and_named_by_line(change, place, expected):
    good = otlp_span("00000000000000a1", events=[RECORD_EVENT])
    bad = otlp_span("00000000000000a2", parent="00000000000000a1", **change)
    doc = otlp_doc(good, bad)
    # One document per line: the line of the document.
    lines = json.dumps(otlp_doc(otlp_span("00000000000000ff"))) + "\n" + json.dumps(doc) + "\n"
    assert error_of(lines, "t.jsonl").startswith(f"t.jsonl:2: resourceSpans[0].scopeSpans[0].spans[1].{place}: {expected}")
    # A pretty-printed document: the line of the value itself.
    pretty = json.dumps(doc, indent=2)
    message = error_of(pretty, "t.json")
    line = int(message.split(":")[1])
    assert message.startswith(f"t.json:{line}: resourceSpans[0].scopeSpans[0].spans[1].{place}: {expected}")
    text_lines = pretty.splitlines()
    first_key = place.split("[")[0]
    if "[" in place:  # the line opening the item: its first member follows
        assert text_lines[line - 1].strip() == "{" and place.startswith(first_key)
        index = int(place.split("[")[1].rstrip("]"))
        item = bad[first_key][index]
        assert text_lines[line].strip().startswith(json.dumps(next(iter(item)))), (line, text_lines[line])
    else:
        assert text_lines[line - 1].strip().startswith(f'"{first_key}"')


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


def test_spans_nested_too_deep_are_refused_at_the_first_too_deep():
    from otel_agents.tracing.import_checks import MAX_SPAN_DEPTH

    spans = [otlp_span(f"{i:016x}", parent=f"{i - 1:016x}" if i > 1 else None) for i in range(1, MAX_SPAN_DEPTH + 2)]
    assert len(decode_otlp_json(otlp_doc(*spans[:-1]))) == MAX_SPAN_DEPTH
    message = error_of(json.dumps(otlp_doc(*reversed(spans))), "deep.json")
    assert message == f"deep.json:1: resourceSpans[0].scopeSpans[0].spans[0]: spans nested deeper than {MAX_SPAN_DEPTH} (parent links)"


def test_nesting_past_the_limit_is_refused_before_parsing(tmp_path):
    from otel_agents.json_nesting import MAX_DEPTH

    value = {"stringValue": "x"}
    for _ in range(MAX_DEPTH):
        value = {"arrayValue": {"values": [value]}}
    doc = json.dumps(otlp_doc(otlp_span(attributes=[{"key": "k", "value": value}])))
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(otlp_doc(otlp_span("00000000000000b1"))) + "\n" + doc + "\n")
    with pytest.raises(ImportFormatError, match=rf"^{path}:2: nesting deeper than {MAX_DEPTH}$"):
        read_trace_file(path)
    # Far deeper than any parser takes (a RecursionError before): the same one line.
    assert error_of("[" * 100_000 + "]" * 100_000) == f"bad.json:1: nesting deeper than {MAX_DEPTH}"
    with pytest.raises(ImportFormatError, match="nesting deeper than"):
        decode_otlp_json("[" * 5000 + "]" * 5000)
