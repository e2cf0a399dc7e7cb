"""Billing ledger records, derived from the session tree (no separate accounting tracker).

One record per LLM attempt and per tool call, failed ones included. Decisions:

- ``record_id`` is ``<trace_id>:<span_id>`` of the operation's span: unique and
  stable, so re-deriving after a crash never bills twice.
- A tool call that an approval hook denied did not succeed: ``status`` is
  ``failed`` and ``error`` names the hook (``Error: Action blocked by hook ...``).
- An operation that never completed was still requested, so it is billed with
  zero tokens and ``cost_usd`` null (the provider's charge, if any, is unknown):
  ``failed`` when it was cancelled, ``interrupted`` (as the tree shows it) when the
  process writing the session died first; ``error`` says which.
- What was reported or given (the provider that served the call, the upstream cost, the id
  of the price entry in the session's pricing.json, a tool's provider label) is on a record
  only when known: older readers see the fields they know, and older lines stay unchanged.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from otel_agents.persistence.timestamps import iso_ts
from otel_agents.persistence.tree_kinds import KIND_LLM, KIND_TOOL, STATUS_CANCELLED, STATUS_IN_PROGRESS, STATUS_INTERRUPTED
from otel_agents.persistence.tree_shape import TOKEN_KEYS
from otel_agents.persistence.tree_span_fields import REPORTED_KEYS, reported_billing
from otel_agents.persistence.tree_walk import OpRef, iter_ops
from otel_agents.tracing import semconv as sc

UNFINISHED_ERRORS = {
    STATUS_CANCELLED: "cancelled before it completed",
    STATUS_IN_PROGRESS: "unfinished: the run stopped before this operation ended",
    STATUS_INTERRUPTED: "interrupted: the process writing the session ended before this operation did",
}


REPRICED = "repriced"  # the call-time {cost_usd, price_source} of a re-priced record
PRICED_FIELDS = ("cost_usd", "price_source")


def as_recorded(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record as its span recorded it: a re-priced record's call-time price put back."""
    out = dict(record)
    recorded = out.pop(REPRICED, None)
    if isinstance(recorded, Mapping):
        out.update({k: recorded.get(k) for k in PRICED_FIELDS})
    return out


def carry_repricing(previous: Mapping[str, Any] | None, derived: dict[str, Any]) -> dict[str, Any]:
    """``derived`` (from the tree) with the ledger's re-price kept, if it re-priced this very recording."""
    if previous is None or REPRICED not in previous or as_recorded(previous) != derived:
        return derived
    return {**derived, **{k: previous[k] for k in (*PRICED_FIELDS, REPRICED)}}


def record_id(trace_id: str, span_id: str) -> str:
    return f"{trace_id}:{span_id}"


def ledger_records(tree: Mapping[str, Any], runs: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """Ledger records for the given run indexes (default: every run), in tree order."""
    wanted = set(runs) if runs is not None else None
    out = []
    for ref in iter_ops(tree):
        if ref.op["kind"] not in {KIND_LLM, KIND_TOOL} or ref.run is None:
            continue
        if wanted is not None and ref.run["index"] not in wanted:
            continue
        out.append(ledger_record(tree.get("id"), ref))
    return out


def ledger_record(session_id: str | None, ref: OpRef) -> dict[str, Any]:
    op, run, session = ref.op, ref.run, ref.session
    attrs = op["attributes"]
    entry = op["accounting"][0] if op["accounting"] else None
    trace_id = run["trace_id"] if run is not None else None
    agent_id = attrs.get(sc.AGENT_ID) or session.get("agent_id")
    record: dict[str, Any] = {
        "record_id": record_id(trace_id or "", op["span_id"]),
        "ts": iso_ts(op["ended_ns"] if op["ended_ns"] is not None else op["started_ns"]),
        "session_id": session_id,
        "trace_id": trace_id,
        "span_id": op["span_id"],
        "run": run["index"] if run is not None else None,
        "path": ref.label,
        "agent_id": agent_id,
        "agent_name": attrs.get(sc.GEN_AI_AGENT_NAME) or session.get("agent_name"),
        "call_path": session.get("call_path"),
        "type": op["kind"],
    }
    if entry is not None:
        record.update({"status": entry["status"], "latency_ms": entry["latency_ms"], "error": entry["error"]})
    else:
        ended = op["ended_ns"]
        latency = round((ended - op["started_ns"]) / 1e6, 3) if ended is not None else None
        status = STATUS_INTERRUPTED if op["status"] == STATUS_INTERRUPTED else "failed"
        record.update({"status": status, "latency_ms": latency, "error": UNFINISHED_ERRORS.get(op["status"], op["error"])})
    if op["kind"] == KIND_LLM:
        if entry is not None:
            record.update(
                {
                    "provider": entry["provider"],
                    "model": entry["model"],
                    "response_model": entry["response_model"],
                    "attempt": entry["attempt"],
                    "tokens": dict(entry["tokens"]),
                    "cost_usd": entry["cost_usd"],
                    "price_source": entry["price_source"],
                }
            )
        else:
            record.update(
                {
                    "provider": attrs.get(sc.GEN_AI_PROVIDER_NAME),
                    "model": attrs.get(sc.LLM_MODEL) or attrs.get(sc.GEN_AI_REQUEST_MODEL),
                    "response_model": None,
                    "attempt": attrs.get(sc.LLM_ATTEMPT),
                    "tokens": dict.fromkeys(TOKEN_KEYS, 0),
                    "cost_usd": None,
                    "price_source": None,
                }
            )
    else:
        record.update(
            {
                "tool": entry["tool"] if entry else attrs.get(sc.GEN_AI_TOOL_NAME),
                **({} if entry else reported_billing(KIND_TOOL, attrs)),
                "chars_in": entry["chars_in"] if entry else int(attrs.get(sc.TOOL_CHARS_IN) or 0),
                "chars_out": entry["chars_out"] if entry else 0,
            }
        )
    if entry is not None:  # served provider, upstream cost, price id, tool provider: only when known
        record.update({key: entry[key] for key in REPORTED_KEYS if key in entry})
    return record
