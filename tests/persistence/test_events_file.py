"""events.jsonl: one record per line, flushed per line; a torn last line is skipped with a warning."""

from __future__ import annotations

import json

import pytest

from otel_agents.persistence.events_file import (
    EventsFileError,
    EventsWriter,
    read_event_lines,
    read_records,
    repair_torn_tail,
)
from otel_agents.tracing.records import make_record

TS = 1_700_000_000_123_456_789


def _records(n):
    return [make_record("transcript_entry", f"msg_{i:06d}", agent_id="agent_001", role="user", content=f"hi {i} ü")
            for i in range(1, n + 1)]


def test_lines_carry_record_fields_then_ts_trace_and_span(tmp_path):
    path = tmp_path / "events.jsonl"
    writer = EventsWriter(path)
    record = _records(1)[0]
    writer.append(record, TS, "a" * 32, "b" * 16)
    # Flushed per line: readable before close.
    line = json.loads(path.read_text(encoding="utf-8"))
    assert list(line) == ["message_id", "event_type", "agent_id", "role", "content", "ts", "trace_id", "span_id"]
    assert line["ts"] == "2023-11-14T22:13:20.123456789Z"
    assert line["content"] == "hi 1 ü"
    writer.close()
    (read,) = read_event_lines(path)
    assert read.record == record and read.trace_id == "a" * 32 and read.span_id == "b" * 16


def test_torn_last_line_is_skipped_with_one_warning(tmp_path):
    path = tmp_path / "events.jsonl"
    writer = EventsWriter(path)
    for record in _records(3):
        writer.append(record, TS, None, None)
    writer.close()
    data = path.read_bytes()
    path.write_bytes(data + data.splitlines(keepends=True)[0][:25])  # a writer died mid-line
    warnings = []
    records = read_records(path, warnings.append)
    assert [r["message_id"] for r in records] == ["msg_000001", "msg_000002", "msg_000003"]
    assert len(warnings) == 1 and "torn last line" in warnings[0] and ":4:" in warnings[0]
    torn: list[bytes] = []  # the owner's repair asks for the skipped bytes, to mend the file
    assert len(read_event_lines(path, lambda m: None, torn)) == 3
    assert torn == [data.splitlines(keepends=True)[0][:25]]


def test_damage_before_the_last_line_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = [json.dumps(r) for r in _records(3)]
    lines[1] = lines[1][:10]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(EventsFileError, match=r"events.jsonl:2:"):
        read_records(path, lambda m: None)


def test_complete_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _records(2)))
    warnings = []
    assert len(read_records(path, warnings.append)) == 2 and warnings == []


def test_writer_cuts_a_torn_tail_before_appending(tmp_path):
    path = tmp_path / "events.jsonl"
    first, second, third = _records(3)
    good = json.dumps(first) + "\n"
    path.write_text(good + json.dumps(second)[:30])
    warnings = []
    writer = EventsWriter(path, warnings.append)
    writer.append(third, TS, None, None)
    writer.close()
    assert [r["message_id"] for r in read_records(path, warnings.append)] == ["msg_000001", "msg_000003"]
    assert len(warnings) == 1 and "torn" in warnings[0]


def test_repair_is_a_no_op_on_clean_and_missing_files(tmp_path):
    path = tmp_path / "events.jsonl"
    assert repair_torn_tail(path) == 0
    path.write_text('{"a": 1}\n')
    assert repair_torn_tail(path) == 0 and path.read_text() == '{"a": 1}\n'
    path.write_text("no newline at all")
    assert repair_torn_tail(path) == len("no newline at all") and path.read_bytes() == b""


@pytest.mark.parametrize("tail", ["\n", "\n" + "{}\n"])
def test_an_empty_line_that_is_not_a_torn_tail_is_an_error_naming_it(tmp_path, tail):
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(2)) + tail)
    with pytest.raises(EventsFileError, match=r"events.jsonl:3: empty line"):
        read_records(path, lambda m: None)
