"""Cost of one LLM attempt as the provider bills it, computed by litellm's own cost functions.

Models in litellm's bundled price map are priced by ``litellm.cost_per_token`` over the
full usage object: tiers above a context size, cache reads and writes, reasoning, audio
and image tokens. Overrides (OTEL_AGENTS_PRICES: litellm-style entries, tiers included)
go through litellm's generic calculator with the entry as the model's info, so a tier in
an override works exactly as one in the map. An unknown model is unpriced (``None``),
never a silent zero; the source used is recorded on every attempt
(``config`` | ``litellm`` | ``unpriced``). litellm is imported only when a price is asked for.
"""

from __future__ import annotations

import json
import math
import os
import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping

PRICE_SOURCE_CONFIG = "config"
PRICE_SOURCE_LITELLM = "litellm"
PRICE_SOURCE_UNPRICED = "unpriced"
COST_DECIMALS = 12  # far below a cent; keeps sums exact enough to reconcile to the cent

_INPUT_RATE = "input_cost_per_token"
_OUTPUT_RATE = "output_cost_per_token"
_CACHE_RATES = ("cache_read_input_token_cost", "cache_creation_input_token_cost")
# Rates litellm switches to above an input-token threshold (the threshold is the input rate's).
_TIERED_RATES = frozenset({_OUTPUT_RATE, *_CACHE_RATES, "cache_creation_input_token_cost_above_1hr"})
# litellm's context-size tiers: ``<rate>_above_<N>[k]_tokens``, chosen by the request's input tokens.
_TIER_KEY = re.compile(r"^(?P<rate>[a-z_]+?)_above_(?P<size>[^_]+)_tokens$")
_TIER_SIZE = re.compile(r"^\d+k?$")
# Entry values that are structures, not rates (litellm reads them itself).
_STRUCTURED = (dict, list)


class PriceConfigError(ValueError):
    """A price override file (OTEL_AGENTS_PRICES) that cannot be used."""


class NonFiniteCost(PriceConfigError):
    """Rates that price a call at more than a float holds (``1e308`` a token): no cost to record."""


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
    """A flat override given in code (``PriceTable({"m": Price(1e-6, 2e-6)})``); files give litellm entries."""

    input_per_token: float
    output_per_token: float
    cache_read_per_token: float | None = None
    cache_write_per_token: float | None = None

    def entry(self) -> dict[str, float]:
        out = {_INPUT_RATE: self.input_per_token, _OUTPUT_RATE: self.output_per_token}
        for key, rate in zip(_CACHE_RATES, (self.cache_read_per_token, self.cache_write_per_token)):
            if rate is not None:
                out[key] = rate
        return out


def litellm_usage(usage: Usage) -> Any:
    """A litellm ``Usage`` holding exactly the recorded counts (for re-pricing a record).

    Shaped as litellm normalises every provider's usage: prompt tokens include the cached
    ones, which ``prompt_tokens_details`` names; reasoning is part of the completion.
    """
    from otel_agents.llm.litellm_loader import load_litellm

    load_litellm()
    from litellm.types.utils import Usage as LitellmUsage

    prompt_details = {}
    if usage.cache_read_tokens:
        prompt_details["cached_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        prompt_details["cache_creation_tokens"] = usage.cache_write_tokens
    return LitellmUsage(
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
        prompt_tokens_details=prompt_details or None,
        completion_tokens_details={"reasoning_tokens": usage.reasoning_tokens} if usage.reasoning_tokens else None,
    )


def _is_rate(value: Any) -> bool:
    # json.loads accepts NaN and Infinity; neither is a price.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def override_entry(model: str, entry: Any, where: str) -> dict[str, Any]:
    """A checked override entry, with absent cache rates filled in; one-line PriceConfigError if unusable.

    An entry without cache rates bills cache tokens at its input rate (of the same tier), as
    litellm's own custom pricing does: a configured model's cached tokens are never free by omission.
    """
    if not isinstance(entry, dict) or not (
        (_is_rate(entry.get(_INPUT_RATE)) and _is_rate(entry.get(_OUTPUT_RATE))) or "tiered_pricing" in entry
    ):
        raise PriceConfigError(
            f"{where}: price for {model!r} needs numeric input_cost_per_token and output_cost_per_token"
            " (or a tiered_pricing list)"
        )
    _check_tier_list(model, entry.get("tiered_pricing"), where)
    tiers = set()
    for key, value in entry.items():
        if "cost" in key and not isinstance(value, _STRUCTURED) and not _is_rate(value):
            raise PriceConfigError(f"{where}: price for {model!r}: {key} must be a number >= 0, not {value!r}")
        match = _TIER_KEY.match(key)
        if match and "cost" in key:
            if not _TIER_SIZE.match(match["size"]):
                raise PriceConfigError(
                    f"{where}: price for {model!r}: {key} names no token count (like _above_200k_tokens)"
                )
            if match["rate"] == _INPUT_RATE:
                tiers.add(match["size"])
    for key in entry:
        match = _TIER_KEY.match(key)
        if match and match["rate"] in _TIERED_RATES and match["size"] not in tiers:
            # litellm picks a tier by the input rate's threshold only: this rate would be ignored.
            raise PriceConfigError(
                f"{where}: price for {model!r}: {key} needs input_cost_per_token_above_{match['size']}_tokens"
            )
    out = dict(entry)
    for cache_rate in _CACHE_RATES:
        # Given, litellm falls back to it in every tier lacking its own; a tiered_pricing list defaults itself.
        if cache_rate in entry or _INPUT_RATE not in entry:
            continue
        out[cache_rate] = entry[_INPUT_RATE]
        for size in tiers:
            out.setdefault(f"{cache_rate}_above_{size}_tokens", entry[f"{_INPUT_RATE}_above_{size}_tokens"])
    return out


def _check_tier_list(model: str, tiers: Any, where: str) -> None:
    """litellm's other tier format: ``[{"range": [0, 32000], "input_cost_per_token": ...}, ...]``."""
    if tiers is None:
        return
    ok = isinstance(tiers, list) and tiers and all(
        isinstance(t, dict)
        and isinstance(t.get("range"), list) and len(t["range"]) == 2 and all(_is_rate(x) for x in t["range"])
        and _is_rate(t.get(_INPUT_RATE))
        and all(_is_rate(v) for k, v in t.items() if "cost" in k)
        for t in tiers
    )
    if not ok:
        raise PriceConfigError(
            f"{where}: price for {model!r}: tiered_pricing must be a list of "
            '{"range": [from, to], "input_cost_per_token": rate, ...} with rates >= 0'
        )


def _split(model: str) -> tuple[str, str]:
    """(provider, name) of a litellm model string; a bare name is OpenAI's, as in litellm."""
    provider, _, name = model.partition("/")
    return (provider, name) if name else ("openai", model)


def _has_token_price(info: Mapping[str, Any]) -> bool:
    """A map entry that prices both sides (or by tiers); an entry without an output rate would bill output as 0."""
    return (info.get(_INPUT_RATE) is not None and info.get(_OUTPUT_RATE) is not None) or bool(info.get("tiered_pricing"))


@dataclass
class PriceTable:
    """Overrides by litellm model string, e.g. from OTEL_AGENTS_PRICES (a JSON file); litellm's map for the rest."""

    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    label: str = "prices given in code"  # where the overrides came from, for the session's pricing snapshot

    def __post_init__(self) -> None:
        self.overrides = {
            model: override_entry(model, entry.entry() if isinstance(entry, Price) else entry, "prices")
            for model, entry in self.overrides.items()
        }

    @classmethod
    def from_env(cls) -> "PriceTable":
        path = os.environ.get("OTEL_AGENTS_PRICES")
        return cls.from_file(Path(path)) if path else cls()

    @classmethod
    def from_file(cls, path: Path) -> "PriceTable":
        """``{"openai/gpt-4o": {"input_cost_per_token": 2.5e-6, "output_cost_per_token": 1e-5}}``,
        any litellm price-map keys allowed (``input_cost_per_token_above_200k_tokens``, cache rates...).

        Raises :class:`PriceConfigError` with a one-line message for any bad file.
        """
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8-sig"))  # as scripts: UTF-8, a BOM allowed
        except (OSError, UnicodeDecodeError) as exc:
            raise PriceConfigError(f"{path}: cannot read prices: {exc}") from None
        except json.JSONDecodeError as exc:
            raise PriceConfigError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        if not isinstance(data, dict):
            raise PriceConfigError(f"{path}: prices must be a JSON object mapping model strings to prices")
        for model, entry in data.items():
            override_entry(model, entry, str(path))  # says which file is wrong
        return cls(data, label=f"price file {Path(path).resolve()}")

    def lookup(self, model: str) -> tuple[Mapping[str, Any] | None, str]:
        """The price entry used for ``model`` and its source; ``(None, "unpriced")`` for an unknown model."""
        if model in self.overrides:
            return self.overrides[model], PRICE_SOURCE_CONFIG
        info = _litellm_info(model)
        return (info, PRICE_SOURCE_LITELLM) if info is not None else (None, PRICE_SOURCE_UNPRICED)

    def cost(
        self, model: str, usage: Usage, provider_usage: Any = None, at: datetime | None = None
    ) -> tuple[float | None, str]:
        """(USD rounded to 12 decimals or None, source) of one attempt.

        ``provider_usage``: litellm's usage object of the response, priced whole (audio and image
        tokens included); without it the recorded counts in ``usage`` are. ``at``: the moment
        billed, for time-of-day prices (default now).
        """
        from otel_agents.llm.litellm_loader import load_litellm

        litellm = load_litellm()  # only reached on the LLM path (and by billing rebuild --reprice)
        from litellm.types.utils import Usage as LitellmUsage

        priced_usage = provider_usage if isinstance(provider_usage, LitellmUsage) else litellm_usage(usage)
        entry, source = self.lookup(model)
        if entry is None:
            return None, source
        if source == PRICE_SOURCE_CONFIG:
            from litellm.litellm_core_utils.llm_cost_calc.utils import generic_cost_per_token

            provider, name = _split(model)
            prompt, completion = generic_cost_per_token(
                model=name, usage=priced_usage, custom_llm_provider=provider, model_info=entry, current_time=at
            )
        else:
            try:
                with _billed_at(at):
                    prompt, completion = litellm.cost_per_token(
                        model=model, custom_llm_provider=_provider_for_cost(litellm, model, entry),
                        usage_object=priced_usage,
                    )
            except Exception:  # noqa: BLE001 - litellm raises bare exceptions for what it cannot price
                return None, PRICE_SOURCE_UNPRICED
        cost = prompt + completion
        if not math.isfinite(cost):  # a finite but huge rate overflows: infinity is no cost (nor JSON)
            where = self.label if source == PRICE_SOURCE_CONFIG else "litellm's price map"
            raise NonFiniteCost(
                f"{where}: the price of {model!r} gives a cost that is not a finite number ({cost}) for "
                f"{usage.input_tokens} input and {usage.output_tokens} output tokens; give it a real rate"
            )
        return round(cost, COST_DECIMALS), source


def _litellm_info(model: str) -> Mapping[str, Any] | None:
    from otel_agents.llm.litellm_loader import load_litellm

    litellm = load_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - an unmapped model is a bare Exception in litellm
        return None
    return info if _has_token_price(info) else None


def _provider_for_cost(litellm: Any, model: str, info: Mapping[str, Any]) -> str | None:
    """None lets litellm route the model as its own ``cost_per_token`` would; a provider litellm
    cannot name from the string (a custom one, like ``scripted``) comes from the map entry."""
    try:
        litellm.get_llm_provider(model)
        return None
    except Exception:  # noqa: BLE001 - litellm raises BadRequestError for a provider it does not know
        return info.get("litellm_provider")


def _billed_at(at: datetime | None):
    """Pin litellm's clock for time-of-day prices (off-peak windows) to the moment billed."""
    if at is None:
        return nullcontext()
    from litellm._internal_context import pinned_billing_time

    return pinned_billing_time(at)
