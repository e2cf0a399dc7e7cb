"""gen_ai.provider.name from a litellm model string (llm/providers.py)."""

from __future__ import annotations

import pytest

from otel_agents.llm.providers import provider_of, request_model_of


@pytest.mark.parametrize("model, provider", [
    ("openai/gpt-4o-mini", "openai"),
    ("azure/my-deployment", "azure.ai.openai"),
    ("azure_ai/mistral-large", "azure.ai.inference"),
    ("cohere_chat/command-r", "cohere"),
    ("anthropic/claude-3-5-sonnet", "anthropic"),
    ("scripted/demo", "scripted"),  # not a registry provider: named as litellm routes it
    ("command-r", "cohere"),  # a bare name: the provider litellm routes it to, not always openai
    ("gpt-4o-mini", "openai"),
    ("no-such-model-anywhere", "openai"),  # litellm cannot route it; its default is what a call would try
])
def test_the_provider_is_the_one_litellm_routes_the_model_to(model, provider, capsys):
    assert provider_of(model) == provider
    assert capsys.readouterr().out == ""  # litellm's "Provider List" notice stays off stdout


def test_the_request_model_is_the_providers_name_for_it():
    assert request_model_of("openrouter/anthropic/claude-3") == "anthropic/claude-3"
    assert request_model_of("command-r") == "command-r"
