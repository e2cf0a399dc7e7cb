"""Streaming: litellm's real streaming path against the local SSE server and the scripted provider;
time to first chunk, usage, cut streams retried, and text on stdout as it arrives."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from opentelemetry.trace import StatusCode

from otel_agents.tracing import semconv as sc
from support.openai_server import Reply

ROOT = Path(__file__).resolve().parents[2]
USAGE_KEYS = (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.GEN_AI_USAGE_CACHE_READ,
              sc.GEN_AI_USAGE_REASONING)


def chats(memory_tracing):
    return sorted((s for s in memory_tracing.spans() if s.name.startswith("chat ")), key=lambda s: s.start_time)


async def test_time_to_first_chunk_is_recorded_and_within_the_attempt(server, http_session, memory_tracing):
    server.plan(Reply.slow(0.3, Reply(content="streamed words arrive", prompt_tokens=20, completion_tokens=4)))
    seen = []
    session = http_session(stream=True, on_text=lambda request, text: seen.append((request.agent_name, text)))
    assert await session.run("hi") == "streamed words arrive"
    (body,) = server.bodies
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    (chat,) = chats(memory_tracing)
    ttfc = chat.attributes[sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
    duration_s = (chat.end_time - chat.start_time) / 1e9
    assert 0.3 <= ttfc < duration_s  # the server waited 0.3 s before its first byte
    assert chat.attributes[sc.GEN_AI_REQUEST_STREAM] is True
    assert chat.attributes[sc.LLM_STREAM_CHUNKS] > 2
    # The text arrived in pieces, in order, and is exactly the utterance.
    assert len(seen) > 1 and all(name == "main" for name, _ in seen)
    assert "".join(text for _, text in seen) == "streamed words arrive"


async def test_usage_of_a_streamed_call_equals_the_non_streamed_one(server, http_session, memory_tracing):
    reply = dict(content="same answer", prompt_tokens=42, completion_tokens=7, cached_tokens=10, reasoning_tokens=3,
                 reasoning_content="think first")
    server.plan(Reply(**reply), Reply(**reply))
    plain = http_session()
    streamed = http_session(stream=True)
    assert await plain.run("hi") == await streamed.run("hi") == "same answer"
    first, second = chats(memory_tracing)
    assert sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK not in first.attributes
    assert [first.attributes[k] for k in USAGE_KEYS] == [second.attributes[k] for k in USAGE_KEYS] == [42, 7, 10, 3]
    assert first.attributes[sc.RESPONSE_CHARS] == second.attributes[sc.RESPONSE_CHARS]
    # The assembled message is the one a non-streamed call gives, reasoning included.
    assert plain.root.transcript[-1] == streamed.root.transcript[-1]
    assert streamed.root.transcript[-1]["reasoning_content"] == "think first"


async def test_streamed_tool_calls_are_assembled(server, http_session):
    server.plan(Reply(tool_calls=[{"name": "task", "arguments": {"name": "Jack", "user_prompt": "hi"}, "id": "c9"}]),
                Reply(content="Jack speaking"), Reply(content="all done"))
    session = http_session(stream=True)
    assert await session.run("go") == "all done"
    calls = session.root.transcript[2]["tool_calls"]
    assert calls == [{"id": "c9", "type": "function",
                      "function": {"name": "task", "arguments": '{"name": "Jack", "user_prompt": "hi"}'}}]
    assert session.find_agent("Jack").transcript[-1]["content"] == "Jack speaking"


async def test_a_stream_cut_midway_is_a_failed_attempt_with_its_partial_output_and_is_retried(
        server, http_session, memory_tracing, no_sleep):
    server.plan(Reply.cut_stream("partial answer that never ends", after=2), Reply(content="whole answer"))
    seen = []
    session = http_session(stream=True, on_text=lambda request, text: seen.append(text))
    assert await session.run("hi") == "whole answer"
    cut, retried = chats(memory_tracing)
    assert cut.status.status_code == StatusCode.ERROR
    assert cut.attributes[sc.LLM_RETRYABLE] is True and cut.attributes[sc.ERROR_TYPE] == "MidStreamFallbackError"
    # Each type named once: litellm's text says the wrapped error's type three times and the whole text twice.
    assert cut.status.description.startswith("MidStreamFallbackError: OpenAIException - ")
    assert "APIConnectionError" not in cut.status.description and "Original exception" not in cut.status.description
    partial = cut.attributes[sc.LLM_PARTIAL_OUTPUT]
    assert partial and "partial answer that never ends".startswith(partial) and partial != "partial answer that never ends"
    assert cut.attributes[sc.LLM_PARTIAL_CHARS] == len(partial)
    assert sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in cut.attributes
    assert sc.GEN_AI_USAGE_INPUT_TOKENS not in cut.attributes  # nothing billed for the cut attempt
    assert retried.attributes[sc.LLM_ATTEMPT] == 2 and retried.status.status_code != StatusCode.ERROR
    assert len(no_sleep.delays) == 1  # the same retry policy as any transient failure
    # Only the whole answer enters the transcript; the partial one was on the screen, then the retry.
    assert [m["content"] for m in session.root.transcript if m["role"] == "assistant"] == ["whole answer"]
    assert "".join(seen) == partial + "whole answer"


async def test_a_rate_limit_before_the_first_chunk_keeps_its_type_and_retry_after(server, http_session, memory_tracing,
                                                                                 no_sleep):
    server.plan(Reply.error(429, retry_after=0.25), Reply(content="finally"))
    session = http_session(stream=True)
    assert await session.run("hi") == "finally"
    first, _ = chats(memory_tracing)
    assert first.attributes[sc.ERROR_TYPE] == "RateLimitError"
    assert sc.LLM_PARTIAL_OUTPUT not in first.attributes
    assert no_sleep.delays == [0.25]


async def test_the_scripted_provider_streams_the_same_session(memory_tracing, no_sleep):
    """The offline demo streamed: same utterances, transcripts and usage as unstreamed, with chunk timings."""
    from otel_agents.llm.client import LLMClient
    from otel_agents.llm.scripts import load_script
    from otel_agents.runtime.scenario import build_session

    script = load_script("jack-and-jill")
    outcomes = []
    for stream in (False, True):
        memory_tracing.exporter.clear()
        llm = LLMClient(memory_tracing.telemetry, sleep=no_sleep, stream=stream)
        session = build_session(script, telemetry=memory_tracing.telemetry, llm=llm)
        answer = await session.run(script.prompts[0])
        spans = [s for s in chats(memory_tracing) if s.status.status_code != StatusCode.ERROR]
        outcomes.append((answer, {a.name: a.transcript for a in session.agents.values()},
                         [[s.attributes[k] for k in USAGE_KEYS] for s in spans], spans))
    (plain_answer, plain_transcripts, plain_usage, plain_spans), (answer, transcripts, usage, spans) = outcomes
    assert answer == plain_answer and transcripts == plain_transcripts and usage == plain_usage
    assert all(sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in s.attributes for s in spans)
    assert not any(sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in s.attributes for s in plain_spans)


def test_run_stream_prints_the_root_agents_text_before_the_process_ends(tmp_path):
    """A real process: the root's first text is on stdout while a slow sub-agent still works."""
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({
        "name": "slow",
        "agents": {"main": [{"text": "Let me ask Jack. ",
                             "tool_calls": [{"name": "task", "arguments": {"name": "Jack", "user_prompt": "hi"}}]},
                            "Jack says hello."],
                   "Jack": [{"text": "hello", "latency_ms": 2500}]},
    }))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_AGENTS_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "run", "--stream", "--script", str(script), "go"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    received = b""
    deadline = time.monotonic() + 60
    try:
        while b"Let me ask Jack." not in received and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.1)
            if ready:
                piece = os.read(proc.stdout.fileno(), 4096)
                if not piece:
                    break
                received += piece
        still_running = proc.poll() is None
        rest, errors = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert b"Let me ask Jack." in received and still_running, errors.decode()
    assert b"Jack says hello." not in received  # the end of the run had not come yet
    assert proc.returncode == 0, errors.decode()
    # Everything streamed once, the run's line ended once; Jack (not the root) is not on stdout.
    assert (received + rest).decode() == "Let me ask Jack. \nJack says hello.\n"  # each turn on its line


def test_the_python_api_streams_with_on_text_for_every_agent():
    """``Session(stream=True, on_text=...)``: each agent's text, by name, as the scripted model streams it."""
    import otel_agents

    pieces: list[tuple[str, str]] = []
    agent = otel_agents.Agent("main")
    with otel_agents.Session(agent, script="jack-and-jill", stream=True,
                             on_text=lambda name, text: pieces.append((name, text))) as session:
        answer = session.run_sync("Create Jack and Jill for a cafe discussion")
        jack = session.agent("Jack").transcript
    assert "".join(text for name, text in pieces if name == "main") == answer
    jack_said = "".join(m["content"] or "" for m in jack if m["role"] == "assistant")
    assert jack_said and "".join(text for name, text in pieces if name == "Jack") == jack_said
    assert len([1 for name, _ in pieces if name == "main"]) > 1  # in pieces, not at once


def test_on_text_without_streaming_sees_each_answer_whole():
    import otel_agents

    pieces: list[tuple[str, str]] = []
    with otel_agents.Session(otel_agents.Agent("main"), script="jack-and-jill",
                             on_text=lambda name, text: pieces.append((name, text))) as session:
        answer = session.run_sync("Create Jack and Jill for a cafe discussion")
        jack = session.agent("Jack").transcript
    assert [text for name, text in pieces if name == "main"][-1] == answer  # once, whole
    jack_said = [m["content"] for m in jack if m["role"] == "assistant" and m.get("content")]
    assert [text for name, text in pieces if name == "Jack"] == jack_said


async def test_an_on_text_that_raises_is_a_warning_not_a_failed_attempt(server, http_session, memory_tracing):
    server.plan(Reply(content="streamed words arrive", prompt_tokens=20, completion_tokens=4))
    calls = []

    def broken(request, text):
        calls.append(text)
        raise ValueError("display gone")

    session = http_session(stream=True, on_text=broken)
    assert await session.run("hi") == "streamed words arrive"
    (chat,) = chats(memory_tracing)  # one attempt: the model did nothing wrong
    assert chat.status.status_code != StatusCode.ERROR
    logs = [dict(e.attributes) for e in chat.events if e.name == sc.EVENT_LOG]
    assert [log[sc.LOG_MESSAGE] for log in logs] == [
        "on_text raised ValueError: display gone; the rest of this answer was not handed to it"
    ]
    assert len(calls) == 1  # not called again for that answer


def test_an_on_text_given_to_the_python_api_that_raises_is_a_python_warning():
    # The API has no console: the span's WRN line alone would leave the program's author guessing.
    import otel_agents

    def broken(name, text):
        raise ValueError("display gone")

    import pytest

    with pytest.warns(RuntimeWarning, match=r"^on_text raised ValueError: display gone; the rest of this answer "
                                            r"was not handed to it$"):
        with otel_agents.Session(otel_agents.Agent("main"), script="jack-and-jill", on_text=broken) as session:
            assert session.run_sync("hi")


async def test_timeout_bounds_the_whole_streamed_attempt_and_keeps_what_arrived(server, http_session, memory_tracing):
    import pytest

    from otel_agents.llm.client import LLMCallFailed

    server.plan(Reply(content="warm"), Reply(content="one two three four five six", chunk_delay=0.6))
    await http_session(stream=True).run("warm up")  # litellm's first call imports for a while
    memory_tracing.exporter.clear()
    # Its first chunk is at once, the next ones 0.6 s apart: only the whole attempt can take too long.
    session = http_session(stream=True, timeout_s=1.0, max_attempts=1)
    with pytest.raises(LLMCallFailed, match="failed after 1 attempt: Timeout: .*longer than 1s"):
        await session.run("hi")
    (chat,) = chats(memory_tracing)
    assert (chat.end_time - chat.start_time) / 1e9 < 2.0  # the reply would have taken 3 s
    assert chat.attributes[sc.ERROR_TYPE] == "Timeout" and chat.attributes[sc.LLM_RETRYABLE] is True
    partial = chat.attributes[sc.LLM_PARTIAL_OUTPUT]
    assert partial and "one two three four five six".startswith(partial) and partial != "one two three four five six"
    assert sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in chat.attributes and chat.attributes[sc.LLM_STREAM_CHUNKS] >= 2


async def test_a_streamed_attempt_cancelled_midway_keeps_its_streaming_attributes(server, http_session, memory_tracing):
    import asyncio

    import pytest

    server.plan(Reply(content="one two three four five six", chunk_delay=0.5))
    arrived = asyncio.Event()
    session = http_session(stream=True, on_text=lambda request, text: arrived.set())
    run = asyncio.ensure_future(session.run("hi"))
    await asyncio.wait_for(arrived.wait(), 10)
    run.cancel()  # as Ctrl-C does
    with pytest.raises(asyncio.CancelledError):
        await run
    (chat,) = chats(memory_tracing)
    assert sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in chat.attributes and chat.attributes[sc.LLM_STREAM_CHUNKS] >= 2
    partial = chat.attributes[sc.LLM_PARTIAL_OUTPUT]
    assert partial and "one two three four five six".startswith(partial)
    assert chat.attributes[sc.LLM_PARTIAL_CHARS] == len(partial)
