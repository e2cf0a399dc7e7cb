"""What the tree and ledger read from an imported span: each rule refuses its bad values, real spans pass."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from otel_agents.tracing.import_checks import span_problem
from otel_agents.persistence.importers import read_trace_file
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import make_record, to_span_attributes
from otel_agents.tracing.spandata import EventData, SpanData

from support.shared_fixtures import FIXTURES, require_fixtures


def chat(**attributes) -> SpanData:
    base = {sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_USAGE_INPUT_TOKENS: 10, sc.GEN_AI_USAGE_COST: 0.5}
    return SpanData(trace_id="1" * 32, span_id="2" * 16, parent_span_id=None, name="chat m", kind="CLIENT",
                    start_ns=5, end_ns=9, attributes={**base, **attributes})


def test_every_fixture_passes():
    require_fixtures()
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file()):
        assert [span_problem(s) for s in read_trace_file(path) if span_problem(s)] == [], path


def test_a_span_with_every_checked_key_passes():
    assert span_problem(chat(**{
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 0, sc.GEN_AI_USAGE_COST: 0, sc.LLM_LATENCY_MS: 1.5, sc.LLM_ATTEMPT: 2,
        sc.RESPONSE_MESSAGE_ID: "msg_000012", sc.RESUMED_FROM: "a" * 32 + ":" + "b" * 16, sc.TOOL_STATUS: "denied",
        sc.AGENT_TOOLS: ["task"], sc.CANCELLED: False, sc.total_attr("self", "cost_usd"): 1,
    })) is None
    assert span_problem(chat(**{sc.AGENT_TOOLS: '["task"]'})) is None  # Jaeger carries lists as JSON text


@pytest.mark.parametrize("key, value, expected", [
    (sc.GEN_AI_USAGE_INPUT_TOKENS, -5, "expected a non-negative integer below 2**63, got -5"),
    (sc.GEN_AI_USAGE_OUTPUT_TOKENS, 2.5, "expected a non-negative integer below 2**63, got 2.5"),
    (sc.GEN_AI_USAGE_CACHE_READ, 3.0, "expected a non-negative integer below 2**63, got 3.0"),
    (sc.GEN_AI_USAGE_REASONING, "7", "expected a non-negative integer below 2**63, got '7'"),
    (sc.GEN_AI_USAGE_CACHE_WRITE, True, "expected a non-negative integer below 2**63, got True"),
    (sc.GEN_AI_USAGE_COST, float("nan"), "expected a finite non-negative number below 1e15, got nan"),
    (sc.GEN_AI_USAGE_COST, float("inf"), "expected a finite non-negative number below 1e15, got inf"),
    (sc.GEN_AI_USAGE_COST, -0.01, "expected a finite non-negative number below 1e15, got -0.01"),
    (sc.GEN_AI_USAGE_COST, "0.1", "expected a finite non-negative number below 1e15, got '0.1'"),
    (sc.TOOL_CHARS_IN, "abc", "expected a non-negative integer below 2**63, got 'abc'"),
    (sc.LLM_LATENCY_MS, -1, "expected a finite non-negative number below 1e15"),
    (sc.RUN_INDEX, 0, "expected a positive integer below 2**63, got 0"),
    # What the saved files could not hold: a journal integer of more than 64 bits reads back as text,
    # and a cost of 1e22 or more loses its micro-dollars in every total.
    (sc.GEN_AI_USAGE_INPUT_TOKENS, 10**30, "expected a non-negative integer below 2**63, got 1000000000000000000000000000000"),
    (sc.GEN_AI_USAGE_OUTPUT_TOKENS, 2**63, "expected a non-negative integer below 2**63"),
    (sc.GEN_AI_USAGE_COST, 1e25, "expected a finite non-negative number below 1e15, got 1e+25"),
    (sc.LLM_ATTEMPT, "1", "expected a positive integer"),
    (sc.RESPONSE_MESSAGE_ID, "m12", "expected a message id msg_<digits>, got 'm12'"),
    (sc.CONTEXT_LAST_MESSAGE_ID, 12, "expected a message id msg_<digits>, got 12"),
    (sc.TOOL_RESULT_MESSAGE_ID, "msg_12x", "expected a message id msg_<digits>"),
    (sc.RESUMED_FROM, "abc:def", "expected <32 hex digits>:<16 hex digits>"),
    (sc.TOOL_STATUS, "maybe", "expected ok, failed or denied, got 'maybe'"),
    (sc.AGENT_TOOLS, [1, 2], "expected a list of strings"),
    (sc.SESSION_ID, 42, "expected a string, got 42"),
    (sc.GEN_AI_OPERATION_NAME, ["chat"], "expected a string"),
    (sc.CANCELLED, "yes", "expected a boolean, got 'yes'"),
])
def test_each_attribute_rule_names_the_key_and_the_value(key, value, expected):
    problem = span_problem(chat(**{key: value}))
    assert problem is not None and problem.part == "attributes" and problem.key == key
    assert problem.message.startswith(f"{key}: {expected}")


@pytest.mark.parametrize("alias, value", [
    ("llm.token_count.prompt", -5), ("llm.token_count.completion", 10**23), ("gen_ai.usage.prompt_tokens", -5),
    ("llm.token_count.prompt_details.cache_read", 12.5), ("gen_ai.usage.completion_tokens", "7"),
])
def test_another_convention_s_token_count_obeys_the_same_rule(alias, value):
    """foreign.py bills it as the current key: a bad one refused, not skipped (which billed nothing)."""
    span = dataclasses.replace(chat(), attributes={sc.GEN_AI_OPERATION_NAME: "chat", alias: value})
    problem = span_problem(span)
    assert problem is not None and problem.part == "attributes" and problem.key == alias
    assert problem.message.startswith(f"{alias}: expected a non-negative integer below 2**63, got ")


def test_an_alias_the_current_key_overrides_is_not_read():
    assert span_problem(chat(**{"llm.token_count.prompt": -5})) is None  # input_tokens is there: nothing maps it


def test_records_must_be_well_formed():
    good = make_record("transcript_entry", "msg_000003", agent_id="agent_001", role="user", content="hi")
    event = EventData("transcript_entry", 7, to_span_attributes(good))
    assert span_problem(dataclasses.replace(chat(), events=(EventData("other", 1, {}), event))) is None
    for change, expected in [
        ({"otel_agents.event.message_id": "m3"}, "record: message_id 'm3' is not of the form msg_<digits>"),
        ({"otel_agents.event.role": "robot"}, "record: msg_000003: role must be one of"),
        ({"otel_agents.event.tool_calls": "[not json"}, "record: "),
    ]:
        bad = EventData("transcript_entry", 7, {**event.attributes, **change})
        problem = span_problem(dataclasses.replace(chat(), events=(EventData("other", 1, {}), bad)))
        assert problem is not None and problem.part == "event" and problem.event == 1
        assert problem.message.startswith(expected), problem.message
    missing = EventData("agent_created", 7, {})
    assert "has no message_id" in span_problem(dataclasses.replace(chat(), events=(missing,))).message


def test_times_must_be_in_order():
    assert span_problem(dataclasses.replace(chat(), start_ns=-1)).part == "start"
    problem = span_problem(dataclasses.replace(chat(), start_ns=10, end_ns=9))
    assert problem.part == "end" and "ends (9) before it starts (10)" in problem.message
    assert span_problem(dataclasses.replace(chat(), end_ns=None)) is None  # unfinished is fine

