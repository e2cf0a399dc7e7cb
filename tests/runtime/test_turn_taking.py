"""Turn-taking: concurrent tool calls that reach the same agent take turns; different agents still overlap."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from otel_agents.runtime.agent_approval import agent_approval_hook
from otel_agents.runtime.tools import tool
from otel_agents.runtime.turn_taking import Turn, hold
from support.transcripts import assert_provider_valid


@tool
async def slow() -> str:
    """Take a moment."""
    await asyncio.sleep(0.05)
    return "slow done"


async def test_two_discussions_with_one_speaker_take_turns(scripted):
    session = scripted({"agents": {
        "main": [
            {"tool_calls": [{"name": "task", "arguments": {"name": "Jack"}}]},
            {"tool_calls": [{"name": "discuss", "arguments": {"speakers": ["Jack"], "prompt": "A?"}},
                            {"name": "discuss", "arguments": {"speakers": ["Jack"], "prompt": "B?"}}]},
            "Done.",
        ],
        "Jack": [{"tool_calls": [{"name": "slow", "arguments": {}}]}, "first answer", "second answer"],
    }}, tools=[slow])
    assert await session.run("go") == "Done."
    jack = session.find_agent("Jack").transcript
    assert_provider_valid(jack)
    # The second question reaches Jack only once the first exchange has ended.
    contents = [(m["role"], m.get("content")) for m in jack]
    assert contents.index(("user", "B?")) > contents.index(("assistant", "first answer"))
    assert_provider_valid(session.root.transcript)


async def test_an_approval_agent_judges_each_request_against_the_state_the_last_one_left(scripted):
    session = scripted({"agents": {
        "main": [
            {"tool_calls": [{"name": "task", "arguments": {"name": "ResourceMonitor"}}]},
            {"tool_calls": [{"name": "task", "arguments": {"name": n}} for n in ("S1", "S2", "S3")]},
            "Done.",
        ],
        "ResourceMonitor": ["APPROVE", "APPROVE", "DENY. too many"],
    }})
    session.hooks.approvers.append(agent_approval_hook("ResourceMonitor", tools=frozenset({"task"}),
                                                      agents=frozenset({"main"})))
    await session.run("go")
    asked = [m["content"] for m in session.find_agent("ResourceMonitor").transcript if m["role"] == "user"]
    assert [a.split("Current subagent count: ")[1] for a in asked] == ["1. Approve?", "2. Approve?", "3. Approve?"]
    results = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert results[1:] == ["Created subagent: S1", "Created subagent: S2",
                           "Error: Action blocked by hook 'ResourceMonitor': too many"]
    assert_provider_valid(session.find_agent("ResourceMonitor").transcript)


async def test_concurrent_runs_of_one_session_take_turns(scripted, span_tree):
    session = scripted({"agents": {"main": [
        {"tool_calls": [{"name": "slow", "arguments": {}}]}, "one", "two"]}}, tools=[slow])
    answers = await asyncio.gather(session.run("first"), session.run("second"))
    assert sorted(answers) == ["one", "two"]
    roles = [(m["role"], m.get("content")) for m in session.root.transcript]
    assert roles[0] == ("user", "first") and roles[4] == ("user", "second")  # after the whole first exchange
    assert_provider_valid(session.root.transcript)
    first, second = sorted(span_tree().roots, key=lambda s: s.start_time)
    assert first.end_time <= second.start_time


async def test_tool_calls_reaching_different_agents_still_overlap(scripted, span_tree):
    session = scripted({"agents": {
        "main": [{"tool_calls": [{"name": "task", "arguments": {"name": n, "user_prompt": "go"}} for n in "AB"]},
                 "Done."],
        "A": [{"tool_calls": [{"name": "slow", "arguments": {}}]}, "a"],
        "B": [{"tool_calls": [{"name": "slow", "arguments": {}}]}, "b"],
    }}, tools=[slow])
    await session.run("go")
    tools = [s for s in span_tree().named("execute_tool slow")]
    assert len(tools) == 2
    assert max(s.start_time for s in tools) < min(s.end_time for s in tools)


async def test_hold_is_reentrant_along_a_chain_and_its_child_tasks():
    turn = Turn()
    async with hold(turn):
        async with hold(turn):  # the same chain: no wait
            pass
        await asyncio.wait_for(asyncio.ensure_future(_enter(turn)), 1)  # a task it started: no wait


async def _enter(*turns: Turn) -> None:
    async with hold(*turns):
        await asyncio.sleep(0)


def other_chain(coro) -> asyncio.Task:
    """A task that is no part of the current chain (tasks otherwise copy the context, holds included)."""
    return asyncio.get_running_loop().create_task(coro, context=contextvars.Context())


async def test_hold_makes_other_chains_wait_and_takes_turns_in_one_order():
    a, b = Turn(), Turn()
    order: list[str] = []

    async def chain(name: str, first: Turn, second: Turn) -> None:
        # Asked for in opposite orders: taken in rank order, so the two chains cannot deadlock.
        async with hold(second, first):
            order.append(f"{name} in")
            await asyncio.sleep(0.01)
            order.append(f"{name} out")

    await asyncio.wait_for(asyncio.gather(chain("x", a, b), chain("y", b, a)), 2)
    assert order in (["x in", "x out", "y in", "y out"], ["y in", "y out", "x in", "x out"])


async def test_a_cancelled_wait_gives_back_what_it_took():
    a, b = Turn(), Turn()
    async with hold(b):
        waiter = other_chain(_enter(a, b))  # takes a, then waits for b
        await asyncio.sleep(0.01)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
    await asyncio.wait_for(_enter(a, b), 1)


def test_a_turn_works_under_successive_event_loops():
    turn = Turn()

    async def contended() -> None:
        async with hold(turn):
            other = other_chain(_enter(turn))
            await asyncio.sleep(0.01)
            assert not other.done()
        await other

    asyncio.run(contended())
    asyncio.run(contended())  # a lock bound to the first loop would raise here
