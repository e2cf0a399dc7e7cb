"""Telemetry: records and log lines reach the span and the listeners at once, credentials scrubbed.

Pattern-labelled secrets stay as the model was sent them (the session keeps them;
copies that leave it are redacted); credentials from the environment are replaced here.
"""

from __future__ import annotations

import pytest
from opentelemetry import trace

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import from_span_event, make_record
from otel_agents.tracing.telemetry import EventListener, Telemetry, noop_telemetry

SECRET = "sk-ant-" + "x" * 40
CREDENTIAL = "tok-from-the-environment-0042"


@pytest.fixture
def env_credential(monkeypatch):
    from otel_agents.tracing.credentials import reload_credentials

    monkeypatch.setenv("MY_SERVICE_TOKEN", CREDENTIAL)
    reload_credentials()
    yield CREDENTIAL
    monkeypatch.delenv("MY_SERVICE_TOKEN")
    reload_credentials()


class Listener:
    def __init__(self):
        self.records, self.logs = [], []

    def on_record(self, span, record, ts_ns):
        self.records.append((span, dict(record), ts_ns))

    def on_log(self, span, level, message, ts_ns):
        self.logs.append((span, level, message, ts_ns))


def test_record_goes_to_the_current_span_and_listeners_identically(memory_tracing, env_credential):
    listener = Listener()
    telemetry = Telemetry(memory_tracing.telemetry.tracer, [listener])
    assert isinstance(listener, EventListener)
    record = make_record("transcript_entry", "msg_000001", agent_id="agent_001", role="user",
                         content=f"key {SECRET} and {CREDENTIAL}")
    with telemetry.tracer.start_as_current_span("op") as span:
        returned = telemetry.record(record)
    assert returned["content"] == f"key {SECRET} and [REDACTED]"  # kept as sent; the credential never
    assert record["content"] == f"key {SECRET} and {CREDENTIAL}"  # the caller's dict is left alone
    (finished,) = memory_tracing.spans()
    (event,) = finished.events
    assert event.name == "otel_agents.transcript_entry"  # namespaced: the record type is transcript_entry
    assert from_span_event(event.name, dict(event.attributes)) == returned
    (seen_span, seen, ts) = listener.records[0]
    assert seen == returned and seen_span is span and ts == event.timestamp


def test_log_lines_are_span_events_on_the_span_they_concern(memory_tracing, env_credential):
    listener = Listener()
    telemetry = Telemetry(memory_tracing.telemetry.tracer, [listener])
    with telemetry.tracer.start_as_current_span("outer") as outer:
        with telemetry.tracer.start_as_current_span("inner"):
            telemetry.log("WRN", f"retrying with {CREDENTIAL}", span=outer, **{"otel_agents.llm.attempt": 2})
            telemetry.log("ERR", "failed here")
    spans = {s.name: s for s in memory_tracing.spans()}
    (warn,) = spans["outer"].events
    assert warn.name == sc.EVENT_LOG
    assert dict(warn.attributes) == {sc.LOG_LEVEL: "WRN", sc.LOG_MESSAGE: "retrying with [REDACTED]",
                                     "otel_agents.llm.attempt": 2}
    (err,) = spans["inner"].events
    assert err.attributes[sc.LOG_LEVEL] == "ERR"
    assert [(level, message) for _, level, message, _ in listener.logs] == [
        ("WRN", "retrying with [REDACTED]"), ("ERR", "failed here")
    ]
    assert listener.logs[0][0] is outer


def test_set_attributes_drops_none_and_scrubs_credentials(memory_tracing, env_credential):
    with memory_tracing.telemetry.tracer.start_as_current_span("op") as span:
        Telemetry.set_attributes(span, {"a": None, "b": f"Bearer {CREDENTIAL}", "c": 3, "d": ["x", SECRET],
                                        "http.request.header.authorization": "Basic abcdefghijk"})
    (finished,) = memory_tracing.spans()
    assert "a" not in finished.attributes
    assert finished.attributes["b"] == "Bearer [REDACTED]"
    assert finished.attributes["c"] == 3
    assert list(finished.attributes["d"]) == ["x", SECRET]  # redacted by the copies that leave, not here
    assert finished.attributes["http.request.header.authorization"] == "[REDACTED]"


def test_noop_telemetry_still_feeds_listeners():
    telemetry = noop_telemetry()
    listener = Listener()
    telemetry.listeners.append(listener)
    with telemetry.tracer.start_as_current_span("op"):
        telemetry.record(make_record("piece_of_text", "msg_000001", agent_id="a", content="x", cause="m"))
        telemetry.log("VRB", "hello")
    assert len(listener.records) == 1 and len(listener.logs) == 1
    assert not trace.get_current_span().is_recording()
