"""Token and cost totals for turn and invoke_agent spans, self and inclusive.

Each open turn and agent invocation pushes a scope onto a context variable, so
concurrent asyncio tasks charge the right spans. An attempt is charged once to
the innermost turn and agent (self) and once to every enclosing scope
(inclusive), so nothing is counted twice at any level.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from opentelemetry import trace

from otel_agents.llm import budget
from otel_agents.llm.pricing import COST_DECIMALS, Usage
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.telemetry import marks_cancellation


@dataclass
class Totals:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0

    def add_llm(self, usage: Usage, cost: float | None, failed: bool) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.reasoning_tokens += usage.reasoning_tokens
        self.llm_calls += 1
        if cost is None:
            if not failed:
                self.unpriced_calls += 1
        else:
            self.cost_usd = round(self.cost_usd + cost, COST_DECIMALS)

    def as_attributes(self, scope: str) -> dict[str, int | float]:
        return {sc.total_attr(scope, key): getattr(self, key) for key in sc.TOTAL_KEYS}

    def as_usage_attributes(self) -> dict[str, int]:
        """The registry's usage attributes, for an agent invocation: everything it used, sub-agents included."""
        return {
            sc.GEN_AI_USAGE_INPUT_TOKENS: self.input_tokens,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: self.output_tokens,
            sc.GEN_AI_USAGE_CACHE_READ: self.cache_read_tokens,
            sc.GEN_AI_USAGE_CACHE_CREATION: self.cache_write_tokens,
            sc.GEN_AI_USAGE_REASONING: self.reasoning_tokens,
        }


@dataclass
class Scope:
    kind: str  # "agent" | "turn"
    span: trace.Span
    own: Totals = field(default_factory=Totals)
    inclusive: Totals = field(default_factory=Totals)


_SCOPES: contextvars.ContextVar[tuple[Scope, ...]] = contextvars.ContextVar("otel_agents_scopes", default=())


@contextmanager
def scope(kind: str, span: trace.Span) -> Iterator[Scope]:
    current = Scope(kind, span)
    token = _SCOPES.set(_SCOPES.get() + (current,))
    try:
        with marks_cancellation(span):
            yield current
    finally:
        _SCOPES.reset(token)
        span.set_attributes(current.own.as_attributes("self"))
        span.set_attributes(current.inclusive.as_attributes("inclusive"))
        if kind == "agent":
            span.set_attributes(current.inclusive.as_usage_attributes())


def _innermost(chain: tuple[Scope, ...], kind: str) -> Scope | None:
    for s in reversed(chain):
        if s.kind == kind:
            return s
    return None


def charge_llm(usage: Usage, cost: float | None, failed: bool, counted: float | None = None) -> None:
    """One attempt charged to the scopes in force, and to the budgets (at ``counted`` when given: a replay's
    recorded cost)."""
    chain = _SCOPES.get()
    for kind in ("turn", "agent"):
        inner = _innermost(chain, kind)
        if inner is not None:
            inner.own.add_llm(usage, cost, failed)
    for s in chain:
        s.inclusive.add_llm(usage, cost, failed)
    budget.charge(usage, cost if counted is None else counted)  # the same numbers, for the limits checked before the next attempt


def charge_tool() -> None:
    chain = _SCOPES.get()
    for kind in ("turn", "agent"):
        inner = _innermost(chain, kind)
        if inner is not None:
            inner.own.tool_calls += 1
    for s in chain:
        s.inclusive.tool_calls += 1
