"""What one span gives its session-tree node: operation, status, records and logs, accounting, request and response."""

from __future__ import annotations

from typing import Any, Mapping

from otel_agents.persistence.tree_kinds import (
    KIND_LLM, KIND_TOOL, STATUS_CANCELLED, STATUS_ERROR, STATUS_IN_PROGRESS, STATUS_INTERRUPTED, STATUS_OK,
)
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.foreign import LLM_OPERATIONS, operation_of
from otel_agents.tracing.records import RecordError, from_span_event
from otel_agents.tracing.spandata import SpanData


def span_operation(span: SpanData) -> str:
    """The span's GenAI operation; every inference operation (text_completion, generate_content) is a chat."""
    operation = operation_of(span)
    return sc.OP_CHAT if operation in LLM_OPERATIONS else operation


def session_id_of(span: SpanData) -> str | None:
    value = span.attributes.get(sc.SESSION_ID) or span.attributes.get(sc.GEN_AI_CONVERSATION_ID)
    return str(value) if value else None


def subject_of(name: str) -> str | None:
    parts = name.split(" ", 1)
    return parts[1] if len(parts) == 2 else None


def split_events(span: SpanData) -> tuple[list[dict], list[dict], list[dict]]:
    """(records, log lines, other span events) of one span, in time order; nothing is dropped."""
    records, logs, others = [], [], []
    for event in span.events:
        attrs = dict(event.attributes)
        if event.name in sc.SESSION_EVENT_NAMES:
            try:
                record = from_span_event(event.name, attrs)
            except (RecordError, ValueError, TypeError):
                record = None
            if record is not None:
                records.append({"ts": event.time_ns, "record": record})
                continue
        if event.name == sc.EVENT_LOG:
            level = attrs.pop(sc.LOG_LEVEL, "VRB")
            message = attrs.pop(sc.LOG_MESSAGE, "")
            logs.append({"ts": event.time_ns, "event": event.name, "level": level, "message": message, "attributes": attrs})
            continue
        if event.name == sc.EVENT_HOOK:
            text = f"{attrs.get(sc.HOOK_KIND, 'hook')} hook {attrs.get(sc.HOOK_NAME, '?')}: {attrs.get(sc.HOOK_DECISION, '?')}"
            if attrs.get(sc.HOOK_REASON):
                text += f" ({attrs[sc.HOOK_REASON]})"
            logs.append({"ts": event.time_ns, "event": event.name, "level": "VRB", "message": text, "attributes": attrs})
            continue
        others.append({"name": event.name, "ts": event.time_ns, "attributes": attrs})
    return records, logs, others


# --------------------------------------------------------------------------- status


def own_status(span: SpanData) -> tuple[str, str | None]:
    if span.end_ns is None:
        return STATUS_IN_PROGRESS, None
    if span.attributes.get(sc.INTERRUPTED):
        return STATUS_INTERRUPTED, span.status_message
    if span.attributes.get(sc.CANCELLED):
        return STATUS_CANCELLED, span.status_message
    if span.status == "ERROR":
        return STATUS_ERROR, span.status_message or str(span.attributes.get(sc.ERROR_TYPE) or "error")
    return STATUS_OK, None


def op_status(kind: str, span: SpanData) -> tuple[str, str | None]:
    status, error = own_status(span)
    if status != STATUS_OK:
        return status, error
    attrs = span.attributes
    # Our spans set these at completion; ended without them means cancelled mid-way
    # (asyncio cancellation and KeyboardInterrupt end spans without an error status).
    if kind == KIND_LLM and sc.LLM_ATTEMPT in attrs and sc.LLM_LATENCY_MS not in attrs:
        return STATUS_CANCELLED, "cancelled before the attempt completed"
    if kind == KIND_TOOL and sc.TOOL_CHARS_IN in attrs and sc.TOOL_STATUS not in attrs:
        return STATUS_CANCELLED, "cancelled before the tool call completed"
    if kind == KIND_TOOL and attrs.get(sc.TOOL_STATUS) in {"failed", "denied"}:
        return STATUS_ERROR, span.status_message or f"tool {attrs[sc.TOOL_STATUS]}"
    return status, error


def propagate(status: str, children: list[dict]) -> str:
    """An ended node whose work was cut short (a child cancelled) is cancelled itself."""
    if status == STATUS_OK and any(c["status"] == STATUS_CANCELLED for c in children):
        return STATUS_CANCELLED
    return status


# --------------------------------------------------------------------------- accounting


def _num(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def accounting_entries(kind: str, span: SpanData, status: str, error: str | None) -> list[dict[str, Any]]:
    """Per-op accounting entries: one per completed LLM attempt or tool call."""
    if kind not in {KIND_LLM, KIND_TOOL} or status in {STATUS_IN_PROGRESS, STATUS_CANCELLED, STATUS_INTERRUPTED}:
        return []
    attrs = span.attributes
    failed = status == STATUS_ERROR
    latency = attrs.get(sc.LLM_LATENCY_MS if kind == KIND_LLM else sc.TOOL_LATENCY_MS)
    if not isinstance(latency, (int, float)) or isinstance(latency, bool):
        latency = round((span.end_ns - span.start_ns) / 1e6, 3)
    entry: dict[str, Any] = {
        "type": kind,
        "status": "failed" if failed else "ok",
        "ts": span.end_ns,
        "latency_ms": latency,
        "error": error if failed else None,
    }
    if kind == KIND_LLM:
        tokens = {
            "input": _num(attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS)),
            "output": _num(attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)),
            "cache_read": _num(attrs.get(sc.GEN_AI_USAGE_CACHE_READ)),
            # Traces written before the registry's name keep the old one.
            "cache_write": _num(attrs.get(sc.GEN_AI_USAGE_CACHE_CREATION, attrs.get(sc.LEGACY_GEN_AI_USAGE_CACHE_WRITE))),
            "reasoning": _num(attrs.get(sc.GEN_AI_USAGE_REASONING)),
        }
        tokens["total"] = tokens["input"] + tokens["output"]
        cost = attrs.get(sc.GEN_AI_USAGE_COST)
        entry.update(
            {
                "provider": attrs.get(sc.GEN_AI_PROVIDER_NAME),
                # The litellm string (pricing and resume need it); older spans had it as gen_ai.request.model.
                "model": attrs.get(sc.LLM_MODEL) or attrs.get(sc.GEN_AI_REQUEST_MODEL) or subject_of(span.name),
                "response_model": attrs.get(sc.GEN_AI_RESPONSE_MODEL),
                "attempt": attrs.get(sc.LLM_ATTEMPT),
                "tokens": tokens,
                "cost_usd": float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
                "price_source": attrs.get(sc.LLM_PRICE_SOURCE),
            }
        )
    else:
        entry.update(
            {
                "tool": attrs.get(sc.GEN_AI_TOOL_NAME) or subject_of(span.name),
                "chars_in": _num(attrs.get(sc.TOOL_CHARS_IN)),
                "chars_out": _num(attrs.get(sc.TOOL_CHARS_OUT)),
            }
        )
    entry.update(reported_billing(kind, attrs))
    return [entry]


# Billing facts a span has only when they were reported or given (seed 002's ledger fields): an entry,
# and so a ledger line, carries each only when present, so lines of older sessions stay as they were.
_REPORTED = {
    KIND_LLM: (("served_provider", sc.LLM_SERVED_PROVIDER, str), ("upstream_cost_usd", sc.LLM_UPSTREAM_COST, float),
               ("upstream_inference_cost_usd", sc.LLM_UPSTREAM_INFERENCE_COST, float), ("price_id", sc.LLM_PRICE_ID, str),
               ("usage_estimated", sc.LLM_USAGE_ESTIMATED, bool)),
    KIND_TOOL: (("tool_provider", sc.TOOL_PROVIDER, str),),
}
REPORTED_KEYS = tuple(key for fields in _REPORTED.values() for key, _, _ in fields)


def reported_billing(kind: str, attrs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, attr, kind_of in _REPORTED.get(kind, ()):
        value = attrs.get(attr)
        if kind_of is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = float(value)
        elif kind_of is str and isinstance(value, str) and value:
            out[key] = value
        elif kind_of is bool and value is True:  # a mark: absent unless set
            out[key] = True
    return out


# --------------------------------------------------------------------------- op details


def request_of(kind: str, attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """References to the request, never the request repeated: the transcript holds it."""
    if kind == KIND_LLM:
        return {
            "context_agent_id": attrs.get(sc.CONTEXT_AGENT_ID),
            "context_last_message_id": attrs.get(sc.CONTEXT_LAST_MESSAGE_ID),
            "context_message_count": attrs.get(sc.CONTEXT_MESSAGE_COUNT),
            "context_chars": attrs.get(sc.CONTEXT_CHARS),
        }
    if kind == KIND_TOOL:
        return {
            "tool_call_id": attrs.get(sc.GEN_AI_TOOL_CALL_ID),
            "call_message_id": attrs.get(sc.TOOL_CALL_MESSAGE_ID),
            "chars_in": attrs.get(sc.TOOL_CHARS_IN),
        }
    return None


def response_of(kind: str, span: SpanData) -> dict[str, Any] | None:
    attrs = span.attributes
    if kind == KIND_LLM and (sc.RESPONSE_MESSAGE_ID in attrs or sc.GEN_AI_RESPONSE_ID in attrs):
        return {
            "message_id": attrs.get(sc.RESPONSE_MESSAGE_ID),
            "response_id": attrs.get(sc.GEN_AI_RESPONSE_ID),
            "chars": attrs.get(sc.RESPONSE_CHARS),
            "finish_reasons": attrs.get(sc.GEN_AI_RESPONSE_FINISH_REASONS),
        }
    if kind == KIND_TOOL and sc.TOOL_STATUS in attrs:
        return {
            "message_id": attrs.get(sc.TOOL_RESULT_MESSAGE_ID),  # None: the tool replied as it went (discuss)
            "chars_out": attrs.get(sc.TOOL_CHARS_OUT),
            "status": attrs.get(sc.TOOL_STATUS),
        }
    return None


def reasoning_of(node: Mapping[str, Any]) -> dict[str, Any] | None:
    chunks = [{"text": log["message"], "ts": log["ts"]} for log in node["logs"] if log["level"] == "THK"]
    final = None
    for event in node["events"]:
        record = event["record"]
        if record.get("event_type") == sc.EVENT_TRANSCRIPT_ENTRY and record.get("reasoning_content"):
            final = record["reasoning_content"]
    if not chunks and final is None:
        return None
    return {"chunks": chunks, "final": final if final is not None else "".join(c["text"] for c in chunks)}
