"""Trace files read from disk for ``otel-agents import``; decoding them is tracing's (trace_text.py)."""

from __future__ import annotations

from pathlib import Path

from otel_agents.tracing.decoding import ImportFormatError
from otel_agents.tracing.spandata import SpanData
from otel_agents.tracing.trace_text import decode_trace_text


def read_trace_file(path: Path | str) -> list[SpanData]:
    """Decode a trace file (format detected); raises ImportFormatError naming file and position."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL byte
        raise ImportFormatError(f"{path!s}:0: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    return decode_trace_text(data, str(path))
