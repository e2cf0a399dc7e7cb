"""The real litellm HTTP path (``openai/`` provider + api_base) against a local server."""

from __future__ import annotations

import json

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from otel_agents.llm.client import LLMCallFailed
from otel_agents.runtime.tools import tool
from otel_agents.tracing import semconv as sc
from support.openai_server import Reply

MODEL = "openai/test-model"


def chats(memory_tracing):
    return sorted((s for s in memory_tracing.spans() if s.name.startswith("chat ")), key=lambda s: s.start_time)


def attr(span, key):
    return span.attributes.get(key)


async def test_usage_and_response_ids_on_the_chat_span(server, http_session, memory_tracing):
    server.plan(Reply(content="Hello there", prompt_tokens=42, completion_tokens=7, cached_tokens=10,
                      reasoning_tokens=3, reasoning_content="Greet them."))
    session = http_session()
    answer = await session.run("Say hello")
    assert answer == "Hello there"
    (chat,) = chats(memory_tracing)
    assert chat.name == "chat test-model" and chat.kind == SpanKind.CLIENT  # the model as the provider knows it
    assert attr(chat, sc.GEN_AI_RESPONSE_ID) == "chatcmpl-1"
    assert attr(chat, sc.GEN_AI_RESPONSE_MODEL) == "test-model"
    assert attr(chat, sc.GEN_AI_REQUEST_MODEL) == "test-model" and attr(chat, sc.LLM_MODEL) == MODEL
    assert attr(chat, sc.GEN_AI_PROVIDER_NAME) == "openai"
    assert list(attr(chat, sc.GEN_AI_RESPONSE_FINISH_REASONS)) == ["stop"]
    assert attr(chat, sc.GEN_AI_USAGE_INPUT_TOKENS) == 42
    assert attr(chat, sc.GEN_AI_USAGE_OUTPUT_TOKENS) == 7
    assert attr(chat, sc.GEN_AI_USAGE_CACHE_READ) == 10
    assert attr(chat, sc.GEN_AI_USAGE_REASONING) == 3
    assert attr(chat, sc.SERVER_ADDRESS) == "127.0.0.1" and attr(chat, sc.SERVER_PORT) == server.port
    assert attr(chat, sc.LLM_ATTEMPT) == 1
    # A model litellm has no price for is unpriced: no cost attribute, never a zero.
    assert sc.GEN_AI_USAGE_COST not in chat.attributes
    assert attr(chat, sc.LLM_PRICE_SOURCE) == "unpriced"
    root = next(s for s in memory_tracing.spans() if s.name == "invoke_agent main")
    assert attr(root, sc.total_attr("inclusive", "unpriced_calls")) == 1
    assert attr(root, sc.total_attr("inclusive", "cost_usd")) == 0
    assert attr(root, sc.total_attr("inclusive", "input_tokens")) == 42
    # Reasoning is kept verbatim in the transcript.
    assert session.root.transcript[-1]["reasoning_content"] == "Greet them."
    # The request really went over HTTP with the key and the transcript as messages.
    headers, body = server.requests[0]
    assert headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "test-model"
    assert body["messages"] == [{"role": "system", "content": "You are a test agent."},
                                {"role": "user", "content": "Say hello"}]
    assert {t["function"]["name"] for t in body["tools"]} == {"task", "discuss"}


async def test_rate_limit_then_success_is_two_attempt_spans_and_one_utterance(server, http_session, memory_tracing,
                                                                             no_sleep):
    server.plan(Reply.error(429, retry_after=0.25), Reply(content="Finally"))
    session = http_session()
    assert await session.run("hi") == "Finally"
    first, second = chats(memory_tracing)
    assert [attr(first, sc.LLM_ATTEMPT), attr(second, sc.LLM_ATTEMPT)] == [1, 2]
    assert first.status.status_code == StatusCode.ERROR and attr(first, sc.ERROR_TYPE) == "RateLimitError"
    assert attr(first, sc.LLM_RETRYABLE) is True
    assert second.status.status_code != StatusCode.ERROR
    assert first.parent.span_id == second.parent.span_id  # both attempts in one turn
    assert no_sleep.delays == [0.25]  # Retry-After honoured
    utterances = [m for m in session.root.transcript if m["role"] == "assistant"]
    assert utterances == [{"role": "assistant", "content": "Finally"}]
    assert len(server.requests) == 2


async def test_authentication_failure_is_one_attempt_and_a_clear_error(server, http_session, memory_tracing):
    server.plan(Reply.error(401))
    session = http_session(max_attempts=4)
    with pytest.raises(LLMCallFailed) as caught:
        await session.run("hi")
    message = str(caught.value)
    assert message.startswith(f"model '{MODEL}' failed after 1 attempt: AuthenticationError:")
    assert "Incorrect API key" in message
    assert caught.value.attempts == 1
    (chat,) = chats(memory_tracing)
    assert attr(chat, sc.ERROR_TYPE) == "AuthenticationError" and attr(chat, sc.LLM_RETRYABLE) is False
    assert len(server.requests) == 1
    assert [m["role"] for m in session.root.transcript] == ["system", "user"]  # nothing invented


async def test_a_timeout_is_retried(server, http_session, memory_tracing, no_sleep):
    server.plan(Reply.slow(3), Reply(content="on time"))
    session = http_session(timeout_s=1.0)
    assert await session.run("hi") == "on time"
    first, second = chats(memory_tracing)
    assert attr(first, sc.ERROR_TYPE) == "Timeout" and first.status.status_code == StatusCode.ERROR
    assert attr(second, sc.LLM_ATTEMPT) == 2
    assert len(no_sleep.delays) == 1 and 0.25 <= no_sleep.delays[0] <= 0.5  # jittered first backoff


async def test_server_errors_and_resets_are_retried_until_attempts_run_out(server, http_session, memory_tracing):
    server.plan(Reply.error(503), Reply.reset(), Reply.error(500))
    session = http_session(max_attempts=3)
    with pytest.raises(LLMCallFailed) as caught:
        await session.run("hi")
    assert caught.value.attempts == 3
    assert "failed after 3 attempts: InternalServerError" in str(caught.value)
    types = [attr(c, sc.ERROR_TYPE) for c in chats(memory_tracing)]
    assert types == ["ServiceUnavailableError", "InternalServerError", "InternalServerError"]
    assert len(server.requests) == 3


async def test_context_window_is_not_retried(server, http_session, memory_tracing):
    server.plan(Reply.context_window(), Reply(content="never asked"))
    session = http_session()
    with pytest.raises(LLMCallFailed, match="1 attempt: ContextWindowExceededError"):
        await session.run("a very long prompt")
    assert len(server.requests) == 1 and server.pending == 1


async def test_tool_exception_becomes_a_result_and_the_agent_continues(server, http_session, memory_tracing):
    @tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        raise ConnectionError(f"cannot reach {url}")

    server.plan(Reply(tool_calls=[{"name": "fetch", "arguments": {"url": "http://x.invalid"}, "id": "call_f"}]),
                Reply(content="The site is down."))
    session = http_session(tools=[fetch])
    assert await session.run("fetch it") == "The site is down."
    _, second = server.bodies
    assert second["messages"][-1] == {
        "role": "tool", "tool_call_id": "call_f", "name": "fetch",
        "content": "Error: tool 'fetch' failed: ConnectionError: cannot reach http://x.invalid",
    }
    # The assistant's tool call went back exactly as the model produced it.
    assert second["messages"][-2]["tool_calls"] == [
        {"id": "call_f", "type": "function", "function": {"name": "fetch", "arguments": '{"url": "http://x.invalid"}'}}
    ]
    (span,) = [s for s in memory_tracing.spans() if s.name == "execute_tool fetch"]
    assert attr(span, sc.TOOL_STATUS) == "failed" and attr(span, sc.GEN_AI_TOOL_CALL_ID) == "call_f"


async def test_unknown_tool_and_bad_json_arguments_become_results(server, http_session):
    server.plan(
        Reply(tool_calls=[{"name": "teleport", "arguments": {}, "id": "c1"},
                          {"name": "task", "arguments": '{"name": "Jack", "system_prompt":', "id": "c2"}]),
        Reply(content="Understood."),
    )
    session = http_session()
    assert await session.run("go") == "Understood."
    results = {m["tool_call_id"]: m["content"] for m in server.bodies[1]["messages"] if m["role"] == "tool"}
    assert results["c1"] == "Error: unknown tool 'teleport'"
    assert results["c2"].startswith("Error: invalid arguments for task: not valid JSON (")
    # The malformed arguments are kept verbatim: the next request is what the model produced.
    sent_calls = server.bodies[1]["messages"][2]["tool_calls"]
    assert sent_calls[1]["function"]["arguments"] == '{"name": "Jack", "system_prompt":'
    assert session.find_agent("Jack") is None


async def test_configured_price_prices_an_unknown_model(server, http_session, memory_tracing):
    from otel_agents.llm.pricing import Price, PriceTable

    server.plan(Reply(content="priced", prompt_tokens=1000, completion_tokens=100))
    session = http_session(prices=PriceTable({MODEL: Price(1e-6, 2e-6)}))
    await session.run("hi")
    (chat,) = chats(memory_tracing)
    assert attr(chat, sc.GEN_AI_USAGE_COST) == pytest.approx(1000 * 1e-6 + 100 * 2e-6)
    assert attr(chat, sc.LLM_PRICE_SOURCE) == "config"


async def test_a_long_cached_request_is_priced_as_litellm_prices_it(server, http_session, memory_tracing):
    """Over litellm's real HTTP path: tier above 272k tokens, cache reads and writes, reasoning."""
    from otel_agents.llm.litellm_loader import load_litellm

    litellm = load_litellm()
    from litellm.types.utils import Usage as LitellmUsage

    model = "openai/gpt-5.4"
    server.plan(Reply(content="long", prompt_tokens=300_000, completion_tokens=4_000, cached_tokens=100_000,
                      reasoning_tokens=3_000, prompt_details={"cache_creation_tokens": 20_000}))
    await http_session(model=model).run("hi")
    (chat,) = chats(memory_tracing)
    assert attr(chat, sc.GEN_AI_USAGE_CACHE_READ) == 100_000
    assert attr(chat, sc.GEN_AI_USAGE_CACHE_WRITE) == 20_000
    assert attr(chat, sc.GEN_AI_USAGE_REASONING) == 3_000
    usage = LitellmUsage(prompt_tokens=300_000, completion_tokens=4_000, total_tokens=304_000,
                         prompt_tokens_details={"cached_tokens": 100_000, "cache_creation_tokens": 20_000},
                         completion_tokens_details={"reasoning_tokens": 3_000})
    expected = sum(litellm.cost_per_token(model=model, usage_object=usage))
    entry = litellm.model_cost["gpt-5.4"]
    at_base = (180_000 * entry["input_cost_per_token"] + 100_000 * entry["cache_read_input_token_cost"]
               + 4_000 * entry["output_cost_per_token"])
    assert attr(chat, sc.GEN_AI_USAGE_COST) == pytest.approx(expected, abs=1e-9)
    assert attr(chat, sc.GEN_AI_USAGE_COST) > at_base * 1.5  # the tier applies, to every token
    assert attr(chat, sc.LLM_PRICE_SOURCE) == "litellm"


async def test_full_input_messages_only_when_asked(server, http_session, memory_tracing):
    server.plan(Reply(content="a"))
    session = http_session(capture_input_messages=True)
    await session.run("remember this")
    (chat,) = chats(memory_tracing)
    # The registry's parts shape: the system prompt as instructions, the rest as input messages.
    instructions = json.loads(attr(chat, sc.GEN_AI_SYSTEM_INSTRUCTIONS))
    sent = json.loads(attr(chat, sc.GEN_AI_INPUT_MESSAGES))
    body = server.bodies[0]["messages"]
    assert [{"type": "text", "content": m["content"]} for m in body if m["role"] == "system"] == instructions
    assert [{"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]} for m in body[1:]] == sent
    assert attr(chat, sc.CONTEXT_MESSAGE_COUNT) == 2


async def test_a_tool_provider_label_is_on_its_span_and_its_ledger_line(server, http_session, memory_tracing):
    from otel_agents.persistence.ledger_records import ledger_records
    from otel_agents.persistence.tree import build_tree
    from otel_agents.tracing.spandata import from_readable

    @tool(provider="mcp:weather")
    def forecast(city: str) -> str:
        """Tomorrow's weather."""
        return f"sunny in {city}"

    @tool
    def local_clock() -> str:
        """The time."""
        return "noon"

    server.plan(Reply(tool_calls=[("forecast", {"city": "Oslo"}), ("local_clock", {})]), Reply(content="Sunny at noon."))
    await http_session(tools=(forecast, local_clock)).run("weather?")
    tools = {s.attributes[sc.GEN_AI_TOOL_NAME]: s for s in memory_tracing.spans() if s.name.startswith("execute_tool")}
    assert attr(tools["forecast"], sc.TOOL_PROVIDER) == "mcp:weather"
    assert sc.TOOL_PROVIDER not in tools["local_clock"].attributes  # default: none
    lines = {r["tool"]: r for r in ledger_records(build_tree([from_readable(s) for s in memory_tracing.spans()]))
             if r["type"] == "tool"}
    assert lines["forecast"]["tool_provider"] == "mcp:weather" and "tool_provider" not in lines["local_clock"]


def test_a_tool_provider_label_must_be_a_non_empty_string():
    with pytest.raises(TypeError, match="tool provider must be a non-empty string"):
        tool(provider=" ")


async def test_a_reply_without_choices_is_a_failed_attempt_with_its_usage_and_is_retried(server, http_session,
                                                                                          memory_tracing, no_sleep):
    from otel_agents.llm.pricing import Price, PriceTable

    server.plan(Reply(patch={"choices": []}, prompt_tokens=11, completion_tokens=3),
                Reply(content="fine", prompt_tokens=20, completion_tokens=2))
    session = http_session(prices=PriceTable({MODEL: Price(1e-3, 1e-4)}))
    assert await session.run("hi") == "fine"
    malformed, answered = chats(memory_tracing)
    assert malformed.status.status_code == StatusCode.ERROR and attr(malformed, sc.ERROR_TYPE) == "MalformedReply"
    assert attr(malformed, sc.LLM_RETRYABLE) is True and len(no_sleep.delays) == 1
    # What the provider said it used is recorded and billed on the failed attempt.
    assert attr(malformed, sc.GEN_AI_USAGE_INPUT_TOKENS) == 11 and attr(malformed, sc.GEN_AI_USAGE_OUTPUT_TOKENS) == 3
    assert attr(malformed, sc.GEN_AI_USAGE_COST) == pytest.approx(11e-3 + 3e-4)
    assert attr(answered, sc.LLM_ATTEMPT) == 2 and answered.status.status_code != StatusCode.ERROR
    root = next(s for s in memory_tracing.spans() if s.name == "invoke_agent main")
    assert attr(root, sc.total_attr("inclusive", "input_tokens")) == 31
    assert attr(root, sc.total_attr("inclusive", "cost_usd")) == pytest.approx(31e-3 + 5e-4)


@pytest.mark.parametrize("choices", [[], [{"index": 0, "finish_reason": "stop"}],
                                     [{"index": 0, "message": None, "finish_reason": "stop"}]])
async def test_a_malformed_reply_that_fails_every_attempt_is_a_clear_error(server, http_session, memory_tracing,
                                                                           choices):
    server.plan(*[Reply(patch={"choices": choices})] * 2)
    session = http_session(max_attempts=2)
    with pytest.raises(LLMCallFailed, match="failed after 2 attempts: "):
        await session.run("hi")
    assert [c.status.status_code for c in chats(memory_tracing)] == [StatusCode.ERROR] * 2
    assert [m["role"] for m in session.root.transcript] == ["system", "user"]


@pytest.mark.parametrize("stream", [False, True])
async def test_negative_usage_is_estimated_with_a_warning_never_billed_negative(server, http_session, memory_tracing,
                                                                                stream):
    from otel_agents.llm.pricing import Price, PriceTable

    server.plan(Reply(content="Hello", prompt_tokens=-5, completion_tokens=4))
    session = http_session(prices=PriceTable({MODEL: Price(1e-3, 1e-4)}), stream=stream)
    assert await session.run("hi") == "Hello"
    (chat,) = chats(memory_tracing)
    assert attr(chat, sc.GEN_AI_USAGE_INPUT_TOKENS) > 0 and attr(chat, sc.LLM_USAGE_ESTIMATED) is True
    assert attr(chat, sc.GEN_AI_USAGE_COST) > 0
    logs = [e.attributes[sc.LOG_MESSAGE] for e in chat.events if e.name == sc.EVENT_LOG]
    assert logs == ["the provider sent invalid usage (prompt_tokens=-5); its counts are estimated"]


async def test_a_failed_attempt_names_its_error_type_once_and_keeps_litellm_s_traceback_off_its_record(
        server, http_session, memory_tracing, recwarn):
    """litellm's messages repeat the type (``litellm.InternalServerError: InternalServerError: ...``) and,
    for a usage of the wrong types, quote a traceback; pydantic also warns about that usage on stderr."""
    usage = {"prompt_tokens": "many", "completion_tokens": [1], "total_tokens": None}
    server.plan(Reply(patch={"usage": usage}))
    session = http_session(max_attempts=1)
    with pytest.raises(LLMCallFailed) as caught:
        await session.run("hi")
    assert str(caught.value) == (f"model '{MODEL}' failed after 1 attempt: "
                                 "InternalServerError: OpenAIException - Invalid response object")
    (chat,) = chats(memory_tracing)
    logs = [e.attributes[sc.LOG_MESSAGE] for e in chat.events if e.name == sc.EVENT_LOG]
    assert logs == ["InternalServerError: OpenAIException - Invalid response object"]
    # The status (the tree's and the ledger's error) says what the console says: no litellm paths.
    assert chat.status.description == "InternalServerError: OpenAIException - Invalid response object"
    assert attr(chat, sc.ERROR_TYPE) == "InternalServerError"
    assert not [w for w in recwarn if "Pydantic" in str(w.message)]


async def test_an_api_base_with_user_info_sends_its_credentials_as_basic_auth(server, http_session, memory_tracing):
    import base64

    from otel_agents.llm.client import LLMClient

    base = server.api_base.replace("http://", "http://alice:p4ss%40word@")
    session = http_session()
    session.llm = LLMClient(memory_tracing.telemetry, api_base=base, api_key="sk-test", timeout_s=5.0)
    assert await session.run("hi") == "ok"
    (headers, body), = server.requests  # it reached the server, the URL's credentials not in its path
    assert headers["authorization"] == "Basic " + base64.b64encode(b"alice:p4ss@word").decode()
    assert body["messages"][-1] == {"role": "user", "content": "hi"}
    (chat,) = chats(memory_tracing)
    assert attr(chat, sc.SERVER_ADDRESS) == "127.0.0.1" and attr(chat, sc.LLM_ATTEMPT) == 1


async def test_a_request_the_transport_refuses_fails_at_once_saying_why(server, http_session, memory_tracing):
    session = http_session(max_attempts=4)
    session.llm.api_key = "sk-test\nX"  # a header no transport sends: raised before any request
    with pytest.raises(LLMCallFailed) as caught:
        await session.run("hi")
    assert caught.value.attempts == 1
    assert "Forbidden control character detected in headers" in str(caught.value)
    (chat,) = chats(memory_tracing)
    assert attr(chat, sc.LLM_RETRYABLE) is False
    assert server.requests == []

@pytest.mark.parametrize("stream", [False, True])
async def test_a_reply_cut_at_max_tokens_with_no_text_is_said_with_a_warning(server, http_session, memory_tracing,
                                                                             stream):
    """An empty answer is printed as an empty line: the WRN line says why, the span keeps the finish reason."""
    server.plan(Reply(content="", finish_reason="length", completion_tokens=16), Reply(content="cut off here",
                                                                                      finish_reason="length"))
    session = http_session(stream=stream)
    assert await session.run("hi") == ""
    assert await session.run("again") == "cut off here"
    empty, cut = chats(memory_tracing)
    assert list(attr(empty, sc.GEN_AI_RESPONSE_FINISH_REASONS)) == ["length"] == list(attr(cut, sc.GEN_AI_RESPONSE_FINISH_REASONS))
    warned = [(e.attributes[sc.LOG_LEVEL], e.attributes[sc.LOG_MESSAGE]) for e in empty.events if e.name == sc.EVENT_LOG]
    assert warned == [("WRN", "the model stopped at max_tokens with no text (finish_reason length)")]
    assert not [e for e in cut.events if e.name == sc.EVENT_LOG]  # its text shows where it stopped
