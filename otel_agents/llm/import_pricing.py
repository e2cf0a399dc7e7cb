"""Prices for imported model calls that carry usage but no cost (other instrumentations' traces), from the local price map."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from typing import Any, Iterable

from otel_agents.llm.price_snapshot import entry_attributes
from otel_agents.llm.pricing import PRICE_SOURCE_UNPRICED, NonFiniteCost, PriceTable, Usage
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.foreign import LLM_OPERATIONS, has_usage, operation_of
from otel_agents.tracing.spandata import SpanData

# Marks the price as import's, not the caller's: a later import of the same span keeps the saved one.
PRICED_ON_IMPORT = "otel_agents.import.priced"


def priced(spans: Iterable[SpanData], prices: PriceTable | None = None) -> list[SpanData]:
    """The spans, each model call with usage and no recorded price priced (or marked ``unpriced``).

    litellm is loaded only when some span needs a price: our own traces never do.
    """
    out = []
    known: dict[str, bool] = {}  # model string -> priced: a large trace names few models, each looked up once
    for span in spans:
        attrs = span.attributes
        if (
            operation_of(span) not in LLM_OPERATIONS
            or not has_usage(attrs)
            or sc.GEN_AI_USAGE_COST in attrs
            or sc.LLM_PRICE_SOURCE in attrs
        ):
            out.append(span)
            continue
        if prices is None:
            prices = PriceTable.from_env()
        cost, source, model = _price(prices, attrs, span.end_ns or span.start_ns, known)
        added: dict[str, Any] = {sc.LLM_PRICE_SOURCE: source, PRICED_ON_IMPORT: True}
        if cost is not None:
            added[sc.GEN_AI_USAGE_COST] = cost
            # The entry priced with, on every such span (batches may arrive in any order and size):
            # the session's pricing.json keeps it.
            added.update(entry_attributes(prices, model))
        out.append(dataclasses.replace(span, attributes={**attrs, **added}))
    return out


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def _price(prices: PriceTable, attrs: dict[str, Any], at_ns: int,
           known: dict[str, bool]) -> tuple[float | None, str, str | None]:
    usage = Usage(
        input_tokens=_count(attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS)),
        output_tokens=_count(attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)),
        cache_read_tokens=_count(attrs.get(sc.GEN_AI_USAGE_CACHE_READ)),
        cache_write_tokens=_count(attrs.get(sc.GEN_AI_USAGE_CACHE_WRITE)),
        reasoning_tokens=_count(attrs.get(sc.GEN_AI_USAGE_REASONING)),
    )
    at = datetime.fromtimestamp(at_ns / 1e9, tz=timezone.utc) if at_ns else None
    provider = attrs.get(sc.GEN_AI_PROVIDER_NAME)
    # The name asked for, then the one that answered; bare (as the conventions record it) or under its provider.
    for model in (attrs.get(sc.GEN_AI_REQUEST_MODEL), attrs.get(sc.GEN_AI_RESPONSE_MODEL)):
        if not isinstance(model, str) or not model:
            continue
        candidates = [model] + ([f"{provider}/{model}"] if isinstance(provider, str) and provider and "/" not in model else [])
        for candidate in candidates:
            if candidate not in known:
                known[candidate] = prices.lookup(candidate)[1] != PRICE_SOURCE_UNPRICED
            if not known[candidate]:
                continue
            try:
                cost, source = prices.cost(candidate, usage, at=at)
            except NonFiniteCost:  # no number holds it: unpriced, as a live run records it
                continue
            if cost is not None:
                return cost, source, candidate
    return None, PRICE_SOURCE_UNPRICED, None
