"""The ``scripted`` provider: a litellm custom provider, so offline calls take litellm's real path.

The model string is ``scripted/<script name>``; the agent's name and the attempt
number travel in the request metadata. Usage is counted from the real request
and response text (about four characters a token) unless the script sets it,
and a demo price is registered so costs are non-zero. Streamed calls get the same
answer in chunks (text a few words at a time, then the tool calls, then usage).
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

import httpx

from otel_agents.llm.litellm_loader import load_litellm
from otel_agents.llm.pricing import override_entry
from otel_agents.llm.scripts import Script, ScriptedFailure

litellm = load_litellm()
from litellm import CustomLLM  # noqa: E402
from litellm.llms.custom_llm import CustomLLMError  # noqa: E402
from litellm.types.utils import (  # noqa: E402
    ChatCompletionDeltaToolCall,
    ChatCompletionMessageToolCall,
    Delta,
    Function,
    Message,
    ModelResponseStream,
    StreamingChoices,
    Usage,
)

PROVIDER = "scripted"
META_AGENT_NAME = "otel_agents_agent_name"
META_ATTEMPT = "otel_agents_attempt"
# Demo price per token (USD), registered with litellm for every scripted model.
DEMO_INPUT_PRICE = 1e-6
DEMO_OUTPUT_PRICE = 4e-6


def count_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


def request_text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for m in messages:
        if m.get("content"):
            parts.append(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"]))
        for call in m.get("tool_calls") or []:
            parts.append(json.dumps(call, sort_keys=True))
    return "\n".join(parts)


class ScriptedLLM(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: dict[str, Script] = {}

    async def _answer(self, model: str, messages: list[dict[str, Any]], litellm_params: Any) -> "Answer":
        """The script's turn for this request (after its latency and any scripted first-attempt failure)."""
        script = self.scripts.get(model)
        if script is None:
            raise CustomLLMError(status_code=404, message=f"no scripted model {model!r} is loaded")
        metadata = (litellm_params or {}).get("metadata") or {}
        agent = metadata.get(META_AGENT_NAME, script.root_name)
        attempt = int(metadata.get(META_ATTEMPT, 1))
        assistant_turns = sum(1 for m in messages if m.get("role") == "assistant")
        turn = script.turn(agent, assistant_turns)
        if turn.latency_ms:
            await asyncio.sleep(turn.latency_ms / 1000)
        if turn.fail_first_attempt and attempt == 1:
            raise _transient_error(turn.fail_first_attempt, agent, model)

        tool_calls = [
            ChatCompletionMessageToolCall(
                id=f"call_{agent}_{assistant_turns + 1}_{i + 1}",
                type="function",
                function=Function(name=call.name, arguments=json.dumps(call.arguments, ensure_ascii=False)),
            )
            for i, call in enumerate(turn.tool_calls)
        ]
        out_text = (turn.text or "") + "".join(c.function.arguments for c in tool_calls)
        usage = dict(turn.usage or {})
        reasoning_tokens = usage.get("reasoning_tokens", count_tokens(turn.reasoning or ""))
        prompt_tokens = usage.get("input_tokens", count_tokens(request_text(messages)))
        completion_tokens = usage.get("output_tokens", count_tokens(out_text) + reasoning_tokens)
        return Answer(
            response_id=f"scripted-{agent}-{assistant_turns + 1}",
            text=turn.text,
            reasoning=turn.reasoning,
            tool_calls=tool_calls,
            usage={
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": usage.get("cache_read_tokens", 0)},
                "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
            },
            served=turn.served or {},
        )

    async def acompletion(self, model, messages, api_base, custom_prompt_dict, model_response, print_verbose,
                          encoding, api_key, logging_obj, optional_params, acompletion=None, litellm_params=None,
                          logger_fn=None, headers={}, timeout=None, client=None):  # noqa: B006 - litellm's signature
        answer = await self._answer(model, messages, litellm_params)
        return fill_response(model_response, model, answer)

    async def astreaming(self, model, messages, api_base, custom_prompt_dict, model_response, print_verbose,
                         encoding, api_key, logging_obj, optional_params, acompletion=None, litellm_params=None,
                         logger_fn=None, headers={}, timeout=None, client=None):  # noqa: B006 - litellm's signature
        answer = await self._answer(model, messages, litellm_params)
        async for chunk in answer_chunks(model, answer):
            yield chunk


@dataclass
class Answer:
    response_id: str
    text: str | None
    reasoning: str | None
    tool_calls: list[Any]
    usage: dict[str, Any]
    served: dict[str, Any] = field(default_factory=dict)  # a router's report, as OpenRouter words it

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


def _pieces(text: str) -> list[str]:
    """The text a few words at a time, as a model streams it (joined, exactly the text)."""
    words = text.split(" ")
    return [" ".join(words[i : i + 3]) + (" " if i + 3 < len(words) else "") for i in range(0, len(words), 3)]


def fill_response(model_response: Any, model: str, answer: "Answer") -> Any:
    """litellm's response object filled with one whole answer (what a non-streamed call returns)."""
    message = Message(content=answer.text, role="assistant", tool_calls=answer.tool_calls or None)
    if answer.reasoning:
        message.reasoning_content = answer.reasoning
    model_response.choices[0].message = message
    model_response.choices[0].finish_reason = answer.finish_reason
    model_response.model = model
    model_response.id = answer.response_id
    usage = dict(answer.usage)
    if "cost" in answer.served:
        usage["cost"] = answer.served["cost"]
    if "upstream_inference_cost" in answer.served:
        usage["cost_details"] = {"upstream_inference_cost": answer.served["upstream_inference_cost"]}
    model_response.usage = Usage(**usage)
    if "provider" in answer.served:
        model_response.provider = answer.served["provider"]  # OpenRouter's top-level field
    return model_response


async def answer_chunks(model: str, answer: Answer) -> AsyncIterator[Any]:
    """Chunks in OpenAI's shape; the last (litellm's generic chunk) carries the finish reason and usage."""

    def chunk(delta: Delta) -> ModelResponseStream:
        return ModelResponseStream(id=answer.response_id, model=model,
                                   choices=[StreamingChoices(index=0, delta=delta)])

    if answer.reasoning:
        yield chunk(Delta(role="assistant", reasoning_content=answer.reasoning))
    for piece in _pieces(answer.text) if answer.text else ():
        await asyncio.sleep(0)  # each chunk is its own step, as arriving bytes would be
        yield chunk(Delta(role="assistant", content=piece))
    for index, call in enumerate(answer.tool_calls):
        yield chunk(Delta(role="assistant", tool_calls=[ChatCompletionDeltaToolCall(
            id=call.id, type="function", index=index,
            function=Function(name=call.function.name, arguments=call.function.arguments))]))
    yield {"text": "", "tool_use": None, "is_finished": True, "finish_reason": answer.finish_reason,
           "usage": answer.usage, "index": 0}


def _transient_error(failure: ScriptedFailure, agent: str, model: str) -> Exception:
    """The litellm exception a real provider's HTTP failure would map to, headers included."""
    headers = {"retry-after": str(failure.retry_after)} if failure.retry_after is not None else {}
    request = httpx.Request("POST", f"scripted://{model}")
    response = httpx.Response(failure.status, headers=headers, request=request)
    message = f"scripted transient failure {failure.status} for {agent} (first attempt)"
    kinds = {429: litellm.RateLimitError, 503: litellm.ServiceUnavailableError, 502: litellm.BadGatewayError}
    error_class = kinds.get(failure.status, litellm.InternalServerError)
    return error_class(message=message, llm_provider=PROVIDER, model=model, response=response)


def registered_handler(provider: str, make: Callable[[], Any]) -> Any:
    """litellm's handler of ``provider/...`` model strings, registered with ``make()`` the first time."""
    for item in litellm.custom_provider_map:
        if item.get("provider") == provider:
            return item["custom_handler"]
    handler = make()
    litellm.custom_provider_map = [*litellm.custom_provider_map, {"provider": provider, "custom_handler": handler}]
    return handler


def _handler() -> ScriptedLLM:
    return registered_handler(PROVIDER, ScriptedLLM)


def register_script(script: Script) -> str:
    """Make ``scripted/<name>`` answer from this script; returns the model string."""
    _handler().scripts[script.name] = script
    register_demo_price(script.model)
    return script.model


def register_demo_price(model: str) -> None:
    """Give ``scripted/<name>`` its demo price in litellm's map (also for re-pricing its past records).

    Its cache rates are its input rate, as a price file's entry without them gets (``override_entry``):
    litellm would bill absent ones at 0, so a script's cached tokens would be free by omission."""
    if model not in litellm.model_cost:
        litellm.model_cost[model] = override_entry(model, {
            "input_cost_per_token": DEMO_INPUT_PRICE,
            "output_cost_per_token": DEMO_OUTPUT_PRICE,
            "litellm_provider": PROVIDER,
            "mode": "chat",
        }, "demo price")
        price_map_changed()


def price_map_changed() -> None:
    """Tell litellm its price map changed: its model-info lookups are cached (lru_cache), so a
    model looked up before its entry was added (or after one was removed) would keep the old answer."""
    invalidate = getattr(litellm.utils, "_invalidate_model_cost_lowercase_map", None)
    if invalidate is not None:
        invalidate()
