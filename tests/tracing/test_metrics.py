"""GenAI metrics from ended spans: the instruments, their buckets and attributes, and what a real run exports.

In-process tests feed real SDK spans to ``GenAiMetricsProcessor`` on a real ``MeterProvider``
with an in-memory reader. The run tests start the real ``otel-agents run`` (the scripted demo) in
a subprocess exporting over OTLP/HTTP to a loopback receiver, and compare what arrived, and the
``--otlp-file`` metrics lines, with the billing ledger the same run wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_agents.tracing import metrics as gm
from otel_agents.tracing import semconv as sc
from otel_agents.tracing.metrics_setup import metrics_file_for
from support.otlp_metrics_receiver import HttpMetricsReceiver, MetricPoint, metric_points

PROMPT = "Create Jack and Jill for a cafe discussion"

# docs/gen-ai/gen-ai-metrics.md of open-telemetry/semantic-conventions-genai ("ExplicitBucketBoundaries of"),
# written out again here so a change in metrics.py is caught rather than copied.
CONVENTION_BUCKETS = {
    "gen_ai.client.operation.duration": [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
    "gen_ai.client.token.usage": [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
    "gen_ai.client.operation.time_to_first_chunk": [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
    "gen_ai.invoke_agent.duration": [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6],
    "gen_ai.execute_tool.duration": [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
}
CONVENTION_UNITS = {
    "gen_ai.client.operation.duration": "s",
    "gen_ai.client.token.usage": "{token}",
    "gen_ai.client.operation.time_to_first_chunk": "s",
    "gen_ai.invoke_agent.duration": "s",
    "gen_ai.execute_tool.duration": "s",
    "otel_agents.usage.cost": "USD",
}


# --------------------------------------------------------------------------- in-process


class Meters:
    """A tracer whose ended spans feed the processor, and what the meters hold."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.processor = gm.GenAiMetricsProcessor(MeterProvider(metric_readers=[self.reader]))
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("test")

    def span(self, name: str, attributes: dict, *, error: bool = False, kind=SpanKind.INTERNAL) -> None:
        with self.tracer.start_as_current_span(name, kind=kind, attributes=attributes) as span:
            if error:
                span.set_status(Status(StatusCode.ERROR, "failed"))

    def points(self) -> list[MetricPoint]:
        from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics

        data = self.reader.get_metrics_data()
        return metric_points([encode_metrics(data)]) if data is not None else []


def chat_attrs(**extra) -> dict:
    return {
        sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
        sc.GEN_AI_PROVIDER_NAME: "openai",
        sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
        sc.GEN_AI_CONVERSATION_ID: "session-1",  # an id: must never become a metric attribute
        **extra,
    }


def named(points, name):
    return [p for p in points if p.name == name]


def test_a_chat_span_gives_duration_token_usage_and_cost():
    meters = Meters()
    meters.span("chat gpt-4o-mini", chat_attrs(**{
        sc.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18", sc.GEN_AI_USAGE_INPUT_TOKENS: 120,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 30, sc.GEN_AI_USAGE_COST: 0.0025, sc.SERVER_ADDRESS: "127.0.0.1", sc.SERVER_PORT: 8080,
    }), kind=SpanKind.CLIENT)
    points = meters.points()
    [duration] = named(points, gm.CLIENT_OPERATION_DURATION)
    assert duration.count == 1 and duration.sum > 0
    assert duration.attributes == {
        sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_PROVIDER_NAME: "openai", sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
        sc.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18", sc.SERVER_ADDRESS: "[IP]", sc.SERVER_PORT: 8080,
    }
    tokens = {p.attributes[gm.GEN_AI_TOKEN_TYPE]: p for p in named(points, gm.CLIENT_TOKEN_USAGE)}
    assert (tokens["input"].count, tokens["input"].sum) == (1, 120)
    assert (tokens["output"].count, tokens["output"].sum) == (1, 30)
    [cost] = named(points, gm.USAGE_COST)
    assert cost.value == pytest.approx(0.0025) and cost.monotonic and cost.kind == "sum"
    assert named(points, gm.CLIENT_TIME_TO_FIRST_CHUNK) == []  # not streamed: not reported, as the conventions say


@pytest.mark.parametrize("keep", [False, True])
def test_a_server_address_is_masked_in_every_instrument_unless_ips_are_kept(monkeypatch, keep):
    from otel_agents.tracing import ip_masking

    monkeypatch.setenv(ip_masking.KEEP_IPS_ENV, "true" if keep else "false")
    ip_masking.reload_ip_setting()
    try:
        meters = Meters()
        for address in ("10.1.2.3", "fe80::1"):
            meters.span("chat gpt-4o-mini", chat_attrs(**{
                sc.SERVER_ADDRESS: address, sc.GEN_AI_USAGE_INPUT_TOKENS: 3, sc.GEN_AI_USAGE_OUTPUT_TOKENS: 2,
                sc.GEN_AI_USAGE_COST: 0.5, gm.TIME_TO_FIRST_CHUNK_ATTRIBUTE: 0.1,
            }))
        points = meters.points()
    finally:
        monkeypatch.delenv(ip_masking.KEEP_IPS_ENV)
        ip_masking.reload_ip_setting()
    chat = [p for p in points if p.name != gm.INVOKE_AGENT_DURATION]
    assert {p.name for p in chat} == {gm.CLIENT_OPERATION_DURATION, gm.CLIENT_TOKEN_USAGE, gm.USAGE_COST,
                                      gm.CLIENT_TIME_TO_FIRST_CHUNK}
    addresses = {p.attributes[sc.SERVER_ADDRESS] for p in chat}
    assert addresses == ({"10.1.2.3", "fe80::1"} if keep else {"[IP]"})


def test_a_failed_attempt_is_timed_with_its_error_type_and_bills_nothing():
    meters = Meters()
    meters.span("chat gpt-4o-mini", chat_attrs(**{sc.ERROR_TYPE: "RateLimitError"}), error=True)
    meters.span("chat gpt-4o-mini", chat_attrs(), error=True)  # no error.type on the span: the fallback
    points = meters.points()
    errors = sorted(p.attributes[sc.ERROR_TYPE] for p in named(points, gm.CLIENT_OPERATION_DURATION))
    assert errors == ["RateLimitError", "_OTHER"]
    assert named(points, gm.CLIENT_TOKEN_USAGE) == [] and named(points, gm.USAGE_COST) == []


def test_agent_and_tool_spans_give_their_durations_and_other_spans_nothing():
    meters = Meters()
    meters.span("invoke_agent Jill", {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: "Jill",
                                      sc.GEN_AI_AGENT_ID: "agent_002", sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini"})
    meters.span("execute_tool task", {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "task",
                                      sc.GEN_AI_TOOL_TYPE: "extension", sc.GEN_AI_AGENT_NAME: "main",
                                      sc.GEN_AI_TOOL_CALL_ID: "call_1", sc.ERROR_TYPE: "tool_denied"}, error=True)
    meters.span("turn", {sc.TURN_INDEX: 1})
    meters.span("create_agent Jill", {sc.GEN_AI_OPERATION_NAME: sc.OP_CREATE_AGENT, sc.GEN_AI_AGENT_NAME: "Jill"})
    points = meters.points()
    assert {p.name for p in points} == {gm.INVOKE_AGENT_DURATION, gm.EXECUTE_TOOL_DURATION}
    [agent] = named(points, gm.INVOKE_AGENT_DURATION)
    assert agent.attributes == {sc.GEN_AI_AGENT_NAME: "Jill", sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini"}
    [tool] = named(points, gm.EXECUTE_TOOL_DURATION)
    assert tool.attributes == {sc.GEN_AI_TOOL_NAME: "task", sc.GEN_AI_TOOL_TYPE: "extension",
                               sc.GEN_AI_AGENT_NAME: "main", sc.ERROR_TYPE: "tool_denied"}


def test_decoded_spans_feed_the_same_instruments_as_live_ones():
    """An imported or ingested trace (SpanData) gives the measurements the live spans gave."""
    import dataclasses

    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_agents.tracing.spandata import from_readable

    live, decoded = Meters(), Meters()
    memory = InMemorySpanExporter()
    live.provider.add_span_processor(SimpleSpanProcessor(memory))
    live.span("chat gpt-4o-mini", chat_attrs(**{sc.GEN_AI_USAGE_INPUT_TOKENS: 9, sc.GEN_AI_USAGE_OUTPUT_TOKENS: 2,
                                                sc.GEN_AI_USAGE_COST: 0.5}))
    live.span("chat gpt-4o-mini", chat_attrs(**{sc.ERROR_TYPE: "Timeout"}), error=True)
    live.span("execute_tool t", {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "t"})
    spans = [from_readable(s) for s in memory.get_finished_spans()]
    for span in spans:
        decoded.processor.metrics.observe(gm.EndedOperation.of_spandata(span))
    assert gm.EndedOperation.of_spandata(dataclasses.replace(spans[0], end_ns=None)) is None

    def comparable(points):
        return sorted((p.name, p.count, p.sum, p.value, sorted(p.attributes.items())) for p in points)

    live_points, decoded_points = live.points(), decoded.points()
    assert len(live_points) == 6 and comparable(decoded_points) == comparable(live_points)


def test_time_to_first_chunk_is_recorded_from_the_span_when_streamed():
    meters = Meters()
    meters.span("chat gpt-4o-mini", chat_attrs(**{gm.TIME_TO_FIRST_CHUNK_ATTRIBUTE: 0.25}))
    [point] = named(meters.points(), gm.CLIENT_TIME_TO_FIRST_CHUNK)
    assert (point.count, point.sum) == (1, 0.25)


def test_instruments_have_the_conventions_units_and_bucket_boundaries():
    meters = Meters()
    meters.span("chat m", chat_attrs(**{sc.GEN_AI_USAGE_INPUT_TOKENS: 1, sc.GEN_AI_USAGE_OUTPUT_TOKENS: 1,
                                        sc.GEN_AI_USAGE_COST: 0.1, gm.TIME_TO_FIRST_CHUNK_ATTRIBUTE: 0.1}))
    meters.span("invoke_agent a", {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: "a"})
    meters.span("execute_tool t", {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "t"})
    points = meters.points()
    assert {p.name: p.unit for p in points} == CONVENTION_UNITS
    assert {p.name: list(p.bounds) for p in points if p.kind == "histogram"} == CONVENTION_BUCKETS


usage = st.fixed_dictionaries({
    "input": st.integers(0, 10**7), "output": st.integers(0, 10**6),
    "cost": st.one_of(st.none(), st.floats(0, 50, allow_nan=False)), "failed": st.booleans(),
})


@settings(max_examples=40, deadline=None)
@given(st.lists(usage, max_size=12))
def test_counts_and_sums_equal_the_spans_whatever_the_mix(calls):
    meters = Meters()
    for call in calls:
        attrs = chat_attrs()
        if call["failed"]:
            attrs[sc.ERROR_TYPE] = "Timeout"
        else:
            attrs.update({sc.GEN_AI_USAGE_INPUT_TOKENS: call["input"], sc.GEN_AI_USAGE_OUTPUT_TOKENS: call["output"]})
            if call["cost"] is not None:
                attrs[sc.GEN_AI_USAGE_COST] = call["cost"]
        meters.span("chat gpt-4o-mini", attrs, error=call["failed"])
    points = meters.points()
    ok = [c for c in calls if not c["failed"]]
    assert sum(p.count for p in named(points, gm.CLIENT_OPERATION_DURATION)) == len(calls)
    for token_type in ("input", "output"):
        mine = [p for p in named(points, gm.CLIENT_TOKEN_USAGE) if p.attributes[gm.GEN_AI_TOKEN_TYPE] == token_type]
        assert sum(p.count for p in mine) == len(ok)
        assert sum(p.sum for p in mine) == sum(c[token_type] for c in ok)
    assert sum(p.value for p in named(points, gm.USAGE_COST)) == pytest.approx(
        sum(c["cost"] for c in ok if c["cost"] is not None), rel=1e-9, abs=1e-12)


# --------------------------------------------------------------------------- a real run


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(extra)
    return env


def ledger(home: Path) -> list[dict]:
    return [json.loads(line) for line in (home / "billing.jsonl").read_text().splitlines()]


def file_points(path: Path) -> list[MetricPoint]:
    """The last line of the --otlp-file metrics (cumulative: the run's totals), parsed as OTLP."""
    lines = path.read_text().splitlines()
    assert lines, f"{path} is empty"
    for line in lines:
        assert set(orjson.loads(line)) == {"resourceMetrics"}
    return metric_points([json_format.Parse(lines[-1], ExportMetricsServiceRequest())])


def assert_points_match_ledger(points: list[MetricPoint], records: list[dict]) -> None:
    llm = [r for r in records if r["type"] == "llm"]
    tools = [r for r in records if r["type"] == "tool"]
    assert {p.name for p in points} >= {gm.CLIENT_OPERATION_DURATION, gm.CLIENT_TOKEN_USAGE, gm.USAGE_COST,
                                        gm.INVOKE_AGENT_DURATION, gm.EXECUTE_TOOL_DURATION}
    durations = named(points, gm.CLIENT_OPERATION_DURATION)
    assert sum(p.count for p in durations) == len(llm)  # one per attempt, failed ones included
    failed = [p for p in durations if sc.ERROR_TYPE in p.attributes]
    assert sum(p.count for p in failed) == sum(1 for r in llm if r["status"] == "failed") > 0
    for p in durations:
        assert p.attributes[sc.GEN_AI_OPERATION_NAME] == "chat" and p.attributes[sc.GEN_AI_PROVIDER_NAME]
        assert p.attributes[sc.GEN_AI_REQUEST_MODEL]
    for token_type in ("input", "output"):
        mine = [p for p in named(points, gm.CLIENT_TOKEN_USAGE) if p.attributes[gm.GEN_AI_TOKEN_TYPE] == token_type]
        assert sum(p.sum for p in mine) == sum(r["tokens"][token_type] for r in llm) > 0
        assert sum(p.count for p in mine) == sum(1 for r in llm if r["status"] == "ok")
    cost = sum(p.value for p in named(points, gm.USAGE_COST))
    assert cost == pytest.approx(sum(r["cost_usd"] for r in llm if r["cost_usd"] is not None), rel=1e-9)
    assert cost > 0
    assert sum(p.count for p in named(points, gm.EXECUTE_TOOL_DURATION)) == len(tools)
    for p in points:
        if p.kind == "histogram":
            assert list(p.bounds) == CONVENTION_BUCKETS[p.name]
        assert not {sc.GEN_AI_CONVERSATION_ID, sc.GEN_AI_AGENT_ID, sc.GEN_AI_TOOL_CALL_ID} & set(p.attributes)


def run_cli(tmp_path: Path, tag: str, **env: str) -> tuple[subprocess.CompletedProcess, Path, Path]:
    home = tmp_path / f"home-{tag}"
    otlp_file = tmp_path / f"{tag}.jsonl"
    out = subprocess.run(
        [sys.executable, "-m", "otel_agents", "run", "--otlp-file", str(otlp_file), PROMPT],
        env=clean_env(OTEL_AGENTS_HOME=str(home), **env), capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    return out, home, otlp_file


def test_a_run_exports_the_metrics_over_otlp_http_and_they_equal_the_ledger(tmp_path):
    with HttpMetricsReceiver() as receiver:
        out, home, otlp_file = run_cli(tmp_path, "otlp", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                                       OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf")
        requests = receiver.wait_for_metrics(1)
    assert "could not send" not in out.stderr
    assert len(requests) == 1  # a run shorter than the export interval exports once, at exit
    assert receiver.trace_requests >= 1  # the spans went to the same endpoint
    records = ledger(home)
    assert_points_match_ledger(metric_points(requests), records)
    chat_spans = [s for line in otlp_file.read_text().splitlines()
                  for rs in orjson.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
                  if s["name"].startswith("chat ")]
    durations = named(metric_points(requests), gm.CLIENT_OPERATION_DURATION)
    assert sum(p.count for p in durations) == len(chat_spans)
    span_models = {a["value"]["stringValue"] for s in chat_spans for a in s["attributes"]
                   if a["key"] == sc.GEN_AI_REQUEST_MODEL}
    assert {p.attributes[sc.GEN_AI_REQUEST_MODEL] for p in durations} == span_models
    # --otlp-file: the same totals, as OTLP/JSON lines beside the span file, which holds spans only
    assert_points_match_ledger(file_points(metrics_file_for(otlp_file)), records)
    assert all(set(orjson.loads(line)) == {"resourceSpans"} for line in otlp_file.read_text().splitlines())
    resource = {kv.key for kv in requests[0].resource_metrics[0].resource.attributes}
    assert "service.name" in resource


def test_metrics_exporter_none_sends_spans_but_no_metrics(tmp_path):
    with HttpMetricsReceiver() as receiver:
        run_cli(tmp_path, "none", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_METRICS_EXPORTER="none")
        assert receiver.trace_requests >= 1
        assert receiver.metric_requests == []


def test_a_run_against_a_server_exports_its_address_masked_in_the_metrics_file_and_over_otlp(tmp_path):
    from support.openai_server import OpenAIServer, Reply

    with OpenAIServer() as server, HttpMetricsReceiver() as receiver:
        server.plan(Reply(content="hello"))
        otlp_file = tmp_path / "run.jsonl"
        out = subprocess.run(
            [sys.executable, "-m", "otel_agents", "run", "--model", "openai/gpt-4o-mini", "--api-base",
             server.api_base, "--otlp-file", str(otlp_file), "hi"],
            env=clean_env(OTEL_AGENTS_HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-test-metrics-0000",
                          OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf"),
            capture_output=True, text=True, timeout=180, cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr
        requests = receiver.wait_for_metrics(1)
        assert "127.0.0.1" in server.api_base
    for points in (file_points(metrics_file_for(otlp_file)), metric_points(requests)):
        durations = named(points, gm.CLIENT_OPERATION_DURATION)
        assert durations and {p.attributes[sc.SERVER_ADDRESS] for p in durations} == {"[IP]"}
    assert "127.0.0.1" not in metrics_file_for(otlp_file).read_text()
