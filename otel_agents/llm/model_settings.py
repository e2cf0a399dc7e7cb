"""Request parameters (temperature, max tokens, top_p, stop, seed): validated, merged, sent and recorded.

Shaped like openai-agents-python's ``ModelSettings``: every field is optional and an
unset field is not sent, so the provider's default applies. No litellm here.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from pydantic import ConfigDict, Field, ValidationError, field_validator

from otel_agents.arguments import CheckedModel, number_or_refuse
from otel_agents.tracing import semconv as sc


class ModelSettingsError(ValueError):
    """Request parameters that cannot be used; the message is one line naming the key."""


def _where(where: str, text: str) -> str:
    return f"{where}: {text}" if where else text


class ModelSettings(CheckedModel):
    """Request parameters of an LLM call; ``None`` means "not sent" (the provider's default)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)

    temperature: float | None = Field(default=None, ge=0, le=2)
    # Integers of 64 bits, as a span attribute and the journal hold them (a larger one would stop
    # the session from being saved after the model had been called).
    max_tokens: int | None = Field(default=None, ge=1, lt=2**63)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stop: tuple[str, ...] | None = None
    seed: int | None = Field(default=None, ge=-(2**63), lt=2**63)

    @field_validator("stop", mode="before")
    @classmethod
    def _one_stop_is_a_list(cls, value: Any) -> Any:
        # OpenAI takes a string or a list; one shape is kept so spans and merges see one type.
        stops = [value] if isinstance(value, str) else value
        if stops is None:
            return None
        if not isinstance(stops, (list, tuple)) or not all(isinstance(s, str) for s in stops):
            raise ValueError("must be a string or a list of strings")
        if not all(stops):
            raise ValueError("a stop sequence may not be empty")
        return stops

    @field_validator("max_tokens", "seed", mode="before")
    @classmethod
    def _counts_are_numbers(cls, value: Any) -> Any:
        # pydantic's lax mode would take 1.5 as an error but True as 1 and "5" as 5: neither is a count.
        return number_or_refuse(value, integer=True)

    @field_validator("temperature", "top_p", mode="before")
    @classmethod
    def _floats_are_numbers(cls, value: Any) -> Any:
        # true was sent and recorded as temperature 1.0; NaN was reported as out of range.
        return number_or_refuse(value)

    def set_fields(self) -> dict[str, Any]:
        """The fields that are set, as sent to litellm (``stop`` as a list)."""
        out = self.model_dump(exclude_none=True)
        if "stop" in out:
            out["stop"] = list(out["stop"])
        return out

    def merged(self, other: "ModelSettings | None") -> "ModelSettings":
        """These settings with every field ``other`` sets taking its value."""
        if other is None:
            return self
        return self.model_copy(update=other.model_dump(exclude_none=True))

    def span_attributes(self) -> dict[str, Any]:
        """``gen_ai.request.*`` for the fields that are set (types as the conventions' registry has them)."""
        attrs: dict[str, Any] = {}
        if self.temperature is not None:
            attrs[sc.GEN_AI_REQUEST_TEMPERATURE] = float(self.temperature)
        if self.max_tokens is not None:
            attrs[sc.GEN_AI_REQUEST_MAX_TOKENS] = self.max_tokens
        if self.top_p is not None:
            attrs[sc.GEN_AI_REQUEST_TOP_P] = float(self.top_p)
        if self.stop is not None:
            attrs[sc.GEN_AI_REQUEST_STOP_SEQUENCES] = list(self.stop)
        if self.seed is not None:
            attrs[sc.GEN_AI_REQUEST_SEED] = self.seed
        return attrs

    def to_json(self) -> str:
        """Compact JSON of the set fields (recorded on a run's root span for resume)."""
        return json.dumps(self.set_fields(), separators=(",", ":"), sort_keys=True)


PARAM_KEYS = tuple(ModelSettings.model_fields)


def settings_from_mapping(data: Any, where: str) -> ModelSettings:
    """Settings from a JSON object (a script's or a session's ``params``); one-line error naming ``where``."""
    if not isinstance(data, Mapping):
        raise ModelSettingsError(_where(where, f"'params' must be an object with keys among {', '.join(PARAM_KEYS)}"))
    unknown = sorted(set(data) - set(PARAM_KEYS))
    if unknown:
        raise ModelSettingsError(
            _where(where, f"unknown request parameter(s) {', '.join(unknown)} (known: {', '.join(PARAM_KEYS)})")
        )
    try:
        return ModelSettings.model_validate(dict(data))
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"]) or "params"
        said = error["msg"].removeprefix("Value error, ")  # a validator's own words need no prefix
        raise ModelSettingsError(_where(where, f"request parameter {key}: {said}")) from None


def _value(text: str) -> Any:
    """JSON where the text is JSON (numbers, lists, null), else the text itself (a stop word)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_params(items: Iterable[str], where: str = "--param") -> ModelSettings | None:
    """``key=value`` items (values parsed as JSON where possible) as settings; None when there are none."""
    data: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ModelSettingsError(_where(where, f"{item!r} is not key=value (keys: {', '.join(PARAM_KEYS)})"))
        data[key] = _value(text)
    if not data:
        return None
    return settings_from_mapping(data, where)


def settings_from_json(text: Any, where: str) -> ModelSettings | None:
    """Settings recorded by ``to_json`` (a saved run's attribute or meta.json); None when absent."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ModelSettingsError(_where(where, f"request parameters are {type(text).__name__}, not JSON text"))
    try:
        data = json.loads(text)
    except ValueError:
        raise ModelSettingsError(_where(where, "request parameters are not valid JSON")) from None
    return settings_from_mapping(data, where)
