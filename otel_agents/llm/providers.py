"""The registry's provider and request-model names of a litellm model string."""

from __future__ import annotations

from functools import lru_cache

# litellm provider names -> gen_ai.provider.name well-known values.
_PROVIDER_NAMES = {
    "openai": "openai", "text-completion-openai": "openai", "azure": "azure.ai.openai", "azure_text": "azure.ai.openai",
    "azure_ai": "azure.ai.inference", "anthropic": "anthropic", "anthropic_text": "anthropic",
    "bedrock": "aws.bedrock", "vertex_ai": "gcp.vertex_ai", "vertex_ai_beta": "gcp.vertex_ai",
    "gemini": "gcp.gemini", "cohere": "cohere", "cohere_chat": "cohere", "mistral": "mistral_ai",
    "codestral": "mistral_ai", "text-completion-codestral": "mistral_ai", "groq": "groq", "deepseek": "deepseek",
    "xai": "x_ai", "perplexity": "perplexity", "watsonx": "ibm.watsonx.ai", "watsonx_text": "ibm.watsonx.ai",
    "moonshot": "moonshot_ai",
}


@lru_cache(maxsize=256)
def provider_of(model: str) -> str:
    """Provider from the litellm model string: its routing prefix, or for a bare name (``command-r``) the provider
    litellm routes it to (litellm is imported for that alone: such a model is called through it), else ``openai``,
    litellm's default."""
    if "/" in model:
        prefix = model.split("/", 1)[0]
    else:
        prefix = _routed_provider(model)
    return _PROVIDER_NAMES.get(prefix, prefix)


def _routed_provider(model: str) -> str:
    from otel_agents.llm.litellm_loader import load_litellm

    try:
        provider = load_litellm().get_llm_provider(model)[1]
    except Exception:  # a name litellm cannot route: its call fails, and the default is what it would have tried
        return "openai"
    return provider if isinstance(provider, str) and provider else "openai"


def request_model_of(model: str) -> str:
    """``gen_ai.request.model``: the model as the provider knows it, litellm's routing prefix removed
    (``openai/gpt-4o-mini`` -> ``gpt-4o-mini``; ``openrouter/anthropic/claude-3`` -> ``anthropic/claude-3``)."""
    return model.split("/", 1)[1] if "/" in model else model
