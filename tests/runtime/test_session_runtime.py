"""Session: ids, registry, the seed-001 records with exactly their fields, span limits."""

from __future__ import annotations

import pytest

from otel_agents.runtime.agent import Agent
from otel_agents.runtime.session import AgentSpec, Session
from otel_agents.tracing.session_ids import new_session_id, valid_session_id
from otel_agents.tracing.records import RecordError, message_id_number

MODEL = "scripted/unused"


def test_ids_are_global_and_zero_padded(memory_tracing):
    session = Session(telemetry=memory_tracing.telemetry)
    assert session.allocate_message_id() == "msg_000001"
    assert session.allocate_agent_id() == "agent_001"
    a = session.create_agent("A", MODEL, system_prompt="sys")
    b = session.create_agent("B", MODEL)
    assert (a.agent_id, b.agent_id) == ("agent_002", "agent_003")
    ids = [r["message_id"] for r in memory_tracing.recorder.records]
    # One id space for every kind of record, allocated in order.
    assert ids == ["msg_000002", "msg_000003", "msg_000004"]
    assert session.counters == (4, 3)


def test_counters_passed_in_never_collide_after_resumption(memory_tracing):
    first = Session(telemetry=memory_tracing.telemetry)
    for name in ("A", "B", "C"):
        first.create_agent(name, MODEL, system_prompt=f"I am {name}")
    messages, agents = first.counters
    used = {r["message_id"] for r in memory_tracing.recorder.records} | {a for a in first.agents}

    resumed = Session(first.id, telemetry=memory_tracing.telemetry, message_counter=messages, agent_counter=agents)
    d = resumed.create_agent("D", MODEL, system_prompt="I am D")
    new_ids = {r["message_id"] for r in memory_tracing.recorder.records[-2:]} | {d.agent_id}
    assert not new_ids & used
    assert d.agent_id == "agent_004"
    assert message_id_number(memory_tracing.recorder.records[-1]["message_id"]) == messages + 2


def test_registry_holds_every_agent_and_finds_by_name_or_id(memory_tracing):
    session = Session(telemetry=memory_tracing.telemetry)
    root = session.create_agent("root", MODEL)
    jack = session.create_agent("Jack", MODEL, parent=root, cause="msg_000001")
    assert root.subagents == {"Jack": jack}
    assert session.agents == {root.agent_id: root, jack.agent_id: jack}
    assert session.find_agent("Jack") is jack and session.find_agent(jack.agent_id) is jack
    assert session.find_agent("nobody") is None
    # A later agent of the same name is the one found by name; both stay registered.
    jack2 = session.create_agent("Jack", MODEL)
    assert session.find_agent("Jack") is jack2 and len(session.agents) == 3
    with pytest.raises(ValueError, match="already registered"):
        Agent(session, "dup", MODEL, agent_id=jack.agent_id)


def test_records_have_exactly_the_seed_fields(memory_tracing):
    session = Session(telemetry=memory_tracing.telemetry)
    root = session.create_agent("root", MODEL)
    call = root.harken("hello")
    piece = session.log_piece_of_text(root.agent_id, "broadcast", cause=call)
    child = session.create_agent("Kid", MODEL, parent=root, cause=call, system_prompt="be a kid")
    session.log_piece_of_text(root.agent_id, "compiled", cause=[call, piece])
    recs = memory_tracing.recorder.records
    assert recs[0] == {"message_id": "msg_000001", "event_type": "agent_created", "agent_id": root.agent_id,
                       "name": "root", "language_model": MODEL}
    assert recs[1] == {"message_id": call, "event_type": "transcript_entry", "agent_id": root.agent_id,
                       "role": "user", "content": "hello"}
    assert recs[2] == {"message_id": piece, "event_type": "piece_of_text", "agent_id": root.agent_id,
                       "content": "broadcast", "cause": call}
    assert recs[3] == {"message_id": "msg_000004", "event_type": "agent_created", "agent_id": child.agent_id,
                       "name": "Kid", "cause": call, "language_model": MODEL, "parent": root.agent_id}
    assert recs[4]["role"] == "system" and recs[4]["agent_id"] == child.agent_id
    assert recs[5]["cause"] == [call, piece]  # cause may be a list
    assert list(recs[3]) == ["message_id", "event_type", "agent_id", "name", "cause", "language_model", "parent"]


def test_an_event_never_has_both_substance_and_cause():
    from otel_agents.tracing.records import RECORD_FIELDS, make_record

    # No event kind even has room for both ...
    assert all(not {"substance", "cause"} <= set(fields) for fields in RECORD_FIELDS.values())
    # ... and asking for the other one is refused, not silently dropped.
    with pytest.raises(RecordError, match="substance"):
        make_record("piece_of_text", "msg_000001", agent_id="a", content="x", cause="m1", substance="m2")
    with pytest.raises(RecordError, match="cause"):
        make_record("transcript_entry", "msg_000001", agent_id="a", role="user", content="x", substance="m1",
                    cause="m2")


def test_truncation_is_an_event_and_resets_working_memory(memory_tracing):
    session = Session(telemetry=memory_tracing.telemetry)
    agent = session.create_agent("A", MODEL, system_prompt="sys")
    first = agent.harken("one")
    agent.harken("two")
    marker = agent.truncate(2, cause=first)
    assert [m["content"] for m in agent.transcript] == ["sys", "one"]
    assert agent.transcript_ids[-1] == first
    rec, notice = memory_tracing.recorder.records[-2:]
    assert rec == {"message_id": marker, "event_type": "transcript_truncated", "agent_id": agent.agent_id,
                   "keep": 2, "cause": first}
    # issue 23: the user is told with a host notice (never in the transcript: no model sees it)
    assert notice["event_type"] == "host_notice" and notice["notice"] == "truncation"
    assert notice["cause"] == [marker]  # views trace the notice to the truncation it tells of
    assert notice["message_id"] not in agent.transcript_ids
    with pytest.raises(ValueError):
        agent.truncate(-1)


def test_session_ids_are_safe_path_components():
    assert valid_session_id(new_session_id())
    assert not valid_session_id("")
    for bad in ("../x", "a/b", ".hidden", "a..b", "x" * 200):
        assert not valid_session_id(bad)
        with pytest.raises(ValueError, match="invalid session id"):
            Session(bad)


def test_records_reach_listeners_and_span_events_alike(memory_tracing, span_tree):
    session = Session(telemetry=memory_tracing.telemetry)
    with memory_tracing.telemetry.tracer.start_as_current_span("outer"):
        agent = session.create_agent("A", MODEL, system_prompt="sys")
        agent.harken("hi there")
    assert span_tree().records() == memory_tracing.recorder.records
    assert len(memory_tracing.recorder.records) == 3


def test_records_and_the_transcript_hold_the_same_text_credentials_scrubbed_in_both(
    memory_tracing, span_tree, monkeypatch
):
    """Issue 16 item 12 (this test asserted the old rule: records redacted, transcript not).

    A resumed agent's transcript is rebuilt from the records, so both hold the same bytes:
    a pattern-labelled key as said, a credential of the environment replaced in both.
    """
    from otel_agents.tracing.credentials import reload_credentials

    key = "sk-proj-" + "A" * 30
    credential = "env-token-" + "B" * 20
    monkeypatch.setenv("SOME_SERVICE_TOKEN", credential)
    reload_credentials()
    try:
        session = Session(telemetry=memory_tracing.telemetry)
        with memory_tracing.telemetry.tracer.start_as_current_span("outer"):
            agent = session.create_agent("A", MODEL)
            agent.harken(f"my key is {key}, my token {credential}")
    finally:
        monkeypatch.delenv("SOME_SERVICE_TOKEN")
        reload_credentials()
    said = f"my key is {key}, my token [REDACTED]"
    assert memory_tracing.recorder.records[-1]["content"] == said
    assert span_tree().records()[-1]["content"] == said
    assert agent.transcript[-1]["content"] == said  # what the model is sent, now and after a resume


def test_more_than_128_events_on_one_span_survive(monkeypatch, tmp_path):
    """With the project's own provider set-up nothing is dropped at the SDK's default limit."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_agents.tracing.setup import TracingOptions, configure_tracing

    for var in ("OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "OTEL_SPAN_EVENT_COUNT_LIMIT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    tracing = configure_tracing(TracingOptions(batch=False))
    exporter = InMemorySpanExporter()
    tracing.add_processor(SimpleSpanProcessor(exporter))
    session = Session(telemetry=tracing.telemetry, root=AgentSpec("root", MODEL))
    try:
        with tracing.telemetry.tracer.start_as_current_span("busy"):
            agent = session.ensure_root()
            for i in range(300):
                agent.harken(f"line {i}")
    finally:
        tracing.provider.shutdown()
    (busy,) = [s for s in exporter.get_finished_spans() if s.name == "busy"]
    entries = [e for e in busy.events if e.name == "otel_agents.transcript_entry"]
    assert len(entries) == 300
    assert busy.dropped_events == 0
    assert entries[-1].attributes["otel_agents.event.content"] == "line 299"


async def test_each_run_is_its_own_trace_linked_to_the_previous(scripted, span_tree):
    session = scripted({"agents": {"main": ["one", "two"], "Side": ["side answer"]}})
    assert await session.run("first") == "one"
    side = session.create_agent("Side", session.root.model)
    assert await session.run("to the side", agent=side) == "side answer"
    assert await session.run("second") == "two"
    # (creating Side outside any run is a root span of its own: "create_agent Side")
    roots = [r for r in span_tree().roots if r.name.startswith("invoke_agent ")]
    assert [r.name for r in roots] == ["invoke_agent main", "invoke_agent Side", "invoke_agent main"]
    assert [r.attributes["otel_agents.run.index"] for r in roots] == [1, 2, 3]
    assert len({r.context.trace_id for r in roots}) == 3
    for earlier, later in zip(roots, roots[1:]):
        assert [link.context.span_id for link in later.links] == [earlier.context.span_id]
    assert {r.attributes["gen_ai.conversation.id"] for r in roots} == {session.id}
    assert side.transcript[-1]["content"] == "side answer"
    assert session.root.transcript[-2] == {"role": "user", "content": "second"}
