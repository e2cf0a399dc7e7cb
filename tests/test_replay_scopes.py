"""RunScopes: a run-scoped run's meters count from zero; a later default-scope run gets the whole spending back."""

from __future__ import annotations

from types import SimpleNamespace

from otel_agents.llm.budget import SESSION_OWNER, Budget, BudgetMeter, Spent
from otel_agents.replay_scopes import RunScopes


def test_a_run_scoped_run_counts_from_zero_and_the_next_default_run_counts_everything():
    session_meter, agent_meter = BudgetMeter(SESSION_OWNER, Budget()), BudgetMeter("lead", Budget())
    session = SimpleNamespace(budget=session_meter, agents={"a": SimpleNamespace(budget_meter=agent_meter)})
    scopes = RunScopes()
    session_meter.spent, agent_meter.spent = Spent(0.5, 100, 4), Spent(0.25, 40, 2)  # run 1, default scope
    scopes.before_run(session, run_scoped=False)
    assert session_meter.spent == Spent(0.5, 100, 4)  # nothing set aside: counted on
    scopes.before_run(session, run_scoped=True)  # run 2, --budget-scope run
    assert session_meter.spent == Spent() and agent_meter.spent == Spent()
    session_meter.spent, agent_meter.spent = Spent(0.125, 10, 1), Spent(0.125, 10, 1)  # what run 2 spent
    scopes.before_run(session, run_scoped=True)  # run 3, run-scoped again: from zero, run 2 set aside too
    assert session_meter.spent == Spent()
    scopes.before_run(session, run_scoped=False)  # run 4, default scope: the whole session's spending
    assert session_meter.spent == Spent(0.625, 110, 5)
    assert agent_meter.spent == Spent(0.375, 50, 3)
