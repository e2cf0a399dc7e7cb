"""Jaeger JSON into SpanData: ``/api/traces`` ``{"data": [...]}``, single-trace downloads, lists of traces.

Non-hex ids map to a stable hash (the original kept as an attribute); the parent is
the first CHILD_OF reference in the same trace, other references become links;
``binary`` tags stay base64 text.
"""

from __future__ import annotations

import json
from typing import Any

from otel_agents.tracing.decoded_set import finish_spans
from otel_agents.tracing.decoding import (
    HEX_ID,
    ORIGINAL_SPAN_ID,
    ORIGINAL_TRACE_ID,
    STATUSES,
    Where,
    as_bool,
    as_float,
    as_int,
    as_list,
    as_object,
    as_str,
    derived_id,
    loads_document,
    type_name,
)
from otel_agents.tracing.spandata import EventData, LinkData, SpanData


def _jaeger_id(value: Any, nbytes: int, where: Where) -> tuple[str, bool]:
    """Jaeger hex ids, left-padded (64-bit trace ids exist). Other strings map to a stable hash.

    Returns the id and whether it had to be derived (the original is then kept as an attribute).
    """
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"missing or invalid id {value!r}")
    text = value.strip()
    if HEX_ID.match(text) and len(text) <= 2 * nbytes and int(text, 16) != 0:
        return text.lower().rjust(2 * nbytes, "0"), False
    return derived_id(text, nbytes), True


def _jaeger_value(tag: dict[str, Any], where: Where) -> Any:
    kind = str(tag.get("type") or "string").lower()
    value = tag.get("value")
    here = where.at("value")
    if kind == "string":
        return value if isinstance(value, str) else json.dumps(value)
    if kind == "bool":
        return as_bool(value, here)
    if kind in {"int64", "int32", "int"}:
        return as_int(value, here)
    if kind in {"float64", "float32", "float"}:
        return as_float(value, here)
    if kind == "binary":
        return as_str(value, here)
    raise where.at("type").error(f"unknown tag type {tag.get('type')!r}")


def _jaeger_tags(tags: Any, where: Where) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, tag in enumerate(as_list(tags, where)):
        here = where.at(i)
        tag = as_object(tag, here)
        key = tag.get("key")
        if not isinstance(key, str):
            raise here.error(f"tag key must be a string, got {type_name(key)}")
        out[key] = _jaeger_value(tag, here)
    return out


_JAEGER_KINDS = {"server": "SERVER", "client": "CLIENT", "producer": "PRODUCER", "consumer": "CONSUMER", "internal": "INTERNAL"}


def _jaeger_trace(trace: Any, where: Where) -> list[SpanData]:
    trace = as_object(trace, where, "a Jaeger trace object")
    processes: dict[str, dict[str, Any]] = {}
    for pid, process in as_object(trace.get("processes") or {}, where.at("processes")).items():
        here = where.at("processes").at(pid)
        process = as_object(process, here)
        resource = {}
        service = process.get("serviceName")
        if service is not None:
            resource["service.name"] = as_str(service, here.at("serviceName"))
        resource.update(_jaeger_tags(process.get("tags"), here.at("tags")))
        processes[pid] = resource
    spans = []
    for i, span in enumerate(as_list(trace.get("spans"), where.at("spans"), allow_missing=False)):
        spans.append(_jaeger_span(span, processes, where.at("spans").at(i)))
    return spans


def _jaeger_span(span: Any, processes: dict[str, dict[str, Any]], where: Where) -> SpanData:
    span = as_object(span, where)
    if "traceID" not in span:
        raise where.error("missing traceID")
    if "spanID" not in span:
        raise where.error("missing spanID")
    trace_id, trace_derived = _jaeger_id(span["traceID"], 16, where.at("traceID"))
    span_id, span_derived = _jaeger_id(span["spanID"], 8, where.at("spanID"))
    if "startTime" not in span:
        raise where.error("missing startTime")
    start_us = as_int(span["startTime"], where.at("startTime"))
    duration = span.get("duration")
    attributes = _jaeger_tags(span.get("tags"), where.at("tags"))
    parent: str | None = None
    links = []
    for i, ref in enumerate(as_list(span.get("references"), where.at("references"))):
        here = where.at("references").at(i)
        ref = as_object(ref, here)
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
        status = code if code in STATUSES else "UNSET"
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
    for i, log in enumerate(as_list(span.get("logs"), where.at("logs"))):
        here = where.at("logs").at(i)
        log = as_object(log, here)
        fields = _jaeger_tags(log.get("fields"), here.at("fields"))
        name = fields.pop("event", "log")
        events.append(EventData(str(name), as_int(log.get("timestamp", start_us), here.at("timestamp")) * 1000, fields))
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
        name=as_str(span.get("operationName"), where.at("operationName")),
        kind=kind,
        start_ns=start_us * 1000,
        end_ns=(start_us + as_int(duration, where.at("duration"))) * 1000 if duration is not None else None,
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
    where = Where(source_name, line)
    if isinstance(doc, (str, bytes)):
        doc = loads_document(doc, where)
    spans, wheres = decode_jaeger_document(doc, where)
    return finish_spans(spans, wheres)


def decode_jaeger_document(doc: Any, where: Where) -> tuple[list[SpanData], list[Where]]:
    where = where.as_format("jaeger")
    if isinstance(doc, dict) and "data" in doc:
        traces, base = as_list(doc["data"], where.at("data"), allow_missing=False), where.at("data")
        if doc.get("errors"):
            raise where.at("errors").error(f"the Jaeger query reported errors: {doc['errors']!r}")
    elif isinstance(doc, list):
        traces, base = doc, where
    else:
        traces, base = [doc], where
    spans: list[SpanData] = []
    wheres: list[Where] = []
    for i, trace in enumerate(traces):
        here = base if base is where and not isinstance(doc, list) else base.at(i)
        decoded = _jaeger_trace(trace, here)
        spans.extend(decoded)
        wheres.extend(here.at("spans").at(k) for k in range(len(decoded)))
    return spans, wheres

