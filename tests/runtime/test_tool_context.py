"""ToolContext.reply: text only, and only while its call runs: what it appends must stay a transcript providers accept."""

from __future__ import annotations

import asyncio

from otel_agents.llm.scripts import parse_script
from otel_agents.runtime.scenario import build_session
from otel_agents.runtime.tools import ToolContext, tool
from support.transcripts import assert_provider_valid

SCRIPT = {"name": "replies", "root": {"name": "main"},
          "agents": {"main": [{"tool_calls": [{"name": "answer", "arguments": {}}]}, "done", "again"]}}


def _session(memory_tracing, answer):
    return build_session(parse_script(SCRIPT, "inline"), telemetry=memory_tracing.telemetry, tools=[answer])


def test_a_reply_that_is_not_text_is_the_tool_s_failure_and_nothing_but_text_is_recorded(memory_tracing):
    @tool
    def answer(ctx: ToolContext) -> str:
        """Reply with a number."""
        ctx.reply(5)
        return "unreached"

    session = _session(memory_tracing, answer)
    assert asyncio.run(session.run("go")) == "done"
    (result,) = [m for m in session.root.transcript if m["role"] == "tool"]
    assert result["content"] == "Error: tool 'answer' failed: TypeError: ToolContext.reply takes text (str), not int"
    assert all(isinstance(r.get("content", ""), (str, type(None))) for r in memory_tracing.recorder.records)
    assert_provider_valid(session.root.transcript)


def test_a_reply_after_the_call_ended_is_refused_and_the_transcript_is_unchanged(memory_tracing):
    kept: list[ToolContext] = []

    @tool
    def answer(ctx: ToolContext) -> str:
        """Keep the context."""
        kept.append(ctx)
        return "now"

    session = _session(memory_tracing, answer)
    assert asyncio.run(session.run("go")) == "done"
    before = list(session.root.transcript)
    try:
        kept[0].reply("late result")
    except RuntimeError as exc:
        assert "has ended" in str(exc) and "'answer'" in str(exc)
    else:
        raise AssertionError("a reply after the call ended was taken")
    assert session.root.transcript == before
    assert not [r for r in memory_tracing.recorder.records if r.get("content") == "late result"]
    assert asyncio.run(session.run("more")) == "again"
    assert_provider_valid(session.root.transcript)
