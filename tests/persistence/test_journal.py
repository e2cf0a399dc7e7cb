"""spans.jsonl: the span journal, and spans rebuilt from it with the records of events.jsonl."""

from __future__ import annotations

import json

import pytest

from otel_agents.persistence.events_file import EventLine, read_event_lines, split_line
from otel_agents.persistence.journal import (
    JournalError,
    JournalWriter,
    context_line,
    end_line,
    lines_mentioning,
    read_journal,
    rebuild,
    span_lines,
    spans_from_journal,
    start_line,
)
from otel_agents.persistence.timestamps import iso_ts
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_walk import iter_ops, iter_records
from otel_agents.tracing.records import make_record, to_span_attributes
from otel_agents.tracing.spandata import EventData, LinkData, SpanData

TRACE = "ab" * 16
ROOT, CHILD = "1" * 16, "2" * 16
T0 = 1_700_000_000_000_000_000
RESOURCE = {"service.name": "otel-agents"}


def _span(span_id, parent=None, *, end=None, attrs=None, events=(), status="UNSET", message=None, links=()):
    return SpanData(TRACE, span_id, parent, "invoke_agent main" if parent is None else "chat scripted/x",
                    "INTERNAL" if parent is None else "CLIENT", T0 + (0 if parent is None else 10), end,
                    attrs or {}, tuple(events), tuple(links), status, message, RESOURCE, "otel_agents")


def _record_line(message_id, span_id, ts, content="hi"):
    record = make_record("transcript_entry", message_id, agent_id="agent_001", role="user", content=content)
    return EventLine(record, iso_ts(ts), TRACE, span_id)


def test_start_and_end_lines_hold_each_fact_once():
    started = _span(ROOT, attrs={"gen_ai.operation.name": "invoke_agent", "a": 1})
    record = _record_line("msg_000001", ROOT, T0 + 5).record
    log = EventData("otel_agents.log", T0 + 6, {"otel_agents.log.level": "WRN", "otel_agents.log.message": "careful"})
    ended = _span(ROOT, end=T0 + 100, attrs={"gen_ai.operation.name": "invoke_agent", "a": 2, "b": [1, 2]},
                  events=[EventData("transcript_entry", T0 + 5, to_span_attributes(record)), log],
                  status="ERROR", message="boom", links=[LinkData("cd" * 16, "3" * 16, {"k": "v"})])
    start = start_line(started)
    assert start == {"start": ROOT, "trace": TRACE, "name": "invoke_agent main", "kind": "INTERNAL", "ns": T0,
                     "ctx": context_line(RESOURCE, "otel_agents")["ctx"],
                     "attrs": {"gen_ai.operation.name": "invoke_agent", "a": 1}}
    end = end_line(ended, started, {"msg_000001"})
    # Only what changed since the start; the record is left to events.jsonl; links changed, so they are written.
    assert end == {"end": ROOT, "ns": T0 + 100, "attrs": {"a": 2, "b": [1, 2]}, "status": "ERROR", "message": "boom",
                   "events": [["otel_agents.log", T0 + 6, log.attributes]], "links": [["cd" * 16, "3" * 16, {"k": "v"}]]}
    # Without the ids of records written, every event that decodes as a record is left out.
    assert end_line(ended, started)["events"] == end["events"]
    # The same context id whatever the key order: writers in different processes agree.
    assert context_line({"b": 1, "a": 2}, "s")["ctx"] == context_line({"a": 2, "b": 1}, "s")["ctx"]
    assert context_line(RESOURCE, "x")["ctx"] != context_line(RESOURCE, "y")["ctx"]


@pytest.mark.parametrize("block", [5, 97, None])  # blocks that cut lines and ids, and the default
def test_lines_mentioning_finds_the_lines_naming_an_id_in_file_order(tmp_path, monkeypatch, block):
    if block is not None:
        monkeypatch.setattr("otel_agents.persistence.journal._SCAN_BYTES", block)
    path = tmp_path / "spans.jsonl"
    writer = JournalWriter(path)
    root_started = _span(ROOT)
    child = _span(CHILD, ROOT, end=T0 + 50, attrs={"otel_agents.response.message_id": "msg_000004"})
    writer.start(root_started)
    writer.start(_span(CHILD, ROOT))
    writer.end(child, _span(CHILD, ROOT))
    writer.end(_span(ROOT, end=T0 + 90), root_started)
    writer.close()

    assert [line.get("start") or line.get("end") for line in lines_mentioning(path, CHILD)] == [CHILD, CHILD]
    # The root is named by its own lines and by its child's start line (as the parent).
    assert [(("start" in l and "start") or "end", l.get("start") or l.get("end"))
            for l in lines_mentioning(path, ROOT)] == [("start", ROOT), ("start", CHILD), ("end", ROOT)]
    assert [l["end"] for l in lines_mentioning(path, "msg_000004")] == [CHILD]
    # Only the whole JSON string matches, not a part of a longer one.
    assert list(lines_mentioning(path, "msg_00000")) == []
    assert list(lines_mentioning(path, CHILD[:15])) == []

    # A torn last line and a damaged one are passed over; the file is not changed.
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    damaged = lines[:2] + [b'{"start": "' + CHILD.encode() + b'", "oops"\n'] + lines[3:] + [lines[3][:30]]
    path.write_bytes(b"".join(damaged))
    assert [l.get("start") or l.get("end") for l in lines_mentioning(path, CHILD)] == [CHILD]
    assert path.read_bytes() == b"".join(damaged)


def test_lines_mentioning_an_empty_or_missing_journal(tmp_path):
    empty = tmp_path / "spans.jsonl"
    empty.write_bytes(b"")
    assert list(lines_mentioning(empty, ROOT)) == []
    with pytest.raises(JournalError, match="cannot read"):
        list(lines_mentioning(tmp_path / "missing.jsonl", ROOT))


def test_rebuild_gives_ended_spans_whole_open_ones_by_their_start_and_records_in_place():
    ended_child = _span(CHILD, ROOT, end=T0 + 50, attrs={"gen_ai.operation.name": "chat", "x": 1},
                        events=[EventData("otel_agents.log", T0 + 20, {"otel_agents.log.level": "VRB",
                                                                      "otel_agents.log.message": "m"})])
    root = _span(ROOT, attrs={"gen_ai.operation.name": "invoke_agent", "otel_agents.session.id": "s1"})
    lines = [context_line(RESOURCE, "otel_agents"), start_line(root), *span_lines(ended_child)]
    events = [_record_line("msg_000001", ROOT, T0 + 1), _record_line("msg_000002", CHILD, T0 + 15),
              _record_line("msg_000003", CHILD, T0 + 30)]
    rebuilt = rebuild(lines, events)
    assert rebuilt.orphans == []
    by_id = {s.span_id: s for s in rebuilt.spans}
    assert by_id[ROOT].end_ns is None and by_id[ROOT].attributes == root.attributes
    child = by_id[CHILD]
    assert child.end_ns == T0 + 50 and child.resource == RESOURCE and child.scope == "otel_agents"
    # Records keep their time and sit between the other events in time order.
    assert [(e.name, e.time_ns) for e in child.events] == [
        ("otel_agents.transcript_entry", T0 + 15), ("otel_agents.log", T0 + 20), ("otel_agents.transcript_entry", T0 + 30)]
    assert child.events[0].attributes == to_span_attributes(events[1].record)
    tree = build_tree(rebuilt.spans)
    run = tree["runs"][0]
    assert run["status"] == "in_progress" and run["ended_ns"] is None
    assert [ref.record["message_id"] for ref in iter_records(tree)] == ["msg_000001", "msg_000002", "msg_000003"]
    (chat,) = [ref.op for ref in iter_ops(tree)]
    assert chat["status"] == "ok" and [log["message"] for log in chat["logs"]] == ["m"]


def test_records_on_spans_the_journal_lacks_are_orphans():
    lines = [context_line(RESOURCE, None), start_line(_span(ROOT))]
    stray = _record_line("msg_000002", CHILD, T0 + 3)
    other_trace = EventLine(_record_line("msg_000003", ROOT, T0 + 4).record, iso_ts(T0 + 4), "cd" * 16, ROOT)
    rebuilt = rebuild(lines, [_record_line("msg_000001", ROOT, T0 + 2), stray, other_trace])
    assert rebuilt.orphans == [stray, other_trace]
    assert len(rebuilt.spans[0].events) == 1


def test_contradicting_or_headless_lines_are_errors():
    start = start_line(_span(ROOT))
    with pytest.raises(JournalError, match="ends but its start"):
        spans_from_journal([{"end": CHILD, "ns": T0}], [])
    with pytest.raises(JournalError, match="starts twice"):
        spans_from_journal([start, dict(start, name="other")], [])
    with pytest.raises(JournalError, match="ends twice"):
        spans_from_journal([start, {"end": ROOT, "ns": T0 + 1}, {"end": ROOT, "ns": T0 + 2}], [])
    # The same line twice (a retried write) is harmless.
    assert len(spans_from_journal([start, start, {"end": ROOT, "ns": T0 + 1}, {"end": ROOT, "ns": T0 + 1}], [])) == 1


def test_writer_flushes_per_line_and_cuts_a_torn_tail(tmp_path):
    path = tmp_path / "spans.jsonl"
    warnings = []
    writer = JournalWriter(path, warnings.append)
    writer.start(_span(ROOT))
    # Readable before close: the context line and the start line.
    assert [next(iter(line)) for line in read_journal(path)] == ["ctx", "start"]
    writer.start(_span(CHILD, ROOT))  # same context: not repeated
    writer.close()
    assert [next(iter(line)) for line in read_journal(path)] == ["ctx", "start", "start"]
    with open(path, "ab") as handle:
        handle.write(b'{"end": "11111111')  # a writer killed mid-line
    assert len(read_journal(path, warnings.append)) == 3
    assert len(warnings) == 1 and "spans.jsonl:4: skipped a torn last line" in warnings[0]
    again = JournalWriter(path, warnings.append)
    again.end(_span(ROOT, end=T0 + 9), _span(ROOT))
    again.close()
    assert "removed a torn last line" in warnings[-1]
    lines = read_journal(path, pytest.fail)
    assert lines[-1] == {"end": ROOT, "ns": T0 + 9}
    assert again.bytes_written == len(json.dumps(lines[-1], separators=(",", ":"))) + 1


@pytest.mark.parametrize("bad, why", [
    (b"[1, 2]", "not a JSON object"),
    (b'{"start": "x", "ns": 1}', "needs a span id"),
    (b'{"start": "' + b"a" * 16 + b'", "trace": "' + b"b" * 31 + b'g", "ns": 1}', r"trace id \(32 hex digits\)"),
    (b'{"start": "' + b"a" * 16 + b'", "trace": "' + b"b" * 32 + b'", "parent": "ABCDEF0123456789", "ns": 1}',
     "parent must be a span id"),
    (b'{"end": "x", "ns": 1}', "an end line needs a span id"),
    (b'{"end": "' + b"a" * 16 + b'", "ns": "soon"}', "integer ns"),
    (b'{"start": "' + b"a" * 16 + b'", "trace": "' + b"b" * 32 + b'", "ns": 1, "kind": "SIDEWAYS"}',
     "unknown span kind"),
    (b'{"end": "' + b"a" * 16 + b'", "ns": 1, "links": [["short", "' + b"c" * 16 + b'", {}]]}', "links must be"),
    (b'{"hello": 1}', "neither a ctx, start nor end line"),
    (b"{not json", "invalid JSON"),
])
def test_damage_before_the_last_line_names_the_line(tmp_path, bad, why):
    path = tmp_path / "spans.jsonl"
    good = json.dumps(start_line(_span(ROOT))).encode()
    path.write_bytes(good + b"\n" + bad + b"\n" + good + b"\n")
    with pytest.raises(JournalError, match=f"spans.jsonl:2: not a valid journal line: .*{why}"):
        read_journal(path)


def test_a_whole_last_line_that_lost_only_its_newline_is_kept(tmp_path):
    """Readers accept such a line (a write cut after its record), so the next writer must keep it."""
    path = tmp_path / "spans.jsonl"
    whole = json.dumps(start_line(_span(ROOT))).encode()
    path.write_bytes(json.dumps(context_line(RESOURCE, "otel_agents")).encode() + b"\n" + whole)
    assert len(read_journal(path, pytest.fail)) == 2
    writer = JournalWriter(path, pytest.fail)
    writer.end(_span(ROOT, end=T0 + 1), _span(ROOT))
    writer.close()
    assert [next(iter(line)) for line in read_journal(path, pytest.fail)] == ["ctx", "start", "end"]
    events = tmp_path / "events.jsonl"
    first = _record_line("msg_000001", ROOT, T0)
    events.write_bytes(json.dumps({**first.record, "ts": first.ts}).encode())
    from otel_agents.persistence.events_file import EventsWriter

    appender = EventsWriter(events, pytest.fail)
    appender.append(_record_line("msg_000002", ROOT, T0).record, T0, TRACE, ROOT)
    appender.close()
    assert [l.record["message_id"] for l in read_event_lines(events, pytest.fail)] == ["msg_000001", "msg_000002"]


@pytest.mark.parametrize("line, why", [
    ({"message_id": ["msg_000001"], "event_type": "piece_of_text"}, "must be strings"),
    ({"message_id": "msg_000001", "event_type": 7}, "must be strings"),
    ({"message_id": "msg_000001", "event_type": "piece_of_text", "span_id": 12}, "span_id must be a string or null"),
])
def test_events_lines_with_ids_of_the_wrong_type_are_refused(tmp_path, line, why):
    from otel_agents.persistence.events_file import EventsFileError

    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(EventsFileError, match=f"events.jsonl:1: not a valid record line: .*{why}"):
        read_event_lines(path)


def test_events_line_without_ts_keeps_none():
    """events_file.split_line used to turn a missing ts into the string 'None'."""
    line = split_line({"message_id": "msg_000001", "event_type": "piece_of_text", "agent_id": "a", "content": "x"})
    assert line.ts is None and line.trace_id is None
    assert split_line({"message_id": "m", "event_type": "x", "ts": "2023-11-14T22:13:20.000000000Z"}).ts.endswith("Z")


def _trees(recorded):
    store = recorded.store
    journal = read_journal(store.journal_path, pytest.fail)
    lines = read_event_lines(store.events_path, pytest.fail)
    rebuilt = rebuild(journal, lines)
    assert rebuilt.orphans == []
    return (
        build_tree(rebuilt.spans, recorded.session.id),
        recorded.recorder.tree(),
        build_tree(recorded.spans(), recorded.session.id),
        store.load_tree(),
        journal,
    )


def test_demo_tree_from_the_journal_equals_the_live_tree_and_the_finished_spans(record):
    recorded = record(prompts=["Create Jack and Jill for a cafe discussion", "And then?"])
    from_journal, live, from_memory, saved, journal = _trees(recorded)
    # Nothing ignored: the same dict whichever way the spans arrived.
    assert from_journal == live == from_memory == saved
    assert len(from_journal["runs"]) == 2 and from_journal["status"] == "ok"
    spans = recorded.spans()
    assert sum("start" in line for line in journal) == sum("end" in line for line in journal) == len(spans)
    # Each record is stored once: no journal line repeats a record.
    assert not any(e[0] in {"transcript_entry", "agent_created", "piece_of_text"}
                   for line in journal for e in line.get("events", []))
    # The rebuilt spans equal the finished ones, span for span, events in order included (records
    # and other events are interleaved by time; two at the same nanosecond would put records first).
    rebuilt = {s.span_id: s for s in spans_from_journal(journal, read_event_lines(recorded.store.events_path))}
    for span in spans:
        mine = rebuilt[span.span_id]
        assert (mine.attributes, mine.end_ns, mine.status, mine.links, mine.resource) == (
            span.attributes, span.end_ns, span.status, span.links, span.resource)
        assert mine.events == span.events


def test_three_level_tree_from_the_journal_equals_the_live_tree(record, scripts):
    recorded = record(scripts.three_levels())
    from_journal, live, from_memory, saved, _ = _trees(recorded)
    assert from_journal == live == from_memory == saved
    depth = [ref.label for ref in iter_ops(from_journal) if ref.op["kind"] == "session"]
    assert max(label.count(".") for label in depth) == 2  # main -> A -> B -> C
