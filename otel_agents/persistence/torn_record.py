"""A torn last line of events.jsonl matched with the record tree.json.gz still holds whole."""

from __future__ import annotations

from typing import Any, Mapping

from otel_agents.persistence.events_file import EventLine, encode_line
from otel_agents.persistence.timestamps import iso_ts, parse_iso_ts
from otel_agents.persistence.tree_walk import iter_records


def line_bytes(line: EventLine) -> bytes:
    """``line`` as events.jsonl holds it, newline included (what the recorder wrote for it)."""
    return encode_line(line.record, parse_iso_ts(line.ts) if line.ts else 0, line.trace_id, line.span_id)


def torn_record(fragment: bytes, saved: Mapping[str, Any] | None, lines: list[EventLine]) -> EventLine | None:
    """The record whose line ``fragment`` is the start of, as ``saved`` (a checkpoint) holds it; None if none is.

    A checkpoint is an earlier state of the streams, so the only record it may hold that events.jsonl's
    whole lines lack is the one whose line was torn: exactly one such record, whose line begins with
    the torn bytes, is that line; anything else (no checkpoint, a record written after it) is not known.
    """
    if saved is None or not fragment:
        return None
    have = {line.record.get("message_id") for line in lines}
    missing = [ref for ref in iter_records(saved) if ref.record.get("message_id") not in have]
    if len(missing) != 1:
        return None
    ref = missing[0]
    line = EventLine(dict(ref.record), iso_ts(ref.ts_ns), ref.trace_id, ref.span_id)
    whole = line_bytes(line)
    # The fragment must be a proper prefix: a line that lost only its newline was read as whole.
    return line if whole.startswith(fragment) and len(fragment) < len(whole) - 1 else None
