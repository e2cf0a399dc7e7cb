"""TracerProvider set-up from the standard OTEL_* variables.

Honoured: OTEL_SDK_DISABLED, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
OTEL_TRACES_EXPORTER (otlp | console | none), OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL /
OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (grpc | http/protobuf), OTEL_EXPORTER_OTLP_HEADERS,
OTEL_EXPORTER_OTLP_TIMEOUT. With no endpoint configured nothing is sent and
nothing warns. Project switches:

- OTEL_AGENTS_EXPORT_CONTENT=false: message contents, tool arguments and results
  stay local (default true: this is a research tool where nothing is hidden).
- OTEL_AGENTS_EXPORT_VALUE_CAP=N: bytes per exported attribute value (default 65536).
- OTEL_AGENTS_CAPTURE_INPUT_MESSAGES=true: full ``gen_ai.input.messages`` on chat
  spans (off by default: it repeats the history on every call, quadratic growth).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

from otel_agents import __version__
from otel_agents.tracing.export_filter import DEFAULT_VALUE_CAP, MAX_ATTRIBUTES, NetworkExportFilter
from otel_agents.tracing.otlp_json import OtlpJsonFileExporter
from otel_agents.tracing.telemetry import EventListener, Telemetry

TRACER_NAME = "otel_agents"
DEFAULT_SERVICE_NAME = "otel-agents"
# A receiver that is down or hangs may cost at most about this much at shutdown.
DEFAULT_EXPORT_TIMEOUT_S = 3.0
SHUTDOWN_GRACE_S = 2.0


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


@dataclass
class TracingOptions:
    otlp_file: Path | None = None
    export_content: bool = field(default_factory=lambda: env_flag("OTEL_AGENTS_EXPORT_CONTENT", True))
    value_cap: int = field(
        default_factory=lambda: int(os.environ.get("OTEL_AGENTS_EXPORT_VALUE_CAP") or DEFAULT_VALUE_CAP)
    )
    capture_input_messages: bool = field(
        default_factory=lambda: env_flag("OTEL_AGENTS_CAPTURE_INPUT_MESSAGES", False)
    )
    # Batch for network exporters; tests use synchronous export to inspect results.
    batch: bool = True


@dataclass
class Tracing:
    """A configured provider plus the Telemetry handle the runtime uses."""

    provider: TracerProvider | None
    telemetry: Telemetry
    options: TracingOptions
    network_exporters: list[SpanExporter] = field(default_factory=list)

    @property
    def enabled(self) -> bool:
        return self.provider is not None

    def add_processor(self, processor: SpanProcessor) -> None:
        if self.provider is not None:
            self.provider.add_span_processor(processor)

    def add_listener(self, listener: EventListener) -> None:
        self.telemetry.listeners.append(listener)

    def shutdown(self) -> None:
        """Flush and stop, bounded: a hanging receiver never holds the process."""
        if self.provider is None:
            return
        provider = self.provider
        worker = threading.Thread(target=provider.shutdown, name="otel-agents-shutdown", daemon=True)
        worker.start()
        worker.join(DEFAULT_EXPORT_TIMEOUT_S + SHUTDOWN_GRACE_S)


def _otlp_exporter(protocol: str) -> SpanExporter:
    timeout_set = any(
        os.environ.get(v) for v in ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
    )
    kwargs = {} if timeout_set else {"timeout": DEFAULT_EXPORT_TIMEOUT_S}
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(**kwargs)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(**kwargs)


class ConfigError(ValueError):
    """Bad tracing configuration (reported as a usage error)."""


def configure_tracing(options: TracingOptions | None = None) -> Tracing:
    options = options or TracingOptions()
    if env_flag("OTEL_SDK_DISABLED", False):
        return Tracing(None, Telemetry(trace.NoOpTracer()), options)

    attributes = {"service.name": os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME}
    # Resource.create merges OTEL_RESOURCE_ATTRIBUTES; OTEL_SERVICE_NAME wins over both.
    resource = Resource.create({"service.version": __version__}).merge(Resource.create(attributes))
    provider = TracerProvider(
        resource=resource,
        # Nothing may be dropped silently: events carry the conversation.
        span_limits=SpanLimits(
            max_events=SpanLimits.UNSET,
            max_event_attributes=SpanLimits.UNSET,
            max_attribute_length=SpanLimits.UNSET,
            max_span_attribute_length=SpanLimits.UNSET,
            max_attributes=MAX_ATTRIBUTES,
        ),
    )
    tracing = Tracing(provider, Telemetry(provider.get_tracer(TRACER_NAME, __version__)), options)

    exporters = [e.strip().lower() for e in (os.environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")]
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    for name in exporters:
        if name in {"none", ""}:
            continue
        if name == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            exporter: SpanExporter = ConsoleSpanExporter(out=sys.stderr)
        elif name == "otlp":
            if not endpoint:
                continue  # nothing configured: nothing sent, nothing said
            protocol = (
                os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf"
            ).strip()
            if protocol not in {"grpc", "http/protobuf"}:
                raise ConfigError(f"unsupported OTEL_EXPORTER_OTLP_PROTOCOL {protocol!r} (use grpc or http/protobuf)")
            _quiet_exporter_loggers()
            exporter = NetworkExportFilter(
                _otlp_exporter(protocol),
                value_cap=options.value_cap,
                export_content=options.export_content,
                describe=f"OTLP endpoint {endpoint}",
            )
        else:
            raise ConfigError(f"unsupported OTEL_TRACES_EXPORTER {name!r} (use otlp, console or none)")
        tracing.network_exporters.append(exporter)
        processor = (
            BatchSpanProcessor(exporter, export_timeout_millis=int(DEFAULT_EXPORT_TIMEOUT_S * 1000))
            if options.batch
            else SimpleSpanProcessor(exporter)
        )
        provider.add_span_processor(processor)

    if options.otlp_file is not None:
        provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(options.otlp_file)))
    return tracing


def _quiet_exporter_loggers() -> None:
    # The OTLP exporters log a warning per retry and a traceback per failure;
    # NetworkExportFilter reports a failed endpoint once instead.
    for name in ("opentelemetry.exporter.otlp", "opentelemetry.sdk.trace.export"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
