"""``--max-cost-usd --max-tokens --max-llm-calls --allow-unpriced --budget-scope``: run, resume, fork."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import click

from otel_agents.cli.options import FiniteFloat


@dataclass(frozen=True)
class BudgetOptions:
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_llm_calls: int | None = None
    allow_unpriced: bool = False
    scope: str = "session"  # session: a resumed session's past spending counts; run: this command's only

    def limits(self) -> Any:
        """The limits given (an ``llm.budget.Budget``; fields not given are None)."""
        from otel_agents.llm.budget import Budget

        return Budget(max_cost_usd=self.max_cost_usd, max_tokens=self.max_tokens, max_llm_calls=self.max_llm_calls)

    def meter(self) -> Any:
        """The session-wide ``BudgetMeter``, or None when no limit is given."""
        from otel_agents.llm.budget import BudgetMeter

        return BudgetMeter.for_session(self.limits())


def budget_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The limit options, passed as ``budget_opts``."""
    options = [
        click.option("--budget-scope", type=click.Choice(["session", "run"]), default="session", show_default=True,
                     help="What the limits count on resume: the whole session's spending, or this command's only."),
        click.option("--allow-unpriced", is_flag=True,
                     help="Accept a cost limit although a model of the session has no price (its cost is unknown)."),
        click.option("--max-llm-calls", type=click.IntRange(0), metavar="N",
                     help="Stop before an LLM attempt past N attempts (failed ones count)."),
        click.option("--max-tokens", "max_total_tokens", type=click.IntRange(0), metavar="N",
                     help="Stop before an LLM attempt once N input+output tokens are spent."),
        click.option("--max-cost-usd", type=FiniteFloat(0), metavar="X",
                     help="Stop before an LLM attempt once X US dollars are spent (docs/budgets.md)."),
    ]

    @functools.wraps(func)
    def wrapper(*args, max_cost_usd, max_total_tokens, max_llm_calls, allow_unpriced, budget_scope, **kwargs):
        opts = BudgetOptions(max_cost_usd, max_total_tokens, max_llm_calls, allow_unpriced, budget_scope)
        return func(*args, budget_opts=opts, **kwargs)

    for option in options:
        wrapper = option(wrapper)
    return wrapper


def check_session_budgets(session: Any, opts: BudgetOptions, spent_before: Mapping[str, Any] | None = None,
                          agents_before: Callable[[], Mapping[str, Any]] | None = None) -> None:
    """Before anything is called or billed: a cost limit (the session's or an agent's) with an unpriced
    model is a usage error (exit 2) unless ``--allow-unpriced``; on resume with scope ``session``
    the session's and the root agent's limits count what was spent before, and every other agent's
    what it spent with its sub-agents (``agents_before()``, by agent id)."""
    from otel_agents.llm.budget import BudgetError

    if not opts.allow_unpriced:
        try:
            session.refuse_unpriced()
        except BudgetError as exc:
            raise click.UsageError(str(exc).replace("allow unpriced models", "pass --allow-unpriced")) from None
    if opts.scope == "session":
        session.carry_spent(spent_before, agents_before)
