"""``--max-cost-usd --max-tokens --max-llm-calls --allow-unpriced --budget-scope`` of ``run`` and ``resume``."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import click


@dataclass(frozen=True)
class BudgetOptions:
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_llm_calls: int | None = None
    allow_unpriced: bool = False
    scope: str = "session"  # session: a resumed session's past spending counts; run: this command's only

    def meter(self) -> Any:
        """The session-wide ``BudgetMeter``, or None when no limit is given."""
        from otel_agents.llm.budget import SESSION_OWNER, Budget, BudgetMeter

        budget = Budget(max_cost_usd=self.max_cost_usd, max_tokens=self.max_tokens, max_llm_calls=self.max_llm_calls)
        return BudgetMeter(SESSION_OWNER, budget) if budget.limits_anything else None


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
        click.option("--max-cost-usd", type=click.FloatRange(0), metavar="X",
                     help="Stop before an LLM attempt once X US dollars are spent (docs/budgets.md)."),
    ]

    @functools.wraps(func)
    def wrapper(*args, max_cost_usd, max_total_tokens, max_llm_calls, allow_unpriced, budget_scope, **kwargs):
        opts = BudgetOptions(max_cost_usd, max_total_tokens, max_llm_calls, allow_unpriced, budget_scope)
        return func(*args, budget_opts=opts, **kwargs)

    for option in options:
        wrapper = option(wrapper)
    return wrapper


def _priced(prices: Any, model: str) -> bool:
    # The scripted provider registers its demo price with its first call: priced, though not yet in the map.
    return model.startswith("scripted/") or prices.lookup(model)[0] is not None


def refuse_unpriced(session: Any, models: Iterable[str], allow: bool) -> None:
    """A cost limit (the session's or an agent's) with an unpriced model is a usage error (exit 2):
    such a model's cost is unknown, not zero. Said before anything is called or billed."""
    budgets = [session.budget.budget] if session.budget is not None else []
    budgets += list(session.agent_budgets.values())
    if allow or not any(b.max_cost_usd is not None for b in budgets):
        return
    unpriced = sorted({m for m in models if not _priced(session.llm.prices, m)})
    if unpriced:
        raise click.UsageError(
            f"a cost limit cannot be kept with unpriced model(s) {', '.join(unpriced)}: their cost is unknown "
            "(set a price with OTEL_AGENTS_PRICES, or pass --allow-unpriced)"
        )


def session_models(session: Any) -> list[str]:
    """Every model the session's agents use or will use (sub-agents take their parent's)."""
    models = [agent.model for agent in session.agents.values()]
    if session.root_spec is not None:
        models.append(session.root_spec.model)
    return models


def carry_spent(session: Any, opts: BudgetOptions, totals: Mapping[str, Any] | None) -> None:
    """On resume with scope ``session``: the session's and the root agent's limits count what was spent before."""
    from otel_agents.llm.budget import Spent

    if opts.scope != "session" or not totals:
        return
    root = session.root
    for meter in (session.budget, root.budget_meter if root is not None else None):
        if meter is not None:
            meter.spent = Spent.from_totals(totals)
