"""A run stopped inside its tool calls (cancelled, or a budget in force) leaves every call answered and
nothing running after it; the session goes on with a transcript a provider accepts."""

from __future__ import annotations

import asyncio

import pytest

from otel_agents.llm.budget import SESSION_OWNER, Budget, BudgetExhausted, BudgetMeter
from otel_agents.runtime.tool_call import INTERRUPTED_RESULT
from otel_agents.runtime.tools import tool
from otel_agents.tracing import semconv as sc
from support.transcripts import assert_provider_valid

started = asyncio.Event()


@tool
async def wait_long() -> str:
    """Take a long time."""
    started.set()
    await asyncio.sleep(30)
    return "finally"


@pytest.fixture(autouse=True)
def fresh_event():
    started.clear()


def tool_results(agent) -> list[str]:
    return [m["content"] for m in agent.transcript if m["role"] == "tool"]


async def test_a_cancelled_run_answers_its_open_tool_call_and_the_session_goes_on(scripted, span_tree):
    session = scripted({"agents": {"main": [
        {"tool_calls": [{"name": "wait_long", "arguments": {}}]}, "after", "second run"]}}, tools=[wait_long])
    run = asyncio.ensure_future(session.run("go"))
    await asyncio.wait_for(started.wait(), 5)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert tool_results(session.root) == [INTERRUPTED_RESULT]
    (span,) = span_tree().named("execute_tool wait_long")
    assert span.attributes[sc.CANCELLED] is True
    assert span.attributes[sc.TOOL_RESULT_MESSAGE_ID] == session.root.transcript_ids[2]
    assert await session.run("again") == "after"
    assert_provider_valid(session.root.transcript)
    # Not charged: the tree counts only calls that completed, and so do the span totals.
    second = max(span_tree().roots, key=lambda s: s.start_time)
    assert second.attributes[sc.total_attr("self", "tool_calls")] == 0


async def test_a_budget_in_force_answers_every_call_and_stops_its_siblings(scripted, span_tree):
    session = scripted({"agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "H", "user_prompt": "hi"}},
                                 {"name": "wait_long", "arguments": {}}]}, "end"],
        "H": ["hello"],
    }}, tools=[wait_long], budget=BudgetMeter(SESSION_OWNER, Budget(max_llm_calls=1)))
    with pytest.raises(BudgetExhausted):
        await asyncio.wait_for(session.run("go"), 10)  # the sibling's 30 s are not waited for
    results = tool_results(session.root)
    assert sorted(results) == sorted(["Error: budget exhausted for session: 1 of 1 LLM calls made", INTERRUPTED_RESULT])
    entries = len(session.root.transcript)
    await asyncio.sleep(0.1)
    assert len(session.root.transcript) == entries  # nothing written after the run ended
    assert_provider_valid(session.root.transcript)
    root = span_tree().roots[0]
    # The stopped task call completed (failed) and is counted; the cancelled sibling is not.
    assert root.attributes[sc.total_attr("self", "tool_calls")] == 1
    (task_span,) = span_tree().named("execute_tool task")
    assert task_span.attributes[sc.ERROR_TYPE] == "budget_exhausted"
    assert task_span.attributes[sc.TOOL_STATUS] == "failed"


async def test_a_discussion_cancelled_after_one_speaker_gets_the_interrupted_result_after_the_reply(scripted):
    session = scripted({"agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": "Jack"}},
                                 {"name": "task", "arguments": {"name": "Jill"}}]},
                 {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Jack", "Jill"]}}]},
                 "after"],
        "Jack": ["Hi, I'm Jack."],
        "Jill": [{"text": "Hi, I'm Jill.", "latency_ms": 30_000}],
    }})
    run = asyncio.ensure_future(session.run("go"))
    for _ in range(6000):  # until Jack has spoken and Jill is thinking (the first run loads litellm: slow)
        if session.root is not None and "Hi, I'm Jack." in tool_results(session.root):
            break
        await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    (discuss_call,) = [c["id"] for m in session.root.transcript for c in m.get("tool_calls") or []
                       if c["function"]["name"] == "discuss"]
    assert [m["content"] for m in session.root.transcript if m.get("tool_call_id") == discuss_call] == [
        "Hi, I'm Jack.", INTERRUPTED_RESULT]
    assert session.root.transcript[-1]["content"] == INTERRUPTED_RESULT  # after the reply: the model sees the cut
    assert await session.run("again") == "after"
    assert_provider_valid(session.root.transcript)


class ToolEscape(BaseException):
    """Neither an Exception nor one of the interruptions asyncio and Python raise."""


@tool
def escape() -> str:
    """Raise what is not an Exception."""
    raise ToolEscape("out")


@tool
def hooked() -> str:
    """Never runs: its approval hook raises."""
    return "ran"


@pytest.mark.parametrize("where", ["tool", "hook"])
async def test_any_base_exception_out_of_a_tool_call_answers_it_before_it_propagates(scripted, span_tree, where):
    """Only Exception and the interruptions were caught: the call was left without a result."""
    from otel_agents.runtime.hooks import approval

    name = "escape" if where == "tool" else "hooked"
    hooks = []
    if where == "hook":
        @approval(tools=["hooked"])
        def refuse_wildly(request):
            raise ToolEscape("out")
        hooks = [refuse_wildly]
    session = scripted({"agents": {"main": [{"tool_calls": [{"name": name, "arguments": {}}]}, "after", "more"]}},
                       tools=[escape, hooked])
    for hook in hooks:
        session.hooks.approvers.append(hook)
    with pytest.raises(ToolEscape):
        await session.run("go")
    assert tool_results(session.root) == [INTERRUPTED_RESULT]
    (span,) = span_tree().named(f"execute_tool {name}")
    assert span.attributes[sc.TOOL_RESULT_MESSAGE_ID] == session.root.transcript_ids[2]
    assert await session.run("again") == "after"
    assert_provider_valid(session.root.transcript)
