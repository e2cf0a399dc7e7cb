"""Session.external outside any run: the record must still reach the trace (spans are the state)."""

from __future__ import annotations

import asyncio

from otel_agents.llm.scripts import parse_script
from otel_agents.runtime.scenario import build_session
from otel_agents.tracing.records import from_span_event
from support.transcripts import assert_provider_valid

SCRIPT = {"name": "watcher", "root": {"name": "watcher"}, "agents": {"watcher": ["noted", "I'll reload the data."]}}


def test_external_event_between_runs_is_a_span_event_and_a_record(memory_tracing):
    session = build_session(parse_script(SCRIPT, "inline"), telemetry=memory_tracing.telemetry)
    asyncio.run(session.run("watch data.json"))
    message_id = session.external(session.root, "File changed: data.json")
    span = [s for s in memory_tracing.spans() if s.name == "external_input watcher"]
    assert len(span) == 1 and span[0].parent is None
    records = [from_span_event(e.name, e.attributes) for e in span[0].events]
    assert records == [r for r in memory_tracing.recorder.records if r["message_id"] == message_id]
    assert records[0]["source"] == "external" and records[0]["content"] == "File changed: data.json"
    assert span[0].attributes["gen_ai.conversation.id"] == session.id
    # The agent then reacts to it in its next response (seed example 4).
    answer = asyncio.run(session.root.response())
    assert answer == "I'll reload the data."
    assert session.root.transcript[-2] == {"role": "user", "content": "File changed: data.json"}


def test_an_event_arriving_while_tool_results_are_awaited_is_heard_after_them(memory_tracing):
    # A provider refuses a message between an assistant's tool calls and their results: the event waits.
    from otel_agents.runtime.tools import tool

    started = asyncio.Event()

    @tool
    async def sleepy() -> str:
        """Sleep a moment."""
        started.set()
        await asyncio.sleep(0.2)
        return "slept"

    @tool
    def quick() -> str:
        """Answer at once."""
        return "quick"

    script = {"name": "waiting", "root": {"name": "lead"}, "agents": {"lead": [
        {"tool_calls": [{"name": "sleepy", "arguments": {}}, {"name": "quick", "arguments": {}}]}, "done"]}}
    session = build_session(parse_script(script, "inline"), telemetry=memory_tracing.telemetry, tools=[sleepy, quick])

    async def main():
        run = asyncio.ensure_future(session.run("go"))
        await started.wait()
        held = session.external(session.root, "EVENT during tool")
        return held, await run

    held, answer = asyncio.run(main())
    assert held is None and answer == "done"
    assert_provider_valid(session.root.transcript)
    roles = [(m["role"], m.get("content")) for m in session.root.transcript[1:]]
    assert [r for r, _ in roles] == ["assistant", "tool", "tool", "user", "assistant"], roles
    assert roles[3] == ("user", "EVENT during tool")
    (record,) = [r for r in memory_tracing.recorder.records if r.get("content") == "EVENT during tool"]
    assert record["source"] == "external"
    # Between runs nothing waits: heard at once, its id returned.
    assert session.external(session.root, "later") == session.root.transcript_ids[-1]


def test_an_event_held_for_a_cancelled_run_is_heard_after_the_interrupted_results(memory_tracing):
    # Cancelling the run answers the open call with the interrupted result: the held event must not be lost.
    from otel_agents.runtime.tools import tool

    started = asyncio.Event()

    @tool
    async def sleepy() -> str:
        """Sleep long."""
        started.set()
        await asyncio.sleep(30)
        return "slept"

    script = {"name": "waiting", "root": {"name": "lead"}, "agents": {"lead": [
        {"tool_calls": [{"name": "sleepy", "arguments": {}}]}, "heard it"]}}
    session = build_session(parse_script(script, "inline"), telemetry=memory_tracing.telemetry, tools=[sleepy])

    async def main():
        run = asyncio.ensure_future(session.run("go"))
        await started.wait()
        held = session.external(session.root, "EVENT before the cancel")
        run.cancel()
        try:
            await run
        except asyncio.CancelledError:
            return held
        raise AssertionError("the run was not cancelled")

    assert asyncio.run(main()) is None
    assert_provider_valid(session.root.transcript)
    roles = [(m["role"], m.get("content")) for m in session.root.transcript[1:]]
    assert [r for r, _ in roles] == ["assistant", "tool", "user"], roles
    assert roles[-1] == ("user", "EVENT before the cancel")
    assert [r for r in memory_tracing.recorder.records if r.get("content") == "EVENT before the cancel"]
    assert asyncio.run(session.run("next")) == "heard it"  # the session goes on with it in its transcript
