"""What the endpoint that answered a call reported about it: the provider that served it and what it charged."""

from __future__ import annotations

import math
from typing import Any

from otel_agents.tracing import semconv as sc

# litellm keeps a cost the endpoint reported (OpenRouter's usage.cost, a LiteLLM proxy's
# x-litellm-response-cost header) among the response's headers under this name.
_REPORTED_COST_HEADER = "llm_provider-x-litellm-response-cost"


def _field(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _usd(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def served_attributes(response: Any) -> dict[str, Any]:
    """Chat-span attributes for what the response says about who served it and the upstream charge.

    Only what was reported: routers such as OpenRouter name the provider that served the call
    (the response's top-level ``provider``) and bill it in ``usage.cost`` (with
    ``usage.cost_details.upstream_inference_cost``, the serving provider's own charge, for
    bring-your-own-key calls); a LiteLLM proxy reports its cost in a response header.
    """
    out: dict[str, Any] = {}
    provider = _field(response, "provider")
    if isinstance(provider, str) and provider.strip():
        out[sc.LLM_SERVED_PROVIDER] = provider.strip()
    usage = _field(response, "usage")
    cost = _usd(_field(usage, "cost"))
    if cost is None:
        hidden = getattr(response, "_hidden_params", None) or {}
        cost = _usd((hidden.get("additional_headers") or {}).get(_REPORTED_COST_HEADER))
    if cost is not None:
        out[sc.LLM_UPSTREAM_COST] = cost
    inference = _usd(_field(_field(usage, "cost_details"), "upstream_inference_cost"))
    if inference is not None:
        out[sc.LLM_UPSTREAM_INFERENCE_COST] = inference
    return out
