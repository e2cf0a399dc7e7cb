"""Drive tests/support/openai_server.py through the REAL litellm HTTP path.

Observed mapping (litellm 1.102.x, ``openai/<model>`` + ``api_base``, default
aiohttp transport, ``max_retries=0`` so the openai SDK does not retry):

* 429                -> litellm.RateLimitError; Retry-After is on
                        ``exc.litellm_response_headers`` (httpx.Headers, key
                        "retry-after"), NOT on ``exc.response.headers`` (a
                        synthetic, header-less response).
* 500                -> litellm.InternalServerError
* 401                -> litellm.AuthenticationError
* context window     -> litellm.ContextWindowExceededError (a BadRequestError)
* slow > timeout     -> litellm.Timeout
* connection reset   -> litellm.InternalServerError ("Connection error."), NOT
                        APIConnectionError: litellm wraps status-less errors as 500.
* malformed JSON 200 -> litellm.InternalServerError (JSON decode message)
* cut SSE stream     -> abrupt close: litellm.exceptions.MidStreamFallbackError (a
                        ServiceUnavailableError) raised while iterating, with
                        ``generated_content`` and ``original_exception``
                        (litellm.APIConnectionError); clean end without [DONE]:
                        no error, litellm synthesises finish_reason="stop".
* streaming usage    -> litellm only sends stream_options.include_usage by default
                        for OpenAI-hosted api_bases; pass it explicitly.
"""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import asyncio  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import litellm  # noqa: E402
import pytest  # noqa: E402
from litellm.exceptions import MidStreamFallbackError  # noqa: E402  (not re-exported on `litellm`)
from litellm.utils import _get_retry_after_from_exception_header  # noqa: E402

from .openai_server import CONTEXT_WINDOW_MESSAGE, OpenAIServer, Reply  # noqa: E402

litellm.suppress_debug_info = True

pytestmark = pytest.mark.asyncio

MESSAGES = [{"role": "user", "content": "What is the weather in Oslo?"}]


@pytest.fixture
def server():
    # Function-scoped on purpose: litellm caches the openai client (and its
    # aiohttp session) per api_base, and pytest-asyncio uses a new loop per test.
    with OpenAIServer() as srv:
        yield srv


async def call(server: OpenAIServer, **kwargs):
    kwargs.setdefault("timeout", 5)
    kwargs.setdefault("messages", MESSAGES)
    return await litellm.acompletion(
        model="openai/test-model",
        api_base=server.api_base,
        api_key="sk-test",
        num_retries=0,
        max_retries=0,
        **kwargs,
    )


def exc_retry_after(exc: Exception) -> str | None:
    headers = getattr(exc, "litellm_response_headers", None)
    return headers.get("retry-after") if headers is not None else None


# --------------------------------------------------------------------- success


async def test_content_id_and_usage_are_mapped(server):
    server.plan(
        Reply(
            content="It is sunny.",
            reasoning_content="Let me think about Oslo.",
            prompt_tokens=100,
            completion_tokens=20,
            cached_tokens=40,
            reasoning_tokens=5,
        ),
        Reply(content="second"),
    )
    r1 = await call(server)
    r2 = await call(server)

    assert r1.choices[0].message.content == "It is sunny."
    assert r1.choices[0].message.reasoning_content == "Let me think about Oslo."
    assert r1.choices[0].finish_reason == "stop"
    assert r1.id.startswith("chatcmpl-")
    assert r2.id.startswith("chatcmpl-") and r2.id != r1.id
    assert r2.choices[0].message.content == "second"

    u = r1.usage
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (100, 20, 120)
    assert u.prompt_tokens_details.cached_tokens == 40
    assert u.completion_tokens_details.reasoning_tokens == 5

    reqs = server.requests
    assert len(reqs) == 2
    headers, body = reqs[0]
    assert headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "test-model"  # provider prefix stripped by litellm
    assert body["messages"] == MESSAGES
    assert not body.get("stream")


async def test_default_reply_and_computed_usage(server):
    r = await call(server)
    assert r.choices[0].message.content == "ok"
    (_, body), = server.requests
    expected_prompt = max(1, len(json.dumps(body["messages"], sort_keys=True)) // 4)
    assert r.usage.prompt_tokens == expected_prompt
    assert r.usage.completion_tokens == 1  # len("ok") // 4 -> min 1
    assert r.usage.total_tokens == expected_prompt + 1
    assert r.usage.prompt_tokens_details.cached_tokens == 0


async def test_plan_is_fifo_and_coerces_str_and_dict(server):
    server.plan("first", {"content": "second"})
    assert server.pending == 2
    got = [(await call(server)).choices[0].message.content for _ in range(3)]
    assert got == ["first", "second", "ok"]
    assert server.pending == 0
    assert len(server.requests) == 3


async def test_tool_calls_have_ids_and_arguments(server):
    server.plan(
        Reply(
            tool_calls=[
                ("get_weather", {"city": "Oslo"}),
                {"name": "get_time", "arguments": '{"tz": "CET"}', "id": "call_custom"},
            ]
        )
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    r = await call(server, tools=tools)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    assert json.loads(calls[0].function.arguments) == {"city": "Oslo"}
    assert json.loads(calls[1].function.arguments) == {"tz": "CET"}
    assert calls[0].id and calls[0].id.startswith("call_")
    assert calls[1].id == "call_custom"
    assert all(c.type == "function" for c in calls)
    (_, body), = server.requests
    assert body["tools"][0]["function"]["name"] == "get_weather"


# ----------------------------------------------------------------------- errors


async def test_429_rate_limit_with_retry_after(server):
    server.plan(Reply.error(429, retry_after=1))
    with pytest.raises(litellm.RateLimitError) as ei:
        await call(server)
    exc = ei.value
    assert exc.status_code == 429
    # Retry-After lives on litellm_response_headers (what litellm's Router reads).
    assert exc.litellm_response_headers["retry-after"] == "1"
    assert _get_retry_after_from_exception_header(exc.litellm_response_headers) == 1
    assert len(server.requests) == 1  # max_retries=0: the openai SDK did not retry


async def test_500_internal_server_error(server):
    server.plan(Reply.error(500))
    with pytest.raises(litellm.InternalServerError) as ei:
        await call(server)
    assert ei.value.status_code == 500
    assert "Internal failure in the test server" in str(ei.value)
    assert len(server.requests) == 1


async def test_401_authentication_error(server):
    server.plan(Reply.error(401))
    with pytest.raises(litellm.AuthenticationError) as ei:
        await call(server)
    assert ei.value.status_code == 401
    assert len(server.requests) == 1


async def test_context_window_exceeded(server):
    server.plan(Reply.context_window())
    with pytest.raises(litellm.ContextWindowExceededError) as ei:
        await call(server)
    assert isinstance(ei.value, litellm.BadRequestError)
    assert ei.value.status_code == 400
    assert "maximum context length" in str(ei.value)
    assert CONTEXT_WINDOW_MESSAGE.startswith("This model's maximum context length is")
    assert len(server.requests) == 1


async def test_slow_reply_times_out_then_server_keeps_working(server):
    server.plan(Reply.slow(2.0, then=Reply(content="too late")))
    t0 = time.monotonic()
    with pytest.raises(litellm.Timeout):
        await call(server, timeout=0.5)
    assert time.monotonic() - t0 < 1.5
    assert len(server.requests) == 1
    r = await call(server)
    assert r.choices[0].message.content == "ok"
    assert len(server.requests) == 2


async def test_slow_reply_within_timeout_succeeds(server):
    server.plan(Reply.slow(0.2, then=Reply(content="patience")))
    r = await call(server, timeout=3)
    assert r.choices[0].message.content == "patience"


async def test_connection_reset_maps_to_internal_server_error(server):
    server.plan(Reply.reset())
    with pytest.raises(litellm.InternalServerError) as ei:
        await call(server)
    assert not isinstance(ei.value, litellm.Timeout)
    assert "Connection error" in str(ei.value)
    assert len(server.requests) == 1


async def test_malformed_json_maps_to_internal_server_error(server):
    server.plan(Reply.malformed())
    with pytest.raises(litellm.InternalServerError) as ei:
        await call(server)
    assert ei.value.status_code == 500
    assert len(server.requests) == 1


# -------------------------------------------------------------------- streaming


async def test_stream_with_include_usage(server):
    server.plan(
        Reply(content="hello streaming world", prompt_tokens=7, completion_tokens=3, cached_tokens=2, reasoning_tokens=1)
    )
    stream = await call(server, stream=True, stream_options={"include_usage": True})
    text, usage, ids, finish = [], None, set(), None
    async for chunk in stream:
        ids.add(chunk.id)
        if chunk.choices:
            if chunk.choices[0].delta.content:
                text.append(chunk.choices[0].delta.content)
            finish = chunk.choices[0].finish_reason or finish
        if getattr(chunk, "usage", None):
            usage = chunk.usage
    assert "".join(text) == "hello streaming world"
    assert finish == "stop"
    assert ids == {"chatcmpl-1"}
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (7, 3, 10)
    assert usage.prompt_tokens_details.cached_tokens == 2
    assert usage.completion_tokens_details.reasoning_tokens == 1
    (_, body), = server.requests
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_stream_without_stream_options_does_not_request_usage(server):
    # Gotcha: litellm only auto-adds include_usage for OpenAI-hosted api_bases.
    stream = await call(server, stream=True)
    chunks = [c async for c in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok"
    (_, body), = server.requests
    assert not (body.get("stream_options") or {}).get("include_usage")


async def test_stream_tool_calls_rebuild(server):
    server.plan(Reply(tool_calls=[("get_weather", {"city": "Oslo"})], prompt_tokens=5, completion_tokens=4))
    stream = await call(server, stream=True, stream_options={"include_usage": True})
    chunks = [c async for c in stream]
    rebuilt = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    choice = rebuilt.choices[0]
    assert choice.finish_reason == "tool_calls"
    (tc,) = choice.message.tool_calls
    assert tc.id.startswith("call_")
    assert tc.function.name == "get_weather"
    assert json.loads(tc.function.arguments) == {"city": "Oslo"}
    assert rebuilt.usage.prompt_tokens == 5 and rebuilt.usage.completion_tokens == 4


async def test_stream_request_rejected_with_429_raises_before_iteration(server):
    server.plan(Reply.error(429, retry_after=2))
    with pytest.raises(litellm.RateLimitError) as ei:
        await call(server, stream=True)
    assert exc_retry_after(ei.value) == "2"
    assert len(server.requests) == 1


async def test_cut_stream_abrupt_raises_midstream_fallback(server):
    server.plan(Reply.cut_stream("partial answer that never ends", after=2))
    received = []
    with pytest.raises(MidStreamFallbackError) as ei:
        stream = await call(server, stream=True)
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                received.append(chunk.choices[0].delta.content)
    exc = ei.value
    assert isinstance(exc, litellm.ServiceUnavailableError)
    assert isinstance(exc.original_exception, litellm.APIConnectionError)
    assert "".join(received) == "partial answer that "
    assert exc.generated_content == "partial answer that "
    assert exc.is_pre_first_chunk is False
    assert len(server.requests) == 1


async def test_cut_stream_clean_end_without_done_finishes_silently(server):
    server.plan(Reply.cut_stream("partial answer that never ends", after=2, abrupt=False))
    stream = await call(server, stream=True)
    chunks = [c async for c in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert text == "partial answer that "
    assert finishes == ["stop"]  # synthesised by litellm, the server never sent one
    assert len(server.requests) == 1


# ------------------------------------------------------------------ lifecycle


async def test_stop_is_bounded_with_sleeping_handler():
    srv = OpenAIServer().start()
    srv.plan(Reply.slow(30))
    task = asyncio.create_task(call(srv, timeout=20))
    for _ in range(200):
        if srv.requests:
            break
        await asyncio.sleep(0.01)
    assert len(srv.requests) == 1
    t0 = time.monotonic()
    await asyncio.to_thread(srv.stop)
    assert time.monotonic() - t0 < 1.0
    srv.stop()  # idempotent
    # The in-flight client sees the connection drop promptly (no 20 s hang).
    with pytest.raises(litellm.InternalServerError):
        await asyncio.wait_for(task, 3)


async def test_requests_snapshot_and_reset_state():
    with OpenAIServer() as srv:
        assert srv.api_base == f"http://127.0.0.1:{srv.port}/v1"
        srv.plan(Reply(content="x"))
        snap = srv.requests
        snap.append(({}, {}))  # a copy: mutating it does not affect the server
        assert srv.requests == []
        srv.reset_state()
        assert srv.pending == 0
