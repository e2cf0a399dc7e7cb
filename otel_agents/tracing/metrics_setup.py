"""MeterProvider set-up from the standard OTEL_* variables, and the ``--otlp-file`` metrics file.

Honoured: OTEL_METRICS_EXPORTER (otlp | console | none, comma-separated; default otlp, which
sends only when an endpoint is configured, as for traces), OTEL_EXPORTER_OTLP_METRICS_ENDPOINT
(used verbatim) or OTEL_EXPORTER_OTLP_ENDPOINT (``/v1/metrics`` appended for HTTP),
OTEL_EXPORTER_OTLP[_METRICS]_PROTOCOL, _HEADERS, _TIMEOUT, _COMPRESSION and
OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE (read by the exporters themselves),
OTEL_METRIC_EXPORT_INTERVAL (ms, default 60000: a run shorter than that exports once, at exit).

With nothing configured no MeterProvider is built and the metrics SDK is not even imported:
the offline default pays nothing. ``--otlp-file PATH`` writes the metrics as OTLP/JSON lines to
the sibling :func:`metrics_file_for` (``run.jsonl`` -> ``run.metrics.jsonl``), so the span file
stays a pure trace document that ``otel-agents import`` reads.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from otel_agents.tracing.setup import (
    DEFAULT_EXPORT_TIMEOUT_S,
    ConfigError,
    check_compression,
    check_endpoint,
    endpoint_variable,
    grpc_compression,
    make_resource,
    otlp_protocol,
)

EXPORTERS = ("otlp", "console", "none")


def metrics_file_for(otlp_file: Path) -> Path:
    """Where ``--otlp-file PATH`` puts the metrics: beside it, ``.metrics`` before the suffix."""
    path = Path(otlp_file)
    suffix = path.suffix or ".jsonl"
    return path.with_name(f"{path.stem if path.suffix else path.name}.metrics{suffix}")


def metrics_endpoint() -> str | None:
    return os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")


def export_interval_ms() -> float | None:
    """OTEL_METRIC_EXPORT_INTERVAL, checked: the SDK would silently fall back on a bad value."""
    raw = (os.environ.get("OTEL_METRIC_EXPORT_INTERVAL") or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value != value or value == float("inf"):
        raise ConfigError(f"OTEL_METRIC_EXPORT_INTERVAL must be a positive number of milliseconds, not {raw!r}")
    return value


def wanted_exporters() -> list[str]:
    """The OTEL_METRICS_EXPORTER names that will actually export (checked, deduplicated)."""
    names = [n.strip().lower() for n in (os.environ.get("OTEL_METRICS_EXPORTER") or "otlp").split(",")]
    out = []
    for name in names:
        if name not in EXPORTERS and name != "":
            raise ConfigError(f"unsupported OTEL_METRICS_EXPORTER {name!r} (use otlp, console or none)")
        if name == "otlp" and not metrics_endpoint():
            continue  # nothing configured: nothing sent, nothing said (as for traces)
        if name in {"otlp", "console"} and name not in out:
            out.append(name)
    return out


def configure_metrics(otlp_file: Path | None = None, *, network: bool = True) -> Any:
    """A :class:`GenAiMetricsProcessor` for the tracer provider, or None when nothing asks for metrics.

    ``network=False`` (OTEL_SDK_DISABLED): only the ``--otlp-file`` metrics file, nothing sent."""
    return build_metrics(otlp_file, network=network)[0]


def build_metrics(otlp_file: Path | None = None, *, network: bool = True) -> tuple[Any, list[Any]]:
    """:func:`configure_metrics`'s processor, and its OTLP exporters (``ReportingMetricExporter``) for the exit report."""
    exporters = wanted_exporters() if network else []
    interval = export_interval_ms()
    if not exporters and otlp_file is None:
        return None, []  # the offline default: no metrics SDK import, no MeterProvider, no reader thread
    from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    from otel_agents.tracing.metrics import GenAiMetricsProcessor
    from otel_agents.tracing.metrics_exporters import OtlpJsonMetricsFileExporter

    readers, reporting = [], []
    for name in exporters:
        exporter = _console_exporter() if name == "console" else _otlp_exporter()
        if name == "otlp":
            reporting.append(exporter)
        readers.append(PeriodicExportingMetricReader(exporter, export_interval_millis=interval))
    if otlp_file is not None:
        readers.append(PeriodicExportingMetricReader(OtlpJsonMetricsFileExporter(metrics_file_for(otlp_file)),
                                                     export_interval_millis=interval))
    # Exemplars would tie metric points to span ids: off, they cost and say nothing the spans do not.
    # shutdown_on_exit=False: the processor shuts it down with the tracer provider, or Tracing.shutdown
    # beside it (exit_wait.py); a second, at-exit shutdown would log a warning.
    provider = MeterProvider(metric_readers=readers, resource=make_resource(),
                             exemplar_filter=AlwaysOffExemplarFilter(), shutdown_on_exit=False)
    # OTEL_SDK_DISABLED would make its meters no-ops; here it means only that nothing is sent (network=False),
    # and the --otlp-file metrics are still written, as the spans are (setup._recording_only).
    provider._disabled = False  # noqa: SLF001 - test_metrics_setup.py catches an SDK change
    return GenAiMetricsProcessor(provider), reporting


def _console_exporter() -> Any:
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

    return ConsoleMetricExporter(out=sys.stderr)


def _otlp_exporter() -> Any:
    endpoint = metrics_endpoint()
    protocol = otlp_protocol("METRICS")
    check_endpoint(endpoint, protocol, endpoint_variable("METRICS"))
    check_compression("METRICS")
    timeout_set = any(os.environ.get(v) for v in ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT"))
    kwargs = {} if timeout_set else {"timeout": DEFAULT_EXPORT_TIMEOUT_S}
    # The exporters log a traceback per failure; ReportingMetricExporter says it once.
    for name in ("opentelemetry.exporter.otlp", "opentelemetry.sdk.metrics"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    from otel_agents.tracing.metrics_exporters import ReportingMetricExporter

    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        kwargs["compression"] = grpc_compression("METRICS")
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    asked = "otlp" in (os.environ.get("OTEL_METRICS_EXPORTER") or "").lower()
    return ReportingMetricExporter(OTLPMetricExporter(**kwargs), f"OTLP endpoint {endpoint} ({protocol})", warn=asked)
