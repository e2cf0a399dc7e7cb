"""OTLP/JSON decoding: real fixtures, our own encoder's output read back, proto JSON's other spellings, errors naming the place."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.shared_fixtures import shared_fixture
from trace_samples import decode_file, error_of, otlp_doc, otlp_span

from otel_agents.tracing.otlp_decode import decode_otlp_json
from otel_agents.tracing.otlp_json import OtlpJsonFileExporter, encode_resource_spans
from otel_agents.tracing.spandata import from_readable
from otel_agents.tracing.trace_text import decode_trace_text


def test_otlp_example_trace_resources_kinds_and_nameless_events():
    spans = decode_file(shared_fixture("otlp", "example_trace.json"))
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
    (span,) = decode_file(shared_fixture("otlp", "proto_example_trace.json"))
    assert span.trace_id == "5b8efff798038103d269b633813fc60c"
    assert span.span_id == "eee19b7ec3c1b174" and span.parent_span_id == "eee19b7ec3c1b173"
    assert span.start_ns == 1544712660000000000 and span.end_ns == 1544712661000000000
    assert span.kind == "SERVER" and span.scope == "my.library"
    assert span.attributes == {"my.span.attr": "some value"}


def test_otlp_span_tags_typed_values():
    (span,) = decode_file(shared_fixture("otlp", "span_tags_trace.json"))
    assert span.attributes == {
        "sameplacetag1": "sameplacevalue",
        "sameplacetag2": 123,
        "sameplacetag4": True,
        "sameplacetag3": 72.5,
        "blob": "AAAwOQ==",
    }
    assert type(span.attributes["sameplacetag2"]) is int


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
    spans = decode_file(path)
    assert sorted(spans, key=lambda s: s.span_id) == sorted((from_readable(s) for s in demo_spans), key=lambda s: s.span_id)


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



_scalars = st.one_of(st.text(max_size=5), st.integers(-2**70, 2**70), st.booleans(), st.none(),
                     st.floats(allow_nan=False), st.sampled_from(["12", "-7", " 3", "-", "1.5", "٣", "true", "NaN", ""]))
_any_values = st.one_of(
    st.dictionaries(st.sampled_from(["stringValue", "intValue", "boolValue", "doubleValue", "bytesValue", "string_value"]),
                    _scalars, max_size=2),
    _scalars, st.lists(_scalars, max_size=1),
)


@settings(max_examples=400, deadline=None)
@given(value=_any_values)
def test_attributes_decode_as_each_value_alone_would_the_plain_ones_included(value):
    """Plain one-key values skip the positions kept for error messages: same value, or the same error."""
    from otel_agents.tracing.decoding import ImportFormatError, Where
    from otel_agents.tracing.otlp_decode import _otlp_attributes, _otlp_value

    where = Where("f.json", 1, ("attributes",))
    try:
        expected = ("value", _otlp_value(value or {}, where.at(0, "value")))
    except (ImportFormatError, OverflowError) as exc:
        expected = ("error", str(exc))
    try:
        got = ("value", _otlp_attributes([{"key": "k", "value": value}], where)["k"])
    except (ImportFormatError, OverflowError) as exc:
        got = ("error", str(exc))
    # By repr: NaN ("NaN" is a valid doubleValue) is not equal to itself, and 1 and 1.0 must not pass as one.
    assert repr(got) == repr(expected) and type(got[1]) is type(expected[1])
