"""runtime.run_span: what a run's root span starts with, before its agent may even exist."""

from __future__ import annotations

from types import SimpleNamespace

from opentelemetry.trace import SpanContext

from otel_agents.runtime.run_span import run_attributes
from otel_agents.runtime.session import RunContext
from otel_agents.tracing import semconv as sc


def _session(**overrides):
    fields = dict(id="20260101-000000-abcdef", runs=2, llm=SimpleNamespace(api_base=None), budget=None,
                  carried_budget=None, previous_run=None, hooks=SimpleNamespace(names=lambda: {"guard", "audit"}))
    return SimpleNamespace(**{**fields, **overrides})


def test_a_root_not_created_yet_is_named_by_the_id_it_will_get_and_its_name_as_call_path():
    attrs = run_attributes(_session(), None, "main", "agent_001", RunContext(source="cli", script="demo"))
    assert attrs[sc.AGENT_ID] == attrs[sc.GEN_AI_AGENT_ID] == "agent_001"
    assert attrs[sc.CALL_PATH] == "main" and attrs[sc.RUN_INDEX] == 2 and attrs[sc.RUN_SCRIPT] == "demo"
    assert sc.RESUMED_FROM not in attrs and sc.RUN_API_BASE not in attrs
    assert attrs[sc.RUN_HOOKS] == ["audit", "guard"]  # the installed hooks, sorted: a resume warns of a lost one


def test_a_resumed_run_names_the_run_it_follows_its_api_base_redacted_and_extra_attributes_win():
    previous = SpanContext(trace_id=0xABC, span_id=0x12, is_remote=False)
    session = _session(previous_run=previous, llm=SimpleNamespace(api_base="http://bob:TopSecretPw99@127.0.0.1:9/v1"))
    known = SimpleNamespace(agent_id="agent_003", call_path="main/Jill")
    attrs = run_attributes(session, known, "Jill", None, RunContext(source="resume", extra={sc.RUN_SOURCE: "x"}))
    assert attrs[sc.RESUMED_FROM] == f"{0xABC:032x}:{0x12:016x}"
    assert "TopSecretPw99" not in attrs[sc.RUN_API_BASE] and "127.0.0.1:9/v1" in attrs[sc.RUN_API_BASE]
    assert attrs[sc.CALL_PATH] == "main/Jill" and attrs[sc.AGENT_ID] == "agent_003"
    assert attrs[sc.RUN_SOURCE] == "x"
