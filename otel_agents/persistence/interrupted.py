"""Spans no process will end any more: ended as interrupted at the session's last sign of life.

A span left open by a process that died (``kill -9``, a power cut) is known by its
start only. Once nobody holds the session (persistence/ownership.py), such a span
will never end, so every reader presents it the same way, computed from the files in
memory: ended at the latest time anything of the session was recorded, with status
ERROR and ``otel_agents.interrupted``, which the tree shows as ``interrupted``. A
writer that recovers the session (``resume``, ``sessions repair``) appends exactly
these ends to the journal, so the files then say what readers showed, and later
runs (which move the last sign of life) do not change them.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData

INTERRUPTED_MESSAGE = "interrupted: the process writing the session ended before this span did"


def last_sign_of_life(spans: Iterable[SpanData]) -> int:
    """The latest start, end or event time among ``spans`` (0 when there are none)."""
    latest = 0
    for span in spans:
        latest = max(latest, span.start_ns, span.end_ns or 0, *(e.time_ns for e in span.events))
    return latest


def live_trace(spans: Iterable[SpanData]) -> str | None:
    """The trace of the session's latest run: the only one a live writer can still be adding to."""
    roots = [s for s in spans if s.parent_span_id is None]
    return max(roots, key=lambda s: (s.start_ns, s.span_id)).trace_id if roots else None


def interrupted_end(span: SpanData, at_ns: int) -> SpanData:
    return dataclasses.replace(
        span,
        end_ns=max(at_ns, span.start_ns),
        attributes={**span.attributes, sc.INTERRUPTED: True},
        status="ERROR",
        status_message=INTERRUPTED_MESSAGE,
    )


def close_interrupted(spans: list[SpanData], *, live: bool) -> tuple[list[SpanData], list[SpanData]]:
    """``(spans with the interrupted ones ended, the ended ones)``.

    ``live``: a process holds the session, so its latest run's open spans may still
    end and are left open; every other open span is interrupted.
    """
    keep = live_trace(spans) if live else None
    if all(s.end_ns is not None or s.trace_id == keep for s in spans):
        return spans, []
    at_ns = last_sign_of_life(spans)
    out, ended = [], []
    for span in spans:
        if span.end_ns is None and span.trace_id != keep:
            span = interrupted_end(span, at_ns)
            ended.append(span)
        out.append(span)
    return out, ended
