"""The OTLP/HTTP exporter: a real loopback receiver gets the stock encoder's request, and other exporters keep the stock path."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import trace_exporter as stock_module
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_agents.tracing import otlp_http_exporter
from otel_agents.tracing.otlp_http_exporter import HttpSpanExporter, uses_direct_encoding
from otel_agents.tracing.setup import otlp_exporter
from support.otlp_receivers import HttpTraceReceiver


def finished_spans():
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("invoke_agent main", attributes={"gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span("chat m") as span:
            span.add_event("otel_agents.transcript_entry", {"otel_agents.event.message_id": "msg_000001"})
            span.set_attribute("gen_ai.usage.input_tokens", 12)
    provider.shutdown()
    return list(memory.get_finished_spans())


def test_the_pinned_sdk_serialises_through_the_direct_encoder():
    assert uses_direct_encoding()
    assert isinstance(otlp_exporter("http/protobuf", 5.0), HttpSpanExporter)
    assert issubclass(HttpSpanExporter, OTLPSpanExporter)  # the stock exporter in all but serialisation


def test_the_receiver_gets_the_stock_encoders_request():
    spans = finished_spans()
    with HttpTraceReceiver() as receiver:
        exporter = otlp_exporter("http/protobuf", 5.0, endpoint=receiver.traces_url)
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        (request,) = receiver.requests
    assert request == encode_spans(spans)
    assert request.SerializeToString() == encode_spans(spans).SerializePartialToString()


def test_a_stock_exporter_in_the_same_process_keeps_the_stock_encoder(monkeypatch):
    used = []
    monkeypatch.setattr(otlp_http_exporter, "encode_request", lambda spans: used.append(len(spans)) or b"")
    spans = finished_spans()
    with HttpTraceReceiver() as receiver:
        stock = OTLPSpanExporter(endpoint=receiver.traces_url, timeout=5)
        assert stock.export(spans) is SpanExportResult.SUCCESS
        stock.shutdown()
        assert used == []  # the stock exporter never went through ours
        ours = HttpSpanExporter(endpoint=receiver.traces_url, timeout=5)
        ours.export(spans)
        ours.shutdown()
    assert used == [len(spans)]
    assert type(stock_module.encode_spans(spans)).__name__ == "ExportTraceServiceRequest"  # outside an export of ours


def test_behind_the_export_filter_the_receiver_gets_the_stock_request_of_spans_written_in_its_pass():
    from otel_agents.tracing.export_filter import NetworkExportFilter

    spans = finished_spans()
    with HttpTraceReceiver() as receiver:
        exporter = otlp_exporter("http/protobuf", 5.0, endpoint=receiver.traces_url)
        assert exporter.takes_encoded_spans
        network = NetworkExportFilter(exporter)
        assert network.export(spans) is SpanExportResult.SUCCESS
        network.shutdown()
        (request,) = receiver.requests
    assert network.delivered == len(spans)
    assert request.SerializeToString() == encode_spans(spans).SerializePartialToString()
