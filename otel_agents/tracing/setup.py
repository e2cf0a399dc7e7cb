"""TracerProvider set-up from the standard OTEL_* variables.

Honoured: OTEL_SDK_DISABLED (only `true`; nothing is sent; the session is still recorded and billed),
OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
OTEL_TRACES_EXPORTER (otlp | console | none; otel_agents, the application's entry point, is
ignored), OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL /
OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (grpc | http/protobuf), OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION
(gzip | deflate | none; these three read and checked in otlp_env.py), OTEL_EXPORTER_OTLP_HEADERS,
OTEL_EXPORTER_OTLP_TIMEOUT / OTEL_EXPORTER_OTLP_TRACES_TIMEOUT (seconds, as the installed
Python OTLP exporters read them; the specification says milliseconds, so a value of
LIKELY_MILLISECONDS_S or more is warned about), OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG (what is sent:
the provider records every span, see sampling.py). With no endpoint configured nothing
is sent and nothing warns. Project switches:

- OTEL_AGENTS_EXPORT_CONTENT=false: message contents, tool arguments and results
  stay local (default true: this is a research tool where nothing is hidden).
- OTEL_AGENTS_EXPORT_VALUE_CAP=N: bytes per exported attribute value (default 65536,
  at least 256); longer values reach the network truncated with a marker and stay
  whole in the local artifacts (export_filter.py has every network-side limit).
- OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT, OTEL_SPAN_EVENT_COUNT_LIMIT and the other standard span
  limits bound the network copy only (span_limits.py); the provider itself has none.
- OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (or SPAN_ONLY; alias
  OTEL_AGENTS_CAPTURE_INPUT_MESSAGES): the GenAI content attributes on chat and tool
  spans (content_capture.py; off by default: every call repeats the history, quadratic growth).

A receiver that is down, refuses or hangs costs one warning line at exit, giving the
number of spans not delivered, and a bounded delay: each export attempt gives up
after the export timeout (OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, else
OTEL_EXPORTER_OTLP_TIMEOUT, else DEFAULT_EXPORT_TIMEOUT_S), and ``Tracing.shutdown``
waits at most that timeout plus SHUTDOWN_GRACE_S for the final flush, and never more
than MAX_EXIT_WAIT_S whatever the timeout (what it did not confirm is warned about). Local
artifacts are written by their own synchronous processors and never wait for the network.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from otel_agents.version import __version__
from otel_agents.tracing.content_capture import CaptureSettingError, capture_content
from otel_agents.tracing.env_lists import ListFormatError, check_env_lists
from otel_agents.tracing.export_filter import NetworkExportFilter
from otel_agents.tracing.export_rules import DEFAULT_VALUE_CAP, MIN_VALUE_CAP, ExportLimits
from otel_agents.tracing.network_export import NetworkExportProcessor
from otel_agents.tracing.otlp_env import (  # noqa: F401 - re-exported: the other modules import them from here
    COMPRESSIONS,
    PROTOCOLS,
    ConfigError,
    check_compression,
    check_endpoint,
    endpoint_variable,
    grpc_compression,
    otlp_protocol,
)
from otel_agents.tracing.otlp_json import OtlpJsonFileExporter
from otel_agents.tracing.sampling import SamplerConfigError, TraceSampling, sampler_from_env
from otel_agents.tracing.span_limits import LimitError, export_limits_from_env
from otel_agents.tracing.telemetry import EventListener, Telemetry

TRACER_NAME = "otel_agents"
DEFAULT_SERVICE_NAME = "otel-agents"
# A receiver that is down or hangs may cost at most the export timeout plus the grace at exit.
DEFAULT_EXPORT_TIMEOUT_S = 3.0
SHUTDOWN_GRACE_S = 1.0
# Whatever the timeout, the exit waits no longer: a spec-minded OTEL_EXPORTER_OTLP_TIMEOUT=10000 (10 s in
# milliseconds) is 10000 s to the installed exporters, which read seconds.
MAX_EXIT_WAIT_S = 30.0
LIKELY_MILLISECONDS_S = 1000.0
TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def sdk_disabled() -> bool:
    """OTEL_SDK_DISABLED as the specification reads it: only ``true`` (any case) is true; a value that is
    neither true nor false is false, said in one warning line."""
    value = (os.environ.get("OTEL_SDK_DISABLED") or "").strip().lower()
    if value not in {"", "true", "false"}:
        print(f"warning: OTEL_SDK_DISABLED={value!r} is taken as false (only 'true' disables)", file=sys.stderr,
              flush=True)
    return value == "true"


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


def env_export_limits() -> dict[str, Any]:
    """The standard OTEL_*_LIMIT variables as ``ExportLimits`` arguments, validated (span_limits.py)."""
    try:
        return export_limits_from_env()
    except LimitError as exc:
        raise ConfigError(str(exc)) from None


def export_timeout_s() -> float:
    """Seconds an OTLP export may take, retries included: the traces variable, else the general one."""
    for name in TIMEOUT_VARIABLES:
        raw = (os.environ.get(name) or "").strip()
        if not raw:
            continue
        try:
            seconds = float(raw)
        except ValueError:
            seconds = -1.0
        if not 0 < seconds < float("inf"):  # NaN fails too
            raise ConfigError(f"{name} must be a positive number of seconds, not {raw!r}")
        return seconds
    return DEFAULT_EXPORT_TIMEOUT_S


def exit_bound_s(timeout_s: float) -> float:
    """The longest ``Tracing.shutdown`` waits for the network: the export timeout plus the grace, at most MAX_EXIT_WAIT_S."""
    return min(timeout_s + SHUTDOWN_GRACE_S, MAX_EXIT_WAIT_S)


def shutdown_bound_s() -> float:
    return exit_bound_s(export_timeout_s())


def warn_about_millisecond_timeout(timeout_s: float, consequence: str = "") -> None:
    """One line when the timeout looks like the specification's milliseconds, read here as seconds.

    `consequence` ends the line: what the long wait means to the caller (a run's exit is capped, an
    export's requests are not); by default the run's exit cap.
    """
    if timeout_s >= LIKELY_MILLISECONDS_S:
        consequence = consequence or f"the exit waits at most {MAX_EXIT_WAIT_S:g} s"
        print(f"warning: the OTLP export timeout {timeout_s:g} is read as seconds, as the installed OTLP exporters "
              f"read OTEL_EXPORTER_OTLP_TIMEOUT (not the specification's milliseconds); {consequence}",
              file=sys.stderr, flush=True)


def check_env_list_variables(*, resource: bool = True) -> None:
    """The OTLP header variables (and OTEL_RESOURCE_ATTRIBUTES), checked before the SDK logs a bad one verbatim."""
    try:
        check_env_lists(resource=resource)
    except ListFormatError as exc:
        raise ConfigError(str(exc)) from None


def env_capture_content() -> bool:
    """OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (or its alias), validated."""
    try:
        return capture_content(os.environ)
    except CaptureSettingError as exc:
        raise ConfigError(str(exc)) from None


@dataclass
class TracingOptions:
    otlp_file: Path | None = None
    export_content: bool = field(default_factory=lambda: env_flag("OTEL_AGENTS_EXPORT_CONTENT", True))
    value_cap: int = field(default_factory=env_value_cap)
    # OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT and the other standard limits: the network copy's, never the local files'.
    span_limits: dict[str, Any] = field(default_factory=env_export_limits)
    # All GenAI content attributes, not only input messages (the name predates the others).
    capture_input_messages: bool = field(default_factory=env_capture_content)
    # Batch for network exporters; tests use synchronous export to inspect results.
    batch: bool = True


@dataclass
class Tracing:
    """A configured provider plus the Telemetry handle the runtime uses."""

    provider: TracerProvider | None
    telemetry: Telemetry
    options: TracingOptions
    network_exporters: list[SpanExporter] = field(default_factory=list)
    network_processors: list[NetworkExportProcessor] = field(default_factory=list)
    export_timeout_s: float = DEFAULT_EXPORT_TIMEOUT_S
    metrics: Any = None  # exit_wait.ShutdownOnce around the GenAI metrics processor, shut down beside the provider
    metric_reporters: list[Any] = field(default_factory=list)  # its OTLP exporters, for the exit report
    _shut_down: bool | None = field(default=None, init=False, repr=False)  # the first shutdown's answer

    @property
    def enabled(self) -> bool:
        return self.provider is not None

    def add_processor(self, processor: SpanProcessor) -> None:
        if self.provider is not None:
            self.provider.add_span_processor(processor)

    def add_listener(self, listener: EventListener) -> None:
        self.telemetry.listeners.append(listener)

    def add_metrics(self, processor: SpanProcessor, reporters: list[Any]) -> None:
        from otel_agents.tracing.exit_wait import ShutdownOnce

        self.metrics = ShutdownOnce(processor)
        self.metric_reporters = reporters
        self.add_processor(self.metrics)

    def shutdown(self, bound_s: float | None = None) -> bool:
        """Flush and stop, bounded: a hanging receiver never holds the process.

        ``bound_s`` defaults to the export timeout plus SHUTDOWN_GRACE_S, at most MAX_EXIT_WAIT_S. The metrics flush
        beside the spans, each side given the whole bound (exit_wait.py): spans to an endpoint
        that is down do not use up the metrics' time. Returns False when the bound was reached
        (the flush goes on in a daemon thread that dies with the process; only network copies
        can be lost). One warning per endpoint that did not get every span says how many it
        missed, one per metrics endpoint that failed or did not answer in time. Only the first call shuts down (the
        command's own, or its owner's on the way out); later ones return its answer.
        """
        if self.provider is None:
            return True
        if self._shut_down is not None:
            return self._shut_down
        if bound_s is None:
            bound_s = exit_bound_s(self.export_timeout_s)
        for processor in self.network_processors:
            processor.begin_exit()
        from otel_agents.tracing.exit_wait import bounded_exit

        spans_done, metrics_done = bounded_exit(self.provider, self.metrics, bound_s)
        self._shut_down = spans_done and metrics_done
        for processor in self.network_processors:
            report = processor.exit_report(spans_done, bound_s)
            if report is not None:
                processor.exporter.warn(report)
        for reporter in self.metric_reporters:
            report = reporter.exit_report(metrics_done, bound_s)
            if report is not None:
                print(report, file=sys.stderr, flush=True)
        return self._shut_down


def otlp_exporter(protocol: str, timeout_s: float, **kwargs: Any) -> SpanExporter:
    """The stock exporter of ``protocol``, its timeout always given (the gRPC one reads only
    the general variable, and both default to 10 s): one timeout governs send and exit.
    http/protobuf requests are serialised by ``otlp_proto_encode`` (the same bytes, a third of the CPU)."""
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        kwargs.setdefault("compression", grpc_compression())
        return GrpcExporter(timeout=timeout_s, **kwargs)
    from otel_agents.tracing.otlp_http_exporter import HttpSpanExporter  # the stock one, encoding directly

    return HttpSpanExporter(timeout=timeout_s, **kwargs)


def configure_tracing(options: TracingOptions | None = None) -> Tracing:
    options = options or TracingOptions()
    check_env_list_variables()  # also when disabled: the recording's resource reads OTEL_RESOURCE_ATTRIBUTES
    if sdk_disabled():
        return _recording_only(options)

    try:
        sampler = sampler_from_env()
    except SamplerConfigError as exc:
        raise ConfigError(str(exc)) from None
    timeout_s = export_timeout_s()
    provider = _recording_provider()
    tracing = Tracing(provider, Telemetry(provider.get_tracer(TRACER_NAME, __version__)), options,
                      export_timeout_s=timeout_s)

    exporters = [e.strip().lower() for e in (os.environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")]
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    for name in exporters:
        # otel_agents is the entry point recording an application's sessions (docs/exporter.md); the CLI
        # records its own, so the variable set for an application in the shell does not stop it.
        if name in {"none", "", "otel_agents"}:
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
            check_endpoint(endpoint, protocol, endpoint_variable("TRACES"))
            check_compression()
            warn_about_millisecond_timeout(timeout_s)
            quiet_exporter_loggers()
            exporter = NetworkExportFilter(
                otlp_exporter(protocol, timeout_s),
                export_content=options.export_content,
                describe=f"OTLP endpoint {endpoint} ({protocol})",
                limits=ExportLimits(value_cap=options.value_cap, **options.span_limits),
            )
        else:
            raise ConfigError(f"unsupported OTEL_TRACES_EXPORTER {name!r} (use otlp, console or none)")
        tracing.network_exporters.append(exporter)
        processor = (
            BatchSpanProcessor(exporter, export_timeout_millis=int(timeout_s * 1000))
            if options.batch
            else SimpleSpanProcessor(exporter)
        )
        network = NetworkExportProcessor(processor, exporter, TraceSampling(sampler) if sampler else None)
        tracing.network_processors.append(network)
        provider.add_span_processor(network)

    if options.otlp_file is not None:
        provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(options.otlp_file)))
    # GenAI metrics from ended spans (metrics_setup.py); None, at no cost, unless something asks for them.
    from otel_agents.tracing.metrics_setup import build_metrics

    metrics, reporters = build_metrics(options.otlp_file)
    if metrics is not None:
        tracing.add_metrics(metrics, reporters)
    return tracing


def _recording_provider() -> TracerProvider:
    """The provider every span of a session is recorded with, whatever is sent."""
    return TracerProvider(
        # Every span is recorded whatever OTEL_TRACES_SAMPLER says (the SDK's default would
        # read it): the sampler only chooses what is sent, in NetworkExportProcessor.
        sampler=ALWAYS_ON,
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
            max_links=SpanLimits.UNSET,  # else the SDK reads OTEL_SPAN_LINK_COUNT_LIMIT here
            max_link_attributes=SpanLimits.UNSET,
        ),
    )


def _recording_only(options: TracingOptions) -> Tracing:
    """OTEL_SDK_DISABLED: nothing is sent (no exporter, no metrics), but the session is still recorded.

    The session directory and the ledger are derived from the spans, so a provider that made no
    spans would leave the run unbilled and its budget uncounted at resume. The SDK's provider reads
    the variable itself and would hand out no-op tracers; ours is told it is not disabled. A
    ``--otlp-file`` asked for explicitly is still written, and its metrics file beside it: they are
    local files, not a sending."""
    provider = _recording_provider()
    provider._disabled = False  # noqa: SLF001 - see above; tests/tracing/test_setup.py catches an SDK change
    tracing = Tracing(provider, Telemetry(provider.get_tracer(TRACER_NAME, __version__)), options)
    if options.otlp_file is not None:
        provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(options.otlp_file)))
        from otel_agents.tracing.metrics_setup import configure_metrics

        # The file's sibling run.metrics.jsonl is as local as the file: written, whatever OTEL_METRICS_EXPORTER says.
        tracing.add_metrics(configure_metrics(options.otlp_file, network=False), [])
    return tracing


def make_resource() -> Resource:
    """service.name: OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES, else otel-agents."""
    # Resource.create reads both variables itself; the default applies only when
    # neither names the service (explicit attributes would override them).
    detected = Resource.create({"service.version": __version__})
    if OTELResourceDetector().detect().attributes.get("service.name"):
        return detected
    return detected.merge(Resource({"service.name": DEFAULT_SERVICE_NAME}))


def quiet_exporter_loggers() -> None:
    # The OTLP exporters log a warning per retry and a traceback per failure;
    # NetworkExportFilter reports a failed endpoint once instead.
    for name in ("opentelemetry.exporter.otlp", "opentelemetry.sdk.trace.export"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
