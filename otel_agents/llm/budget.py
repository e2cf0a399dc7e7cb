"""Spend limits (cost, tokens, LLM calls) kept from the live accounting and checked before every LLM attempt.

A ``BudgetMeter`` belongs to one agent (its budget covers it and its sub-agents) or to
the whole session (``--max-cost-usd`` and friends). Meters in force are a context
variable, like accounting scopes, so concurrent sub-agents charge the right ones.
"""

from __future__ import annotations

import contextvars
import json
import logging
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from opentelemetry import trace
from pydantic import ConfigDict, Field, ValidationError, field_validator

from otel_agents.arguments import CheckedModel, number_or_refuse
from otel_agents.llm.pricing import COST_DECIMALS, Usage
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.telemetry import Telemetry

KINDS = ("cost", "tokens", "llm_calls")
WARN_FRACTION = 0.8  # a limit's spend crossing this share of it is told to the user once (a host notice)
SESSION_OWNER = "session"  # the owner named for a session-wide budget (the CLI's limits)
# A program has no console: its sessions' warnings go here too (WARNING), seen on stderr unless it routes them.
LOGGER = logging.getLogger("otel_agents.budget")


class BudgetError(ValueError):
    """A budget that cannot be used; the message is one line naming where it came from."""


class Budget(CheckedModel):
    """Limits on what an agent (sub-agents included) or a session may spend; ``None`` is no limit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_cost_usd: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_llm_calls: int | None = Field(default=None, ge=0)

    @field_validator("max_tokens", "max_llm_calls", mode="before")
    @classmethod
    def _counts_are_numbers(cls, value: Any) -> Any:
        return number_or_refuse(value, integer=True)

    @field_validator("max_cost_usd", mode="before")
    @classmethod
    def _finite_cost(cls, value: Any) -> Any:
        # inf is no limit, which None already says; nan would compare false with every spend
        # (and was reported as "greater than or equal to 0").
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            raise ValueError("must be a finite number of US dollars (leave it out for no limit)")
        return number_or_refuse(value)

    @property
    def limits_anything(self) -> bool:
        return any(v is not None for v in (self.max_cost_usd, self.max_tokens, self.max_llm_calls))

    def to_json(self) -> str:
        return json.dumps(self.model_dump(exclude_none=True), separators=(",", ":"), sort_keys=True)

    def merged(self, over: "Budget | None") -> "Budget":
        """These limits with ``over``'s given ones on top (a resume's options over the session's limits)."""
        if over is None:
            return self
        if not isinstance(over, Budget):
            raise TypeError(f"Budget.merged takes a Budget, not {type(over).__name__}")
        return Budget.model_validate({**self.model_dump(exclude_none=True), **over.model_dump(exclude_none=True)})


BUDGET_KEYS = tuple(Budget.model_fields)


def budget_from_mapping(data: Any, where: str) -> Budget:
    """A budget from a JSON object (a script's ``budget``/``agent_budgets``); one-line error naming ``where``."""
    if not isinstance(data, Mapping):
        raise BudgetError(f"{where}: a budget must be an object with keys among {', '.join(BUDGET_KEYS)}")
    unknown = sorted(set(data) - set(BUDGET_KEYS))
    if unknown:
        raise BudgetError(f"{where}: unknown budget key(s) {', '.join(unknown)} (known: {', '.join(BUDGET_KEYS)})")
    try:
        return Budget.model_validate(dict(data))
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"]) or "budget"
        said = error["msg"].removeprefix("Value error, ")  # a validator's own words need no prefix
        raise BudgetError(f"{where}: budget {key}: {said}") from None


def budget_from_json(text: str | None, where: str) -> Budget | None:
    """A budget recorded as JSON (``otel_agents.run.budget``, meta.json's ``last_run.budget``); None when absent."""
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        raise BudgetError(f"{where}: its budget is not JSON") from None
    return budget_from_mapping(data, where)


def usd(amount: float) -> str:
    """Dollars with two decimals, more when the amount is under a cent (scripted calls cost fractions of one)."""
    if amount == 0 or abs(amount) >= 0.01:
        return f"${amount:.2f}"
    return "$" + f"{amount:.6f}".rstrip("0")


@dataclass
class Spent:
    cost_usd: float = 0.0
    tokens: int = 0  # input + output, as the ledger's ``tokens.total`` minus cache and reasoning detail
    llm_calls: int = 0  # attempts, failed ones included

    @classmethod
    def from_totals(cls, totals: Mapping[str, Any] | None) -> "Spent":
        """From accounting totals as meta.json and the tree keep them (``input_tokens``, ``llm_calls``, ...)."""
        totals = totals or {}
        return cls(float(totals.get("cost_usd") or 0.0),
                   int(totals.get("input_tokens") or 0) + int(totals.get("output_tokens") or 0),
                   int(totals.get("llm_calls") or 0))


@dataclass
class BudgetMeter:
    owner: str  # agent name, or SESSION_OWNER
    budget: Budget
    spent: Spent = field(default_factory=Spent)
    warnings_due: list[str] = field(default_factory=list)  # crossings of WARN_FRACTION not yet told

    @classmethod
    def for_session(cls, budget: Budget | None) -> "BudgetMeter | None":
        """The whole session's meter (the CLI's limits, ``Session(budget=)``); None when nothing is limited."""
        return cls(SESSION_OWNER, budget) if budget is not None and budget.limits_anything else None

    def charge(self, usage: Usage, cost: float | None) -> None:
        before = self._levels()
        self.spent.llm_calls += 1
        self.spent.tokens += usage.input_tokens + usage.output_tokens
        if cost is not None:
            self.spent.cost_usd = round(self.spent.cost_usd + cost, COST_DECIMALS)
        # Spend only grows, so a limit's share crosses the mark once per meter; spending carried
        # over from before a resume is already past it and is not told again.
        for (kind, was, limit), (_, now, _) in zip(before, self._levels()):
            if limit > 0 and was < WARN_FRACTION * limit <= now:
                self.warnings_due.append(f"budget warning for {self.owner}: {self._spent_text(kind)} "
                                         f"({whole_percent(now / limit)} of the limit)")

    def _levels(self) -> list[tuple[str, float, float]]:
        """``(kind, spent, limit)`` of each limit set."""
        b, s = self.budget, self.spent
        levels = [("cost", s.cost_usd, b.max_cost_usd), ("tokens", s.tokens, b.max_tokens),
                  ("llm_calls", s.llm_calls, b.max_llm_calls)]
        return [(kind, float(spent), float(limit)) for kind, spent, limit in levels if limit is not None]

    def _spent_text(self, kind: str) -> str:
        b, s = self.budget, self.spent
        if kind == "cost":
            return f"{usd(s.cost_usd)} of {usd(b.max_cost_usd or 0.0)} spent"
        if kind == "tokens":
            return f"{s.tokens} of {b.max_tokens} tokens spent"
        return f"{s.llm_calls} of {b.max_llm_calls} LLM calls made"

    def exhausted(self) -> tuple[str, str] | None:
        """``(kind, "X of Y spent")`` of the first limit reached: the next attempt would start past it."""
        for kind, spent, limit in self._levels():
            if spent >= limit:
                return kind, self._spent_text(kind)
        return None


class BudgetExhausted(RuntimeError):
    """An LLM attempt was not made: ``meter``'s budget is spent."""

    def __init__(self, meter: BudgetMeter, kind: str, detail: str):
        self.meter = meter
        self.kind = kind
        self.detail = detail
        super().__init__(f"budget exhausted for {meter.owner}: {detail}")


def totals_before(tree: Mapping[str, Any] | None, meta: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A saved session's totals so far: its loaded tree's (it may have been repaired), else meta.json's."""
    totals = ((tree or {}).get("totals") or {}).get("inclusive")
    return totals if totals else (meta or {}).get("totals")


def carry_over(meters: Iterable[BudgetMeter | None], totals: Mapping[str, Any] | None) -> None:
    """A resumed session's limits count what it spent before (``totals`` as meta.json keeps them)."""
    for meter in meters:
        if meter is not None and totals:
            meter.spent = Spent.from_totals(totals)


def refuse_unpriced(budgets: Iterable[Budget | None], models: Iterable[str], prices: Any) -> None:
    """``BudgetError`` when a cost limit is set and a model has no price: its cost is unknown, not zero."""
    if not any(b is not None and b.max_cost_usd is not None for b in budgets):
        return
    # The scripted provider registers its demo price with its first call: priced, though not yet in the map.
    unpriced = sorted({m for m in models if not m.startswith("scripted/") and prices.lookup(m)[0] is None})
    if unpriced:
        raise BudgetError(
            f"a cost limit cannot be kept with unpriced model(s) {', '.join(unpriced)}: their cost is unknown "
            "(set a price with OTEL_AGENTS_PRICES, or allow unpriced models)"
        )


# model -> what meters count for a call of it, asked by (agent name, attempt); a replay model counts what
# the source paid for the call it answered (it is priced at zero), so limits stop where the source's did.
_COUNTED_COSTS: dict[str, Callable[[str, int], float | None]] = {}


def count_cost_as(model: str, recorded: Callable[[str, int], float | None]) -> None:
    """Meters count ``recorded(agent, attempt)`` for a call of ``model`` instead of its price."""
    _COUNTED_COSTS[model] = recorded


def counted_cost(model: str, agent: str, attempt: int, cost: float | None) -> float | None:
    """The cost meters count for an answered call of ``model`` priced at ``cost``."""
    recorded = _COUNTED_COSTS.get(model)
    return cost if recorded is None else recorded(agent, attempt)


_METERS: contextvars.ContextVar[tuple[BudgetMeter, ...]] = contextvars.ContextVar("otel_agents_budgets", default=())


@contextmanager
def metering(meter: BudgetMeter | None) -> Iterator[None]:
    """``meter`` in force for the code inside (and every task it starts); None or already in force: no change."""
    chain = _METERS.get()
    if meter is None or any(m is meter for m in chain):
        yield
        return
    token = _METERS.set(chain + (meter,))
    try:
        yield
    finally:
        _METERS.reset(token)


def in_force(meter: BudgetMeter) -> bool:
    return any(m is meter for m in _METERS.get())


def charge(usage: Usage, cost: float | None) -> None:
    """One attempt (failed ones too, at no cost) charged to every meter in force."""
    for meter in _METERS.get():
        meter.charge(usage, cost)


Notice = Callable[[str, str], Any]  # ``(kind, text)``: a host notice for the user, never the model


def whole_percent(share: float) -> str:
    """A share as whole percent, rounded down: 99.8 % of a limit is not yet "100%"."""
    percent = share * 100
    if not percent < 1e6:  # a limit of a few hundred zeros after the point (inf too): the figure says no more
        return "over 100%"
    return f"{math.floor(percent + 1e-9)}%"  # the epsilon: 0.29 * 100 is 28.999...


def tell_warnings(notice: Notice | None, log: bool = False) -> None:
    """Each limit of a meter in force that the last charge took past ``WARN_FRACTION``, told once
    as a ``budget_warning`` host notice on the current span (the attempt that spent it), and with
    ``log`` on ``LOGGER`` as well (the Python API's sessions; the CLI's console shows the notice)."""
    for meter in _METERS.get():
        due, meter.warnings_due = meter.warnings_due, []
        for text in due:
            if notice is not None:
                notice("budget_warning", text)
            if log:
                LOGGER.warning(text)


def refusal() -> str | None:
    """What :func:`check` would say now (the next attempt refused), without saying it; None: it may start."""
    for meter in _METERS.get():
        reached = meter.exhausted()
        if reached is not None:
            return str(BudgetExhausted(meter, *reached))
    return None


def check(telemetry: Telemetry, notice: Notice | None = None) -> None:
    """Raise ``BudgetExhausted`` for the outermost meter in force whose budget is spent, said by a
    span event, an ERR log line and a ``budget`` host notice on the operation that wanted the attempt.

    Outermost first: when the session's budget and a sub-agent's are both spent, the run ends.
    """
    for meter in _METERS.get():
        reached = meter.exhausted()
        if reached is not None:
            exc = BudgetExhausted(meter, *reached)
            span = trace.get_current_span()
            span.add_event(sc.EVENT_BUDGET_EXHAUSTED,
                           {sc.BUDGET_OWNER: meter.owner, sc.BUDGET_KIND: exc.kind, sc.BUDGET_DETAIL: exc.detail})
            telemetry.log("ERR", str(exc), span=span)
            if notice is not None:
                notice("budget", str(exc))
            raise exc
