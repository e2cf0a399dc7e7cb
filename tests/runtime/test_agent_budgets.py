"""Budgets in the agent loop: a spent sub-agent is an error result for its caller, a spent root ends the run."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from otel_agents.llm.budget import SESSION_OWNER, Budget, BudgetExhausted, BudgetMeter
from otel_agents.runtime.tools import tool
from otel_agents.tracing import semconv as sc


@tool
def noop() -> str:
    """Does nothing."""
    return "ok"


def calls(*names):
    return {"tool_calls": [{"name": n, "arguments": {}} for n in names]}


def task(name, prompt="go"):
    arguments = {"name": name, "user_prompt": prompt} if prompt is not None else {"name": name}
    return {"tool_calls": [{"name": "task", "arguments": arguments}]}


def turn(input_tokens, output_tokens=0, **extra):
    return {"text": "x", "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}, **extra}


def chat_spans(span_tree, session):
    return [s for s in span_tree().spans
            if s.name.startswith(sc.OP_CHAT + " ") and s.attributes.get(sc.GEN_AI_CONVERSATION_ID) == session.id]


def budget_events(span_tree):
    return [(s, e) for s in span_tree().spans for e in s.events if e.name == sc.EVENT_BUDGET_EXHAUSTED]


async def test_a_spent_sub_agent_is_an_error_result_and_its_caller_carries_on(scripted, span_tree, memory_tracing):
    session = scripted({
        "agents": {"main": [task("Worker"), "The worker ran out."],
                   "Worker": [calls("noop"), calls("noop"), "never said"]},
        "agent_budgets": {"Worker": {"max_llm_calls": 1}},
    }, tools=[noop])
    answer = await session.run("start")
    assert answer == "The worker ran out."
    results = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert results == ["Error: budget exhausted for Worker: 1 of 1 LLM calls made"]
    worker = session.find_agent("Worker")
    assert sum(1 for m in worker.transcript if m["role"] == "assistant") == 1  # the second attempt was not made
    (span, event), = budget_events(span_tree)
    assert span.name == sc.OP_TURN and span.attributes[sc.AGENT_ID] == worker.agent_id
    assert dict(event.attributes) == {sc.BUDGET_OWNER: "Worker", sc.BUDGET_KIND: "llm_calls",
                                      sc.BUDGET_DETAIL: "1 of 1 LLM calls made"}
    assert ("ERR", "budget exhausted for Worker: 1 of 1 LLM calls made") in memory_tracing.recorder.logs


async def test_a_sub_agent_budget_counts_its_own_sub_agents_and_lasts_across_invocations(scripted):
    session = scripted({
        "agents": {"main": [task("Lead", "first"), task("Lead2"), "done"],
                   "Lead": [task("Helper"), "lead done", calls("noop"), "never"],
                   "Helper": [turn(10, 5)]},
        "agent_budgets": {"Lead": {"max_tokens": 60}},
    }, tools=[noop])
    await session.run("start")
    lead, helper = session.find_agent("Lead"), session.find_agent("Helper")
    assert lead.budget_meter.spent.llm_calls == 3  # two of its own and its helper's, all under its budget
    assert helper.budget_meter is None
    # A second question to the same agent spends from the same budget.
    session.root.inform(lead, "again")
    with pytest.raises(BudgetExhausted, match="budget exhausted for Lead: .* of 60 tokens spent"):
        await lead.response()


async def test_a_spent_root_ends_the_run_with_the_root_named(scripted):
    use_noop = {"text": None, "tool_calls": [{"name": "noop", "arguments": {}}]}
    session = scripted({"agents": {"main": [turn(400, 0, **use_noop), turn(400, 0, **use_noop), "never"]}},
                       tools=[noop])
    session.agent_budgets["main"] = Budget(max_cost_usd=0.0005)
    with pytest.raises(BudgetExhausted) as caught:
        await session.run("start")
    assert str(caught.value) == "budget exhausted for main: $0.0008 of $0.0005 spent"
    assert caught.value.meter is session.root.budget_meter


async def test_a_failed_attempt_counts_and_can_cross_a_call_limit(scripted, span_tree):
    session = scripted({"agents": {"main": [
        {"tool_calls": [{"name": "noop", "arguments": {}}], "fail_first_attempt": {"status": 429}},
        "never said"]}}, tools=[noop], budget=BudgetMeter(SESSION_OWNER, Budget(max_llm_calls=2)))
    with pytest.raises(BudgetExhausted, match="budget exhausted for session: 2 of 2 LLM calls made"):
        await session.run("start")
    attempts = chat_spans(span_tree, session)
    assert [s.attributes[sc.LLM_ATTEMPT] for s in attempts] == [1, 2]  # the 429 and its retry, nothing after
    run = span_tree().roots[-1]
    assert run.attributes[sc.RUN_BUDGET] == '{"max_llm_calls":2}'


async def test_a_session_budget_stops_a_sub_agent_and_the_whole_run(scripted):
    session = scripted({"agents": {"main": [task("Worker"), "never"], "Worker": [calls("noop"), "never"]}},
                       tools=[noop], budget=BudgetMeter(SESSION_OWNER, Budget(max_llm_calls=2)))
    # The Worker's second attempt would be the session's third: the run ends, not just the Worker.
    with pytest.raises(BudgetExhausted, match="for session"):
        await session.run("start")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tokens=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 100)), min_size=1, max_size=8),
    limit=st.floats(0, 0.003, allow_nan=False),
    in_worker=st.booleans(),
)
async def test_what_is_spent_never_passes_the_limit_by_more_than_the_attempt_already_running(
        scripted, span_tree, tokens, limit, in_worker):
    turns = [turn(i, o, text=None, tool_calls=[{"name": "noop", "arguments": {}}]) for i, o in tokens] + ["end"]
    agents = {"main": [task("Worker"), "end"], "Worker": turns} if in_worker else {"main": turns}
    session = scripted({"agents": agents, "agent_budgets": {"Worker" if in_worker else "main": {"max_cost_usd": limit}}},
                       tools=[noop])
    try:
        await session.run("start")
    except BudgetExhausted:
        assert not in_worker  # a sub-agent's budget never ends the run
    costs = [s.attributes.get(sc.GEN_AI_USAGE_COST) or 0.0 for s in chat_spans(span_tree, session)
             if s.attributes.get(sc.GEN_AI_AGENT_NAME) == ("Worker" if in_worker else "main")]
    assert sum(costs[:-1]) < limit or limit == 0 and not costs  # every attempt but the last started under it
    assert sum(costs) <= limit + max(costs, default=0.0)


async def test_a_hook_agent_stopped_by_the_session_budget_ends_the_run_instead_of_denying(scripted, span_tree):
    session = scripted({
        "agents": {"main": [task("Guard", None), calls("noop"), "never"], "Guard": ["ALLOW"]},
        "hooks": [{"kind": "approval", "name": "Guard", "agent": "Guard", "tools": ["noop"]}],
    }, tools=[noop], budget=BudgetMeter(SESSION_OWNER, Budget(max_llm_calls=2)))
    with pytest.raises(BudgetExhausted, match="for session: 2 of 2 LLM calls made"):
        await session.run("start")
    results = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    # No denial of noop was made up: its call is answered with what stopped the run, so the
    # transcript stays one a provider accepts when the session goes on.
    assert results == ["Created subagent: Guard", "Error: budget exhausted for session: 2 of 2 LLM calls made"]


async def test_a_hook_agent_with_its_own_spent_budget_fails_closed(scripted):
    session = scripted({
        "agents": {"main": [task("Guard", None), calls("noop"), "denied, then"], "Guard": ["ALLOW"]},
        "hooks": [{"kind": "approval", "name": "Guard", "agent": "Guard", "tools": ["noop"]}],
        "agent_budgets": {"Guard": {"max_llm_calls": 0}},
    }, tools=[noop])
    assert await session.run("start") == "denied, then"
    (_, result) = [m["content"] for m in session.root.transcript if m["role"] == "tool"]
    assert result == ("Error: Action blocked by hook 'Guard': hook failed: "
                      "budget exhausted for Guard: 0 of 0 LLM calls made")
