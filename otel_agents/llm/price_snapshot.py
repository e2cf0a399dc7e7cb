"""The price entry each chat span was priced with, as span attributes: the session's pricing snapshot is made of them.

Every priced attempt names its entry by ``otel_agents.llm.price_id`` (a content id of the model,
the source, the table and the rates); the entry itself (``otel_agents.llm.price_entry``, JSON) goes
on the first span of a trace that uses it, as tool definitions do, so a trace alone still holds it.
The recorder gathers the entries into the session's ``pricing.json`` (persistence/pricing_file.py);
``cost_from_entry`` prices a ledger line again from one, with the same litellm functions.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Mapping

from otel_agents.llm.pricing import (
    PRICE_SOURCE_CONFIG, PRICE_SOURCE_LITELLM, PRICE_SOURCE_UNPRICED, NonFiniteCost, PriceTable, Usage,
)
from otel_agents.llm.once_per_trace import OncePerTrace
from otel_agents.tracing import semconv as sc

# litellm's model info holds limits and feature flags too; a price is the keys that bill.
_PRICE_KEYS = ("tiered_pricing", "litellm_provider")


@lru_cache(maxsize=1)  # asked on every priced attempt; the installed version does not change
def _litellm_table() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"litellm {version('litellm')} model_cost"
    except PackageNotFoundError:  # pragma: no cover - litellm is a dependency
        return "litellm model_cost"


def billing_rates(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a price entry that bill (rates, tiers, the provider litellm prices it as); no nulls."""
    return {
        key: value for key, value in entry.items()
        if value is not None and ("cost" in key or key in _PRICE_KEYS)
    }


def price_entry(prices: PriceTable, model: str) -> dict[str, Any] | None:
    """``{model, price_source, table, rates}`` of the entry ``model`` is priced with; None if unpriced."""
    entry, source = prices.lookup(model)
    if entry is None or source == PRICE_SOURCE_UNPRICED:
        return None
    table = prices.label if source == PRICE_SOURCE_CONFIG else _litellm_table()
    return {"model": model, "price_source": source, "table": table, "rates": billing_rates(entry)}


def price_id(entry: Mapping[str, Any]) -> str:
    """Content id of an entry (its date aside): equal prices from the same table, equal id."""
    text = json.dumps({k: entry[k] for k in ("model", "price_source", "table", "rates")}, sort_keys=True)
    return "price_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def entry_attributes(prices: PriceTable, model: str) -> dict[str, str]:
    """The id and the entry itself, for a span that must hold its own (a call priced on import,
    whichever batch it arrives in); {} for an unpriced model."""
    entry = price_entry(prices, model)
    if entry is None:
        return {}
    pid = price_id(entry)
    return {sc.LLM_PRICE_ID: pid, sc.LLM_PRICE_ENTRY: _entry_json(entry, pid)}


def _entry_json(entry: Mapping[str, Any], pid: str) -> str:
    dated = {**entry, "id": pid, "date": datetime.now(timezone.utc).date().isoformat()}
    return json.dumps(dated, sort_keys=True, separators=(",", ":"))


class PriceEntries:
    """Chat-span attributes naming the price used; the entry itself once per trace and id."""

    def __init__(self) -> None:
        self._sent = OncePerTrace()  # price ids already on a span of a trace

    def attributes(self, prices: PriceTable, model: str, trace_id: int) -> dict[str, str]:
        entry = price_entry(prices, model)
        if entry is None:
            return {}
        pid = price_id(entry)
        attrs = {sc.LLM_PRICE_ID: pid}
        if self._sent.first(trace_id, pid):
            attrs[sc.LLM_PRICE_ENTRY] = _entry_json(entry, pid)
        return attrs


def cost_from_entry(entry: Mapping[str, Any], usage: Usage, at: datetime | None = None) -> tuple[float | None, str]:
    """(USD, price_source) of ``usage`` priced with a snapshot entry, as the call was priced.

    An entry from litellm's map is put back into the map for the call (the provider's own cost
    function then applies, as at call time) and taken out again; a config entry is an override.
    """
    model, source, rates = str(entry["model"]), str(entry["price_source"]), dict(entry["rates"])
    if source == PRICE_SOURCE_CONFIG:
        try:
            return PriceTable({model: rates}).cost(model, usage, at=at)
        except NonFiniteCost:  # rates that overflow price nothing: the call was recorded unpriced
            return None, PRICE_SOURCE_UNPRICED
    if source != PRICE_SOURCE_LITELLM:
        return None, PRICE_SOURCE_UNPRICED
    from otel_agents.llm.litellm_loader import load_litellm
    from otel_agents.llm.scripted_provider import price_map_changed

    litellm = load_litellm()
    saved = litellm.model_cost.get(model)
    # Only the snapshot's rates: a rate the map gained since must not count.
    kept = {k: v for k, v in (saved or {}).items() if "cost" not in k and k != "tiered_pricing"}
    litellm.model_cost[model] = {**kept, **rates}
    price_map_changed()
    try:
        return PriceTable().cost(model, usage, at=at)
    finally:
        if saved is None:
            litellm.model_cost.pop(model, None)
        else:
            litellm.model_cost[model] = saved
        price_map_changed()
