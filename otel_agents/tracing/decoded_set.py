"""Checks over a decoded set of spans: redacted, values checked, duplicates merged or re-id'd, no cycles, not too deep.

Every decoded value passes through redaction: imported traces reach disk like our own.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from otel_agents.tracing.decoding import ORIGINAL_SPAN_ID, Where, derived_id
from otel_agents.tracing.import_checks import span_problem
from otel_agents.tracing.json_location import Keyed
from otel_agents.tracing.redaction import redact, redact_attributes
from otel_agents.tracing.spandata import EventData, LinkData, SpanData


def finish_spans(spans: list[SpanData], wheres: list[Where]) -> list[SpanData]:
    """Redact, check what the tree reads, drop exact duplicates, re-id conflicting duplicates,
    refuse parent cycles."""
    resources: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}  # a document's spans share one resource
    spans = [_redacted(s, resources) for s in spans]
    for span, where in zip(spans, wheres):
        problem = span_problem(span)
        if problem is not None:
            raise _problem_where(problem, where).error(problem.message)
    spans, wheres = _dedupe(spans, wheres)
    _check_cycles(spans, wheres)
    return spans


# Where each part of a span a check names sits in its document, by format.
_PARTS = {
    "otlp": {"attributes": "attributes", "event": "events", "start": "startTimeUnixNano", "end": "endTimeUnixNano"},
    "jaeger": {"attributes": "tags", "event": "logs", "start": "startTime", "end": "duration"},
}


def _problem_where(problem: Any, where: Where) -> Where:
    part = _PARTS.get(where.fmt, _PARTS["otlp"])[problem.part]
    if problem.key is not None:
        return where.at(part, Keyed(problem.key))
    if problem.event is not None:
        return where.at(part, problem.event)
    return where.at(part)


def _redacted(span: SpanData, resources: dict[int, tuple[dict[str, Any], dict[str, Any]]]) -> SpanData:
    """The span redacted; its resource redacted once for all the spans that share it (one per document)."""
    known = resources.get(id(span.resource))  # the original is kept with it, so its id is not reused
    if known is None:
        known = resources[id(span.resource)] = (span.resource, redact_attributes(span.resource))
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
        resource=known[1],
        scope=span.scope,
    )


def _dedupe(spans: list[SpanData], wheres: list[Where]) -> tuple[list[SpanData], list[Where]]:
    """Exact repeats (a retried export, a span in two files' overlap) count once.

    Different spans sharing an id happen in real traces (Zipkin-style shared client/server
    spans): as Jaeger's UI does, the later ones get a new id (derived, so re-imports agree),
    keep the original under ORIGINAL_SPAN_ID, and children stay with the first.
    """
    seen: dict[tuple[str, str], SpanData] = {}
    out: list[SpanData] = []
    out_wheres: list[Where] = []
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
            while (span.trace_id, new_id := derived_id(f"{span.span_id}_{n}", 8)) in taken:
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


def _check_cycles(spans: list[SpanData], wheres: list[Where]) -> None:
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
