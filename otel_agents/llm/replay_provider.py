"""The ``replay`` provider: a litellm custom provider answering each request from a saved session's recorded calls.

The model string is ``replay/<name>``; the :class:`~otel_agents.llm.replay_book.ReplayBook`
registered under that name checks the request and gives the recorded call. A divergence
fails the request with a client error (409, never retried), so the run stops there; a
recorded failure is raised again as the same litellm exception. Replay models cost zero; budgets
count each call at the source's recorded cost (``llm.budget.count_cost_as``).
"""

from __future__ import annotations

from typing import Any

import httpx

from otel_agents.llm.budget import count_cost_as
from otel_agents.llm.litellm_loader import load_litellm
from otel_agents.llm.replay_book import RecordedCall, ReplayBook, Stopped
from otel_agents.llm.scripted_provider import (
    META_AGENT_NAME, META_ATTEMPT, Answer, answer_chunks, fill_response, price_map_changed, registered_handler,
)

litellm = load_litellm()
from litellm import CustomLLM  # noqa: E402
from litellm.llms.custom_llm import CustomLLMError  # noqa: E402
from litellm.types.utils import ChatCompletionMessageToolCall, Function  # noqa: E402

PROVIDER = "replay"


class ReplayLLM(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        self.books: dict[str, ReplayBook] = {}

    def _answer(self, model: str, messages: list[dict[str, Any]], optional_params: Any,
                litellm_params: Any) -> Answer:
        book = self.books.get(model)
        if book is None:
            raise CustomLLMError(status_code=404, message=f"no replay model {model!r} is loaded")
        metadata = (litellm_params or {}).get("metadata") or {}
        agent = str(metadata.get(META_AGENT_NAME, ""))
        attempt = int(metadata.get(META_ATTEMPT, 1))
        try:
            call = book.answer(agent, attempt, messages, dict(optional_params or {}))
        except Stopped as stopped:
            # 409: a client error, so the attempt is not retried and the run ends at the first divergence.
            raise CustomLLMError(status_code=409, message=str(stopped)) from None
        if call.message is None:
            raise _recorded_error(call, model)
        message = call.message
        tool_calls = [
            ChatCompletionMessageToolCall(id=c["id"], type=c.get("type") or "function",
                                          function=Function(name=c["function"]["name"],
                                                            arguments=c["function"].get("arguments") or ""))
            for c in message.get("tool_calls") or []
        ]
        usage = call.usage
        return Answer(
            response_id=call.response_id or f"replay-{agent}-{call.turn}",
            text=message.get("content"),
            reasoning=message.get("reasoning_content"),
            tool_calls=tool_calls,
            usage={
                "prompt_tokens": usage.get("input_tokens", 0),
                "completion_tokens": usage.get("output_tokens", 0),
                "total_tokens": usage.get("input_tokens", 0) + usage.get("output_tokens", 0),
                "prompt_tokens_details": {"cached_tokens": usage.get("cache_read_tokens", 0),
                                          "cache_creation_tokens": usage.get("cache_write_tokens", 0)},
                "completion_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
            },
        )

    async def acompletion(self, model, messages, api_base, custom_prompt_dict, model_response, print_verbose,
                          encoding, api_key, logging_obj, optional_params, acompletion=None, litellm_params=None,
                          logger_fn=None, headers={}, timeout=None, client=None):  # noqa: B006 - litellm's signature
        answer = self._answer(model, messages, optional_params, litellm_params)
        return fill_response(model_response, model, answer)

    async def astreaming(self, model, messages, api_base, custom_prompt_dict, model_response, print_verbose,
                         encoding, api_key, logging_obj, optional_params, acompletion=None, litellm_params=None,
                         logger_fn=None, headers={}, timeout=None, client=None):  # noqa: B006 - litellm's signature
        answer = self._answer(model, messages, optional_params, litellm_params)
        async for chunk in answer_chunks(model, answer):
            yield chunk


def _recorded_error(call: RecordedCall, model: str) -> Exception:
    """The litellm exception of the recorded failure's type, so the retry policy decides as it did."""
    kinds = {
        "RateLimitError": (litellm.RateLimitError, 429),
        "ServiceUnavailableError": (litellm.ServiceUnavailableError, 503),
        "BadGatewayError": (litellm.BadGatewayError, 502),
        "InternalServerError": (litellm.InternalServerError, 500),
    }
    message = f"replayed {call.error_type} for {call.agent} (turn {call.turn}, attempt {call.attempt})"
    kind = kinds.get(call.error_type or "")
    if kind is None:  # a failure not of an HTTP status: a timeout is transient, anything else is not
        if call.error_type in ("Timeout", "APITimeoutError", "TimeoutError"):
            return litellm.Timeout(message=message, model=model, llm_provider=PROVIDER)
        return CustomLLMError(status_code=400, message=message)
    error_class, status = kind
    # The wait the source's response asked for: the retry policy waits as it did ("a 429 is retried as it was").
    headers = {"retry-after": str(call.retry_after)} if call.retry_after is not None else {}
    response = httpx.Response(status, headers=headers, request=httpx.Request("POST", f"replay://{model}"))
    return error_class(message=message, llm_provider=PROVIDER, model=model, response=response)


def _handler() -> ReplayLLM:
    return registered_handler(PROVIDER, ReplayLLM)


def register_replay(name: str, book: ReplayBook) -> str:
    """Make ``replay/<name>`` answer from ``book``, priced at zero, its budgets counting the recorded costs;
    returns the model string."""
    _handler().books[name] = book
    model = f"{PROVIDER}/{name}"
    count_cost_as(model, book.recorded_cost)  # limits stop where the source's did, though the replay is free
    register_replay_price(model)
    return model


def register_replay_price(model: str) -> None:
    """Price ``replay/<name>`` at zero in litellm's map (also for re-pricing a replay's past records)."""
    if model not in litellm.model_cost:
        # Zero, not unpriced: a replay costs nothing, and is never billed as the recorded model.
        litellm.model_cost[model] = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                                     "litellm_provider": PROVIDER, "mode": "chat"}
        price_map_changed()
