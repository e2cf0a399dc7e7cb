"""A session's costs (per agent, per model, over time, from its tree's accounting) and its ledger rows and CSV."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Iterator, Mapping

from otel_agents.persistence.ledger_read import LedgerError
from otel_agents.persistence.ledger_shards import LedgerShards
from otel_agents.persistence.ledger_export import export_csv
from otel_agents.persistence.ledger_summary import Filters
from otel_agents.ui.loaded import UiSession
from otel_agents.ui.security import ApiError, paging


def _charges(session: UiSession) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(span id, accounting entry) of every LLM attempt of the session."""
    for span_id, entry in session.index.entries.items():
        for charge in entry.node.get("accounting") or ():
            if isinstance(charge, Mapping) and charge.get("type") != "tool":
                yield span_id, charge


def _tokens(charge: Mapping[str, Any]) -> int:
    tokens = charge.get("tokens")
    return int(tokens.get("total") or 0) if isinstance(tokens, Mapping) else 0


def _cost(charge: Mapping[str, Any]) -> float:
    cost = charge.get("cost_usd")
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0


def costs_api(session: UiSession) -> dict[str, Any]:
    index = session.index
    agents: dict[str | None, dict[str, Any]] = {}
    models: dict[str, dict[str, Any]] = {}
    timeline: list[tuple[int, int, float]] = []
    for span_id, charge in _charges(session):
        entry = index.entries[span_id]
        tokens, cost = _tokens(charge), _cost(charge)
        agent = agents.setdefault(entry.agent_id, {
            "agent": entry.agent, "agent_id": entry.agent_id, "color": index.colors.get(entry.agent_id or "", 0),
            "tokens": 0, "cost_usd": 0.0})
        agent["tokens"] += tokens
        agent["cost_usd"] += cost
        model = models.setdefault(str(charge.get("model") or "?"),
                                  {"model": str(charge.get("model") or "?"), "tokens": 0, "cost_usd": 0.0, "calls": 0})
        model["tokens"] += tokens
        model["cost_usd"] += cost
        model["calls"] += 1
        ts = charge.get("ts") if isinstance(charge.get("ts"), int) else entry.node.get("ended_ns")
        timeline.append((ts if isinstance(ts, int) else index.start_ns, tokens, cost))
    timeline.sort(key=lambda point: point[0])
    over_time, tokens_so_far, cost_so_far = [], 0, 0.0
    for ts, tokens, cost in timeline:
        tokens_so_far += tokens
        cost_so_far += cost
        over_time.append({"t_ms": round((ts - index.start_ns) / 1e6, 3), "tokens": tokens_so_far,
                          "cost_usd": round(cost_so_far, 12)})
    for row in (*agents.values(), *models.values()):
        row["cost_usd"] = round(row["cost_usd"], 12)
    return {
        "per_agent": sorted(agents.values(), key=lambda r: r["color"]),
        "per_model": sorted(models.values(), key=lambda r: (-r["cost_usd"], r["model"])),
        "over_time": over_time,
    }


def _records(billing_files: list[Path], session_id: str, warnings: list[str]):
    """The session's ledger records, read as ``billing export --session ID`` reads them."""
    return Filters(None, None, session_id).apply(LedgerShards(billing_files, warnings.append))


def ledger_api(billing_files: list[Path], session_id: str, query: Mapping[str, str]) -> dict[str, Any]:
    offset, limit = paging(query, 200)
    warnings: list[str] = []
    try:
        records = list(_records(billing_files, session_id, warnings))
    except LedgerError as exc:
        raise ApiError(422, str(exc)) from None
    return {"total": len(records), "offset": offset, "records": records[offset:offset + limit], "warnings": warnings}


def ledger_csv(billing_files: list[Path], session_id: str) -> bytes:
    """Byte for byte what ``otel-agents billing export --format csv --session ID`` prints."""
    out = io.StringIO(newline="")
    try:
        export_csv(_records(billing_files, session_id, []), out)
    except LedgerError as exc:
        raise ApiError(422, str(exc)) from None
    return out.getvalue().encode("utf-8")
