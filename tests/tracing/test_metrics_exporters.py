"""Our metric exporters: --otlp-file's OTLP/JSON lines parse back into what OTLP sends; failures warn once, when asked."""

from __future__ import annotations

from pathlib import Path

import orjson
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult

from otel_agents.tracing.metrics_exporters import OtlpJsonMetricsFileExporter, ReportingMetricExporter
from support.otlp_metrics_receiver import HttpMetricsReceiver
from support.otlp_receivers import unused_endpoint


def some_metrics():
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    meter = provider.get_meter("test")
    meter.create_histogram("gen_ai.client.token.usage", unit="{token}",
                           explicit_bucket_boundaries_advisory=[1, 4, 16]).record(7, {"gen_ai.token.type": "input"})
    meter.create_counter("otel_agents.usage.cost", unit="USD").add(0.5, {"gen_ai.request.model": "m"})
    return reader.get_metrics_data()


def test_each_export_is_one_otlp_json_line_that_parses_into_the_request_otlp_sends(tmp_path):
    data = some_metrics()
    path = tmp_path / "run.metrics.jsonl"
    exporter = OtlpJsonMetricsFileExporter(path)
    assert exporter.export(data) is MetricExportResult.SUCCESS
    assert exporter.export(data) is MetricExportResult.SUCCESS
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2
    doc = orjson.loads(lines[0])
    histogram = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]
    assert histogram["name"] == "gen_ai.client.token.usage"
    assert histogram["histogram"]["dataPoints"][0]["count"] == "1"  # 64-bit integers as strings (OTLP/JSON)
    assert histogram["histogram"]["aggregationTemporality"] == 2  # enums as numbers: cumulative
    assert json_format.Parse(lines[0], ExportMetricsServiceRequest()) == encode_metrics(data)


def test_an_unwritable_file_is_a_failed_export_not_an_exception(tmp_path):
    exporter = OtlpJsonMetricsFileExporter(tmp_path / "missing-dir" / "m.jsonl")
    assert exporter.export(some_metrics()) is MetricExportResult.FAILURE


def test_a_receiver_that_is_down_costs_one_warning_when_metrics_were_asked_for(capsys):
    exporter = ReportingMetricExporter(OTLPMetricExporter(endpoint=unused_endpoint() + "/v1/metrics", timeout=0.5),
                                       "OTLP endpoint x", warn=True)
    assert exporter.export(some_metrics()) is MetricExportResult.FAILURE
    assert exporter.export(some_metrics()) is MetricExportResult.FAILURE
    exporter.shutdown()
    err = capsys.readouterr().err.splitlines()
    assert err == ["warning: could not send metrics to OTLP endpoint x (2 export(s) failed)"]


def test_silent_when_not_asked_and_quiet_when_delivered(capsys):
    down = ReportingMetricExporter(OTLPMetricExporter(endpoint=unused_endpoint() + "/v1/metrics", timeout=0.5),
                                   "OTLP endpoint x", warn=False)
    assert down.export(some_metrics()) is MetricExportResult.FAILURE
    down.shutdown()
    with HttpMetricsReceiver() as receiver:
        up = ReportingMetricExporter(OTLPMetricExporter(endpoint=receiver.endpoint + "/v1/metrics"), "y", warn=True)
        assert up.export(some_metrics()) is MetricExportResult.SUCCESS
        up.shutdown()
        assert len(receiver.metric_requests) == 1
    assert capsys.readouterr().err == ""


def test_a_relative_path_is_the_directory_it_was_given_in(tmp_path, monkeypatch):
    """A periodic reader exports later, on its own thread: a chdir meanwhile must not move the file."""
    from otel_agents.tracing.metrics_exporters import OtlpJsonMetricsFileExporter
    from otel_agents.tracing.otlp_json import OtlpJsonFileExporter

    (tmp_path / "start").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "start")
    spans, metrics = OtlpJsonFileExporter(Path("run.jsonl")), OtlpJsonMetricsFileExporter(Path("run.metrics.jsonl"))
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert spans.path == tmp_path / "start" / "run.jsonl"
    assert metrics.path == tmp_path / "start" / "run.metrics.jsonl"
