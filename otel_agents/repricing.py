"""Re-pricing ledger records from their recorded usage (``billing rebuild --reprice``).

A record's cost is the one computed at call time and recorded on its span; it is
never re-priced on read. Re-pricing is asked for: each successful LLM record is
priced again from its recorded token counts with the current price table (at the
moment it was billed, for time-of-day prices). A record whose price changed keeps
what was recorded at call time under ``repriced`` (``{"cost_usd", "price_source"}``),
so ``sessions verify`` and later rebuilds still tie it to its span, and a later
plain rebuild keeps the new price. (The record shape, ``repriced`` included, is
``persistence/ledger_records.py``'s; this is the use that asks the price table.)

A known cost never becomes unknown: a priced record whose model the current table has no
price for keeps its price (``PriceChange.kept``), and the command says so, naming the model.
Making it null would drop money spent from every total (a null cost counts as unpriced, never as 0).

A record's call-time price can also be re-derived from its session alone: its ``price_id``
names the entry of the session's ``pricing.json`` it was priced with (``snapshot_cost``), and
each price change is reported against that entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Mapping

from otel_agents.persistence.ledger_records import PRICED_FIELDS, REPRICED, as_recorded
from otel_agents.persistence.timestamps import parse_iso_ts


@dataclass(frozen=True)
class PriceChange:
    record_id: str
    model: str | None
    old_cost: float | None
    old_source: str | None
    new_cost: float | None
    new_source: str
    # The session's pricing snapshot entry the old cost comes from ("<id>: <table>, <date>"), and
    # the cost it gives for the record when that is not the recorded one (a record to look into).
    snapshot: str | None = None
    snapshot_cost: float | None = None
    snapshot_disagrees: bool = False
    # Not applied: the current table has no price for a record that has one (a known cost stays known).
    kept: bool = False


def _billed_at(record: Mapping[str, Any]) -> datetime | None:
    try:
        ns = parse_iso_ts(str(record.get("ts")))
    except ValueError:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)


def _usage(tokens: Mapping[str, Any]):
    from otel_agents.llm.pricing import Usage

    count = (lambda key: int(tokens.get(key) or 0))
    return Usage(count("input"), count("output"), count("cache_read"), count("cache_write"), count("reasoning"))


def snapshot_cost(record: Mapping[str, Any], entries: Mapping[str, Mapping[str, Any]]) -> tuple[float | None, str] | None:
    """(cost, price_source) of a ledger line re-derived from its session's pricing snapshot alone;
    None when the line names no entry of it (older sessions, unpriced calls)."""
    entry = entries.get(str(record.get("price_id")))
    if entry is None or not isinstance(record.get("tokens"), dict):
        return None
    from otel_agents.llm.price_snapshot import cost_from_entry

    return cost_from_entry(entry, _usage(record["tokens"]), at=_billed_at(record))


def reprice(
    records: Iterable[dict[str, Any]], prices: Any, snapshots: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> tuple[int, list[PriceChange]]:
    """Price every successful LLM record again, in place; (records priced, those whose price changed).

    Failed and unfinished attempts keep their null cost: nothing was billed for them. A priced record
    the current table cannot price keeps its cost, and is among the changes with ``kept`` set.
    ``snapshots`` (session id -> pricing.json entries) name, for each change, the entry the old
    price came from, and say so when the snapshot does not give the recorded cost.
    """
    priced, changes = 0, []
    for record in records:
        if record.get("type") != "llm" or record.get("status") != "ok" or not isinstance(record.get("tokens"), dict):
            continue
        priced += 1
        model = record.get("model")
        cost, source = prices.cost(str(model), _usage(record["tokens"]), at=_billed_at(record))
        if (cost, source) == (record.get("cost_usd"), record.get("price_source")):
            continue
        entry = (snapshots or {}).get(str(record.get("session_id")), {}).get(str(record.get("price_id")))
        from_snapshot = snapshot_cost(as_recorded(record), {record["price_id"]: entry}) if entry else None
        changes.append(
            PriceChange(
                record["record_id"], model, record.get("cost_usd"), record.get("price_source"), cost, source,
                snapshot=f"{record['price_id']}: {entry['table']}, {entry['date']}" if entry else None,
                snapshot_cost=from_snapshot[0] if from_snapshot else None,
                snapshot_disagrees=bool(from_snapshot) and from_snapshot[0] != as_recorded(record).get("cost_usd"),
                kept=cost is None and record.get("cost_usd") is not None,
            )
        )
        if changes[-1].kept:
            continue
        recorded = record.pop(REPRICED, None) or {k: record.get(k) for k in PRICED_FIELDS}
        record.update(cost_usd=cost, price_source=source)
        # A record priced back to its call-time price has nothing to remember.
        if {k: record.get(k) for k in PRICED_FIELDS} != recorded:
            record[REPRICED] = recorded
    return priced, changes


def session_snapshots(sessions_dir: Path, session_ids: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """pricing.json entries of each session (none for a session without a readable one)."""
    from otel_agents.persistence.pricing_file import PricingFileError, read_pricing

    out = {}
    for session_id in {str(s) for s in session_ids if s}:
        try:
            out[session_id] = read_pricing(Path(sessions_dir) / session_id)
        except PricingFileError:
            out[session_id] = {}
    return out


def reprice_plan(plan: Any, prices: Any, sessions_dir: Path | None = None) -> None:
    """Price a ``billing rebuild`` plan's records again, noting on it how many and which changed
    (each against its session's pricing snapshot, when ``sessions_dir`` is given)."""
    from otel_agents.llm import replay_provider, scripted_provider

    # The offline model's demo price, and a replay's zero one, exist only once a run registers them:
    # unregistered, a replay (which bills nothing) would be made unpriced.
    for model in {str(r.get("model")) for r in plan.records if r.get("type") == "llm"}:
        if model.startswith(f"{scripted_provider.PROVIDER}/"):
            scripted_provider.register_demo_price(model)
        elif model.startswith(f"{replay_provider.PROVIDER}/"):
            replay_provider.register_replay_price(model)
    snapshots = session_snapshots(sessions_dir, (r.get("session_id") for r in plan.records)) if sessions_dir else None
    plan.repriced, changes = reprice(plan.records, prices, snapshots)
    # A record whose cost stays and whose price source changes (litellm's map -> a file giving the same
    # rates) is written with its new source, but is not "priced differently": counted apart.
    plan.price_changes = [c for c in changes if not c.kept and c.new_cost != c.old_cost]
    plan.source_changes = [c for c in changes if not c.kept and c.new_cost == c.old_cost]
    plan.prices_kept = [c for c in changes if c.kept]


def usd(cost: float | Decimal | None) -> str:
    """Exact decimal text of a cost (12 decimals at most, trailing zeros dropped); ``unpriced`` for None."""
    from otel_agents.persistence.ledger_export import cost_text

    if cost is None:
        return "unpriced"
    text = cost_text(cost)
    return text[:-2] if text.endswith(".0") else text  # ``0``, ``2``: no decimals that say nothing


def signed_usd(amount: Decimal) -> str:
    """A difference of costs as ``usd`` writes a cost, with its sign (``+0.0001``, ``-0.00304``; ``0``)."""
    if amount == 0:
        return "0"
    return ("-" if amount < 0 else "+") + usd(abs(amount))


def total(costs: Iterable[float | None]) -> Decimal:
    """Exact sum of the priced costs (each has at most 12 decimals, as the runtime rounds them)."""
    return sum((Decimal(repr(c)) for c in costs if c is not None), Decimal(0))
