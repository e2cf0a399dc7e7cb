"""TracerProvider set-up from the standard OTEL_* variables.

Honoured: OTEL_SDK_DISABLED, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
OTEL_TRACES_EXPORTER (otlp | console | none), OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL /
OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (grpc | http/protobuf), OTEL_EXPORTER_OTLP_HEADERS,
OTEL_EXPORTER_OTLP_TIMEOUT. With no endpoint configured nothing is sent and
nothing warns. Project switches:

- OTEL_AGENTS_EXPORT_CONTENT=false: message contents, tool arguments and results
  stay local (default true: this is a research tool where nothing is hidden).
- OTEL_AGENTS_EXPORT_VALUE_CAP=N: bytes per exported attribute value (default 65536,
  at least 256); longer values reach the network truncated with a marker and stay
  whole in the local artifacts (export_filter.py has every network-side limit).
- OTEL_AGENTS_CAPTURE_INPUT_MESSAGES=true: full ``gen_ai.input.messages`` on chat
  spans (off by default: it repeats the history on every call, quadratic growth).

A receiver that is down, refuses or hangs costs one warning line and a bounded
delay: each export attempt gives up after DEFAULT_EXPORT_TIMEOUT_S (unless
OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT says otherwise), and ``Tracing.shutdown``
waits at most SHUTDOWN_BOUND_S for the final flush. Local artifacts are written
by their own synchronous processors and never wait for the network.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from opentelemetry import trace
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

from otel_agents.version import __version__
from otel_agents.tracing.export_filter import DEFAULT_VALUE_CAP, MIN_VALUE_CAP, ExportLimits, NetworkExportFilter
from otel_agents.tracing.otlp_json import OtlpJsonFileExporter
from otel_agents.tracing.telemetry import EventListener, Telemetry

TRACER_NAME = "otel_agents"
DEFAULT_SERVICE_NAME = "otel-agents"
# A receiver that is down or hangs may cost at most about this much at shutdown.
DEFAULT_EXPORT_TIMEOUT_S = 3.0
SHUTDOWN_GRACE_S = 1.0
SHUTDOWN_BOUND_S = DEFAULT_EXPORT_TIMEOUT_S + SHUTDOWN_GRACE_S
PROTOCOLS = ("grpc", "http/protobuf")


class ConfigError(ValueError):
    """Bad tracing configuration (reported as a usage error)."""


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_value_cap() -> int:
    """OTEL_AGENTS_EXPORT_VALUE_CAP, validated (a ConfigError names the problem)."""
    raw = (os.environ.get("OTEL_AGENTS_EXPORT_VALUE_CAP") or "").strip()
    if not raw:
        return DEFAULT_VALUE_CAP
    try:
        cap = int(raw)
    except ValueError:
        raise ConfigError(f"OTEL_AGENTS_EXPORT_VALUE_CAP must be a whole number of bytes, not {raw!r}") from None
    if cap < MIN_VALUE_CAP:
        raise ConfigError(f"OTEL_AGENTS_EXPORT_VALUE_CAP must be at least {MIN_VALUE_CAP} bytes, not {cap}")
    return cap


@dataclass
class TracingOptions:
    otlp_file: Path | None = None
    export_content: bool = field(default_factory=lambda: env_flag("OTEL_AGENTS_EXPORT_CONTENT", True))
    value_cap: int = field(default_factory=env_value_cap)
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

    def shutdown(self, bound_s: float = SHUTDOWN_BOUND_S) -> bool:
        """Flush and stop, bounded: a hanging receiver never holds the process.

        Returns False when the bound was reached (the flush goes on in a daemon
        thread that dies with the process; only network copies can be lost).
        """
        if self.provider is None:
            return True
        worker = threading.Thread(target=self.provider.shutdown, name="otel-agents-shutdown", daemon=True)
        worker.start()
        worker.join(bound_s)
        if not worker.is_alive():
            return True
        for exporter in self.network_exporters:
            if isinstance(exporter, NetworkExportFilter):
                exporter.abandon(bound_s)  # the one warning, if the endpoint never answered
        return False


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


def configure_tracing(options: TracingOptions | None = None) -> Tracing:
    options = options or TracingOptions()
    if env_flag("OTEL_SDK_DISABLED", False):
        return Tracing(None, Telemetry(trace.NoOpTracer()), options)

    provider = TracerProvider(
        resource=make_resource(),
        # Nothing may be dropped locally: events carry the conversation. The
        # network copies are bounded by NetworkExportFilter instead.
        span_limits=SpanLimits(
            max_events=SpanLimits.UNSET,
            max_event_attributes=SpanLimits.UNSET,
            max_attribute_length=SpanLimits.UNSET,
            max_span_attribute_length=SpanLimits.UNSET,
            max_attributes=SpanLimits.UNSET,
            max_span_attributes=SpanLimits.UNSET,  # max_attributes alone leaves spans at 128
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

            from otel_agents.tracing.redaction import redact_text

            # Spans hold content as the model was sent it; what the console shows is redacted.
            exporter: SpanExporter = ConsoleSpanExporter(
                out=sys.stderr, formatter=lambda span: redact_text(span.to_json()) + os.linesep
            )
        elif name == "otlp":
            if not endpoint:
                continue  # nothing configured: nothing sent, nothing said
            protocol = otlp_protocol()
            check_endpoint(endpoint, protocol)
            _quiet_exporter_loggers()
            exporter = NetworkExportFilter(
                _otlp_exporter(protocol),
                export_content=options.export_content,
                describe=f"OTLP endpoint {endpoint} ({protocol})",
                limits=ExportLimits(value_cap=options.value_cap),
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
    # GenAI metrics from ended spans (metrics_setup.py); None, at no cost, unless something asks for them.
    from otel_agents.tracing.metrics_setup import configure_metrics

    metrics = configure_metrics(options.otlp_file)
    if metrics is not None:
        provider.add_span_processor(metrics)
    return tracing


def make_resource() -> Resource:
    """service.name: OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES, else otel-agents."""
    # Resource.create reads both variables itself; the default applies only when
    # neither names the service (explicit attributes would override them).
    detected = Resource.create({"service.version": __version__})
    if OTELResourceDetector().detect().attributes.get("service.name"):
        return detected
    return detected.merge(Resource({"service.name": DEFAULT_SERVICE_NAME}))


def otlp_protocol() -> str:
    name = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    value = os.environ.get(name)
    if not value:
        name, value = "OTEL_EXPORTER_OTLP_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    protocol = (value or "http/protobuf").strip().lower()
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unsupported {name} {value!r} (use grpc or http/protobuf)")
    return protocol


def check_endpoint(endpoint: str, protocol: str) -> None:
    """Catch a malformed endpoint at start-up rather than as an export failure."""
    parsed = urlparse(endpoint if "://" in endpoint else f"//{endpoint}")
    scheme_ok = parsed.scheme in {"http", "https"} or (protocol == "grpc" and parsed.scheme == "")
    try:
        port_ok = parsed.port is None or parsed.port > 0
    except ValueError:
        port_ok = False
    if not (scheme_ok and parsed.hostname and port_ok):
        hint = "http://host:4317" if protocol == "grpc" else "http://host:4318"
        raise ConfigError(f"invalid OTLP endpoint {endpoint!r} for {protocol} (expected e.g. {hint})")


def _quiet_exporter_loggers() -> None:
    # The OTLP exporters log a warning per retry and a traceback per failure;
    # NetworkExportFilter reports a failed endpoint once instead.
    for name in ("opentelemetry.exporter.otlp", "opentelemetry.sdk.trace.export"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
