"""What a litellm response holds for us: the assistant message kept verbatim (seed 004), and its token counts."""

from __future__ import annotations

from typing import Any

from otel_agents.llm.pricing import Usage

# Providers answering in this process (scripts, replays) always count their usage: never estimated.
IN_PROCESS_PREFIXES = ("scripted/", "replay/")


def assistant_message(raw: Any) -> dict[str, Any]:
    """Keep everything needed to send the turn back: content, tool calls, reasoning."""
    data = raw.model_dump() if hasattr(raw, "model_dump") else dict(raw)
    message: dict[str, Any] = {"role": "assistant", "content": data.get("content")}
    calls = data.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": c.get("type") or "function",
                "function": {"name": c["function"]["name"], "arguments": c["function"].get("arguments") or ""},
            }
            for c in calls
        ]
    for key in ("reasoning_content", "thinking_blocks"):
        if data.get(key):
            message[key] = data[key]
    return message


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def usage_of(response: Any) -> Usage:
    """The counts we record, from litellm's usage (prompt tokens include cached ones, as litellm
    normalises every provider). Providers name cache writes three ways; all three are read."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return Usage()
    prompt_details = _field(usage, "prompt_tokens_details")
    completion_details = _field(usage, "completion_tokens_details")
    cache_read = (_field(prompt_details, "cached_tokens") if prompt_details else None) or _field(
        usage, "cache_read_input_tokens"
    )
    cache_write = (
        (_field(prompt_details, "cache_creation_tokens") or _field(prompt_details, "cache_write_tokens"))
        if prompt_details
        else None
    ) or _field(usage, "cache_creation_input_tokens")
    return Usage(
        input_tokens=int(_field(usage, "prompt_tokens") or 0),
        output_tokens=int(_field(usage, "completion_tokens") or 0),
        cache_read_tokens=int(cache_read or 0),
        cache_write_tokens=int(cache_write or 0),
        reasoning_tokens=int((_field(completion_details, "reasoning_tokens") if completion_details else 0) or 0),
    )


def usage_missing(response: Any) -> bool:
    """A reply that said nothing of what it used: litellm gives it all-zero counts (no request is zero tokens)."""
    usage = getattr(response, "usage", None)
    return usage is None or not any(_field(usage, key) for key in ("prompt_tokens", "completion_tokens", "total_tokens"))


def estimate_usage(litellm: Any, response: Any, model: str, messages: list[dict[str, Any]]) -> None:
    """Give a reply without usage litellm's estimate, counted as litellm counts a stream that sent none
    (``stream_chunk_builder``): the request's messages and the reply's text and tool calls."""
    from litellm.litellm_core_utils.prompt_templates.common_utils import get_content_from_model_response

    prompt = int(litellm.token_counter(model=model, messages=messages))
    completion = int(litellm.token_counter(model=model, text=get_content_from_model_response(response),
                                           count_response_tokens=True))
    response.usage = litellm.Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


_COUNT_LIMIT = 2**63  # what a span's int attribute (and our import check) holds


def _bad_count(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _COUNT_LIMIT


def usage_invalid(response: Any) -> str | None:
    """The first token count of the reply's usage that is not a non-negative integer below 2**63
    (``prompt_tokens=-5``), or None: such counts are a provider's bug, never billed as they are."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    prompt, completion = _field(usage, "prompt_tokens_details"), _field(usage, "completion_tokens_details")
    fields = [(usage, ("prompt_tokens", "completion_tokens", "total_tokens", "cache_read_input_tokens",
                       "cache_creation_input_tokens")),
              (prompt, ("cached_tokens", "cache_creation_tokens", "cache_write_tokens")),
              (completion, ("reasoning_tokens",))]
    for holder, keys in fields:
        for key in keys:
            value = _field(holder, key)
            if _bad_count(value):
                return f"{key}={value!r}"
    return None


class MalformedReply(Exception):
    """A 200 reply without a choice to read: a failed attempt like a server error, retried, its usage kept."""

    def __init__(self, message: str, response: Any):
        super().__init__(message)
        self.response = response
