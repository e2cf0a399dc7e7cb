"""Session.external outside any run: the record must still reach the trace (spans are the state)."""

from __future__ import annotations

import asyncio

from otel_agents.llm.scripts import parse_script
from otel_agents.runtime.scenario import build_session
from otel_agents.tracing.records import from_span_event

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
