"""A litellm response as recorded: the assistant message whole (seed 004), the token counts however the provider named them."""

from __future__ import annotations

from types import SimpleNamespace

import litellm
import pytest

from otel_agents.llm.pricing import Usage
from otel_agents.llm.responses import assistant_message, usage_missing, usage_of


def test_the_assistant_message_keeps_tool_calls_reasoning_and_thinking_and_nothing_else():
    raw = litellm.Message(
        content=None,
        tool_calls=[{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": None}}],
        reasoning_content="First look it up.",
        thinking_blocks=[{"type": "thinking", "thinking": "First look it up.", "signature": "sig"}],
    )
    assert assistant_message(raw) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": ""}}],
        "reasoning_content": "First look it up.",
        "thinking_blocks": [{"type": "thinking", "thinking": "First look it up.", "signature": "sig"}],
    }
    # A plain mapping (a replayed or hand-built reply) gives the same; a call without a type is a function call.
    plain = {"content": "Paris.", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}
    assert assistant_message(plain) == {"role": "assistant", "content": "Paris.",
                                        "tool_calls": [{"id": "c", "type": "function",
                                                        "function": {"name": "f", "arguments": "{}"}}]}


@pytest.mark.parametrize("usage, cache_write", [
    ({"prompt_tokens_details": {"cached_tokens": 30, "cache_creation_tokens": 7}}, 7),
    ({"prompt_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 7}}, 7),
    ({"prompt_tokens_details": {"cached_tokens": 30}, "cache_creation_input_tokens": 7}, 7),
    ({"cache_read_input_tokens": 30}, 0),
])
def test_usage_reads_cache_writes_under_each_providers_name(usage, cache_write):
    response = litellm.ModelResponse(usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                                            "completion_tokens_details": {"reasoning_tokens": 5}, **usage})
    counted = usage_of(response)
    assert (counted.input_tokens, counted.output_tokens, counted.cache_read_tokens,
            counted.cache_write_tokens, counted.reasoning_tokens) == (100, 20, 30, cache_write, 5)


def test_a_response_without_usage_counts_nothing():
    assert usage_of(litellm.ModelResponse()) == usage_of(object()) == Usage()


def test_a_reply_without_usage_is_missing_it_and_a_counted_one_is_not():
    assert usage_missing(SimpleNamespace(usage=None)) and usage_missing(SimpleNamespace())
    # litellm gives a reply that sent no usage all-zero counts
    assert usage_missing(SimpleNamespace(usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}))
    assert not usage_missing(SimpleNamespace(usage={"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3}))


@pytest.mark.parametrize("usage, problem", [
    ({"prompt_tokens": -5, "completion_tokens": 1, "total_tokens": -4}, "prompt_tokens=-5"),
    ({"prompt_tokens": 5, "completion_tokens": 2**63, "total_tokens": 5}, f"completion_tokens={2**63}"),
    ({"prompt_tokens": 5, "completion_tokens": 1.5}, "completion_tokens=1.5"),
    ({"prompt_tokens": 5, "completion_tokens": True}, "completion_tokens=True"),
    ({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": -1}}, "cached_tokens=-1"),
    ({"prompt_tokens": 5, "completion_tokens_details": {"reasoning_tokens": float("nan")}}, "reasoning_tokens=nan"),
])
def test_usage_counts_that_are_not_non_negative_integers_are_named(usage, problem):
    from otel_agents.llm.responses import usage_invalid

    assert usage_invalid(SimpleNamespace(usage=usage)) == problem


def test_valid_usage_and_no_usage_are_not_invalid():
    from otel_agents.llm.responses import usage_invalid

    assert usage_invalid(SimpleNamespace(usage={"prompt_tokens": 5, "completion_tokens": 2.0, "total_tokens": 7,
                                                "prompt_tokens_details": {"cached_tokens": None}})) is None
    assert usage_invalid(SimpleNamespace(usage=None)) is None
