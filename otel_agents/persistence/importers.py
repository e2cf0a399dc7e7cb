"""Decoders for trace files from outside: OTLP/JSON and Jaeger JSON into SpanData.

Pure functions: text in, spans out, nothing written. A file is decoded whole or
not at all; every error names the file, the line and the place inside the
document (``resourceSpans[0].scopeSpans[1].spans[3]``), so nothing partial is
ever imported. The line is the offending value's own, also inside a pretty-printed
document (found on the error path only, json_location.py). Past the shapes, the
values the tree and ledger read are checked (import_checks.py), and a text nesting
deeper than json_nesting.MAX_DEPTH is refused before any parser sees it.

Shapes understood:

- OTLP/JSON: the Collector file exporter's JSON lines, single
  ``{"resourceSpans": [...]}`` documents, Jaeger ``/api/v3`` ``{"result": ...}``
  envelopes (one document or one per line). Ids as hex (the spec) or base64
  (protobuf's own JSON mapping, which some writers use); 64-bit integers as
  strings or numbers; enums as numbers or names; camelCase or snake_case keys.
- Jaeger JSON: ``/api/traces`` ``{"data": [...]}`` and single-trace downloads.

Values: ``bytesValue`` and Jaeger ``binary`` tags stay base64 text (JSON-safe,
lossless); ``kvlistValue`` becomes a dict; ``arrayValue`` a list. Every decoded
value passes through redaction: imported traces reach disk like our own.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterator

import orjson

from otel_agents.json_nesting import NestingTooDeep, check_nesting
from otel_agents.persistence.import_checks import MAX_SPAN_DEPTH, span_problem, too_deep
from otel_agents.persistence.json_location import Keyed, line_of, render_path
from otel_agents.tracing.redaction import redact, redact_attributes
from otel_agents.tracing.spandata import EventData, LinkData, SpanData

# Kept on a span whose id had to be changed (non-hex Jaeger ids, conflicting duplicates).
ORIGINAL_SPAN_ID = "otel_agents.import.original_span_id"
ORIGINAL_TRACE_ID = "otel_agents.import.original_trace_id"

_KIND_BY_NUMBER = {0: "INTERNAL", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS_BY_NUMBER = {0: "UNSET", 1: "OK", 2: "ERROR"}
_KINDS = frozenset(_KIND_BY_NUMBER.values())
_STATUSES = frozenset(_STATUS_BY_NUMBER.values())
_HEX = re.compile(r"^[0-9a-fA-F]+$")


class ImportFormatError(ValueError):
    """A trace file that cannot be imported; the message starts with ``file:line:``.

    ``where`` and ``detail`` (the message without its position) let the caller that
    holds the file's text name the exact line inside a multi-line document.
    """

    def __init__(self, message: str, where: "_Where | None" = None, detail: str | None = None):
        super().__init__(message)
        self.where, self.detail = where, detail


class _Where:
    """A position for error messages: file, line of the document, steps inside it, its format."""

    __slots__ = ("source", "line", "steps", "fmt")

    def __init__(self, source: str, line: int, steps: tuple = (), fmt: str = ""):
        self.source, self.line, self.steps, self.fmt = source, line, steps, fmt

    def at(self, *steps: str | int | Keyed) -> "_Where":
        return _Where(self.source, self.line, self.steps + steps, self.fmt)

    def as_format(self, fmt: str) -> "_Where":
        return _Where(self.source, self.line, self.steps, fmt)

    @property
    def path(self) -> str:
        return render_path(self.steps)

    def error(self, message: str) -> ImportFormatError:
        inside = f" {self.path}:" if self.steps else ""
        return ImportFormatError(f"{self.source}:{self.line}:{inside} {message}", self, message)


# --- generic checks -------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()


def _field(obj: dict[str, Any], camel: str) -> Any:
    """``obj[camel]``, else protobuf's original snake_case name (both are valid proto JSON)."""
    if camel in obj:
        return obj[camel]
    return obj.get(_snake(camel))


def _obj(value: Any, where: _Where, what: str = "an object") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"expected {what}, got {_type_name(value)}")
    return value


def _list(value: Any, where: _Where, allow_missing: bool = True) -> list[Any]:
    if value is None and allow_missing:
        return []
    if not isinstance(value, list):
        raise where.error(f"expected a list, got {_type_name(value)}")
    return value


def _str(value: Any, where: _Where, allow_missing: bool = True) -> str:
    if value is None and allow_missing:
        return ""
    if not isinstance(value, str):
        raise where.error(f"expected a string, got {_type_name(value)}")
    return value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), type(value).__name__)


def _int(value: Any, where: _Where) -> int:
    """An integer given as a number or a decimal string (64-bit values are strings in OTLP/JSON)."""
    if isinstance(value, bool):
        raise where.error("expected an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise where.error(f"expected an integer, got {value!r}")


def _float(value: Any, where: _Where) -> float:
    if isinstance(value, bool):
        raise where.error("expected a number, got a boolean")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # proto JSON writes "NaN", "Infinity" as strings
        except ValueError:
            pass
    raise where.error(f"expected a number, got {value!r}")


def _bool(value: Any, where: _Where) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false"}:
        return value.lower() == "true"
    raise where.error(f"expected a boolean, got {value!r}")


# --- ids -------------------------------------------------------------------------------


def _otlp_id(value: Any, nbytes: int, where: _Where, required: bool) -> str | None:
    """Hex (the OTLP/JSON spec) or base64 (protobuf JSON) ids -> lowercase hex; all-zero/empty = none."""
    if value is None or value == "":
        if required:
            raise where.error("missing id")
        return None
    if not isinstance(value, str):
        raise where.error(f"id must be a string, got {_type_name(value)}")
    text = value.strip()
    if len(text) == 2 * nbytes and _HEX.match(text):
        hex_id = text.lower()
    else:
        urlsafe = "-" in text or "_" in text
        try:
            raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_" if urlsafe else None, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != nbytes:
            raise where.error(f"invalid id {value!r}: expected {2 * nbytes} hex digits or base64 of {nbytes} bytes")
        hex_id = raw.hex()
    if int(hex_id, 16) == 0:
        if required:
            raise where.error(f"invalid all-zero id {value!r}")
        return None
    return hex_id


def _jaeger_id(value: Any, nbytes: int, where: _Where) -> tuple[str, bool]:
    """Jaeger hex ids, left-padded (64-bit trace ids exist). Other strings map to a stable hash.

    Returns the id and whether it had to be derived (the original is then kept as an attribute).
    """
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"missing or invalid id {value!r}")
    text = value.strip()
    if _HEX.match(text) and len(text) <= 2 * nbytes and int(text, 16) != 0:
        return text.lower().rjust(2 * nbytes, "0"), False
    return _derived_id(text, nbytes), True


def _derived_id(text: str, nbytes: int) -> str:
    digest = hashlib.blake2b(text.encode(), digest_size=nbytes).hexdigest()
    return digest if int(digest, 16) else "1".rjust(2 * nbytes, "0")


# --- OTLP/JSON -------------------------------------------------------------------------


def _otlp_value(value: Any, where: _Where) -> Any:
    """An AnyValue; an empty AnyValue is None."""
    value = _obj(value, where, "an AnyValue object")
    if not value:
        return None
    for key in ("stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"):
        raw = _field(value, key)
        if raw is not None or key in value:
            inner = where.at(key)
            if key == "stringValue":
                return _str(raw, inner)
            if key == "boolValue":
                return _bool(raw, inner)
            if key == "intValue":
                return _int(raw, inner)
            if key == "doubleValue":
                return _float(raw, inner)
            if key == "bytesValue":
                return _str(raw, inner)
            if key == "arrayValue":
                values = _list(_field(_obj(raw or {}, inner), "values"), inner.at("values"))
                return [_otlp_value(v, inner.at("values").at(i)) for i, v in enumerate(values)]
            values = _list(_field(_obj(raw or {}, inner), "values"), inner.at("values"))
            return _otlp_attributes(values, inner.at("values"))
    raise where.error(f"unknown value type {sorted(value)}")


def _otlp_attributes(items: Any, where: _Where) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, item in enumerate(_list(items, where)):
        here = where.at(i)
        item = _obj(item, here)
        key = item.get("key")
        if not isinstance(key, str):
            raise here.error(f"attribute key must be a string, got {_type_name(key)}")
        out[key] = _otlp_value(item.get("value") or {}, here.at("value"))
    return out


def _enum(value: Any, by_number: dict[int, str], prefix: str, names: frozenset[str], where: _Where, default: str) -> str:
    if value is None:
        return default
    if isinstance(value, str) and not value.isdigit():
        name = value.upper().removeprefix(prefix)
        if name == "UNSPECIFIED":
            return default
        if name in names:
            return name
        raise where.error(f"unknown {prefix.lower().rstrip('_')} {value!r}")
    number = _int(value, where)
    if number not in by_number:
        raise where.error(f"unknown {prefix.lower().rstrip('_')} {number}")
    return by_number[number]


def _otlp_span(span: Any, resource: dict[str, Any], scope: str | None, where: _Where) -> SpanData:
    span = _obj(span, where)
    trace_id = _otlp_id(_field(span, "traceId"), 16, where.at("traceId"), required=True)
    span_id = _otlp_id(_field(span, "spanId"), 8, where.at("spanId"), required=True)
    parent = _otlp_id(_field(span, "parentSpanId"), 8, where.at("parentSpanId"), required=False)
    start = _field(span, "startTimeUnixNano")
    if start is None:
        raise where.error("missing startTimeUnixNano")
    end = _field(span, "endTimeUnixNano")
    status = _obj(_field(span, "status") or {}, where.at("status"))
    events = []
    for i, event in enumerate(_list(_field(span, "events"), where.at("events"))):
        here = where.at("events").at(i)
        event = _obj(event, here)
        time_ns = _field(event, "timeUnixNano")
        events.append(
            EventData(
                name=_str(event.get("name"), here.at("name")),
                time_ns=_int(time_ns, here.at("timeUnixNano")) if time_ns is not None else 0,
                attributes=_otlp_attributes(event.get("attributes"), here.at("attributes")),
            )
        )
    links = []
    for i, link in enumerate(_list(_field(span, "links"), where.at("links"))):
        here = where.at("links").at(i)
        link = _obj(link, here)
        links.append(
            LinkData(
                trace_id=_otlp_id(_field(link, "traceId"), 16, here.at("traceId"), required=True),
                span_id=_otlp_id(_field(link, "spanId"), 8, here.at("spanId"), required=True),
                attributes=_otlp_attributes(link.get("attributes"), here.at("attributes")),
            )
        )
    message = status.get("message")
    return SpanData(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=_str(span.get("name"), where.at("name")),
        kind=_enum(span.get("kind"), _KIND_BY_NUMBER, "SPAN_KIND_", _KINDS, where.at("kind"), "INTERNAL"),
        start_ns=_int(start, where.at("startTimeUnixNano")),
        end_ns=_int(end, where.at("endTimeUnixNano")) if end is not None else None,
        attributes=_otlp_attributes(span.get("attributes"), where.at("attributes")),
        events=tuple(events),
        links=tuple(links),
        status=_enum(status.get("code"), _STATUS_BY_NUMBER, "STATUS_CODE_", _STATUSES, where.at("status", "code"), "UNSET"),
        status_message=_str(message, where.at("status", "message")) or None,
        resource=resource,
        scope=scope,
    )


def _decode_otlp(doc: Any, where: _Where) -> tuple[list[SpanData], list[_Where]]:
    """The spans of one document, and where each is (for the checks over the whole set)."""
    doc = _obj(doc, where)
    where = where.as_format("otlp")
    spans: list[SpanData] = []
    wheres: list[_Where] = []
    key = "resourceSpans" if "resourceSpans" in doc else "resource_spans"
    for i, rs in enumerate(_list(doc.get(key), where.at(key))):
        rs_where = where.at(key).at(i)
        rs = _obj(rs, rs_where)
        res = _obj(rs.get("resource") or {}, rs_where.at("resource"))
        resource = _otlp_attributes(res.get("attributes"), rs_where.at("resource", "attributes"))
        skey = "scopeSpans" if "scopeSpans" in rs or "scope_spans" not in rs else "scope_spans"
        # instrumentationLibrarySpans: the pre-1.0 name some old writers still use.
        if skey not in rs and "instrumentationLibrarySpans" in rs:
            skey = "instrumentationLibrarySpans"
        for j, ss in enumerate(_list(rs.get(skey), rs_where.at(skey))):
            ss_where = rs_where.at(skey).at(j)
            ss = _obj(ss, ss_where)
            scope_obj = _obj(ss.get("scope") or ss.get("instrumentationLibrary") or {}, ss_where.at("scope"))
            scope = _str(scope_obj.get("name"), ss_where.at("scope", "name")) or None
            for k, span in enumerate(_list(ss.get("spans"), ss_where.at("spans"))):
                span_where = ss_where.at("spans", k)
                spans.append(_otlp_span(span, resource, scope, span_where))
                wheres.append(span_where)
    return spans, wheres


def decode_otlp_json(doc: str | bytes | dict[str, Any], source_name: str = "<otlp>", line: int = 1) -> list[SpanData]:
    """One OTLP/JSON ``{"resourceSpans": ...}`` document (or ``{"result": ...}`` envelope)."""
    where = _Where(source_name, line)
    if isinstance(doc, (str, bytes)):
        doc = _loads(doc, where)
    doc = _obj(doc, where)
    if "result" in doc and "resourceSpans" not in doc:
        doc, where = doc["result"], where.at("result")
    return _finish(*_decode_otlp(doc, where))


# --- Jaeger JSON -----------------------------------------------------------------------


def _jaeger_value(tag: dict[str, Any], where: _Where) -> Any:
    kind = str(tag.get("type") or "string").lower()
    value = tag.get("value")
    here = where.at("value")
    if kind == "string":
        return value if isinstance(value, str) else json.dumps(value)
    if kind == "bool":
        return _bool(value, here)
    if kind in {"int64", "int32", "int"}:
        return _int(value, here)
    if kind in {"float64", "float32", "float"}:
        return _float(value, here)
    if kind == "binary":
        return _str(value, here)
    raise where.at("type").error(f"unknown tag type {tag.get('type')!r}")


def _jaeger_tags(tags: Any, where: _Where) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, tag in enumerate(_list(tags, where)):
        here = where.at(i)
        tag = _obj(tag, here)
        key = tag.get("key")
        if not isinstance(key, str):
            raise here.error(f"tag key must be a string, got {_type_name(key)}")
        out[key] = _jaeger_value(tag, here)
    return out


_JAEGER_KINDS = {"server": "SERVER", "client": "CLIENT", "producer": "PRODUCER", "consumer": "CONSUMER", "internal": "INTERNAL"}


def _jaeger_trace(trace: Any, where: _Where) -> list[SpanData]:
    trace = _obj(trace, where, "a Jaeger trace object")
    processes: dict[str, dict[str, Any]] = {}
    for pid, process in _obj(trace.get("processes") or {}, where.at("processes")).items():
        here = where.at("processes").at(pid)
        process = _obj(process, here)
        resource = {}
        service = process.get("serviceName")
        if service is not None:
            resource["service.name"] = _str(service, here.at("serviceName"))
        resource.update(_jaeger_tags(process.get("tags"), here.at("tags")))
        processes[pid] = resource
    spans = []
    for i, span in enumerate(_list(trace.get("spans"), where.at("spans"), allow_missing=False)):
        spans.append(_jaeger_span(span, processes, where.at("spans").at(i)))
    return spans


def _jaeger_span(span: Any, processes: dict[str, dict[str, Any]], where: _Where) -> SpanData:
    span = _obj(span, where)
    if "traceID" not in span:
        raise where.error("missing traceID")
    if "spanID" not in span:
        raise where.error("missing spanID")
    trace_id, trace_derived = _jaeger_id(span["traceID"], 16, where.at("traceID"))
    span_id, span_derived = _jaeger_id(span["spanID"], 8, where.at("spanID"))
    if "startTime" not in span:
        raise where.error("missing startTime")
    start_us = _int(span["startTime"], where.at("startTime"))
    duration = span.get("duration")
    attributes = _jaeger_tags(span.get("tags"), where.at("tags"))
    parent: str | None = None
    links = []
    for i, ref in enumerate(_list(span.get("references"), where.at("references"))):
        here = where.at("references").at(i)
        ref = _obj(ref, here)
        ref_type = str(ref.get("refType") or "CHILD_OF").upper()
        ref_trace, _ = _jaeger_id(ref.get("traceID") or span["traceID"], 16, here.at("traceID"))
        ref_span, _ = _jaeger_id(ref.get("spanID"), 8, here.at("spanID"))
        # The parent is the first CHILD_OF in the same trace (as Jaeger's own model says);
        # every other reference is kept as a link.
        if ref_type == "CHILD_OF" and parent is None and ref_trace == trace_id:
            parent = ref_span
        else:
            links.append(LinkData(ref_trace, ref_span, {"jaeger.ref_type": ref_type}))
    kind = "INTERNAL"
    if "span.kind" in attributes:
        kind = _JAEGER_KINDS.get(str(attributes.pop("span.kind")).lower(), "INTERNAL")
    status, status_message = "UNSET", None
    if "otel.status_code" in attributes:
        code = str(attributes.pop("otel.status_code")).upper().removeprefix("STATUS_CODE_")
        status = code if code in _STATUSES else "UNSET"
    if "otel.status_description" in attributes:
        status_message = str(attributes.pop("otel.status_description")) or None
    if attributes.get("error") is True:
        attributes.pop("error")
        status = "ERROR"
    scope = attributes.pop("otel.scope.name", None)
    attributes.pop("otel.scope.version", None)
    if trace_derived:
        attributes[ORIGINAL_TRACE_ID] = span["traceID"]
    if span_derived:
        attributes[ORIGINAL_SPAN_ID] = span["spanID"]
    events = []
    for i, log in enumerate(_list(span.get("logs"), where.at("logs"))):
        here = where.at("logs").at(i)
        log = _obj(log, here)
        fields = _jaeger_tags(log.get("fields"), here.at("fields"))
        name = fields.pop("event", "log")
        events.append(EventData(str(name), _int(log.get("timestamp", start_us), here.at("timestamp")) * 1000, fields))
    pid = span.get("processID")
    resource = dict(processes.get(pid, {})) if isinstance(pid, str) else {}
    if isinstance(span.get("process"), dict):  # older single-trace downloads embed the process
        resource = _jaeger_tags(span["process"].get("tags"), where.at("process", "tags"))
        if span["process"].get("serviceName") is not None:
            resource = {"service.name": str(span["process"]["serviceName"]), **resource}
    return SpanData(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=_str(span.get("operationName"), where.at("operationName")),
        kind=kind,
        start_ns=start_us * 1000,
        end_ns=(start_us + _int(duration, where.at("duration"))) * 1000 if duration is not None else None,
        attributes=attributes,
        events=tuple(events),
        links=tuple(links),
        status=status,
        status_message=status_message,
        resource=resource,
        scope=str(scope) if scope else None,
    )


def decode_jaeger_json(doc: str | bytes | dict[str, Any] | list[Any], source_name: str = "<jaeger>", line: int = 1) -> list[SpanData]:
    """Jaeger ``/api/traces`` ``{"data": [...]}``, a single trace download, or a list of traces."""
    where = _Where(source_name, line)
    if isinstance(doc, (str, bytes)):
        doc = _loads(doc, where)
    spans, wheres = _decode_jaeger(doc, where)
    return _finish(spans, wheres)


def _decode_jaeger(doc: Any, where: _Where) -> tuple[list[SpanData], list[_Where]]:
    where = where.as_format("jaeger")
    if isinstance(doc, dict) and "data" in doc:
        traces, base = _list(doc["data"], where.at("data"), allow_missing=False), where.at("data")
        if doc.get("errors"):
            raise where.at("errors").error(f"the Jaeger query reported errors: {doc['errors']!r}")
    elif isinstance(doc, list):
        traces, base = doc, where
    else:
        traces, base = [doc], where
    spans: list[SpanData] = []
    wheres: list[_Where] = []
    for i, trace in enumerate(traces):
        here = base if base is where and not isinstance(doc, list) else base.at(i)
        decoded = _jaeger_trace(trace, here)
        spans.extend(decoded)
        wheres.extend(here.at("spans").at(k) for k in range(len(decoded)))
    return spans, wheres


# --- whole files ------------------------------------------------------------------------


def _loads(text: str | bytes, where: _Where) -> Any:
    try:
        check_nesting(text, where.source)
    except NestingTooDeep as exc:
        raise ImportFormatError(str(exc)) from None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise where.error(f"invalid JSON: {exc}") from None


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
                    raise ImportFormatError(f"{source}:{number}: invalid JSON at column {exc.colno}: {exc.msg}") from None
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
            raise ImportFormatError(f"{source}:{exc.lineno}: invalid JSON at column {exc.colno}: {exc.msg}") from None
        yield line, doc


def _decode_document(doc: Any, where: _Where) -> tuple[list[SpanData], list[_Where]]:
    if isinstance(doc, dict):
        if "resourceSpans" in doc or "resource_spans" in doc:
            return _decode_otlp(doc, where)
        if "result" in doc:
            result = doc["result"]
            if isinstance(result, dict) and ("resourceSpans" in result or "resource_spans" in result):
                return _decode_otlp(result, where.at("result"))
            raise where.at("result").error("expected {\"resourceSpans\": [...]} inside the result envelope")
        if "error" in doc and len(doc) <= 2:
            raise where.at("error").error(f"the file holds an error response: {doc['error']!r}")
        if "data" in doc or "spans" in doc:
            return _decode_jaeger(doc, where)
    if isinstance(doc, list) and all(isinstance(t, dict) and "spans" in t for t in doc):
        return _decode_jaeger(doc, where)
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
    wheres: list[_Where] = []
    try:
        for line, doc in _documents(text, source_name):
            decoded, positions = _decode_document(doc, _Where(source_name, line))
            spans.extend(decoded)
            wheres.extend(positions)
        if not spans:
            raise ImportFormatError(f"{source_name}:1: no spans in the file")
        return _finish(spans, wheres)
    except ImportFormatError as exc:
        raise _relocated(exc, text) from None


def _relocated(exc: ImportFormatError, text: str) -> ImportFormatError:
    """The error naming the line of the value itself (a document can span many lines), and its index
    for a place given by key (an attribute); the document's own line when the text does not say."""
    where = exc.where
    if where is None or not where.steps:
        return exc
    line, steps = line_of(text, where.line, where.steps)
    return _Where(where.source, line, tuple(steps), where.fmt).error(exc.detail or "")


def read_trace_file(path: Path | str) -> list[SpanData]:
    """Decode a trace file (format detected); raises ImportFormatError naming file and position."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL byte
        raise ImportFormatError(f"{path!s}:0: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    return decode_trace_text(data, str(path))


# --- checks over the whole set ----------------------------------------------------------


def _finish(spans: list[SpanData], wheres: list[_Where]) -> list[SpanData]:
    """Redact, check what the tree reads, drop exact duplicates, re-id conflicting duplicates,
    refuse parent cycles and nesting too deep."""
    spans = [_redacted(s) for s in spans]
    for span, where in zip(spans, wheres):
        problem = span_problem(span)
        if problem is not None:
            raise _problem_where(problem, where).error(problem.message)
    spans, wheres = _dedupe(spans, wheres)
    _check_cycles(spans, wheres)
    deep = too_deep(spans)
    if deep is not None:
        where = wheres[next(i for i, s in enumerate(spans) if s is deep)]
        raise where.error(f"spans nested deeper than {MAX_SPAN_DEPTH} (parent links)")
    return spans


# Where each part of a span a check names sits in its document, by format.
_PARTS = {
    "otlp": {"attributes": "attributes", "event": "events", "start": "startTimeUnixNano", "end": "endTimeUnixNano"},
    "jaeger": {"attributes": "tags", "event": "logs", "start": "startTime", "end": "duration"},
}


def _problem_where(problem: Any, where: _Where) -> _Where:
    part = _PARTS.get(where.fmt, _PARTS["otlp"])[problem.part]
    if problem.key is not None:
        return where.at(part, Keyed(problem.key))
    if problem.event is not None:
        return where.at(part, problem.event)
    return where.at(part)


def _redacted(span: SpanData) -> SpanData:
    return SpanData(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=redact(span.name),
        kind=span.kind,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        attributes=redact_attributes(span.attributes),
        events=tuple(EventData(redact(e.name), e.time_ns, redact_attributes(e.attributes)) for e in span.events),
        links=tuple(LinkData(link.trace_id, link.span_id, redact_attributes(link.attributes)) for link in span.links),
        status=span.status,
        status_message=redact(span.status_message) if span.status_message else span.status_message,
        resource=redact_attributes(span.resource),
        scope=span.scope,
    )


def _dedupe(spans: list[SpanData], wheres: list[_Where]) -> tuple[list[SpanData], list[_Where]]:
    """Exact repeats (a retried export, a span in two files' overlap) count once.

    Different spans sharing an id happen in real traces (Zipkin-style shared client/server
    spans): as Jaeger's UI does, the later ones get a new id (derived, so re-imports agree),
    keep the original under ORIGINAL_SPAN_ID, and children stay with the first.
    """
    seen: dict[tuple[str, str], SpanData] = {}
    out: list[SpanData] = []
    out_wheres: list[_Where] = []
    taken = {(s.trace_id, s.span_id) for s in spans}
    for span, where in zip(spans, wheres):
        key = (span.trace_id, span.span_id)
        first = seen.get(key)
        if first is None:
            seen[key] = span
        elif first == span:
            continue
        else:
            n = 1
            while (span.trace_id, new_id := _derived_id(f"{span.span_id}_{n}", 8)) in taken:
                n += 1
            taken.add((span.trace_id, new_id))
            attributes = {**span.attributes, ORIGINAL_SPAN_ID: span.attributes.get(ORIGINAL_SPAN_ID, span.span_id)}
            span = _replace(span, span_id=new_id, attributes=attributes)
            seen[(span.trace_id, new_id)] = span
        out.append(span)
        out_wheres.append(where)
    return out, out_wheres


def _replace(span: SpanData, **changes: Any) -> SpanData:
    return dataclasses.replace(span, **changes)


def _check_cycles(spans: list[SpanData], wheres: list[_Where]) -> None:
    parent_of = {(s.trace_id, s.span_id): s.parent_span_id for s in spans}
    where_of = {(s.trace_id, s.span_id): w for s, w in zip(spans, wheres)}
    done: set[tuple[str, str]] = set()
    for start in parent_of:
        path: list[tuple[str, str]] = []
        on_path: set[tuple[str, str]] = set()
        node: tuple[str, str] | None = start
        while node is not None and node in parent_of and node not in done:
            if node in on_path:
                cycle = path[path.index(node):]
                ids = " -> ".join(n[1] for n in cycle + [node])
                raise where_of[node].error(f"cycle in parent links: span {ids}")
            path.append(node)
            on_path.add(node)
            parent = parent_of[node]
            node = (node[0], parent) if parent else None
        done.update(path)
