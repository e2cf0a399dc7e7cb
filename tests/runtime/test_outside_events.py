"""Outside events told during a run: held while the model's context may not take them, heard in order (outside_events.py)."""

from __future__ import annotations

import asyncio

from otel_agents.llm.scripts import parse_script
from otel_agents.runtime.scenario import build_session


SLOW = {"name": "slow", "root": {"name": "main"},
        "agents": {"main": ["warm", {"text": "slow answer", "latency_ms": 600}, "after", "again"]}}


def _chat_contexts(memory_tracing) -> list[str | None]:
    from otel_agents.tracing import semconv as sc

    return [s.attributes.get(sc.CONTEXT_LAST_MESSAGE_ID) for s in memory_tracing.spans() if s.name.startswith("chat")]


def test_an_event_arriving_while_a_request_is_in_flight_follows_the_answer(memory_tracing):
    # The answer was made without the event: recorded before it, the transcript would claim otherwise.
    session = build_session(parse_script(SLOW, "inline"), telemetry=memory_tracing.telemetry)

    async def main():
        await session.run("warm up")

        async def later():
            await asyncio.sleep(0.2)
            return session.external(session.root, "File changed: data.json")

        return await asyncio.gather(session.run("question"), later())

    answer, held = asyncio.run(main())
    assert answer == "slow answer" and held is None
    roles = [(m["role"], m.get("content")) for m in session.root.transcript[-3:]]
    assert roles == [("user", "question"), ("assistant", "slow answer"), ("user", "File changed: data.json")]
    (record,) = [r for r in memory_tracing.recorder.records if r.get("content") == "File changed: data.json"]
    assert record["source"] == "external"
    assert asyncio.run(session.run("next")) == "after"
    # The next chat's context ends with its prompt, after the event: the model is sent it.
    ids = session.root.transcript_ids
    assert ids.index(record["message_id"]) < ids.index(_chat_contexts(memory_tracing)[-1])
    assert _chat_contexts(memory_tracing)[1] == ids[ids.index(record["message_id"]) - 2]  # "question": no event


def test_an_event_from_another_thread_during_a_request_follows_the_answer(memory_tracing):
    import threading

    session = build_session(parse_script(SLOW, "inline"), telemetry=memory_tracing.telemetry)
    asyncio.run(session.run("warm up"))
    told: list[str | None] = []
    timer = threading.Timer(0.2, lambda: told.append(session.external(session.root, "EVENT from a thread")))
    timer.start()
    assert asyncio.run(session.run("question")) == "slow answer"
    timer.join()
    assert told == [None]
    roles = [(m["role"], m.get("content")) for m in session.root.transcript[-3:]]
    assert roles == [("user", "question"), ("assistant", "slow answer"), ("user", "EVENT from a thread")]


def test_an_event_held_for_a_request_that_fails_is_heard_after_the_failure(memory_tracing):
    # The run fails with no answer: the event is not lost, and the next run's request carries it.
    session = build_session(parse_script(SLOW, "inline"), telemetry=memory_tracing.telemetry)
    asyncio.run(session.run("warm up"))
    real = session.llm.complete

    async def failing(request, **kwargs):
        await asyncio.sleep(0.3)
        raise RuntimeError("provider down")

    async def main():
        session.llm.complete = failing
        run = asyncio.ensure_future(session.run("question"))
        await asyncio.sleep(0.1)
        held = session.external(session.root, "EVENT during the failing request")
        try:
            await run
        except RuntimeError:
            return held
        raise AssertionError("the run did not fail")

    assert asyncio.run(main()) is None
    session.llm.complete = real
    roles = [(m["role"], m.get("content")) for m in session.root.transcript[-2:]]
    assert roles == [("user", "question"), ("user", "EVENT during the failing request")]
    assert asyncio.run(session.run("next")) == "slow answer"


def test_an_event_told_while_a_run_waits_to_record_its_prompt_follows_that_prompt(memory_tracing):
    # A run called before the event (here loading its model client) records its prompt first.
    session = build_session(parse_script(SLOW, "inline"), telemetry=memory_tracing.telemetry)
    real = session.llm.prepare

    async def slow_prepare():
        await asyncio.sleep(0.3)
        await real()

    session.llm.prepare = slow_prepare

    async def main():
        run = asyncio.ensure_future(session.run("go"))
        await asyncio.sleep(0.1)
        held = session.external(session.ensure_root(), "EVENT while loading")
        return held, await run

    held, answer = asyncio.run(main())
    assert held is None and answer == "warm"
    roles = [(m["role"], m.get("content")) for m in session.root.transcript[-3:]]
    assert roles == [("user", "go"), ("user", "EVENT while loading"), ("assistant", "warm")]


def test_an_event_held_for_a_run_cancelled_before_its_prompt_is_heard(memory_tracing):
    session = build_session(parse_script(SLOW, "inline"), telemetry=memory_tracing.telemetry)

    async def never_ready():
        await asyncio.sleep(30)

    session.llm.prepare = never_ready

    async def main():
        run = asyncio.ensure_future(session.run("go"))
        await asyncio.sleep(0.05)
        held = session.external(session.ensure_root(), "EVENT before the cancel")
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        return held

    assert asyncio.run(main()) is None
    assert [(m["role"], m.get("content")) for m in session.root.transcript[-1:]] == [
        ("user", "EVENT before the cancel")]
    spans = [s for s in memory_tracing.spans() if s.name == "external_input main"]
    assert len(spans) == 1  # heard in a span of its own: no run span was open
