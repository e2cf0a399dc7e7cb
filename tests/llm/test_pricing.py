"""Costs as the provider bills them: our prices agree with litellm's own ``cost_per_token``.

Each case builds the usage object a provider's response carries (as litellm normalises
it), then prices it twice: at call time (``usage_of`` plus the whole usage object, as
the client does) and again from the recorded counts alone (as ``billing rebuild
--reprice`` does). Both must agree with ``litellm.cost_per_token`` to 1e-9 USD.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_agents.llm.responses import usage_of
from otel_agents.llm.litellm_loader import load_litellm
from otel_agents.llm.pricing import PriceConfigError, PriceTable, Usage

litellm = load_litellm()
from litellm.types.utils import ModelResponse  # noqa: E402
from litellm.types.utils import Usage as LitellmUsage  # noqa: E402

TOLERANCE = 1e-9  # USD

# Named, so the table cannot silently shrink if the map changes: each must stay priced by litellm.
TIERED_MODELS = [
    "gemini/gemini-2.5-pro",
    "anthropic/claude-sonnet-4-20250514",
    "anthropic/claude-sonnet-4-5-20250929",
    "vertex_ai/gemini-2.5-pro",
    "gemini/gemini-3-pro-preview",
    "xai/grok-4",
    "xai/grok-code-fast-1",
    "openai/gpt-5.4",
    "gpt-5.5",
    "openrouter/openai/gpt-5.4-pro",
    "bedrock/anthropic.claude-sonnet-4-20250514-v1:0",
    "dashscope/qwen-plus-latest",  # litellm's other tier format: a tiered_pricing list
    "dashscope/qwen-flash",
]
FLAT_MODELS = [
    "openai/gpt-4o",
    "gpt-4o-mini",
    "o3-mini",
    "openai/o3",
    "gpt-4.1",
    "gemini/gemini-2.5-flash",
    "deepseek/deepseek-chat",
    "deepseek/deepseek-reasoner",
    "anthropic/claude-3-7-sonnet-20250219",
    "anthropic/claude-opus-4-20250514",
    "mistral/mistral-large-latest",
    "groq/llama-3.3-70b-versatile",
]
MODELS = TIERED_MODELS + FLAT_MODELS


def provider_usage(prompt, completion, cache_read=0, cache_write=0, reasoning=0, anthropic=False, **details):
    """The usage object of a response, shaped as litellm's transformations shape it."""
    prompt_details = dict(details)
    if cache_read:
        prompt_details["cached_tokens"] = cache_read
    if cache_write:
        prompt_details["cache_creation_tokens"] = cache_write
    # litellm's Anthropic transformation also sets the provider's own top-level names.
    extra = {"cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write} if anthropic else {}
    return LitellmUsage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion,
        prompt_tokens_details=prompt_details or None,
        completion_tokens_details={"reasoning_tokens": reasoning} if reasoning else None,
        **extra,
    )


def litellm_cost(model, usage):
    prompt, completion = litellm.cost_per_token(model=model, usage_object=usage)
    return prompt + completion


def both_ways(table, model, usage):
    """(cost at call time, cost re-priced from the recorded counts, the source, the counts)."""
    response = ModelResponse()
    response.usage = usage
    counts = usage_of(response)
    at_call, source = table.cost(model, counts, provider_usage=usage)
    from_counts, again = table.cost(model, counts)
    assert source == again
    return at_call, from_counts, source, counts


CASES = {
    "long": dict(prompt=250_000, completion=2_000),
    "long_cached": dict(prompt=250_000, completion=2_000, cache_read=120_000),
    "cache_read_write": dict(prompt=30_000, completion=800, cache_read=12_000, cache_write=6_000, anthropic=True),
    "long_cache_write": dict(prompt=260_000, completion=1_500, cache_read=40_000, cache_write=30_000, anthropic=True),
    "reasoning": dict(prompt=1_200, completion=9_000, reasoning=8_000),
    "long_reasoning": dict(prompt=240_000, completion=6_000, reasoning=5_000, cache_read=10_000),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("model", MODELS)
def test_cost_agrees_with_litellm(model, case):
    usage = provider_usage(**CASES[case])
    expected = litellm_cost(model, usage)
    at_call, from_counts, source, counts = both_ways(PriceTable(), model, usage)
    assert source == "litellm"
    assert at_call == pytest.approx(expected, abs=TOLERANCE)
    assert from_counts == pytest.approx(expected, abs=TOLERANCE)
    spec = CASES[case]
    assert (counts.cache_read_tokens, counts.cache_write_tokens, counts.reasoning_tokens) == (
        spec.get("cache_read", 0), spec.get("cache_write", 0), spec.get("reasoning", 0))


@pytest.mark.parametrize("model", TIERED_MODELS)
def test_named_tiered_models_have_tiers_that_change_the_price(model):
    entry, source = PriceTable().lookup(model)
    assert source == "litellm"
    assert entry.get("tiered_pricing") or any(k.startswith("input_cost_per_token_above_") and entry[k] for k in entry)
    long, short = Usage(250_000, 2_000), Usage(100_000, 2_000)
    # Billed by one rate per request, a long prompt would cost exactly 2.5 times a 100k one.
    assert PriceTable().cost(model, long)[0] != pytest.approx(2.5 * PriceTable().cost(model, short)[0], rel=1e-9)


def test_the_issues_two_examples():
    """250,000 in, 2,000 out: every token at the tier's rate, as Google and Anthropic bill it."""
    usage = Usage(input_tokens=250_000, output_tokens=2_000)
    for model, key in (("gemini/gemini-2.5-pro", "gemini/gemini-2.5-pro"),
                       ("anthropic/claude-sonnet-4-20250514", "claude-sonnet-4-20250514")):
        entry = litellm.model_cost[key]
        by_tier = (250_000 * entry["input_cost_per_token_above_200k_tokens"]
                   + 2_000 * entry["output_cost_per_token_above_200k_tokens"])
        at_base = 250_000 * entry["input_cost_per_token"] + 2_000 * entry["output_cost_per_token"]
        cost, source = PriceTable().cost(model, usage)
        assert source == "litellm" and cost == pytest.approx(by_tier, abs=TOLERANCE)
        assert cost > at_base * 1.5
    assert PriceTable().cost("gemini/gemini-2.5-pro", usage)[0] == pytest.approx(0.655, abs=TOLERANCE)
    assert PriceTable().cost("anthropic/claude-sonnet-4-20250514", usage)[0] == pytest.approx(1.545, abs=TOLERANCE)


def _tiered_map_entries():
    return sorted(
        key for key, entry in litellm.model_cost.items()
        if isinstance(entry, dict) and entry.get("mode") == "chat"
        and (entry.get("tiered_pricing") or any(k.startswith("input_cost_per_token_above_") for k in entry))
    )


def test_every_tiered_chat_model_in_the_map_agrees_at_250k_tokens():
    """Read from the map itself: a tier format litellm adds is priced (and checked) too."""
    keys = _tiered_map_entries()
    assert len(keys) >= 150
    usage = provider_usage(250_000, 2_000, cache_read=50_000, reasoning=500)
    checked, wrong = 0, []
    for key in keys:
        try:
            expected = litellm_cost(key, usage)
        except Exception:  # noqa: BLE001 - a map key litellm itself cannot route (no provider in it)
            continue
        checked += 1
        at_call, from_counts, source, _ = both_ways(PriceTable(), key, usage)
        if source != "litellm" or abs(at_call - expected) > TOLERANCE or abs(from_counts - expected) > TOLERANCE:
            wrong.append((key, expected, at_call, from_counts, source))
    assert checked >= 150 and wrong == []


def test_an_override_with_litellms_own_entry_prices_as_litellm_does():
    """Overrides go through litellm's generic calculator: the same entry, the same cost, tiers included."""
    usage_with_cache = provider_usage(250_000, 2_000, cache_read=50_000, cache_write=10_000, reasoning=500)
    usage_plain = provider_usage(250_000, 2_000, reasoning=500)
    checked = 0
    for key in _tiered_map_entries():
        entry = litellm.model_cost[key]
        # An override without cache rates bills cache tokens at its input rate (below), litellm's map at none.
        has_cache_rates = "cache_read_input_token_cost" in entry and "cache_creation_input_token_cost" in entry
        usage = usage_with_cache if has_cache_rates else usage_plain
        try:
            expected = litellm_cost(key, usage)
        except Exception:  # noqa: BLE001 - as above
            continue
        checked += 1
        cost, source = PriceTable({key: dict(entry)}).cost(key, usage_of(_response(usage)), provider_usage=usage)
        assert source == "config" and cost == pytest.approx(expected, abs=TOLERANCE), key
    assert checked >= 150


def _response(usage):
    response = ModelResponse()
    response.usage = usage
    return response


@pytest.fixture
def price_file(tmp_path, monkeypatch):
    def write(prices):
        path = tmp_path / "prices.json"
        path.write_text(json.dumps(prices))
        monkeypatch.setenv("OTEL_AGENTS_PRICES", str(path))
        return PriceTable.from_env()

    return write


def test_override_tiers_bill_every_token_at_the_tier_rate(price_file):
    table = price_file({"acme/long-1": {
        "input_cost_per_token": 1e-6, "output_cost_per_token": 4e-6,
        "input_cost_per_token_above_128k_tokens": 2e-6, "output_cost_per_token_above_128k_tokens": 6e-6,
        "cache_read_input_token_cost": 1e-7, "cache_read_input_token_cost_above_128k_tokens": 3e-7,
    }})
    assert table.cost("acme/long-1", Usage(128_000, 1_000)) == (pytest.approx(0.128 + 0.004, abs=TOLERANCE), "config")
    assert table.cost("acme/long-1", Usage(128_001, 1_000))[0] == pytest.approx(
        128_001 * 2e-6 + 1_000 * 6e-6, abs=TOLERANCE)
    cached = Usage(200_000, 1_000, cache_read_tokens=100_000)
    assert table.cost("acme/long-1", cached)[0] == pytest.approx(
        100_000 * 2e-6 + 100_000 * 3e-7 + 1_000 * 6e-6, abs=TOLERANCE)


def test_override_without_cache_rates_bills_cache_at_the_tiers_input_rate(price_file):
    table = price_file({"acme/long-2": {
        "input_cost_per_token": 1e-6, "output_cost_per_token": 4e-6,
        "input_cost_per_token_above_200k_tokens": 2e-6,
    }})
    usage = Usage(250_000, 1_000, cache_read_tokens=50_000, cache_write_tokens=20_000)
    # No output tier: litellm keeps the base output rate above the threshold.
    assert table.cost("acme/long-2", usage)[0] == pytest.approx(250_000 * 2e-6 + 1_000 * 4e-6, abs=TOLERANCE)
    assert table.cost("acme/long-2", Usage(1_000, 10, cache_read_tokens=500))[0] == pytest.approx(
        1_000 * 1e-6 + 10 * 4e-6, abs=TOLERANCE)


def test_an_override_replaces_litellms_price_and_its_tiers(price_file):
    table = price_file({"gemini/gemini-2.5-pro": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-5}})
    # A flat override is flat: litellm's tiers for the model do not leak into it.
    assert table.cost("gemini/gemini-2.5-pro", Usage(250_000, 2_000)) == (pytest.approx(0.27, abs=TOLERANCE), "config")


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"input_cost_per_token_above_lots_tokens": 1e-6}, "input_cost_per_token_above_lots_tokens names no token count"),
        ({"output_cost_per_token_above_300k_tokens": 1e-6}, "needs input_cost_per_token_above_300k_tokens"),
        ({"cache_read_input_token_cost": -1e-7}, "cache_read_input_token_cost must be a number >= 0"),
        ({"input_cost_per_token_above_200k_tokens": "2e-6"}, "must be a number >= 0, not '2e-6'"),
        ({"output_cost_per_reasoning_token": True}, "output_cost_per_reasoning_token must be a number"),
        ({"output_cost_per_audio_token": float("inf")}, "output_cost_per_audio_token must be a number >= 0, not inf"),
        ({"tiered_pricing": [{"range": [0], "input_cost_per_token": 1e-6}]}, "tiered_pricing must be a list of"),
        ({"tiered_pricing": [{"range": [0, 10], "input_cost_per_token": "1e-6"}]}, "tiered_pricing must be a list of"),
    ],
)
def test_bad_tier_in_an_override_is_one_clear_line(tmp_path, entry, message):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"acme/m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, **entry}}))
    with pytest.raises(PriceConfigError, match=message) as caught:
        PriceTable.from_file(path)
    assert str(caught.value).startswith(f"{path}: price for 'acme/m'") and "\n" not in str(caught.value)


def test_unknown_models_are_unpriced_not_zero():
    for model in ("openai/no-such-model-xyz", "acme/unknown", "no-provider-model"):
        assert PriceTable().cost(model, Usage(250_000, 2_000)) == (None, "unpriced")
        assert PriceTable().lookup(model) == (None, "unpriced")


def test_audio_tokens_are_billed_at_their_rate_at_call_time():
    """The recorded counts have no audio field; the call-time price reads litellm's whole usage."""
    model = "gpt-4o-audio-preview"
    entry = litellm.model_cost[model]
    assert entry["input_cost_per_audio_token"] != entry["input_cost_per_token"]
    usage = provider_usage(10_000, 500, audio_tokens=4_000, text_tokens=6_000)
    at_call, from_counts, source, _ = both_ways(PriceTable(), model, usage)
    assert source == "litellm"
    assert at_call == pytest.approx(litellm_cost(model, usage), abs=TOLERANCE)
    assert at_call == pytest.approx(
        6_000 * entry["input_cost_per_token"] + 4_000 * entry["input_cost_per_audio_token"]
        + 500 * entry["output_cost_per_token"], abs=TOLERANCE)
    assert from_counts != pytest.approx(at_call, abs=TOLERANCE)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(MODELS),
    prompt=st.integers(0, 400_000),
    completion=st.integers(0, 40_000),
    read_share=st.floats(0, 1),
    write_share=st.floats(0, 1),
    reasoning_share=st.floats(0, 1),
    anthropic=st.booleans(),
)
def test_repricing_the_recorded_counts_gives_the_call_time_price(
    model, prompt, completion, read_share, write_share, reasoning_share, anthropic
):
    """So ``billing rebuild --reprice`` with unchanged prices changes nothing."""
    cache_read = int(prompt * read_share)
    cache_write = int((prompt - cache_read) * write_share)
    reasoning = int(completion * reasoning_share)
    usage = provider_usage(prompt, completion, cache_read, cache_write, reasoning, anthropic=anthropic)
    at_call, from_counts, _, _ = both_ways(PriceTable(), model, usage)
    assert from_counts == pytest.approx(at_call, abs=TOLERANCE)
    assert at_call == pytest.approx(litellm_cost(model, usage), abs=TOLERANCE)


def test_a_cost_no_float_holds_is_an_error_not_infinity():
    from otel_agents.llm.pricing import NonFiniteCost

    table = PriceTable({"acme/huge": {"input_cost_per_token": 1e308, "output_cost_per_token": 1e308}})
    with pytest.raises(NonFiniteCost, match="'acme/huge' gives a cost that is not a finite number"):
        table.cost("acme/huge", Usage(input_tokens=2, output_tokens=2))
    assert table.cost("acme/huge", Usage(input_tokens=1, output_tokens=0))[0] == 1e308  # finite: a cost
