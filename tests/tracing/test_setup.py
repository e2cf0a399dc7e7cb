"""configure_tracing: the standard OTEL_* variables, the project switches, and bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_agents.tracing.export_filter import NetworkExportFilter
from otel_agents.tracing.export_rules import DEFAULT_VALUE_CAP
from otel_agents.tracing.otlp_http_exporter import HttpSpanExporter  # the stock one, its requests encoded directly
from otel_agents.tracing.setup import (
    DEFAULT_SERVICE_NAME,
    ConfigError,
    TracingOptions,
    configure_tracing,
)
from support.otlp_receivers import HttpTraceReceiver


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in list(os.environ):
        if var.startswith(("OTEL_", "OTEL_AGENTS_")):
            monkeypatch.delenv(var)


@pytest.fixture
def configured():
    """``configure_tracing`` for one test, each provider shut down after it: one left running keeps
    its metric reader's thread (and exporter) alive for the rest of the test process."""
    made = []

    def configure(*args, **kwargs):
        made.append(configure_tracing(*args, **kwargs))
        return made[-1]

    yield configure
    for tracing in made:
        tracing.shutdown(bound_s=2.0)


def _inner(tracing) -> object:
    (exporter,) = tracing.network_exporters
    assert isinstance(exporter, NetworkExportFilter)
    return exporter.inner


def test_no_endpoint_means_nothing_is_sent(configured):
    tracing = configured()
    assert tracing.enabled and tracing.network_exporters == []
    tracing.shutdown()


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, HttpSpanExporter),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, GrpcSpanExporter),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, HttpSpanExporter),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, GrpcSpanExporter),
    ],
)
def test_protocol_picks_the_exporter_class(configured, monkeypatch, variables, expected):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    for key, value in variables.items():
        monkeypatch.setenv(key, value)
    tracing = configured()
    assert type(_inner(tracing)) is expected
    assert "127.0.0.1:4317" in tracing.network_exporters[0].describe


def test_traces_endpoint_alone_enables_export(configured, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")
    assert type(_inner(configured())) is HttpSpanExporter


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "unsupported OTEL_EXPORTER_OTLP_PROTOCOL 'http/json'"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift", "unsupported OTEL_EXPORTER_OTLP_TRACES_PROTOCOL 'thrift'"),
        ("OTEL_TRACES_EXPORTER", "zipkin", "unsupported OTEL_TRACES_EXPORTER 'zipkin'"),
        # The exporters sent uncompressed, silently, where every other bad OTEL_* value is exit 2.
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli", "unsupported OTEL_EXPORTER_OTLP_COMPRESSION 'brotli'"),
        ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "zstd", "unsupported OTEL_EXPORTER_OTLP_TRACES_COMPRESSION 'zstd'"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318",
         "invalid OTLP endpoint 'localhost:4318' in OTEL_EXPORTER_OTLP_ENDPOINT for http/protobuf"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://:4318", "invalid OTLP endpoint"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://host:99999", "invalid OTLP endpoint"),
        # urlparse raises on an unclosed IPv6 bracket: it was a bare ValueError, with a traceback.
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1",
         "invalid OTLP endpoint 'http://\\[::1' in OTEL_EXPORTER_OTLP_ENDPOINT for http/protobuf"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://::1]:4318/v1/traces",
         "in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT for http/protobuf"),  # the variable to fix is named
        # A password in the URL is never quoted back; where it points is.
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://bob:TopSecretPw99@10.0.0.7:99999",
         "invalid OTLP endpoint 'http://\\[REDACTED\\]@10.0.0.7:99999' in OTEL_EXPORTER_OTLP_ENDPOINT for http/protobuf"),
    ],
)
def test_bad_configuration_is_a_clear_error(monkeypatch, variable, value, message):
    if variable != "OTEL_EXPORTER_OTLP_ENDPOINT":
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        configure_tracing()


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_RESOURCE_ATTRIBUTES"])
def test_a_malformed_list_is_a_clear_error_without_its_value(monkeypatch, variable):
    """The SDK logged a bad list verbatim and went on without the entry."""
    monkeypatch.setenv(variable, "a=b,Authorization: Bearer sk-live-SECRET123")
    with pytest.raises(ConfigError, match=f"^{variable} must be key=value pairs.*entry 2 is not") as caught:
        configure_tracing()
    assert "SECRET" not in str(caught.value)


def test_grpc_accepts_an_endpoint_without_scheme(configured, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4317")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert type(_inner(configured())) is GrpcSpanExporter


@pytest.mark.parametrize(
    ("value", "message"), [("lots", "whole number of bytes, not 'lots'"), ("100", "at least 256 bytes, not 100")]
)
def test_bad_value_cap_is_a_clear_error(monkeypatch, value, message):
    monkeypatch.setenv("OTEL_AGENTS_EXPORT_VALUE_CAP", value)
    with pytest.raises(ConfigError, match=message):
        TracingOptions()


def test_project_switches_reach_the_network_filter(configured, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_AGENTS_EXPORT_VALUE_CAP", "1000")
    monkeypatch.setenv("OTEL_AGENTS_EXPORT_CONTENT", "false")
    (exporter,) = configured().network_exporters
    assert exporter.value_cap == 1000 and exporter.export_content is False
    monkeypatch.delenv("OTEL_AGENTS_EXPORT_VALUE_CAP")
    monkeypatch.delenv("OTEL_AGENTS_EXPORT_CONTENT")
    (exporter,) = configured().network_exporters
    assert exporter.value_cap == DEFAULT_VALUE_CAP and exporter.export_content is True


@pytest.mark.parametrize(
    ("variables", "service"),
    [
        ({}, DEFAULT_SERVICE_NAME),
        ({"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-resource,team=x"}, "from-resource"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-resource", "OTEL_SERVICE_NAME": "from-name"}, "from-name"),
    ],
)
def test_service_name_precedence(configured, monkeypatch, variables, service):
    for key, value in variables.items():
        monkeypatch.setenv(key, value)
    resource = configured().provider.resource.attributes
    assert resource["service.name"] == service
    assert resource["service.version"]
    if "team=x" in variables.get("OTEL_RESOURCE_ATTRIBUTES", ""):
        assert resource["team"] == "x"


def test_sdk_disabled_sends_nothing_but_still_records_the_spans_the_session_is_saved_from(configured, monkeypatch,
                                                                                        tmp_path):
    # The session directory and the ledger are derived from spans: a disabled SDK handing out no-op
    # tracers left the run unbilled. The variable now means what is sent.
    with HttpTraceReceiver() as receiver:
        monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
        tracing = configured(TracingOptions(batch=False, otlp_file=tmp_path / "asked.jsonl"))
        local = InMemorySpanExporter()
        tracing.add_processor(SimpleSpanProcessor(local))
        assert tracing.network_exporters == []
        with tracing.telemetry.tracer.start_as_current_span("x") as span:
            assert span.is_recording()
        assert tracing.shutdown() is True
        assert [s.name for s in local.get_finished_spans()] == ["x"]
        assert (tmp_path / "asked.jsonl").read_text().count('"name":"x"') == 1  # asked for: a local file
        time.sleep(0.3)
        assert receiver.calls == []


def test_console_and_none_exporters(configured, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert configured().network_exporters == []
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    (console,) = configured().network_exporters
    assert isinstance(console, ConsoleSpanExporter)


def test_nothing_is_dropped_locally(configured):
    tracing = configured(TracingOptions(batch=False))
    memory = InMemorySpanExporter()
    tracing.add_processor(SimpleSpanProcessor(memory))
    with tracing.telemetry.tracer.start_as_current_span("s") as span:
        span.set_attributes({f"k{i}": i for i in range(300)})
        for i in range(200):
            span.add_event("e", {f"a{j}": "v" * 100_000 if j == 0 else j for j in range(150)})
    tracing.shutdown()
    (local,) = memory.get_finished_spans()
    assert len(local.attributes) == 300 and len(local.events) == 200
    assert len(local.events[0].attributes) == 150 and len(local.events[0].attributes["a0"]) == 100_000


def test_shutdown_is_bounded_even_when_the_receiver_outlasts_the_exporter_timeout(configured, monkeypatch, capsys):
    with HttpTraceReceiver("hang", hang_seconds=20) as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "15")  # a user's long timeout
        tracing = configured()
        with tracing.telemetry.tracer.start_as_current_span("s"):
            pass
        started = time.monotonic()
        finished = tracing.shutdown(bound_s=1.0)
        elapsed = time.monotonic() - started
        assert finished is False and 0.9 <= elapsed < 1.5
        receiver.wait_for_calls(1)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"warning: could not send spans to the OTLP endpoint {receiver.endpoint}")
    assert "no answer within 1 s at exit" in line


def test_cli_reports_bad_tracing_configuration_as_usage_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_PROTOCOL="carrier-pigeon")
    env["OTEL_AGENTS_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, "-m", "otel_agents", "run", "--otlp-file", str(tmp_path / "s.jsonl"), "hi"],
        env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "unsupported OTEL_EXPORTER_OTLP_PROTOCOL 'carrier-pigeon'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.parametrize(("value", "disabled", "warned"),
                         [("true", True, False), ("TRUE ", True, False), ("false", False, False),
                          ("1", False, True), ("yes", False, True), ("on", False, True)])
def test_only_true_disables_the_sdk_as_the_specification_says(configured, monkeypatch, capsys, value, disabled,
                                                              warned):
    # 1, yes and on disabled sending, which the specification (and the SDK's own providers) read as false.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_SDK_DISABLED", value)
    assert (configured().network_exporters == []) is disabled
    err = capsys.readouterr().err
    assert (f"warning: OTEL_SDK_DISABLED={value.strip().lower()!r} is taken as false" in err) is warned


def test_the_cli_takes_the_application_exporter_entry_point_name_and_ignores_it(configured, monkeypatch):
    # docs/exporter.md's OTEL_TRACES_EXPORTER=otlp,otel_agents, left set in the shell, made the CLI exit 2.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp,otel_agents")
    (exporter,) = configured().network_exporters
    assert isinstance(exporter, NetworkExportFilter)
