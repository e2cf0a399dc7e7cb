"""What the tree and the ledger read from an imported span, checked before anything is saved.

The decoders (otlp_decode.py, jaeger_decode.py) prove a file is well-formed OTLP/JSON or Jaeger JSON;
these checks prove its spans say nothing our own spans could not: token counts
(and another convention's token count that foreign.py would map) are non-negative integers below 2**63, costs and latencies finite non-negative numbers below 1e15,
message ids ``msg_<digits>``, records well-formed seed-001 records, times in
order (how deep spans nest is not limited: trees are built without recursion). The attribute
rules are one declarative pydantic schema keyed by attribute name; a key absent
from a span is not checked (other software's spans carry few of them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictStr, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.foreign import USAGE_KEYS, usage_alias
from otel_agents.tracing.records import RecordError, from_span_event, validate_record
from otel_agents.tracing.spandata import SpanData

# Bounded as the saved files can hold them: the journal keeps integers of 64 bits (a larger one would
# read back as text), and a cost below 1e15 USD keeps its micro-dollars in every sum and table.
Count = Annotated[int, Field(strict=True, ge=0, lt=2**63, description="a non-negative integer below 2**63")]
Ordinal = Annotated[int, Field(strict=True, ge=1, lt=2**63, description="a positive integer below 2**63")]
Amount = Annotated[float, Field(strict=True, ge=0, lt=1e15, allow_inf_nan=False,
                                description="a finite non-negative number below 1e15")]
MessageId = Annotated[str, Field(strict=True, pattern=r"^msg_[0-9]+$", description="a message id msg_<digits>")]
SpanRef = Annotated[
    str, Field(strict=True, pattern=r"^[0-9a-f]{32}:[0-9a-f]{16}$", description="<32 hex digits>:<16 hex digits>")
]
Names = Annotated[list[StrictStr] | StrictStr, Field(description="a list of strings")]  # Jaeger keeps lists as text
ToolStatus = Annotated[Literal["ok", "failed", "denied"], Field(description="ok, failed or denied")]

_TEXT_KEYS = (
    sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_PROVIDER_NAME, sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL,
    sc.GEN_AI_RESPONSE_ID, sc.GEN_AI_CONVERSATION_ID, sc.GEN_AI_AGENT_NAME, sc.GEN_AI_AGENT_ID, sc.GEN_AI_TOOL_NAME,
    sc.GEN_AI_TOOL_CALL_ID, sc.GEN_AI_TOOL_TYPE, sc.ERROR_TYPE, sc.SESSION_ID, sc.RUN_SOURCE, sc.RUN_SCRIPT,
    sc.RUN_MODEL, sc.RUN_APP, sc.RUN_API_BASE, sc.AGENT_ID, sc.AGENT_PARENT_ID, sc.AGENT_MODEL, sc.CALL_PATH, sc.LLM_PRICE_SOURCE,
    sc.CONTEXT_AGENT_ID, sc.REQUEST_TOOLS, sc.REQUEST_TOOLS_ID, sc.LLM_MODEL,
)
_COUNT_KEYS = (
    sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.GEN_AI_USAGE_CACHE_READ,
    sc.GEN_AI_USAGE_CACHE_CREATION, sc.LEGACY_GEN_AI_USAGE_CACHE_WRITE, sc.GEN_AI_USAGE_REASONING, sc.TURN_INDEX, sc.CONTEXT_MESSAGE_COUNT,
    sc.CONTEXT_CHARS, sc.RESPONSE_CHARS, sc.TOOL_CHARS_IN, sc.TOOL_CHARS_OUT,
    *(sc.total_attr(scope, key) for scope in ("self", "inclusive") for key in sc.TOTAL_KEYS if key != "cost_usd"),
)
_SCHEMA: dict[str, Any] = {
    **{key: StrictStr for key in _TEXT_KEYS},
    **{key: Count for key in _COUNT_KEYS},
    sc.GEN_AI_USAGE_COST: Amount,
    sc.total_attr("self", "cost_usd"): Amount,
    sc.total_attr("inclusive", "cost_usd"): Amount,
    sc.LLM_LATENCY_MS: Amount,
    sc.LLM_RETRY_AFTER: Amount,
    sc.TOOL_LATENCY_MS: Amount,
    sc.RUN_INDEX: Ordinal,
    sc.EXPORT_TRUNCATED: Ordinal,
    sc.LLM_ATTEMPT: Ordinal,
    sc.LLM_MAX_ATTEMPTS: Ordinal,
    sc.RUN_REDACTED_SAVE: StrictBool,
    sc.LLM_RETRYABLE: StrictBool,
    sc.CANCELLED: StrictBool,
    sc.RESUMED_FROM: SpanRef,
    sc.AGENT_TOOLS: Names,
    sc.GEN_AI_RESPONSE_FINISH_REASONS: Names,
    sc.CONTEXT_LAST_MESSAGE_ID: MessageId,
    sc.RESPONSE_MESSAGE_ID: MessageId,
    sc.TOOL_CALL_MESSAGE_ID: MessageId,
    sc.TOOL_RESULT_MESSAGE_ID: MessageId,
    sc.TOOL_STATUS: ToolStatus,
}
# Every key optional; keys not named here are not looked at (extra="ignore" builds no copy of them).
_SpanAttributes = TypedDict("_SpanAttributes", _SCHEMA, total=False)  # type: ignore[misc]
_SpanAttributes.__pydantic_config__ = ConfigDict(extra="ignore")  # type: ignore[attr-defined]
_ATTRIBUTES = TypeAdapter(_SpanAttributes)
_COUNT = TypeAdapter(Count)
_CHECKED = frozenset(_SCHEMA)
_EXPECTED = {
    key: next((m.description for m in getattr(kind, "__metadata__", ()) if getattr(m, "description", None)), None)
    or {StrictStr: "a string", StrictBool: "a boolean"}.get(kind, "a valid value")
    for key, kind in _SCHEMA.items()
}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a span: where inside it (``attributes`` / ``events`` / ``end``), and what."""

    part: Literal["attributes", "event", "start", "end"]
    message: str
    key: str | None = None  # the attribute's key
    event: int | None = None  # the event's index in the span


def span_problem(span: SpanData) -> Problem | None:
    """The first thing wrong with ``span`` for the tree and the ledger, or None."""
    if span.start_ns < 0:
        return Problem("start", f"expected a non-negative time, got {span.start_ns}")
    if span.end_ns is not None and span.end_ns < span.start_ns:
        return Problem("end", f"the span ends ({span.end_ns}) before it starts ({span.start_ns})")
    attributes = span.attributes
    if not _CHECKED.isdisjoint(attributes):
        try:
            _ATTRIBUTES.validate_python(attributes)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            key = error["loc"][0]
            value = attributes.get(key)
            return Problem("attributes", f"{key}: expected {_EXPECTED[key]}, got {_shown(value)}", key=key)
    problem = _alias_problem(attributes)
    if problem is not None:
        return problem
    for index, event in enumerate(span.events):
        if event.name not in sc.SESSION_EVENT_NAMES:
            continue
        try:
            validate_record(from_span_event(event.name, event.attributes))
        except (RecordError, json.JSONDecodeError) as exc:
            return Problem("event", f"record: {exc}", event=index)
        except (ValueError, TypeError) as exc:  # e.g. a keep that is not a number
            return Problem("event", f"record: {type(exc).__name__}: {exc}", event=index)
    return None


def _alias_problem(attributes: dict[str, Any]) -> Problem | None:
    """A token count under another convention's key (foreign.py maps it) held to the same rule as ours."""
    for key in USAGE_KEYS:
        alias = usage_alias(attributes, key)
        if alias is None:
            continue
        try:
            _COUNT.validate_python(attributes[alias])
        except ValidationError:
            message = f"{alias}: expected {_EXPECTED[key]}, got {_shown(attributes[alias])}"
            return Problem("attributes", message, key=alias)
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

