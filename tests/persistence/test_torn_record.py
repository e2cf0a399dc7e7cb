"""torn_record: a torn last line of events.jsonl matched with the one record a checkpoint holds that the file lacks."""

from __future__ import annotations

from otel_agents.persistence.events_file import EventLine
from otel_agents.persistence.timestamps import iso_ts
from otel_agents.persistence.torn_record import line_bytes, torn_record
from otel_agents.tracing.records import make_record

TS = 1_700_000_000_123_456_789
TRACE, SPAN = "a" * 32, "b" * 16


def _line(n: int) -> EventLine:
    record = make_record("transcript_entry", f"msg_{n:06d}", agent_id="agent_001", role="user", content=f"hi {n}")
    return EventLine(record, iso_ts(TS + n), TRACE, SPAN)


def _tree(lines: list[EventLine]) -> dict:
    """The smallest tree holding ``lines``' records on one run span."""
    events = [{"ts": TS + int(line.record["message_id"][4:]), "record": line.record} for line in lines]
    run = {"kind": "session", "span_id": SPAN, "trace_id": TRACE, "events": events, "turns": [], "ops": []}
    return {"id": "s", "runs": [run], "ops": []}


def test_the_one_record_the_checkpoint_holds_and_the_file_lacks_is_the_torn_line():
    lines = [_line(1), _line(2), _line(3)]
    whole = line_bytes(lines[2])
    for cut in (1, 20, len(whole) - 2):
        assert torn_record(whole[:cut], _tree(lines), lines[:2]) == lines[2]


def test_nothing_is_restored_without_a_checkpoint_record_the_bytes_begin():
    lines = [_line(1), _line(2), _line(3)]
    whole = line_bytes(lines[2])
    assert torn_record(whole[:20], None, lines[:2]) is None  # no checkpoint
    assert torn_record(whole[:20], _tree(lines[:2]), lines[:2]) is None  # written after the checkpoint
    assert torn_record(b'{"other": ', _tree(lines), lines[:2]) is None  # not its line
    assert torn_record(line_bytes(lines[1])[:20], _tree(lines), lines[:1]) is None  # two missing: not known
