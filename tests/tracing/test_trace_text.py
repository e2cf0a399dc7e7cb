"""A trace file's text in any shape: JSON lines, envelopes, concatenated documents; one-line errors, nothing partial."""

from __future__ import annotations

import json

import pytest
from trace_samples import decode_file, error_of, otlp_doc, otlp_span

from otel_agents.tracing.decoding import ImportFormatError
from otel_agents.tracing.otlp_decode import decode_otlp_json
from otel_agents.tracing.trace_text import decode_trace_text


def test_bad_json_names_file_and_line(tmp_path):
    good = json.dumps(otlp_doc(otlp_span()))
    path = tmp_path / "broken.jsonl"
    path.write_text(good + "\n" + good + "\n" + '{"resourceSpans": [ {"oops"\n')
    with pytest.raises(ImportFormatError) as info:
        decode_file(path)
    assert str(info.value).startswith(f"{path}:3: invalid JSON at column")
    # Nothing partial: the two good lines before it are not returned either.
    assert error_of("{\n  \"resourceSpans\": [,]\n}").startswith("bad.json:2: invalid JSON at column 21")
    # A message that points somewhere ends with where, not mid-phrase.
    cut = good + "\n" + good[:40] + "\n"
    path.write_text(cut)
    with pytest.raises(ImportFormatError) as info:
        decode_file(path)
    assert str(info.value) == f"{path}:2: invalid JSON: unterminated string starting at column {good[:40].rindex(chr(34)) + 1}"


def test_collector_json_lines_and_v3_result_envelopes(tmp_path):
    lines = [
        json.dumps(otlp_doc(otlp_span("00000000000000a1"))),
        json.dumps({"result": otlp_doc(otlp_span("00000000000000a2", parent="00000000000000a1"))}),
        "",
        json.dumps(otlp_doc(otlp_span("00000000000000a3", parent="00000000000000a2"))),
    ]
    path = tmp_path / "collector.jsonl"
    path.write_text("\n".join(lines) + "\n")
    spans = decode_file(path)
    assert [s.span_id[-2:] for s in spans] == ["a1", "a2", "a3"]
    # Concatenated pretty-printed documents work too.
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(otlp_doc(otlp_span("00000000000000b1")), indent=2) + "\n"
                      + json.dumps({"result": otlp_doc(otlp_span("00000000000000b2"))}, indent=2))
    assert [s.span_id[-2:] for s in decode_file(pretty)] == ["b1", "b2"]


def test_files_that_are_not_traces(tmp_path):
    assert "not a trace document" in error_of('{"hello": "world"}')
    assert error_of("").startswith("bad.json:1: no spans")
    assert "no spans" in error_of('{"resourceSpans": []}')
    assert "expected {\"resourceSpans\"" in error_of('{"result": {"spans": 3}}')
    path = tmp_path / "latin1.json"
    path.write_bytes(b'\n\n{"name": "caf\xe9"}')
    with pytest.raises(ImportFormatError, match=r"latin1\.json:3: not UTF-8"):
        decode_file(path)


def test_a_key_with_a_line_break_is_quoted_in_the_one_line_error():
    """Found by the fuzz suite: a process id holding a newline broke the error over two lines."""
    doc = {"data": [{"traceID": "ab" * 16, "spans": [], "processes": {"p\n1": None}}]}
    with pytest.raises(ImportFormatError) as info:
        decode_trace_text(json.dumps(doc), "fuzzed.json")
    message = str(info.value)
    assert "\n" not in message and 'processes["p\\n1"]' in message, message


def test_nesting_past_the_limit_is_refused_before_parsing(tmp_path):
    from otel_agents.json_nesting import MAX_DEPTH

    value = {"stringValue": "x"}
    for _ in range(MAX_DEPTH):
        value = {"arrayValue": {"values": [value]}}
    doc = json.dumps(otlp_doc(otlp_span(attributes=[{"key": "k", "value": value}])))
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(otlp_doc(otlp_span("00000000000000b1"))) + "\n" + doc + "\n")
    with pytest.raises(ImportFormatError, match=rf"^{path}:2: nesting deeper than {MAX_DEPTH}$"):
        decode_file(path)
    # Far deeper than any parser takes (a RecursionError before): the same one line.
    assert error_of("[" * 100_000 + "]" * 100_000) == f"bad.json:1: nesting deeper than {MAX_DEPTH}"
    with pytest.raises(ImportFormatError, match="nesting deeper than"):
        decode_otlp_json("[" * 5000 + "]" * 5000)

