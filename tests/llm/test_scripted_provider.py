"""The scripted provider through litellm.acompletion: pure, counted, priced, failing on cue."""

from __future__ import annotations

import json
import uuid

import pytest

from otel_agents.llm.litellm_loader import load_litellm
from otel_agents.llm.pricing import PriceTable, Usage
from otel_agents.llm.scripted_provider import count_tokens, register_script, request_text
from otel_agents.llm.scripts import parse_script

litellm = load_litellm()


def make_model(agents, **extra):
    data = {"name": f"provider-test-{uuid.uuid4().hex[:8]}", "agents": agents, **extra}
    return register_script(parse_script(data, "test"))


async def ask(model, messages, agent="main", attempt=1):
    return await litellm.acompletion(
        model=model, messages=messages, num_retries=0, max_retries=0,
        metadata={"otel_agents_agent_name": agent, "otel_agents_attempt": attempt},
    )


def summary(resp):
    msg = resp.choices[0].message
    calls = [(c.function.name, c.function.arguments, c.id) for c in (msg.tool_calls or [])]
    return msg.content, calls, resp.id, resp.usage.prompt_tokens, resp.usage.completion_tokens


async def test_same_request_same_response():
    model = make_model({"main": [{"tool_calls": [{"name": "task", "arguments": {"name": "A", "system_prompt": "x"}}]},
                                 "second"]})
    messages = [{"role": "user", "content": "hi"}]
    first, again = summary(await ask(model, messages)), summary(await ask(model, messages))
    assert first == again
    assert first[1] == [("task", '{"name": "A", "system_prompt": "x"}', "call_main_1_1")]
    # The answer depends on the number of assistant turns already in the transcript ...
    later = messages + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "more"}]
    assert summary(await ask(model, later))[0] == "second"
    # ... and on the agent's name, not on anything else.
    assert summary(await ask(model, messages, agent="stranger"))[0] == "I have nothing further to add."


async def test_fallback_when_turns_run_out():
    model = make_model({"main": ["only"]}, fallback="That is all.")
    turns = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "only"}, {"role": "user", "content": "q2"}]
    assert summary(await ask(model, turns))[0] == "That is all."


async def test_usage_is_counted_from_the_real_text_and_priced():
    model = make_model({"main": ["twelve chars"]})
    messages = [{"role": "system", "content": "s" * 40}, {"role": "user", "content": "u" * 21}]
    resp = await ask(model, messages)
    assert resp.usage.prompt_tokens == count_tokens(request_text(messages)) == -(-(40 + 1 + 21) // 4)
    assert resp.usage.completion_tokens == count_tokens("twelve chars") == 3
    cost, source = PriceTable().cost(model, Usage(resp.usage.prompt_tokens, resp.usage.completion_tokens))
    assert source == "litellm" and cost > 0


async def test_script_usage_and_reasoning_override_the_count():
    model = make_model({"main": [{"text": "ok", "reasoning": "because", "usage": {"input_tokens": 100, "output_tokens": 9}}]})
    resp = await ask(model, [{"role": "user", "content": "x"}])
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (100, 9)
    assert resp.choices[0].message.reasoning_content == "because"


async def test_first_attempt_fails_on_cue_with_retry_after_then_succeeds():
    model = make_model({"main": [{"text": "ok", "fail_first_attempt": {"status": 429, "retry_after": 0.5}}]})
    messages = [{"role": "user", "content": "x"}]
    with pytest.raises(litellm.RateLimitError) as caught:
        await ask(model, messages, attempt=1)
    from otel_agents.llm.retry import is_transient, retry_after_seconds

    assert is_transient(caught.value) and retry_after_seconds(caught.value) == 0.5
    assert summary(await ask(model, messages, attempt=2))[0] == "ok"


async def test_unknown_scripted_model_is_an_error():
    make_model({"main": ["x"]})  # registers the provider
    with pytest.raises(Exception, match="no scripted model"):
        await ask("scripted/never-registered", [{"role": "user", "content": "x"}])


def test_the_demo_price_bills_cache_tokens_as_a_price_file_with_its_rates_does(tmp_path):
    """litellm bills an absent cache rate at 0: a script's cached tokens were free, a price file's at the input rate."""
    from otel_agents.llm.scripted_provider import DEMO_INPUT_PRICE, DEMO_OUTPUT_PRICE, register_demo_price

    model = f"scripted/cache-{tmp_path.name}"
    register_demo_price(model)
    usage = Usage(1_000, 100, cache_read_tokens=800, cache_write_tokens=100)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({model: {"input_cost_per_token": DEMO_INPUT_PRICE,
                                          "output_cost_per_token": DEMO_OUTPUT_PRICE, "litellm_provider": "scripted"}}))
    demo, source = PriceTable().cost(model, usage)
    assert source == "litellm" and demo == PriceTable.from_file(prices).cost(model, usage)[0]
    assert demo == pytest.approx(1_000 * DEMO_INPUT_PRICE + 100 * DEMO_OUTPUT_PRICE)
