"""What one span gives its node: events sorted into records, logs and others; statuses; accounting entries."""

from __future__ import annotations

from otel_agents.persistence.tree_span_fields import (
    accounting_entries, op_status, own_status, propagate, span_operation, split_events,
)
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import make_record, to_span_attributes
from otel_agents.tracing.spandata import EventData, SpanData


def _span(name, end=20, events=(), status="UNSET", **attrs):
    return SpanData(trace_id="a" * 32, span_id="1" * 16, parent_span_id=None, name=name, kind="INTERNAL",
                    start_ns=10, end_ns=end, attributes=attrs, events=tuple(events), status=status)


def test_every_span_event_lands_in_exactly_one_list():
    record = make_record(sc.EVENT_AGENT_CREATED, "msg_1", agent_id="agent_001", name="main")
    events = [
        EventData(sc.EVENT_AGENT_CREATED, 1, to_span_attributes(record)),
        EventData(sc.EVENT_LOG, 2, {sc.LOG_LEVEL: "WRN", sc.LOG_MESSAGE: "slow", "extra": 1}),
        EventData(sc.EVENT_HOOK, 3, {sc.HOOK_KIND: "approval", sc.HOOK_NAME: "guard", sc.HOOK_DECISION: "deny",
                                     sc.HOOK_REASON: "too big"}),
        EventData(sc.EVENT_TRANSCRIPT_ENTRY, 4, {}),  # a record event without its message id: kept as an event
        EventData("exception", 5, {"exception.type": "ValueError"}),
    ]
    records, logs, others = split_events(_span("chat m", events=events))
    assert records == [{"ts": 1, "record": record}]
    assert [(log["level"], log["message"], log["attributes"]) for log in logs] == [
        ("WRN", "slow", {"extra": 1}),
        ("VRB", "approval hook guard: deny (too big)", {sc.HOOK_KIND: "approval", sc.HOOK_NAME: "guard",
                                                         sc.HOOK_DECISION: "deny", sc.HOOK_REASON: "too big"}),
    ]
    assert [(other["name"], other["ts"]) for other in others] == [(sc.EVENT_TRANSCRIPT_ENTRY, 4), ("exception", 5)]


def test_operation_comes_from_the_attribute_else_the_name():
    assert span_operation(_span("chat m", **{sc.GEN_AI_OPERATION_NAME: "execute_tool"})) == "execute_tool"
    assert span_operation(_span("invoke_agent main")) == "invoke_agent"


def test_statuses_of_unfinished_interrupted_failed_and_cut_short_spans():
    assert own_status(_span("x", end=None)) == ("in_progress", None)
    assert own_status(_span("x", **{sc.INTERRUPTED: True})) == ("interrupted", None)
    assert own_status(_span("x", status="ERROR", **{sc.ERROR_TYPE: "Boom"})) == ("error", "Boom")
    # An attempt that ended without its latency was cancelled mid-way, not completed.
    assert op_status("llm", _span("chat m", **{sc.LLM_ATTEMPT: 1}))[0] == "cancelled"
    assert op_status("llm", _span("chat m", **{sc.LLM_ATTEMPT: 1, sc.LLM_LATENCY_MS: 3.0}))[0] == "ok"
    assert op_status("tool", _span("execute_tool t", **{sc.TOOL_STATUS: "denied"})) == ("error", "tool denied")
    assert propagate("ok", [{"status": "ok"}, {"status": "cancelled"}]) == "cancelled"
    assert propagate("error", [{"status": "cancelled"}]) == "error"


def test_accounting_entries_of_completed_attempts_and_tool_calls_only():
    attrs = {sc.GEN_AI_USAGE_INPUT_TOKENS: 7, sc.GEN_AI_USAGE_OUTPUT_TOKENS: 3, sc.GEN_AI_USAGE_COST: 0.5,
             sc.LLM_LATENCY_MS: 4.0}
    (entry,) = accounting_entries("llm", _span("chat some/model", **attrs), "ok", None)
    assert entry["model"] == "some/model" and entry["tokens"]["total"] == 10 and entry["cost_usd"] == 0.5
    assert entry["latency_ms"] == 4.0 and entry["ts"] == 20 and entry["status"] == "ok"
    (tool,) = accounting_entries("tool", _span("execute_tool search", **{sc.TOOL_CHARS_IN: True}), "error", "no")
    assert tool["tool"] == "search" and tool["status"] == "failed" and tool["error"] == "no"
    assert tool["chars_in"] == 0  # a bool is not a count
    assert tool["latency_ms"] == 0.0  # measured from the span when the attribute is missing
    for status in ("in_progress", "cancelled", "interrupted"):
        assert accounting_entries("llm", _span("chat m", **attrs), status, None) == []
    assert accounting_entries("span", _span("custom"), "ok", None) == []


def test_cache_writes_and_the_model_are_read_under_the_current_and_the_older_names():
    """Spans written before the registry's names (cache_write, the litellm string as gen_ai.request.model)
    give the same accounting as current ones."""
    common = {sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_USAGE_INPUT_TOKENS: 100, sc.LLM_LATENCY_MS: 1.0}
    current = _span("chat gpt-4o-mini", **common, **{sc.GEN_AI_USAGE_CACHE_CREATION: 30, sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
                                                      sc.LLM_MODEL: "openai/gpt-4o-mini"})
    older = _span("chat openai/gpt-4o-mini", **common, **{sc.LEGACY_GEN_AI_USAGE_CACHE_WRITE: 30,
                                                           sc.GEN_AI_REQUEST_MODEL: "openai/gpt-4o-mini"})
    (new_entry,) = accounting_entries("llm", current, "ok", None)
    (old_entry,) = accounting_entries("llm", older, "ok", None)
    assert new_entry["tokens"]["cache_write"] == old_entry["tokens"]["cache_write"] == 30
    assert new_entry["model"] == old_entry["model"] == "openai/gpt-4o-mini"
    assert sc.GEN_AI_USAGE_CACHE_CREATION == "gen_ai.usage.cache_creation.input_tokens"
