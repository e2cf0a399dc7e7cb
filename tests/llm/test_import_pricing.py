"""Imported model calls with usage and no price are priced from the local price map, or marked unpriced."""

from __future__ import annotations

import json

from otel_agents.llm.import_pricing import PRICED_ON_IMPORT, priced
from otel_agents.llm.pricing import PriceTable, Usage
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.spandata import SpanData


def chat(model: str | None, **attributes) -> SpanData:
    attrs = {sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_USAGE_INPUT_TOKENS: 1000, sc.GEN_AI_USAGE_OUTPUT_TOKENS: 200}
    if model is not None:
        attrs[sc.GEN_AI_REQUEST_MODEL] = model
    attrs.update(attributes)
    return SpanData("0" * 31 + "1", "0" * 15 + "1", None, f"chat {model}", "CLIENT", 1_700_000_000_000_000_000,
                    1_700_000_001_000_000_000, attrs)


def test_a_mapped_model_is_priced_as_litellm_prices_it():
    (span,) = priced([chat("gpt-4o-mini")])
    expected, source = PriceTable().cost("gpt-4o-mini", Usage(input_tokens=1000, output_tokens=200))
    assert source == "litellm" and expected > 0
    assert span.attributes[sc.GEN_AI_USAGE_COST] == expected
    assert span.attributes[sc.LLM_PRICE_SOURCE] == "litellm" and span.attributes[PRICED_ON_IMPORT] is True


def test_an_unknown_model_is_unpriced_never_zero():
    (span,) = priced([chat("an-unpublished-model")])
    assert span.attributes[sc.LLM_PRICE_SOURCE] == "unpriced"
    assert sc.GEN_AI_USAGE_COST not in span.attributes


def test_an_override_file_prices_a_model_litellm_does_not_know(tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"house-model": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}))
    monkeypatch.setenv("OTEL_AGENTS_PRICES", str(prices))
    (span,) = priced([chat("house-model")])
    assert span.attributes[sc.LLM_PRICE_SOURCE] == "config"
    assert abs(span.attributes[sc.GEN_AI_USAGE_COST] - (1000 * 1e-6 + 200 * 2e-6)) < 1e-12


def test_the_provider_prefix_is_tried_when_the_bare_name_is_unknown(tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"acme/m1": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}}))
    monkeypatch.setenv("OTEL_AGENTS_PRICES", str(prices))
    (span,) = priced([chat("m1", **{sc.GEN_AI_PROVIDER_NAME: "acme"})])
    assert span.attributes[sc.LLM_PRICE_SOURCE] == "config"


def test_recorded_prices_calls_without_usage_and_other_spans_are_left_alone():
    ours = chat("gpt-4o-mini", **{sc.GEN_AI_USAGE_COST: 0.5, sc.LLM_PRICE_SOURCE: "config"})
    no_usage = chat("gpt-4o-mini", **{sc.GEN_AI_USAGE_INPUT_TOKENS: None, sc.GEN_AI_USAGE_OUTPUT_TOKENS: None})
    tool = SpanData("0" * 31 + "1", "0" * 15 + "2", None, "execute_tool t", "INTERNAL", 1, 2,
                    {sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_USAGE_INPUT_TOKENS: 5})
    spans = [ours, no_usage, tool]
    assert priced(spans) == spans
