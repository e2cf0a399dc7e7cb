"""A trace file's text into SpanData, whatever its format: one document, JSON lines or concatenated documents.

Pure: text in, spans out, nothing written. A text nesting deeper than
json_nesting.MAX_DEPTH is refused before any parser sees it; past the shapes, the
values the tree and ledger read are checked (import_checks.py). An error names the
line of the offending value itself, also inside a pretty-printed document (found on
the error path only, json_location.py).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import orjson

from otel_agents.json_nesting import NestingTooDeep, check_nesting
from otel_agents.tracing.decoded_set import finish_spans
from otel_agents.tracing.decoding import ImportFormatError, Where
from otel_agents.tracing.jaeger_decode import decode_jaeger_document
from otel_agents.tracing.json_location import line_of
from otel_agents.tracing.otlp_decode import decode_otlp_document
from otel_agents.tracing.spandata import SpanData


def _documents(text: str, source: str) -> Iterator[tuple[int, Any]]:
    """(line, document) for one JSON document or several (JSON lines, or concatenated)."""
    try:
        yield 1, orjson.loads(text)
        return
    except orjson.JSONDecodeError:
        pass
    lines = text.split("\n")
    first = next((line for line in lines if line.strip()), "")
    try:
        orjson.loads(first)
        json_lines = True
    except orjson.JSONDecodeError:
        json_lines = False
    if json_lines:
        # One document per line (the Collector file exporter): errors name the line itself.
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                doc = orjson.loads(line)
            except orjson.JSONDecodeError:
                # The standard parser names the column, and accepts NaN and huge integers.
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ImportFormatError(f"{source}:{number}: {_invalid_json(exc)}") from None
            yield number, doc
        return
    decoder = json.JSONDecoder()
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return
        line = text.count("\n", 0, pos) + 1
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"{source}:{exc.lineno}: {_invalid_json(exc)}") from None
        yield line, doc


def _invalid_json(exc: json.JSONDecodeError) -> str:
    # Some of the parser's messages end in "starting at": the column is what they point at.
    if exc.msg.endswith(" at"):
        return f"invalid JSON: {exc.msg[0].lower()}{exc.msg[1:]} column {exc.colno}"
    return f"invalid JSON at column {exc.colno}: {exc.msg}"


def _decode_document(doc: Any, where: Where) -> tuple[list[SpanData], list[Where]]:
    if isinstance(doc, dict):
        if "resourceSpans" in doc or "resource_spans" in doc:
            return decode_otlp_document(doc, where)
        if "result" in doc:
            result = doc["result"]
            if isinstance(result, dict) and ("resourceSpans" in result or "resource_spans" in result):
                return decode_otlp_document(result, where.at("result"))
            raise where.at("result").error("expected {\"resourceSpans\": [...]} inside the result envelope")
        if "error" in doc and len(doc) <= 2:
            raise where.at("error").error(f"the file holds an error response: {doc['error']!r}")
        if "data" in doc or "spans" in doc:
            return decode_jaeger_document(doc, where)
    if isinstance(doc, list) and all(isinstance(t, dict) and "spans" in t for t in doc):
        return decode_jaeger_document(doc, where)
    raise where.error(
        "not a trace document: expected OTLP/JSON {\"resourceSpans\": ...}, {\"result\": ...}, "
        "or Jaeger JSON {\"data\": [...]} / {\"traceID\", \"spans\"}"
    )


def decode_trace_text(text: str | bytes, source_name: str) -> list[SpanData]:
    """Every span in a file's text, whatever its format; ImportFormatError on anything wrong."""
    try:
        check_nesting(text, source_name)  # before any parser: they fail on deep nesting with RecursionError
    except NestingTooDeep as exc:
        raise ImportFormatError(str(exc)) from None
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = text[: exc.start].count(b"\n") + 1
            raise ImportFormatError(f"{source_name}:{line}: not UTF-8 text ({exc.reason})") from None
    text = text.lstrip("\ufeff")
    spans: list[SpanData] = []
    wheres: list[Where] = []
    try:
        for line, doc in _documents(text, source_name):
            decoded, positions = _decode_document(doc, Where(source_name, line))
            spans.extend(decoded)
            wheres.extend(positions)
        if not spans:
            raise ImportFormatError(f"{source_name}:1: no spans in the file")
        return finish_spans(spans, wheres)
    except ImportFormatError as exc:
        raise _relocated(exc, text) from None


def _relocated(exc: ImportFormatError, text: str) -> ImportFormatError:
    """The error naming the line of the value itself (a document can span many lines), and its index
    for a place given by key (an attribute); the document's own line when the text does not say."""
    where = exc.where
    if where is None or not where.steps:
        return exc
    line, steps = line_of(text, where.line, where.steps)
    return Where(where.source, line, tuple(steps), where.fmt).error(exc.detail or "")

