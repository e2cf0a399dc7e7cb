"""otel_agents.restore: rebuilding sessions from records, refusing contradictions, repairing crashes."""

from __future__ import annotations

import asyncio

import pytest

from otel_agents.llm.scripts import parse_script
from otel_agents.restore import (
    INTERRUPTED_RESULT,
    ResumeError,
    SavedRun,
    SavedSession,
    check_records,
    merge_records,
    restore_session,
)
from otel_agents.llm.scripted_provider import register_script
from otel_agents.runtime.scenario import build_session
from otel_agents.tracing.records import make_record

SCRIPT = {
    "name": "resume-unit",
    "root": {"name": "main", "system_prompt": "Coordinate."},
    "agents": {
        "main": [
            {"tool_calls": [{"name": "task", "arguments": {"name": "Helper", "system_prompt": "Help."}}]},
            "made a helper",
            "second answer",
        ],
        "Helper": ["helping"],
    },
}


def run_prompts(memory_tracing, prompts, session=None):
    script = parse_script(SCRIPT, "inline")
    if session is None:
        session = build_session(script, telemetry=memory_tracing.telemetry)
    for prompt in prompts:
        asyncio.run(session.run(prompt))
    return session


def saved_from(memory_tracing, session) -> SavedSession:
    runs = [
        SavedRun(i + 1, format(s.context.trace_id, "032x"), format(s.context.span_id, "016x"))
        for i, s in enumerate(s for s in memory_tracing.spans() if s.parent is None and s.name.startswith("invoke_agent"))
    ]
    return SavedSession(session.id, merge_records(memory_tracing.recorder.records), len(runs), runs[-1] if runs else None)


def test_restored_session_has_every_agent_transcript_and_counter(memory_tracing):
    original = run_prompts(memory_tracing, ["first"])
    saved = saved_from(memory_tracing, original)
    restored = restore_session(saved, telemetry=memory_tracing.telemetry)
    assert restored.counters == original.counters
    assert {a: (g.name, g.model) for a, g in restored.agents.items()} == {
        a: (g.name, g.model) for a, g in original.agents.items()
    }
    for agent_id, agent in original.agents.items():
        assert restored.agents[agent_id].transcript == agent.transcript
        assert restored.agents[agent_id].transcript_ids == agent.transcript_ids
    assert restored.root.agent_id == original.root.agent_id
    assert restored.root.subagents["Helper"] is restored.agents[original.root.subagents["Helper"].agent_id]
    assert restored.runs == 1


def test_a_restored_session_answers_as_the_original_would(memory_tracing):
    register_script(parse_script(SCRIPT, "inline"))  # the restored session's own client was not told of it
    original = run_prompts(memory_tracing, ["first"])
    saved = saved_from(memory_tracing, original)
    restored = restore_session(saved, telemetry=memory_tracing.telemetry)
    answer = asyncio.run(restored.run("second"))
    assert answer == "second answer"
    new_ids = [r["message_id"] for r in memory_tracing.recorder.records]
    assert len(new_ids) == len(set(new_ids)), "no id is reused after resumption"


def test_interrupted_tool_calls_get_an_error_result_inside_the_next_run(memory_tracing):
    session = run_prompts(memory_tracing, ["first"])
    records = merge_records(memory_tracing.recorder.records)
    # Cut the stream right after the root asked for a tool: as if killed mid-call.
    cut = next(i for i, r in enumerate(records) if r.get("tool_calls"))
    saved = SavedSession(session.id, records[: cut + 1])
    restored = restore_session(saved, telemetry=memory_tracing.telemetry)
    before = len(memory_tracing.recorder.records)
    asyncio.run(restored.run("carry on"))
    new = memory_tracing.recorder.records[before:]
    repair = new[0]
    assert repair["role"] == "tool" and repair["content"] == INTERRUPTED_RESULT
    assert repair["tool_call_id"] == records[cut]["tool_calls"][0]["id"]
    assert new[1]["role"] == "user" and new[1]["content"] == "carry on"
    # The repair lives on the resumed run's root span, so the trace holds it too.
    root = [s for s in memory_tracing.spans() if s.parent is None][-1]
    assert any(e.attributes.get("otel_agents.event.content") == INTERRUPTED_RESULT for e in root.events)


def test_a_call_that_replied_but_never_ended_gets_the_interrupted_result_once(memory_tracing):
    session = run_prompts(memory_tracing, ["first"])
    records = merge_records(memory_tracing.recorder.records)
    call = next(r for r in records if r.get("tool_calls"))["tool_calls"][0]["id"]
    # Its result is in, but its span never ended (a discuss call killed between speakers).
    saved = SavedSession(session.id, records, open_tool_calls=frozenset({call}))
    restored = restore_session(saved, telemetry=memory_tracing.telemetry)
    before = len(memory_tracing.recorder.records)
    asyncio.run(restored.run("second"))
    repair = memory_tracing.recorder.records[before]
    assert (repair["tool_call_id"], repair["content"]) == (call, INTERRUPTED_RESULT)
    # Resumed again from what that run saved, with the span still interrupted: answered already.
    again = SavedSession(session.id, merge_records(memory_tracing.recorder.records), open_tool_calls=frozenset({call}))
    contents = [m.get("content") for m in restore_session(again, telemetry=memory_tracing.telemetry).root.transcript]
    assert contents.count(INTERRUPTED_RESULT) == 1
    assert not restore_session(again, telemetry=memory_tracing.telemetry).before_next_run


def test_contradicting_sources_are_refused():
    a = make_record("transcript_entry", "msg_000002", agent_id="agent_001", role="user", content="hi")
    b = dict(a, content="something else")
    assert merge_records([a], [dict(a, ts="x")]) == [a]
    with pytest.raises(ResumeError, match="msg_000002"):
        merge_records([a], [b])


@pytest.mark.parametrize(
    "records, needle",
    [
        ([make_record("transcript_entry", "msg_000001", agent_id="agent_009", role="user", content="x")], "never created"),
        ([make_record("agent_created", "msg_000001", agent_id="agent_001", parent="agent_000")], "unknown parent"),
        (
            [
                make_record("agent_created", "msg_000001", agent_id="agent_001"),
                make_record("transcript_truncated", "msg_000002", agent_id="agent_001", keep=3),
            ],
            "keeps 3 of 0",
        ),
        (
            [
                make_record("agent_created", "msg_000001", agent_id="agent_001"),
                make_record("agent_created", "msg_000002", agent_id="agent_001"),
            ],
            "created twice",
        ),
    ],
)
def test_records_that_contradict_themselves_are_refused(records, needle):
    with pytest.raises(ResumeError, match=needle):
        check_records(records)


def test_a_redacted_save_cannot_be_resumed():
    saved = SavedSession("s1", [make_record("agent_created", "msg_000001", agent_id="agent_001")], redacted=True)
    with pytest.raises(ResumeError, match="redacted-save"):
        restore_session(saved)


@pytest.mark.parametrize("field", ["script", "model"])
def test_a_damaged_script_or_model_name_is_refused_not_guessed(field):
    """A name that is not text must not crash the loader, nor be swapped for the default script."""
    from otel_agents.restore import ResumeError, runs_from_meta, saved_runs
    from otel_agents.tracing import semconv as sc

    attribute = sc.RUN_SCRIPT if field == "script" else sc.RUN_MODEL
    tree = {"runs": [{"index": 1, "trace_id": "a" * 32, "span_id": "b" * 16, "attributes": {attribute: ["x"]}}]}
    with pytest.raises(ResumeError, match=f"last run's {field} is list, not a name"):
        saved_runs(tree)
    meta = {"runs": 1, "last_run": {"index": 1, "trace_id": "a" * 32, "span_id": "b" * 16, field: {"x": 1}}}
    with pytest.raises(ResumeError, match="damaged last_run"):
        runs_from_meta(meta)
    good = {**meta, "last_run": {**meta["last_run"], field: "jack-and-jill"}}
    assert getattr(runs_from_meta(good)[1], "script" if field == "script" else "model_override") == "jack-and-jill"


def test_a_last_run_with_ids_that_are_not_hex_is_refused():
    from otel_agents.restore import ResumeError, saved_runs

    tree = {"runs": [{"index": 1, "trace_id": "g" * 32, "span_id": "b" * 16, "attributes": {}}]}
    with pytest.raises(ResumeError, match="not hex"):
        saved_runs(tree)
