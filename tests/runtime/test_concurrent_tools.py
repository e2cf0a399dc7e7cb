"""Tool calls of one assistant turn run concurrently; spans and totals stay right."""

from __future__ import annotations

import asyncio

import pytest

from otel_agents.runtime.tools import ToolContext, tool
from otel_agents.tracing import semconv as sc

# Delays chosen so the tools finish in the reverse of the order they were called.
DELAYS_MS = {"Slow": 240, "Middle": 120, "Quick": 0}


@tool
async def consult(ctx: ToolContext, who: str, delay_ms: int) -> str:
    """Wait, then ask a freshly created sub-agent and return its answer.

    who: the sub-agent's name
    delay_ms: how long to wait first
    """
    await asyncio.sleep(delay_ms / 1000)
    session = ctx.agent.session
    helper = session.create_agent(who, ctx.agent.model, system_prompt=f"You are {who}.", parent=ctx.agent,
                                  cause=ctx.call_message_id)
    helper.harken(f"{who}, what do you say?")
    return str(await helper.response())


@pytest.fixture
async def run(scripted, span_tree):
    data = {
        "agents": {
            "main": [
                {"tool_calls": [{"name": "consult", "arguments": {"who": w, "delay_ms": d}} for w, d in DELAYS_MS.items()]},
                "All consulted.",
            ],
            # Each helper first calls a tool it does not have (its error result is still a
            # tool call of its own), so its subtree has two chats and one tool span.
            **{w: [{"tool_calls": [{"name": "consult_nothing", "arguments": {}}], "latency_ms": d // 8}, f"{w} says hi"]
               for w, d in DELAYS_MS.items()},
        }
    }
    session = scripted(data, tools=[consult])
    answer = await session.run("consult everyone at once")
    return session, answer, span_tree()


def total(span, scope, key):
    return span.attributes[sc.total_attr(scope, key)]


def test_each_tool_span_holds_its_own_sub_agent(run):
    session, answer, tree = run
    assert answer == "All consulted."
    tools = tree.named("execute_tool consult")
    assert len(tools) == 3
    (turn,) = [t for t in tree.named("turn") if t.attributes[sc.AGENT_ID] == session.root.agent_id
               and t.attributes[sc.TURN_INDEX] == 1]
    for span in tools:
        assert tree.parent(span) is turn
        call_id = span.attributes[sc.GEN_AI_TOOL_CALL_ID]
        who = next(c["function"]["arguments"] for c in session.root.transcript[1]["tool_calls"] if c["id"] == call_id)
        name = next(w for w in DELAYS_MS if f'"{w}"' in who)
        kids = tree.children(span)
        assert [k.name for k in kids] == [f"create_agent {name}", f"invoke_agent {name}"]
        invoke = kids[1]
        # Everything the sub-agent did is under its own invocation, nowhere else.
        below = tree.descendants(invoke)
        assert {d.attributes.get(sc.GEN_AI_AGENT_NAME) for d in below} == {name}
        assert len([d for d in below if tree.is_chat(d)]) == 2
        assert [d.name for d in below if d.name.startswith("execute_tool ")] == ["execute_tool consult_nothing"]
        assert span.attributes[sc.TOOL_STATUS] == "ok"


def test_tools_really_overlapped(run):
    _, _, tree = run
    tools = sorted(tree.named("execute_tool consult"), key=lambda s: s.start_time)
    # All started before any finished, and they finished in reverse order of calling.
    assert max(s.start_time for s in tools) < min(s.end_time for s in tools)
    assert [s.end_time for s in tools] == sorted((s.end_time for s in tools), reverse=True)


def test_results_are_in_the_transcript_in_completion_order(run):
    session, _, _ = run
    results = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert results == ["Quick says hi", "Middle says hi", "Slow says hi"]
    # Every call got exactly one result, linked by id.
    call_ids = [c["id"] for c in session.root.transcript[1]["tool_calls"]]
    assert sorted(m["tool_call_id"] for m in session.root.transcript if m["role"] == "tool") == sorted(call_ids)


def test_totals_under_concurrency(run):
    session, _, tree = run
    root = tree.roots[0]
    chats = [s for s in tree.spans if tree.is_chat(s)]
    assert total(root, "inclusive", "llm_calls") == len(chats) == 2 + 3 * 2
    assert total(root, "inclusive", "cost_usd") == pytest.approx(
        sum(c.attributes[sc.GEN_AI_USAGE_COST] for c in chats), abs=1e-12
    )
    # main's own: its two chats and three tools; the helpers' are theirs alone.
    assert total(root, "self", "llm_calls") == 2
    assert total(root, "self", "tool_calls") == 3
    assert total(root, "inclusive", "tool_calls") == 3 + 3
    for name in DELAYS_MS:
        (invoke,) = tree.named(f"invoke_agent {name}")
        own = [c for c in tree.descendants(invoke) if tree.is_chat(c)]
        assert total(invoke, "self", "llm_calls") == total(invoke, "inclusive", "llm_calls") == 2
        assert total(invoke, "self", "cost_usd") == pytest.approx(sum(c.attributes[sc.GEN_AI_USAGE_COST] for c in own))
        assert total(invoke, "self", "tool_calls") == 1
    (first_turn,) = [t for t in tree.children(root, "turn") if t.attributes[sc.TURN_INDEX] == 1]
    assert total(first_turn, "self", "llm_calls") == 1
    assert total(first_turn, "inclusive", "llm_calls") == 1 + 3 * 2
