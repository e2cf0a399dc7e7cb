"""Cost per attempt: overrides, litellm's price map, unpriced models."""

from __future__ import annotations

import json

import pytest

from otel_agents.llm.litellm_loader import load_litellm
from otel_agents.llm.pricing import PriceConfigError, PriceTable, Usage


def test_litellm_price_map_is_used_for_known_models():
    entry = load_litellm().model_cost["gpt-4o"]
    usage = Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=200)
    cost, source = PriceTable().cost("openai/gpt-4o", usage)
    expected = (800 * entry["input_cost_per_token"] + 200 * entry["cache_read_input_token_cost"]
                + 100 * entry["output_cost_per_token"])
    assert source == "litellm"
    assert cost == pytest.approx(expected, rel=1e-12) and cost > 0


def test_unknown_model_is_unpriced_never_zero():
    assert PriceTable().cost("openai/no-such-model-xyz", Usage(10, 10)) == (None, "unpriced")
    assert PriceTable().lookup("totally/unknown") == (None, "unpriced")


def test_overrides_win_and_come_from_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({
        "openai/gpt-4o": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6},
        "local/llama": {"input_cost_per_token": 0, "output_cost_per_token": 0},
    }))
    monkeypatch.setenv("OTEL_AGENTS_PRICES", str(path))
    table = PriceTable.from_env()
    assert table.cost("openai/gpt-4o", Usage(100, 10)) == (pytest.approx(100e-6 + 20e-6), "config")
    # A configured zero is a real price (a free local model), distinct from unpriced.
    assert table.cost("local/llama", Usage(100, 10)) == (0.0, "config")
    monkeypatch.delenv("OTEL_AGENTS_PRICES")
    assert PriceTable.from_env().overrides == {}


@pytest.mark.parametrize(
    "text, message",
    [
        (json.dumps({"m": {"input_cost_per_token": 1e-6}}), "price for 'm' needs numeric input_cost_per_token"),
        (json.dumps({"m": {"input_cost_per_token": "cheap", "output_cost_per_token": 1}}), "price for 'm' needs"),
        (json.dumps({"m": 0.5}), "price for 'm' needs"),
        (json.dumps(["m"]), "prices must be a JSON object"),
        ("{oops", "invalid JSON at line 1 column 2"),
    ],
)
def test_bad_price_file_is_one_clear_line(tmp_path, text, message):
    path = tmp_path / "prices.json"
    path.write_text(text)
    with pytest.raises(PriceConfigError, match=message) as caught:
        PriceTable.from_file(path)
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_a_price_file_with_a_bom_is_read(tmp_path):
    path = tmp_path / "prices.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}).encode())
    assert set(PriceTable.from_file(path).overrides) == {"m"}


def test_missing_price_file(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_AGENTS_PRICES", str(tmp_path / "nope.json"))
    with pytest.raises(PriceConfigError, match="cannot read prices"):
        PriceTable.from_env()


def test_cache_rates_default_to_the_input_rate(tmp_path):
    # Was a test of the removed Price class; the same rates now go through an override entry.
    usage = Usage(input_tokens=100, output_tokens=10, cache_read_tokens=30, cache_write_tokens=20)
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({
        "x/plain": {"input_cost_per_token": 1.0, "output_cost_per_token": 2.0},
        "x/cached": {"input_cost_per_token": 1.0, "output_cost_per_token": 2.0,
                     "cache_read_input_token_cost": 0.1, "cache_creation_input_token_cost": 1.25},
    }))
    table = PriceTable.from_file(path)
    assert table.cost("x/plain", usage) == (100 + 20, "config")
    assert table.cost("x/cached", usage)[0] == pytest.approx(50 + 3 + 25 + 20)
