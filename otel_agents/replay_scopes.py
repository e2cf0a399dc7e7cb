"""The spending a replay's budget meters count, run by run, as the source's commands counted it."""

from __future__ import annotations

from typing import Any


class RunScopes:
    """The spending the replay's meters count, run by run, as the source's commands counted it.

    A run resumed with ``--budget-scope run`` counted only its own spending, for the session's and
    every agent's budget: its meters count from zero. A later run resumed with the default scope
    counted the session's whole spending again, that run's included: it gets back what was set aside.
    """

    def __init__(self) -> None:
        self.set_aside: dict[int, tuple[Any, Any]] = {}  # id(meter) -> (meter, its spending before)

    def before_run(self, session: Any, run_scoped: bool) -> None:
        from otel_agents.llm.budget import Spent
        from otel_agents.llm.pricing import COST_DECIMALS

        meters = [session.budget, *(agent.budget_meter for agent in session.agents.values())]
        for meter in (m for m in meters if m is not None):
            before = self.set_aside.pop(id(meter), (meter, Spent()))[1]
            whole = Spent(round(before.cost_usd + meter.spent.cost_usd, COST_DECIMALS), before.tokens + meter.spent.tokens,
                          before.llm_calls + meter.spent.llm_calls)
            if run_scoped:
                self.set_aside[id(meter)] = (meter, whole)
                meter.spent = Spent()
            else:
                meter.spent = whole
