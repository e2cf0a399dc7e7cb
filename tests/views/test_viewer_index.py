"""The viewer's indexes on hand-made and generated record streams (pure: no runtime)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agents.tracing.records import make_record
from otel_agents.views import SessionViewer, UnknownAgent, UnknownMessage
from otel_agents.views import render as R


def entry(n: int, agent: str, role: str, content: str | None = None, **fields):
    return make_record("transcript_entry", f"msg_{n:06d}", agent_id=agent, role=role, content=content, **fields)


def naive_transcript(records, agent_id: str, upto: str) -> list[str]:
    """The seed's way: replay everything up to ``upto`` (quadratic when repeated; the reference)."""
    state: list[str] = []
    for record in records:
        if record.get("agent_id") != agent_id:
            continue
        if record["event_type"] == "transcript_entry":
            state.append(record["message_id"])
        elif record["event_type"] == "transcript_truncated":
            del state[record["keep"]:]
        if record["message_id"] == upto:
            return state
    raise AssertionError("not reached")


ops = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.one_of(st.none(), st.integers(min_value=0, max_value=6))),
    min_size=1,
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_transcript_after_any_entry_matches_a_full_replay(steps):
    """(agent, None) appends an entry; (agent, k) truncates to k entries."""
    records = []
    for n, (agent, keep) in enumerate(steps, 1):
        if keep is None:
            records.append(entry(n, agent, "user", f"text {n}"))
        else:
            records.append(make_record("transcript_truncated", f"msg_{n:06d}", agent_id=agent, keep=keep))
    viewer = SessionViewer(records)
    for record in records:
        if record["event_type"] != "transcript_entry":
            continue
        got = [r["message_id"] for r in viewer.get_transcript(record["agent_id"], after=record["message_id"])]
        assert got == naive_transcript(records, record["agent_id"], record["message_id"])
    for agent in {a for a, _ in steps}:
        final = [r["message_id"] for r in viewer.get_transcript(agent)]
        state: list[str] = []
        for r in records:
            if r["agent_id"] == agent:
                if r["event_type"] == "transcript_entry":
                    state.append(r["message_id"])
                else:
                    del state[r["keep"]:]
        assert final == state


def test_order_is_restored_and_replayed_lines_are_dropped():
    records = [
        make_record("agent_created", "msg_000001", agent_id="agent_001", name="main"),
        entry(2, "agent_001", "user", "hi"),
        entry(3, "agent_001", "assistant", "hello"),
    ]
    shuffled = [records[2], records[0], dict(records[1]), records[1]]
    viewer = SessionViewer(shuffled)
    assert [r["message_id"] for r in viewer.records] == ["msg_000001", "msg_000002", "msg_000003"]
    assert R.render_dialog(viewer.extract_dialog(["main"])) == "msg_000002 user: hi\nmsg_000003 main: hello"
    # Lines that are not records are ignored (a foreign line, or one without an id).
    assert len(SessionViewer(records + [{"event_type": "other", "message_id": "x"}, {"role": "user"}]).records) == 3


def test_foreign_message_ids_keep_file_order():
    records = [
        {"message_id": "b-1", "event_type": "transcript_entry", "agent_id": "x", "role": "user", "content": "first"},
        {"message_id": "a-2", "event_type": "transcript_entry", "agent_id": "x", "role": "assistant", "content": "second"},
    ]
    viewer = SessionViewer(records)
    assert [line.message["content"] for line in viewer.transcript("x")] == ["first", "second"]


def test_cause_lists_substance_cycles_and_dangling_links():
    records = [
        make_record("agent_created", "msg_000001", agent_id="agent_001", name="main"),
        entry(2, "agent_001", "assistant", "one"),
        entry(3, "agent_001", "assistant", "two"),
        make_record("piece_of_text", "msg_000004", agent_id="agent_001", content="summary", cause=["msg_000003", "msg_000002"]),
        # substance links that loop (damaged data) must not hang any view
        entry(5, "agent_001", "user", "loop a", substance="msg_000006"),
        entry(6, "agent_001", "user", "loop b", substance="msg_000005"),
        entry(7, "agent_001", "user", "from elsewhere", substance="msg_000099"),
    ]
    viewer = SessionViewer(records)
    link = viewer.build_causality_index()["msg_000004"]
    assert (link.parent, link.link, link.causes) == ("msg_000003", "cause", ("msg_000003", "msg_000002"))
    assert R.render_trace(viewer.trace_message_flow("msg_000004")) == (
        "msg_000003 main [Said] two\n"
        "msg_000004 main [Text] summary  (cause: msg_000003, also msg_000002)"
    )
    assert [s.message_id for s in viewer.trace_message_flow("msg_000006")] == ["msg_000005", "msg_000006"]
    assert len(viewer.extract_dialog(["main"])) == 5
    assert viewer.trace_message_flow("msg_000007")[0].parent_known is False
    assert R.render_perspective(viewer.extract_agent_perspective("main")).splitlines()[-1] == (
        "msg_000007 [Heard] unknown: from elsewhere"
    )


def test_tool_results_link_to_the_latest_call_with_their_id_in_the_same_agent():
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"x\"}"}}
    records = [
        entry(1, "a", "assistant", tool_calls=[call]),
        entry(2, "b", "assistant", tool_calls=[call]),  # same call id, other agent
        entry(3, "a", "tool", "result for a", tool_call_id="c1"),
        entry(4, "a", "assistant", tool_calls=[dict(call, function={"name": "again", "arguments": ""})]),
        entry(5, "a", "tool", "second result", tool_call_id="c1"),
        entry(6, "a", "tool", "orphan", tool_call_id="nope"),
    ]
    viewer = SessionViewer(records)
    index = viewer.build_causality_index()
    assert (index["msg_000003"].parent, index["msg_000005"].parent, index["msg_000006"].parent) == (
        "msg_000001", "msg_000004", None
    )
    assert R.render_perspective(viewer.extract_agent_perspective("a")).splitlines() == [
        'msg_000001 [Action] lookup(q="x")',
        "msg_000003 [Received] lookup: result for a",
        "msg_000004 [Action] again()",
        "msg_000005 [Received] again: second result",
        "msg_000006 [Received] ?: orphan",
    ]


def test_refusals():
    viewer = SessionViewer([entry(1, "a", "user", "x"), entry(2, "b", "user", "y")])
    with pytest.raises(UnknownAgent, match="unknown agent 'c' \\(agents: a, b\\)"):
        viewer.transcript("c")
    with pytest.raises(UnknownMessage, match="unknown message 'msg_000009'"):
        viewer.trace_message_flow("msg_000009")
    with pytest.raises(UnknownMessage, match="msg_000002 is not a transcript entry of a"):
        viewer.get_transcript("a", after="msg_000002")
    assert SessionViewer([]).list_agents() == []


def test_many_agents_many_entries_stay_consistent():
    """A random multi-agent stream: every delivered entry is counted once in the dialog."""
    rng = random.Random(7)
    records, n = [], 0
    agents = [f"agent_{i:03d}" for i in range(1, 6)]
    for agent in agents:
        n += 1
        records.append(make_record("agent_created", f"msg_{n:06d}", agent_id=agent, name=agent.upper()))
    utterances = []
    for _ in range(400):
        n += 1
        speaker = rng.choice(agents)
        records.append(entry(n, speaker, "assistant", f"said {n}"))
        utterances.append(f"msg_{n:06d}")
        said = n
        for hearer in rng.sample(agents, 2):
            if hearer != speaker:
                n += 1
                records.append(entry(n, hearer, "user", f"[{speaker}] said {said}", substance=f"msg_{said:06d}"))
    viewer = SessionViewer(records)
    items = viewer.extract_dialog(agents)
    assert [i.message_id for i in items] == utterances
    assert sum(len(i.entries) for i in items) == sum(1 for r in records if r["event_type"] == "transcript_entry")
    assert all(i.content == f"said {int(i.message_id[4:])}" for i in items)


@pytest.mark.parametrize("tool_calls, expected", [
    ([{"id": "c1", "type": "function", "function": {"name": "task", "arguments": "{}"}}], [("c1", "task", "{}")]),
    ([{"id": "c1", "function": [{"name": "task"}]}], [("c1", "?", "")]),  # function is a list
    ([{"id": 5, "function": {"name": 7, "arguments": {"a": 1}}}], [(None, "?", "")]),
    (["not a call", {"id": "c2", "function": {"name": "discuss"}}], [("c2", "discuss", "")]),
    ("task", []),  # not a list at all
])
def test_tool_calls_of_a_damaged_entry_show_what_is_still_a_call(tool_calls, expected):
    from otel_agents.views.index import tool_calls_of

    record = {"message_id": "msg_000001", "role": "assistant", "tool_calls": tool_calls}
    assert [(c.id, c.name, c.arguments) for c in tool_calls_of(record)] == expected
