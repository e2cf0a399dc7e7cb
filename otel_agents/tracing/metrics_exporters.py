"""Metric exporters of our own: an OTLP exporter that warns once, and ``--otlp-file``'s OTLP/JSON lines."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult

from otel_agents.tracing.whole_lines import WholeLinesFile


class ReportingMetricExporter(MetricExporter):
    """An OTLP metric exporter whose failures cost one warning line, said at shutdown.

    Only when metrics were asked for by name (OTEL_METRICS_EXPORTER=otlp): an endpoint set for
    traces alone, such as Jaeger's, refuses metrics, and the span side already says if it is down.
    """

    def __init__(self, inner: Any, describe: str, warn: bool = True):
        super().__init__(preferred_temporality=inner._preferred_temporality,
                         preferred_aggregation=inner._preferred_aggregation)
        self.inner = inner
        self.describe = describe
        self.failed_exports = 0
        self.warn = warn
        self._reported = False  # said by exit_report: a late shutdown says nothing more

    def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> Any:
        try:
            result = self.inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception:  # noqa: BLE001 - a receiver problem never reaches the run
            result = MetricExportResult.FAILURE
        if result is not MetricExportResult.SUCCESS:
            self.failed_exports += 1
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self.inner.shutdown(timeout_millis=timeout_millis)
        if self.failed_exports and self.warn and not self._reported:
            print(f"warning: could not send metrics to {self.describe} ({self.failed_exports} export(s) failed)",
                  file=sys.stderr, flush=True)

    def exit_report(self, finished: bool, waited_s: float) -> str | None:
        """The warning when the exit wait ended before the last export was answered (shutdown never got to say)."""
        if finished or not self.warn:
            return None
        self._reported = True
        return f"warning: could not send metrics to {self.describe} (no answer within {waited_s:g} s at exit)"


class OtlpJsonMetricsFileExporter(MetricExporter):
    """``--otlp-file``'s metrics: one ``{"resourceMetrics": [...]}`` OTLP/JSON line per export.

    Encoded by the OTLP exporters' own encoder and protobuf's JSON mapping (lowerCamelCase,
    64-bit integers as strings, enums as numbers), so a line parses back into the very
    ``ExportMetricsServiceRequest`` the OTLP exporter sends. Cumulative temporality: the last
    line holds the run's totals.
    """

    def __init__(self, path: Path):
        super().__init__()
        self.file = WholeLinesFile(path, "metric exports")
        self.path = self.file.path

    def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> Any:
        document = MessageToDict(encode_metrics(metrics_data), use_integers_for_enums=True)
        if not document.get("resourceMetrics"):
            return MetricExportResult.SUCCESS
        written = self.file.append(orjson.dumps(document) + b"\n")
        return MetricExportResult.SUCCESS if written else MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self.file.close()
