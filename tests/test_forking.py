"""otel_agents.forking: the state at every message of a live session, and path labels resolved to messages."""

from __future__ import annotations

import asyncio

import pytest

from otel_agents.forking import ForkError, ForkSource, fork_session, records_until, resolve_at
from otel_agents.llm.scripted_provider import register_script
from otel_agents.llm.scripts import parse_script
from otel_agents.persistence.tree import build_tree
from otel_agents.persistence.tree_walk import iter_nodes
from otel_agents.restore import merge_records
from otel_agents.runtime.scenario import build_session
from otel_agents.tracing.records import message_id_number
from otel_agents.tracing.spandata import from_readable

SCRIPT = {
    "name": "fork-unit",
    "root": {"name": "main", "system_prompt": "Coordinate."},
    "hooks": [{"kind": "reset", "name": "Forget", "agents": ["Helper"], "max_entries": 3, "keep": 1}],
    "agents": {
        "main": [
            {"tool_calls": [{"name": "task", "arguments": {"name": "Helper", "system_prompt": "Help.",
                                                         "user_prompt": "Ask Deep."}}]},
            "made a helper",
            {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Helper"], "prompt": "Again?"}}]},
            "second answer",
        ],
        "Helper": [
            {"tool_calls": [{"name": "task", "arguments": {"name": "Deep", "system_prompt": "Be deep."}}]},
            "helping",
            "helping again",
        ],
        "Deep": ["deep thought"],
    },
}


@pytest.fixture
def live(memory_tracing):
    """A session run live, with each agent's transcript ids as they were when each record was emitted."""
    script = parse_script(SCRIPT, "inline")
    register_script(script)
    session = build_session(script, telemetry=memory_tracing.telemetry)
    seen: list[tuple[str, dict[str, list[str]]]] = []

    class Snapshots:
        # At record k every earlier record is applied (an entry is appended right after it is recorded).
        def on_record(self, span, record, ts_ns):
            seen.append((record["message_id"], {a: list(g.transcript_ids) for a, g in session.agents.items()}))

        def on_log(self, span, level, message, ts_ns):
            pass

    memory_tracing.telemetry.listeners.append(Snapshots())
    for prompt in ["first", "second"]:
        asyncio.run(session.run(prompt))
    final = {a: list(g.transcript_ids) for a, g in session.agents.items()}
    tree = build_tree([from_readable(s) for s in memory_tracing.spans()], session.id)
    source = ForkSource(session.id, merge_records(memory_tracing.recorder.records), tree)
    return source, seen, final


def test_a_fork_at_every_message_has_the_live_state_just_after_it(live, memory_tracing):
    source, seen, final = live
    after = [(seen[i][0], seen[i + 1][1]) for i in range(len(seen) - 1)] + [(seen[-1][0], final)]
    assert len(after) > 20
    assert any(r["event_type"] == "transcript_truncated" for r in source.records)  # the hard part happened
    for message_id, expected in after:
        point = resolve_at(source, message_id)
        fork = fork_session(source, point, "20990101-000000-f0f0f0", telemetry=memory_tracing.telemetry)
        prefix = records_until(source.records, message_id)
        created = [r["agent_id"] for r in prefix if r["event_type"] == "agent_created"]
        assert sorted(fork.agents) == sorted(created)
        assert fork.counters == (message_id_number(message_id), max(int(a.rsplit("_", 1)[1]) for a in created))
        for agent_id, agent in fork.agents.items():
            assert agent.transcript_ids == expected[agent_id], (message_id, agent_id)
        assert fork.id == "20990101-000000-f0f0f0" and fork.runs == 0
        assert fork.previous_run.span_id == int(point.span_id, 16)  # the first run links to the message's span


def test_a_label_names_the_last_message_inside_its_node(live):
    source, _, _ = live
    checked = 0
    for run, node in iter_nodes(source.tree):
        if node is run or "path" not in node:
            continue
        ids, stack = [], [node]
        while stack:
            item = stack.pop()
            ids.extend(e["record"]["message_id"] for e in item.get("events", []))
            stack.extend(item.get("ops", []) + item.get("turns", []) + ([item["session"]] if item.get("session") else []))
        label = f"{run['index']}:{node['path']}"
        if not ids:
            with pytest.raises(ForkError, match="nothing was said"):
                resolve_at(source, label)
            continue
        assert resolve_at(source, label).message_id == max(ids, key=message_id_number)
        checked += 1
    assert checked > 5
    # A bare label is in run 1.
    first = source.tree["runs"][0]["turns"][0]["path"]
    assert resolve_at(source, first).message_id == resolve_at(source, f"1:{first}").message_id


@pytest.mark.parametrize("at, needle", [
    ("msg_999999", "no message"), ("9:1", "no run 9"), ("1:99", "no node"), ("0", "neither"),
    ("1-0", "neither"), ("x:1", "neither"), ("", "neither"),
    (":1", "neither"), ("1:", "neither"), (" 1:1", "neither"), ("+1:1", "neither"),
])
def test_bad_points_are_one_line_errors(live, at, needle):
    source, _, _ = live
    with pytest.raises(ForkError, match=needle) as caught:
        resolve_at(source, at)
    assert "\n" not in str(caught.value)


def test_a_redacted_source_cannot_be_forked(live):
    source, _, _ = live
    source.redacted = True
    with pytest.raises(ForkError, match="redacted"):
        fork_session(source, resolve_at(source, "msg_000002"), "20990101-000000-f0f0f0")


def test_a_call_is_open_at_a_message_when_anything_of_it_comes_after(live):
    """open_at: a discuss cut between its prompt and its speaker's reply is open; once every record of the call
    is in the prefix it is done, though its span ends a moment later; a call made after the message is not there."""
    from otel_agents.forking import open_at
    from otel_agents.persistence.tree_walk import iter_ops, iter_records

    source, _, _ = live
    checked = 0
    calls = [ref.op for ref in iter_ops(source.tree) if ref.op["kind"] == "tool"]
    ids = [op["request"]["tool_call_id"] for op in calls]
    for op in calls:
        request = op["request"]
        if ids.count(request["tool_call_id"]) > 1:
            continue  # a scripted id made again after a truncation: the other call answers for it too
        numbers = [message_id_number(r.record["message_id"]) for r in iter_records({"runs": [{"ops": [op]}]})]
        asked = message_id_number(request["call_message_id"])
        for record in source.records:
            number = message_id_number(record["message_id"])
            expected = asked <= number < max(numbers)
            assert (request["tool_call_id"] in open_at(source.tree, record["message_id"])) == expected
        checked += 1
    assert checked == 2  # main's task and its discuss

