"""Evicted agents brought back from the session's events.jsonl: the runtime's ``SavedAgentRecords`` for a recorded session."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import orjson

from otel_agents.persistence.events_file import EVENTS_FILE, split_line
from otel_agents.runtime.eviction import keep_saved_records
from otel_agents.runtime.session import Session
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import RecordError, message_id_number, validate_record

_TRANSCRIPT_KINDS = (sc.EVENT_TRANSCRIPT_ENTRY, sc.EVENT_TRANSCRIPT_TRUNCATED)


class SavedAgentTranscripts:
    """The runtime's ``SavedAgentRecords`` over a session's events.jsonl, where resume reads them too.

    The file is indexed as it grows (only bytes not seen before are read, up to the last whole
    line): each agent's transcript records are kept as (offset, length) pairs, and read back
    by offset when asked, so an evicted agent costs memory for its offsets only.
    """

    def __init__(self, events_file: Path):
        self.path = Path(events_file)
        self._indexed = 0  # bytes of the file indexed so far
        self._lines: dict[str, array] = {}  # agent id -> offset, length, offset, length, ...

    def records_of(self, agent_id: str) -> list[dict[str, Any]]:
        self._catch_up()
        spans = self._lines.get(agent_id)
        if not spans:
            return []
        records = []
        with open(self.path, "rb") as handle:
            for offset, length in zip(spans[0::2], spans[1::2]):
                handle.seek(offset)
                records.append(_saved_record(handle.read(length)))
        numbers = [message_id_number(r["message_id"]) for r in records]
        if any(a >= b for a, b in zip(numbers, numbers[1:])):
            records = [records[i] for i in sorted(range(len(records)), key=numbers.__getitem__)]
        return records

    def _catch_up(self) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return  # nothing saved yet
        if size < self._indexed:
            raise ValueError(f"{self.path} shrank while the session ran")
        if size == self._indexed:
            return
        # Line by line up to the size seen: the whole unread part at once was a resume's peak memory
        # (all of events.jsonl as one bytes object beside the records already loaded).
        with open(self.path, "rb") as handle:
            handle.seek(self._indexed)
            position = self._indexed
            while position < size:
                line = handle.readline(size - position)
                if not line.endswith(b"\n"):
                    break  # a line being written is indexed once it is whole
                record = _saved_record(line[:-1])
                if record.get("event_type") in _TRANSCRIPT_KINDS:
                    self._lines.setdefault(record["agent_id"], array("q")).extend((position, len(line) - 1))
                position += len(line)
        self._indexed = position


def _saved_record(line: bytes) -> dict[str, Any]:
    try:
        record = split_line(orjson.loads(line)).record
        validate_record(record)
    except (orjson.JSONDecodeError, AttributeError, RecordError) as exc:
        raise ValueError(f"events.jsonl holds a line that is not a record: {exc}") from None
    return record


def keep_revivable(session: Session, session_dir: Path, *, redacted: bool = False) -> None:
    """A recorded session may evict idle agents (its ``eviction`` policy): they come back from its
    events.jsonl. Not with ``--redacted-save``, whose records keep no contents to come back from."""
    if not redacted:
        keep_saved_records(session, SavedAgentTranscripts(Path(session_dir) / EVENTS_FILE))
