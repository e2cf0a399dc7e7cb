"""The replay provider through litellm.acompletion: recorded answers and failures, zero price, divergences not retried."""

from __future__ import annotations

import uuid

import pytest

from otel_agents.llm.litellm_loader import load_litellm
from otel_agents.llm.pricing import PriceTable, Usage
from otel_agents.llm.replay_book import RecordedCall, ReplayBook
from otel_agents.llm.replay_provider import register_replay
from otel_agents.llm.retry import is_transient

litellm = load_litellm()
ASKED = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
ANSWER = {"role": "assistant", "content": None, "reasoning_content": "think",
          "tool_calls": [{"id": "call_7", "type": "function", "function": {"name": "task", "arguments": '{"name": "A"}'}}]}
USAGE = {"input_tokens": 120, "output_tokens": 30, "cache_read_tokens": 100, "cache_write_tokens": 0,
         "reasoning_tokens": 5}


def model_of(*calls: RecordedCall, strict: bool = False) -> str:
    return register_replay(f"test-{uuid.uuid4().hex[:8]}",
                           ReplayBook({(c.agent, c.turn, c.attempt): c for c in calls}, strict=strict))


async def ask(model, messages, attempt=1, **kw):
    return await litellm.acompletion(model=model, messages=messages, num_retries=0, max_retries=0,
                                     metadata={"otel_agents_agent_name": "main", "otel_agents_attempt": attempt}, **kw)


async def test_the_recorded_answer_comes_back_with_its_usage_at_zero_cost():
    model = model_of(RecordedCall("main", 1, 1, ASKED, message=ANSWER, usage=USAGE, response_id="chatcmpl-1"))
    response = await ask(model, ASKED)
    message = response.choices[0].message
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("call_7", "task", '{"name": "A"}')]
    assert message.reasoning_content == "think"
    assert response.id == "chatcmpl-1" and response.choices[0].finish_reason == "tool_calls"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (120, 30)
    assert response.usage.prompt_tokens_details.cached_tokens == 100
    cost, source = PriceTable().cost(model, Usage(120, 30, 100, 0, 5), provider_usage=response.usage)
    assert (cost, source) == (0.0, "litellm")  # priced, at zero: never the recorded model's price


async def test_a_streamed_replay_gives_the_same_answer_in_chunks():
    model = model_of(RecordedCall("main", 1, 1, ASKED, message={"role": "assistant", "content": "one two three four"},
                                  usage=USAGE))
    stream = await ask(model, ASKED, stream=True, stream_options={"include_usage": True})
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
    assert text == "one two three four"


async def test_a_recorded_rate_limit_is_raised_again_and_is_retried():
    model = model_of(RecordedCall("main", 1, 1, ASKED, error_type="RateLimitError"),
                     RecordedCall("main", 1, 2, ASKED, message={"role": "assistant", "content": "ok"}))
    with pytest.raises(litellm.RateLimitError) as failed:
        await ask(model, ASKED)
    assert is_transient(failed.value)
    assert (await ask(model, ASKED, attempt=2)).choices[0].message.content == "ok"


async def test_a_divergence_fails_the_request_and_is_not_retried():
    model = model_of(RecordedCall("main", 1, 1, ASKED, message={"role": "assistant", "content": "ok"}))
    with pytest.raises(Exception, match="replay diverged: agent main, turn 1, attempt 1: messages differ") as failed:
        await ask(model, [ASKED[0], {"role": "user", "content": "hello"}])
    assert not is_transient(failed.value)


async def test_an_unknown_replay_model_is_refused():
    with pytest.raises(Exception, match="no replay model"):
        await ask("replay/never-registered", ASKED)


async def test_a_recorded_rate_limit_asks_for_the_recorded_wait_again():
    from otel_agents.llm.retry import RetryPolicy, retry_after_seconds

    model = model_of(RecordedCall("main", 1, 1, ASKED, error_type="RateLimitError", retry_after=0.05))
    with pytest.raises(litellm.RateLimitError) as failed:
        await ask(model, ASKED)
    assert retry_after_seconds(failed.value) == 0.05
    assert RetryPolicy().delay(1, failed.value) == 0.05  # not the jittered backoff of a 429 without it
