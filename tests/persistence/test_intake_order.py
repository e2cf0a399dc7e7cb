"""intake_order: records put back in message order, events.jsonl sorted only when out of order, whole traces."""

from __future__ import annotations

import json

from hypothesis import given, strategies as st

from otel_agents.persistence.events_file import EventLine
from otel_agents.persistence.intake_order import every_trace_whole, in_message_order, ready_to_bill, sort_events_file
from otel_agents.tracing.spandata import SpanData

T = "0123456789abcdef0123456789abcdef"


def line(n: int | None) -> EventLine:
    record = {"message_id": f"msg_{n:06d}"} if n is not None else {"kind": "other"}
    return EventLine(record, None, T, "00000000000000a1")


@given(st.lists(st.integers(0, 10**6), unique=True), st.randoms())
def test_records_come_back_in_message_order_whatever_order_they_came_in(numbers, rng):
    shuffled = [line(n) for n in numbers]
    rng.shuffle(shuffled)
    assert [l.record["message_id"] for l in in_message_order(shuffled)] == [f"msg_{n:06d}" for n in sorted(numbers)]


def test_a_record_without_a_message_number_keeps_its_turn_at_the_end():
    lines = [line(None), line(2), line(1)]
    assert [l.record.get("message_id") for l in in_message_order(lines)] == ["msg_000001", "msg_000002", None]


@given(st.lists(st.integers(0, 10**6), unique=True, min_size=1), st.randoms())
def test_the_events_file_is_sorted_in_place_only_when_out_of_order(tmp_path_factory, numbers, rng):
    path = tmp_path_factory.mktemp("events") / "events.jsonl"
    shuffled = list(numbers)
    rng.shuffle(shuffled)
    path.write_text("".join(json.dumps({"message_id": f"msg_{n:06d}", "n": n}) + "\n" for n in shuffled))
    path.chmod(0o600)
    changed = sort_events_file(path)
    assert changed == (shuffled != sorted(numbers))
    assert [json.loads(l)["n"] for l in path.read_text().splitlines()] == sorted(numbers)
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_file_with_lines_not_ours_is_left_as_it_is(tmp_path):
    path = tmp_path / "events.jsonl"
    text = '{"message_id": "msg_000002"}\n{"kind": "x"}\n{"message_id": "msg_000001"}\n'
    path.write_text(text)
    assert sort_events_file(path) is False and path.read_text() == text
    assert sort_events_file(tmp_path / "missing.jsonl") is False


def span(span_id: str, parent: str | None, end: int | None = 5, name: str = "s", **attributes) -> SpanData:
    return SpanData(T, span_id, parent, name, "INTERNAL", 1, end, attributes)


def test_a_trace_is_whole_with_its_root_ended_and_every_parent_present():
    root, child = span("00000000000000a1", None), span("00000000000000a2", "00000000000000a1")
    assert every_trace_whole([child, root])
    assert not every_trace_whole([child])  # its parent has not come
    assert not every_trace_whole([child, span("00000000000000a1", None, end=None)])  # the root has not ended
    assert not every_trace_whole([root, child, span("00000000000000a4", "00000000000000a3")])


def test_a_run_is_whole_only_with_as_many_attempts_and_tool_calls_as_its_root_counts():
    root = span("00000000000000a1", None, name="invoke_agent main", **{
        "gen_ai.operation.name": "invoke_agent", "otel_agents.totals.inclusive.llm_calls": 2,
        "otel_agents.totals.inclusive.tool_calls": 1})
    turn = span("00000000000000a2", "00000000000000a1", name="turn")
    first, second = (span(f"00000000000000b{i}", "00000000000000a2", name="chat m", **{"gen_ai.operation.name": "chat"})
                     for i in (1, 2))
    tool = span("00000000000000c1", "00000000000000a2", name="execute_tool t", **{"gen_ai.operation.name": "execute_tool"})
    assert every_trace_whole([root, turn, first, second, tool])
    # Whole-looking (every parent there, the root ended) but an attempt or the tool call has not come yet.
    assert not every_trace_whole([root, turn, second, tool])
    assert not every_trace_whole([root, turn, first, second])


def test_a_session_is_billed_once_whole_or_when_nothing_in_it_could_ever_be():
    child = span("00000000000000a2", "00000000000000a1")  # a plain HTTP span whose parent never comes
    assert not every_trace_whole([child]) and ready_to_bill([child])
    for operation in ("chat", "execute_tool", "invoke_agent"):  # the rest could still bill it: it waits
        call = span("00000000000000a3", "00000000000000a2", **{"gen_ai.operation.name": operation})
        assert not ready_to_bill([child, call]), operation
    root = span("00000000000000a1", None)
    assert ready_to_bill([root, child])
