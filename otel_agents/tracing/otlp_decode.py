"""OTLP/JSON documents into SpanData: the decoder beside its encoder (otlp_json.py).

Shapes: the Collector file exporter's JSON lines, single ``{"resourceSpans": [...]}``
documents and Jaeger ``/api/v3`` ``{"result": ...}`` envelopes. Ids as hex (the spec)
or base64 (protobuf's own JSON mapping, which some writers use); 64-bit integers as
strings or numbers; enums as numbers or names; camelCase or snake_case keys.
``bytesValue`` stays base64 text (JSON-safe, lossless); ``kvlistValue`` becomes a
dict; ``arrayValue`` a list.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from otel_agents.tracing.decoded_set import finish_spans
from otel_agents.tracing.decoding import (
    HEX_ID,
    STATUSES,
    Where,
    as_bool,
    as_float,
    as_int,
    as_list,
    as_object,
    as_str,
    loads_document,
    proto_field,
    type_name,
)
from otel_agents.tracing.spandata import EventData, LinkData, SpanData

_KIND_BY_NUMBER = {0: "INTERNAL", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS_BY_NUMBER = {0: "UNSET", 1: "OK", 2: "ERROR"}
_KINDS = frozenset(_KIND_BY_NUMBER.values())


def _otlp_id(value: Any, nbytes: int, where: Where, required: bool) -> str | None:
    """Hex (the OTLP/JSON spec) or base64 (protobuf JSON) ids -> lowercase hex; all-zero/empty = none."""
    if value is None or value == "":
        if required:
            raise where.error("missing id")
        return None
    if not isinstance(value, str):
        raise where.error(f"id must be a string, got {type_name(value)}")
    text = value.strip()
    if len(text) == 2 * nbytes and HEX_ID.match(text):
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


def _otlp_value(value: Any, where: Where) -> Any:
    """An AnyValue; an empty AnyValue is None."""
    value = as_object(value, where, "an AnyValue object")
    if not value:
        return None
    for key in ("stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"):
        raw = proto_field(value, key)
        if raw is not None or key in value:
            inner = where.at(key)
            if key == "stringValue":
                return as_str(raw, inner)
            if key == "boolValue":
                return as_bool(raw, inner)
            if key == "intValue":
                return as_int(raw, inner)
            if key == "doubleValue":
                return as_float(raw, inner)
            if key == "bytesValue":
                return as_str(raw, inner)
            if key == "arrayValue":
                values = as_list(proto_field(as_object(raw or {}, inner), "values"), inner.at("values"))
                return [_otlp_value(v, inner.at("values").at(i)) for i, v in enumerate(values)]
            values = as_list(proto_field(as_object(raw or {}, inner), "values"), inner.at("values"))
            return _otlp_attributes(values, inner.at("values"))
    raise where.error(f"unknown value type {sorted(value)}")


_NO_VALUE = object()


def _plain_value(value: Any) -> Any:
    """A one-key AnyValue of a scalar written the usual way, decoded as :func:`_otlp_value` would; else
    ``_NO_VALUE``. Nearly every attribute is one: they skip the positions kept for error messages."""
    if type(value) is not dict or len(value) != 1:
        return _NO_VALUE
    ((kind, raw),) = value.items()
    if kind == "stringValue":
        return raw if type(raw) is str else _NO_VALUE
    if kind == "intValue":
        if type(raw) is int:
            return raw
        if type(raw) is str and raw.isascii() and (raw[1:] if raw[:1] == "-" else raw).isdigit():
            return int(raw)
        return _NO_VALUE
    if kind == "boolValue":
        return raw if type(raw) is bool else _NO_VALUE
    if kind == "doubleValue":
        return raw if type(raw) is float else float(raw) if type(raw) is int else _NO_VALUE
    return _NO_VALUE


def _otlp_attributes(items: Any, where: Where) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, item in enumerate(as_list(items, where)):
        if type(item) is dict and type(key := item.get("key")) is str:
            plain = _plain_value(item.get("value"))
            if plain is not _NO_VALUE:
                out[key] = plain
                continue
        here = where.at(i)  # anything else: the general path, which names the place of a problem
        item = as_object(item, here)
        key = item.get("key")
        if not isinstance(key, str):
            raise here.error(f"attribute key must be a string, got {type_name(key)}")
        out[key] = _otlp_value(item.get("value") or {}, here.at("value"))
    return out


def _enum(value: Any, by_number: dict[int, str], prefix: str, names: frozenset[str], where: Where, default: str) -> str:
    if value is None:
        return default
    if isinstance(value, str) and not value.isdigit():
        name = value.upper().removeprefix(prefix)
        if name == "UNSPECIFIED":
            return default
        if name in names:
            return name
        raise where.error(f"unknown {prefix.lower().rstrip('_')} {value!r}")
    number = as_int(value, where)
    if number not in by_number:
        raise where.error(f"unknown {prefix.lower().rstrip('_')} {number}")
    return by_number[number]


def _otlp_span(span: Any, resource: dict[str, Any], scope: str | None, where: Where) -> SpanData:
    span = as_object(span, where)
    trace_id = _otlp_id(proto_field(span, "traceId"), 16, where.at("traceId"), required=True)
    span_id = _otlp_id(proto_field(span, "spanId"), 8, where.at("spanId"), required=True)
    parent = _otlp_id(proto_field(span, "parentSpanId"), 8, where.at("parentSpanId"), required=False)
    start = proto_field(span, "startTimeUnixNano")
    if start is None:
        raise where.error("missing startTimeUnixNano")
    end = proto_field(span, "endTimeUnixNano")
    status = as_object(proto_field(span, "status") or {}, where.at("status"))
    events = []
    for i, event in enumerate(as_list(proto_field(span, "events"), where.at("events"))):
        here = where.at("events").at(i)
        event = as_object(event, here)
        time_ns = proto_field(event, "timeUnixNano")
        events.append(
            EventData(
                name=as_str(event.get("name"), here.at("name")),
                time_ns=as_int(time_ns, here.at("timeUnixNano")) if time_ns is not None else 0,
                attributes=_otlp_attributes(event.get("attributes"), here.at("attributes")),
            )
        )
    links = []
    for i, link in enumerate(as_list(proto_field(span, "links"), where.at("links"))):
        here = where.at("links").at(i)
        link = as_object(link, here)
        links.append(
            LinkData(
                trace_id=_otlp_id(proto_field(link, "traceId"), 16, here.at("traceId"), required=True),
                span_id=_otlp_id(proto_field(link, "spanId"), 8, here.at("spanId"), required=True),
                attributes=_otlp_attributes(link.get("attributes"), here.at("attributes")),
            )
        )
    message = status.get("message")
    return SpanData(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=as_str(span.get("name"), where.at("name")),
        kind=_enum(span.get("kind"), _KIND_BY_NUMBER, "SPAN_KIND_", _KINDS, where.at("kind"), "INTERNAL"),
        start_ns=as_int(start, where.at("startTimeUnixNano")),
        end_ns=as_int(end, where.at("endTimeUnixNano")) if end is not None else None,
        attributes=_otlp_attributes(span.get("attributes"), where.at("attributes")),
        events=tuple(events),
        links=tuple(links),
        status=_enum(status.get("code"), _STATUS_BY_NUMBER, "STATUS_CODE_", STATUSES, where.at("status", "code"), "UNSET"),
        status_message=as_str(message, where.at("status", "message")) or None,
        resource=resource,
        scope=scope,
    )


def decode_otlp_document(doc: Any, where: Where) -> tuple[list[SpanData], list[Where]]:
    """The spans of one document, and where each is (for the checks over the whole set)."""
    doc = as_object(doc, where)
    where = where.as_format("otlp")
    spans: list[SpanData] = []
    wheres: list[Where] = []
    key = "resourceSpans" if "resourceSpans" in doc else "resource_spans"
    for i, rs in enumerate(as_list(doc.get(key), where.at(key))):
        rs_where = where.at(key).at(i)
        rs = as_object(rs, rs_where)
        res = as_object(rs.get("resource") or {}, rs_where.at("resource"))
        resource = _otlp_attributes(res.get("attributes"), rs_where.at("resource", "attributes"))
        skey = "scopeSpans" if "scopeSpans" in rs or "scope_spans" not in rs else "scope_spans"
        # instrumentationLibrarySpans: the pre-1.0 name some old writers still use.
        if skey not in rs and "instrumentationLibrarySpans" in rs:
            skey = "instrumentationLibrarySpans"
        for j, ss in enumerate(as_list(rs.get(skey), rs_where.at(skey))):
            ss_where = rs_where.at(skey).at(j)
            ss = as_object(ss, ss_where)
            scope_obj = as_object(ss.get("scope") or ss.get("instrumentationLibrary") or {}, ss_where.at("scope"))
            scope = as_str(scope_obj.get("name"), ss_where.at("scope", "name")) or None
            for k, span in enumerate(as_list(ss.get("spans"), ss_where.at("spans"))):
                span_where = ss_where.at("spans", k)
                spans.append(_otlp_span(span, resource, scope, span_where))
                wheres.append(span_where)
    return spans, wheres


def decode_otlp_json(doc: str | bytes | dict[str, Any], source_name: str = "<otlp>", line: int = 1) -> list[SpanData]:
    """One OTLP/JSON ``{"resourceSpans": ...}`` document (or ``{"result": ...}`` envelope)."""
    where = Where(source_name, line)
    if isinstance(doc, (str, bytes)):
        doc = loads_document(doc, where)
    doc = as_object(doc, where)
    if "result" in doc and "resourceSpans" not in doc:
        doc, where = doc["result"], where.at("result")
    return finish_spans(*decode_otlp_document(doc, where))

