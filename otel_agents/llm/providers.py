"""The registry's provider and request-model names of a litellm model string."""

from __future__ import annotations

# litellm provider names -> gen_ai.provider.name well-known values.
_PROVIDER_NAMES = {
    "openai": "openai", "text-completion-openai": "openai", "azure": "azure.ai.openai", "anthropic": "anthropic",
    "bedrock": "aws.bedrock", "vertex_ai": "gcp.vertex_ai", "gemini": "gcp.gemini", "cohere": "cohere",
    "mistral": "mistral_ai", "groq": "groq", "deepseek": "deepseek", "xai": "x_ai", "perplexity": "perplexity",
    "watsonx": "ibm.watsonx.ai",
}


def provider_of(model: str) -> str:
    """Provider from the litellm model string, without importing litellm."""
    prefix = model.split("/", 1)[0] if "/" in model else "openai"
    return _PROVIDER_NAMES.get(prefix, prefix)


def request_model_of(model: str) -> str:
    """``gen_ai.request.model``: the model as the provider knows it, litellm's routing prefix removed
    (``openai/gpt-4o-mini`` -> ``gpt-4o-mini``; ``openrouter/anthropic/claude-3`` -> ``anthropic/claude-3``)."""
    return model.split("/", 1)[1] if "/" in model else model
