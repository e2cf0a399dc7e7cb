"""Checks over a decoded set: redaction, duplicates, cycles, values the tree reads (named by line), nesting depth."""

from __future__ import annotations

import json

import pytest
from trace_samples import error_of, otlp_doc, otlp_span

from otel_agents.tracing.decoding import ORIGINAL_SPAN_ID
from otel_agents.tracing.otlp_decode import decode_otlp_json
from otel_agents.tracing.redaction import MARKER


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


def _attr(key, kind, value):
    return {"key": key, "value": {kind: value}}


RECORD_EVENT = {"timeUnixNano": "1700000000500000000", "name": "transcript_entry", "attributes": [
    _attr("otel_agents.event.message_id", "stringValue", "msg_000001"),
    _attr("otel_agents.event.agent_id", "stringValue", "agent_001"),
    _attr("otel_agents.event.role", "stringValue", "user"), _attr("otel_agents.event.content", "stringValue", "hi")]}

# (what to change on the second span, the place the error names, what it says)
INVALID_FIELDS = [
    ({"attributes": [_attr("gen_ai.usage.input_tokens", "intValue", "-5")]},
     "attributes[0]", "gen_ai.usage.input_tokens: expected a non-negative integer below 2**63, got -5"),
    ({"attributes": [_attr("x", "stringValue", "y"), _attr("gen_ai.usage.output_tokens", "doubleValue", 2.5)]},
     "attributes[1]", "gen_ai.usage.output_tokens: expected a non-negative integer below 2**63, got 2.5"),
    ({"attributes": [_attr("gen_ai.usage.cost", "doubleValue", "NaN")]},
     "attributes[0]", "gen_ai.usage.cost: expected a finite non-negative number below 1e15, got nan"),
    ({"attributes": [_attr("gen_ai.usage.cost", "doubleValue", -1)]},
     "attributes[0]", "gen_ai.usage.cost: expected a finite non-negative number below 1e15, got -1.0"),
    ({"attributes": [_attr("gen_ai.usage.cost", "stringValue", "cheap")]},
     "attributes[0]", "gen_ai.usage.cost: expected a finite non-negative number below 1e15, got 'cheap'"),
    ({"attributes": [_attr("otel_agents.response.message_id", "stringValue", "reply-1")]},
     "attributes[0]", "otel_agents.response.message_id: expected a message id msg_<digits>"),
    ({"attributes": [_attr("otel_agents.tool.chars_in", "stringValue", "many")]},
     "attributes[0]", "otel_agents.tool.chars_in: expected a non-negative integer below 2**63, got 'many'"),
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

