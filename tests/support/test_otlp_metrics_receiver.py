"""The loopback metrics receiver decodes what the stock OTLP/HTTP exporters send (gzip too) and counts trace posts."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from support.otlp_metrics_receiver import HttpMetricsReceiver


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_metrics_and_spans_from_the_stock_exporters(compression):
    with HttpMetricsReceiver() as receiver:
        exporter = OTLPMetricExporter(endpoint=receiver.endpoint + "/v1/metrics", compression=compression)
        provider = MeterProvider(metric_readers=[PeriodicExportingMetricReader(exporter, export_interval_millis=60_000)])
        meter = provider.get_meter("t")
        meter.create_histogram("h", unit="s", explicit_bucket_boundaries_advisory=[1.0, 2.0]).record(1.5, {"k": "v"})
        meter.create_counter("c", unit="USD").add(2.5)
        provider.shutdown()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint + "/v1/traces")))
        tracer_provider.get_tracer("t").start_span("s").end()
        tracer_provider.shutdown()
        points = {p.name: p for p in receiver.points()}
        assert receiver.trace_requests == 1
    assert (points["h"].kind, points["h"].count, points["h"].sum, points["h"].bounds) == ("histogram", 1, 1.5, (1.0, 2.0))
    assert points["h"].bucket_counts == (0, 1, 0) and points["h"].attributes == {"k": "v"}
    assert (points["c"].kind, points["c"].value, points["c"].monotonic, points["c"].unit) == ("sum", 2.5, True, "USD")
