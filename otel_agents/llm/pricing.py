"""Cost of one LLM attempt: configured overrides first, then litellm's bundled price map.

An unknown model is unpriced (``None``), never a silent zero. The source used is
recorded on every attempt (``config`` | ``litellm`` | ``unpriced``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

PRICE_SOURCE_CONFIG = "config"
PRICE_SOURCE_LITELLM = "litellm"
PRICE_SOURCE_UNPRICED = "unpriced"
COST_DECIMALS = 12  # far below a cent; keeps sums exact enough to reconcile to the cent


class PriceConfigError(ValueError):
    """A price override file (OTEL_AGENTS_PRICES) that cannot be used."""


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0  # all prompt tokens, cached ones included
    output_tokens: int = 0  # all completion tokens, reasoning included
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Price:
    input_per_token: float
    output_per_token: float
    cache_read_per_token: float | None = None
    cache_write_per_token: float | None = None

    def cost(self, usage: Usage) -> float:
        cache_read_rate = self.input_per_token if self.cache_read_per_token is None else self.cache_read_per_token
        cache_write_rate = self.input_per_token if self.cache_write_per_token is None else self.cache_write_per_token
        plain_input = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
        total = (
            plain_input * self.input_per_token
            + usage.cache_read_tokens * cache_read_rate
            + usage.cache_write_tokens * cache_write_rate
            + usage.output_tokens * self.output_per_token
        )
        return round(total, COST_DECIMALS)


def price_from_litellm_entry(entry: Mapping[str, Any]) -> Price | None:
    inp, out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
    if inp is None or out is None:
        return None
    cache_read, cache_write = entry.get("cache_read_input_token_cost"), entry.get("cache_creation_input_token_cost")
    return Price(
        float(inp),
        float(out),
        float(cache_read) if cache_read is not None else None,
        float(cache_write) if cache_write is not None else None,
    )


@dataclass
class PriceTable:
    """Overrides by litellm model string, e.g. from OTEL_AGENTS_PRICES (a JSON file)."""

    overrides: dict[str, Price] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> "PriceTable":
        path = os.environ.get("OTEL_AGENTS_PRICES")
        return cls.from_file(Path(path)) if path else cls()

    @classmethod
    def from_file(cls, path: Path) -> "PriceTable":
        """``{"openai/gpt-4o": {"input_cost_per_token": 2.5e-6, "output_cost_per_token": 1e-5}}``

        Raises :class:`PriceConfigError` with a one-line message for any bad file.
        """
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError) as exc:
            raise PriceConfigError(f"{path}: cannot read prices: {exc}") from None
        except json.JSONDecodeError as exc:
            raise PriceConfigError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        if not isinstance(data, dict):
            raise PriceConfigError(f"{path}: prices must be a JSON object mapping model strings to prices")
        overrides = {}
        for model, entry in data.items():
            try:
                price = price_from_litellm_entry(entry) if isinstance(entry, dict) else None
            except (TypeError, ValueError):
                price = None
            if price is None:
                raise PriceConfigError(
                    f"{path}: price for {model!r} needs numeric input_cost_per_token and output_cost_per_token"
                )
            overrides[model] = price
        return cls(overrides)

    def lookup(self, model: str) -> tuple[Price | None, str]:
        if model in self.overrides:
            return self.overrides[model], PRICE_SOURCE_CONFIG
        from otel_agents.llm.litellm_loader import load_litellm

        litellm = load_litellm()  # only reached on the LLM path

        for key in (model, model.split("/", 1)[-1]):
            entry = litellm.model_cost.get(key)
            if entry:
                price = price_from_litellm_entry(entry)
                if price is not None:
                    return price, PRICE_SOURCE_LITELLM
        return None, PRICE_SOURCE_UNPRICED

    def cost(self, model: str, usage: Usage) -> tuple[float | None, str]:
        price, source = self.lookup(model)
        return (price.cost(usage) if price else None), source
