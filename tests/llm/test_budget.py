"""llm/budget.py: limits validated, meters charged and checked, the outermost spent budget named."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, strategies as st

from otel_agents.llm.budget import (
    SESSION_OWNER, Budget, BudgetError, BudgetExhausted, BudgetMeter, Spent, budget_from_json, budget_from_mapping, charge, check, metering,
    refuse_unpriced, tell_warnings, totals_before, usd, whole_percent,
)
from otel_agents.llm.pricing import PriceTable, Usage
from otel_agents.llm.scripts import ScriptError, parse_script
from otel_agents.tracing.telemetry import noop_telemetry


def test_a_budget_from_json_names_where_a_bad_key_or_value_is():
    assert budget_from_mapping({"max_cost_usd": 0.5, "max_llm_calls": 3}, "x") == Budget(max_cost_usd=0.5,
                                                                                           max_llm_calls=3)
    with pytest.raises(BudgetError, match=r"^s\.json: budget: unknown budget key\(s\) max_usd"):
        budget_from_mapping({"max_usd": 1}, "s.json: budget")
    with pytest.raises(BudgetError, match="budget max_tokens: Input should be greater than or equal to 0"):
        budget_from_mapping({"max_tokens": -1}, "here")
    with pytest.raises(BudgetError, match="must be an object"):
        budget_from_mapping([1], "here")


def test_a_script_carries_the_roots_budget_and_those_by_agent_name():
    script = parse_script({"name": "b", "agents": {}, "budget": {"max_tokens": 100},
                           "agent_budgets": {"Jack": {"max_llm_calls": 2}}}, "inline")
    assert script.budgets_by_name("main") == {"main": Budget(max_tokens=100), "Jack": Budget(max_llm_calls=2)}
    # An app's root agent's own budget goes on top of the script's, limit by limit.
    assert script.budgets_by_name("main", Budget(max_cost_usd=1))["main"] == Budget(max_tokens=100, max_cost_usd=1)
    assert script.budgets_by_name("main", Budget(max_tokens=5))["main"] == Budget(max_tokens=5)
    with pytest.raises(ScriptError, match="inline: agent_budgets.Jack: unknown budget key"):
        parse_script({"name": "b", "agents": {}, "agent_budgets": {"Jack": {"calls": 2}}}, "inline")
    with pytest.raises(ScriptError, match="'agent_budgets' must map agent names to budgets"):
        parse_script({"name": "b", "agents": {}, "agent_budgets": [1]}, "inline")


@pytest.mark.parametrize("amount, text", [(0, "$0.00"), (1.5, "$1.50"), (0.012, "$0.01"), (0.000629, "$0.000629")])
def test_dollars_keep_what_matters_below_a_cent(amount, text):
    assert usd(amount) == text


def test_the_outermost_spent_budget_is_the_one_named():
    outer = BudgetMeter("session", Budget(max_llm_calls=1))
    inner = BudgetMeter("Worker", Budget(max_llm_calls=1))
    with metering(outer), metering(inner):
        check(noop_telemetry())
        charge(Usage(input_tokens=3), None)
        with pytest.raises(BudgetExhausted) as caught:
            check(noop_telemetry())
    assert caught.value.meter is outer and str(caught.value) == "budget exhausted for session: 1 of 1 LLM calls made"
    assert inner.spent == Spent(0.0, 3, 1)
    charge(Usage(input_tokens=3), 1.0)  # outside every meter: nobody pays
    assert outer.spent == Spent(0.0, 3, 1)


async def test_concurrent_tasks_charge_only_the_meters_they_run_under():
    a, b = BudgetMeter("a", Budget(max_tokens=100)), BudgetMeter("b", Budget(max_tokens=100))

    async def spend(meter, tokens):
        with metering(meter):
            await asyncio.sleep(0)
            charge(Usage(input_tokens=tokens), 0.5)

    await asyncio.gather(spend(a, 7), spend(b, 11))
    assert (a.spent, b.spent) == (Spent(0.5, 7, 1), Spent(0.5, 11, 1))


@given(costs=st.lists(st.floats(0, 1, allow_nan=False), max_size=30), limit=st.floats(0, 5, allow_nan=False))
def test_spending_stops_within_one_attempt_of_the_limit(costs, limit):
    meter = BudgetMeter("x", Budget(max_cost_usd=limit))
    made = []
    with metering(meter):
        for cost in costs:
            try:
                check(noop_telemetry())
            except BudgetExhausted:
                break
            charge(Usage(), cost)
            made.append(cost)
    assert meter.spent.cost_usd <= limit + (made[-1] if made else 0) + 1e-9
    if len(made) < len(costs):
        assert meter.spent.cost_usd >= limit  # stopped only once the limit was reached


def test_a_cost_limit_needs_every_model_priced_but_other_limits_do_not():
    prices = PriceTable({"custom/priced": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}})
    models = ["custom/priced", "scripted/demo", "custom/unknown-x"]
    with pytest.raises(BudgetError, match=r"unpriced model\(s\) custom/unknown-x:"):
        refuse_unpriced([None, Budget(max_cost_usd=1)], models, prices)
    refuse_unpriced([Budget(max_tokens=5)], models, prices)
    refuse_unpriced([Budget(max_cost_usd=1)], models[:2], prices)


def test_the_spending_before_a_resume_comes_from_the_tree_else_meta():
    meta = {"totals": {"llm_calls": 2, "input_tokens": 5, "output_tokens": 1, "cost_usd": 0.25}}
    assert Spent.from_totals(totals_before(None, meta)) == Spent(0.25, 6, 2)
    tree = {"totals": {"inclusive": {"llm_calls": 3}}}
    assert Spent.from_totals(totals_before(tree, meta)) == Spent(0.0, 0, 3)


_LIMITS = st.builds(Budget, max_cost_usd=st.none() | st.floats(0, 100), max_tokens=st.none() | st.integers(0, 10**6),
                    max_llm_calls=st.none() | st.integers(0, 1000))


@given(_LIMITS, _LIMITS)
def test_limits_given_on_resume_go_on_top_of_the_carried_ones_field_by_field(carried, given_now):
    merged = carried.merged(given_now)
    for key in ("max_cost_usd", "max_tokens", "max_llm_calls"):
        mine = getattr(given_now, key)
        assert getattr(merged, key) == (mine if mine is not None else getattr(carried, key))
    assert carried.merged(None) == carried
    assert budget_from_json(merged.to_json(), "run") == merged  # as recorded on the run and read back


def test_a_recorded_budget_that_is_damaged_names_where_it_came_from():
    assert budget_from_json(None, "the last run") is None
    with pytest.raises(BudgetError, match="^the last run: its budget is not JSON$"):
        budget_from_json("{", "the last run")
    with pytest.raises(BudgetError, match="^the last run: unknown budget key"):
        budget_from_json('{"max_usd": 1}', "the last run")


def test_a_model_counted_at_recorded_costs_charges_meters_those_others_their_price():
    from otel_agents.llm.budget import count_cost_as, counted_cost

    count_cost_as("replay/counted-test", lambda agent, attempt: {("main", 1): 0.25}.get((agent, attempt)))
    assert counted_cost("replay/counted-test", "main", 1, 0.0) == 0.25
    assert counted_cost("replay/counted-test", "main", 2, 0.0) is None  # a call it has no record of
    assert counted_cost("scripted/demo", "main", 1, 0.125) == 0.125  # every other model: its price


@given(tokens=st.lists(st.integers(0, 40), max_size=20), limit=st.integers(0, 200), carried=st.integers(0, 200))
def test_a_limit_warns_once_when_its_spend_crosses_the_mark_and_not_again_after_a_resume(tokens, limit, carried):
    meter = BudgetMeter("x", Budget(max_tokens=limit), Spent(tokens=carried))
    told: list[tuple[str, str]] = []
    with metering(meter):
        for count in tokens:
            charge(Usage(input_tokens=count), None)
            tell_warnings(lambda kind, text: told.append((kind, text)))
    final = carried + sum(tokens)
    crossed = limit > 0 and carried < 0.8 * limit <= final
    assert [kind for kind, _ in told] == (["budget_warning"] if crossed else [])
    assert all(text.startswith("budget warning for x: ") and f" of {limit} tokens spent (" in text for _, text in told)


def test_an_exhausted_budget_is_told_as_a_budget_notice():
    told: list[tuple[str, str]] = []
    meter = BudgetMeter("Worker", Budget(max_llm_calls=1), Spent(llm_calls=1))
    with metering(meter), pytest.raises(BudgetExhausted):
        check(noop_telemetry(), lambda kind, text: told.append((kind, text)))
    assert told == [("budget", "budget exhausted for Worker: 1 of 1 LLM calls made")]


@pytest.mark.parametrize("share, text", [
    (0.998, "99%"), (0.8, "80%"), (0.29, "29%"), (1.0, "100%"), (1.3, "130%"), (45.0, "4500%"),
    (float("inf"), "over 100%"), (float("nan"), "over 100%"),
    (4.5e305, "over 100%"),  # finite, but a hundred times it is not (a limit near the smallest float)
])
def test_a_warning_share_is_rounded_down_so_the_limit_is_not_reached_before_it_is(share, text):
    assert whole_percent(share) == text


def test_a_meter_crossing_the_mark_near_the_limit_does_not_say_it_is_full():
    meter = BudgetMeter(SESSION_OWNER, Budget(max_tokens=1000))
    meter.charge(Usage(input_tokens=998, output_tokens=0), None)
    assert meter.warnings_due == ["budget warning for session: 998 of 1000 tokens spent (99% of the limit)"]
