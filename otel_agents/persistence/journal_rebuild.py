"""Spans back from spans.jsonl lines (journal.py), with the records of events.jsonl put back on them."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from otel_agents.persistence.events_file import EventLine
from otel_agents.persistence.timestamps import parse_iso_ts
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import to_span_attributes
from otel_agents.tracing.spandata import EventData, LinkData, SpanData


def _journal_error(message: str) -> ValueError:
    # journal.py re-exports this module's functions, so its error class is looked up when raised.
    from otel_agents.persistence.journal import JournalError

    return JournalError(message)


@dataclass(frozen=True)
class Rebuilt:
    spans: list[SpanData]
    # Records whose span is not in the journal (they cannot be placed in the tree).
    orphans: list[EventLine] = field(default_factory=list)


def _record_event(line: EventLine) -> EventData:
    ts = parse_iso_ts(line.ts) if line.ts else 0
    return EventData(sc.record_event_name(line.record["event_type"]), ts, to_span_attributes(line.record))


def rebuild(journal_lines: Iterable[Mapping[str, Any]], event_lines: Iterable[EventLine]) -> Rebuilt:
    """Spans from journal lines, records put back on their spans; raises JournalError on contradictions."""
    contexts: dict[str, tuple[dict[str, Any], str | None]] = {}
    starts: dict[str, Mapping[str, Any]] = {}
    ends: dict[str, Mapping[str, Any]] = {}
    for line in journal_lines:
        if "start" in line:
            span_id = line["start"]
            known = starts.get(span_id)
            if known is not None and known != line:
                raise _journal_error(f"span {span_id} starts twice with different facts")
            starts[span_id] = line
        elif "end" in line:
            span_id = line["end"]
            if span_id not in starts:
                raise _journal_error(f"span {span_id} ends but its start is not in the journal")
            known = ends.get(span_id)
            if known is not None and known != line:
                raise _journal_error(f"span {span_id} ends twice with different facts")
            ends[span_id] = line
        elif "ctx" in line:
            contexts[line["ctx"]] = (dict(line.get("resource") or {}), line.get("scope"))
    records: dict[str, list[EventData]] = {}
    orphans: list[EventLine] = []
    for event_line in event_lines:
        start = starts.get(event_line.span_id or "")
        if start is None or start["trace"] != event_line.trace_id:
            orphans.append(event_line)
            continue
        records.setdefault(start["start"], []).append(_record_event(event_line))
    spans = []
    for span_id, start in starts.items():
        end = ends.get(span_id, {})
        attributes = dict(start.get("attrs") or {})
        attributes.update(end.get("attrs") or {})
        others = [EventData(e[0], e[1], dict(e[2])) for e in end.get("events") or []]
        # Records keep their file order and other events theirs; the two are interleaved by time.
        events = tuple(heapq.merge(records.get(span_id, []), others, key=lambda e: e.time_ns))
        links = end["links"] if "links" in end else start.get("links") or []
        resource, scope = contexts.get(start.get("ctx") or "", ({}, None))
        spans.append(
            SpanData(
                trace_id=start["trace"],
                span_id=span_id,
                parent_span_id=start.get("parent"),
                name=start.get("name", ""),
                kind=start.get("kind", "INTERNAL"),
                start_ns=start["ns"],
                end_ns=end.get("ns"),
                attributes=attributes,
                events=events,
                links=tuple(LinkData(l[0], l[1], dict(l[2])) for l in links),
                status=end.get("status", "UNSET"),
                status_message=end.get("message"),
                resource=dict(resource),
                scope=scope,
            )
        )
    return Rebuilt(spans, orphans)


def spans_from_journal(journal_lines: Iterable[Mapping[str, Any]], event_lines: Iterable[EventLine]) -> list[SpanData]:
    """Ended spans whole, open ones by their start (``end_ns`` None), records re-attached in order."""
    return rebuild(journal_lines, event_lines).spans
