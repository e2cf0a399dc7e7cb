"""events.jsonl: the seed-001 event stream of one session, append-only.

Each line is one record (seed-001 field names, in seed order) followed by
``ts`` (ISO 8601 UTC, nanoseconds), ``trace_id`` and ``span_id`` of the span the
record was emitted on. Lines are written whole and flushed one by one, so a
crash can tear at most the last line; the reader skips such a line with a
warning, and the writer cuts it off before appending again (a whole record
that lost only its newline is kept, as the reader kept it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import orjson

from otel_agents.tracing.records import RecordError, validate_record

from otel_agents.persistence.gc_pause import collector_paused
from otel_agents.persistence.line_appender import LineAppender, cut_torn_tail
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.timestamps import iso_ts, parse_iso_ts

EVENTS_FILE = "events.jsonl"
LINE_FIELDS = ("ts", "trace_id", "span_id")


class EventsFileError(ValueError):
    """events.jsonl is damaged somewhere other than its last line."""


@dataclass(frozen=True)
class EventLine:
    record: dict[str, Any]  # the seed-001 record, exactly as emitted
    ts: str | None  # None only in a line someone else wrote without one
    trace_id: str | None
    span_id: str | None


def encode_line(record: Mapping[str, Any], ts_ns: int, trace_id: str | None, span_id: str | None) -> bytes:
    line = dict(record)
    line.update({"ts": iso_ts(ts_ns), "trace_id": trace_id, "span_id": span_id})
    return orjson.dumps(line) + b"\n"


def split_line(line: Mapping[str, Any]) -> EventLine:
    record = {k: v for k, v in line.items() if k not in LINE_FIELDS}
    ts = line.get("ts")
    return EventLine(record, ts if isinstance(ts, str) else None, line.get("trace_id"), line.get("span_id"))


class EventsWriter(LineAppender):
    """Appends record lines (flushed per line unless in a batch, ``LineAppender``); opened lazily,
    so that a session that never records writes nothing."""

    def __init__(self, path: Path, warn: Warn = stderr_warning):
        super().__init__(path, is_record_line, warn)

    def append(self, record: Mapping[str, Any], ts_ns: int, trace_id: str | None, span_id: str | None) -> None:
        self.append_bytes(encode_line(record, ts_ns, trace_id, span_id))


def repair_torn_tail(path: Path, is_whole: Callable[[bytes], bool] | None = None) -> int:
    """``line_appender.cut_torn_tail`` with events.jsonl's test of a whole line by default."""
    return cut_torn_tail(path, is_whole or is_record_line)


def is_record_line(raw: bytes) -> bool:
    """Whether a line holds a whole record (the reader's test)."""
    return _parse_line(raw)[1] is None


def _parse_line(raw: bytes) -> tuple[EventLine | None, str | None]:
    """One line as an EventLine, or None and why not. The parsed object becomes the record
    itself (the line fields popped off it): readers call this once per line."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return None, str(exc)
    if not isinstance(value, dict) or "event_type" not in value or "message_id" not in value:
        return None, "not a record (needs message_id and event_type)"
    if not isinstance(value["message_id"], str) or not isinstance(value["event_type"], str):
        return None, "message_id and event_type must be strings"
    if value.get("agent_id") is not None and not isinstance(value["agent_id"], str):
        return None, "agent_id must be a string"
    ts, trace_id, span_id = value.pop("ts", None), value.pop("trace_id", None), value.pop("span_id", None)
    for key, field in zip(LINE_FIELDS, (ts, trace_id, span_id)):
        if field is not None and not isinstance(field, str):
            return None, f"{key} must be a string or null"
    try:
        validate_record(value)
        if ts is not None:
            parse_iso_ts(ts)
    except (RecordError, ValueError) as exc:
        return None, str(exc)
    return EventLine(value, ts, trace_id, span_id), None


def read_event_lines(path: Path, warn: Warn = stderr_warning, torn: list[bytes] | None = None) -> list[EventLine]:
    """Every line in order; a torn last line is skipped with a warning (and its bytes added to ``torn``,
    for the owner's repair to mend), other damage raises."""
    path = Path(path)
    out: list[EventLine] = []
    # Line by line, not the whole file at once: a resume's peak memory held the file's bytes twice
    # (read, then split) beside the records parsed from them.
    with open(path, "rb") as handle, collector_paused():
        for number, raw in enumerate(handle, start=1):
            cut = not raw.endswith(b"\n")  # only the last line can lack it: a writer that crashed mid-line
            raw = raw[:-1] if not cut else raw
            line, problem = _parse_line(raw)
            if line is not None:
                out.append(line)
            else:
                _bad_line(path, number, raw, problem, torn=cut, warn=warn)
                if cut and raw.strip() and torn is not None:
                    torn.append(raw)
    return out


def _bad_line(path: Path, number: int, raw: bytes, problem: str | None, *, torn: bool, warn: Warn) -> None:
    """A torn last line (a crashed writer) is skipped; any other damage raises."""
    if not raw.strip():
        if torn:
            return
        raise EventsFileError(f"{path}:{number}: empty line")
    if torn:
        warn(f"{path}:{number}: skipped a torn last line ({len(raw)} bytes): {problem}")
        return
    raise EventsFileError(f"{path}:{number}: not a valid record line: {problem}")


def read_records(path: Path, warn: Warn = stderr_warning) -> list[dict[str, Any]]:
    """The seed-001 records of events.jsonl, without the line's ts/trace_id/span_id."""
    return [line.record for line in read_event_lines(path, warn)]
