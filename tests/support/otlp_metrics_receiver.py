"""A real OTLP/HTTP receiver on loopback for metrics (and the traces sent with them), for tests.

``POST /v1/metrics`` is decoded as an ``ExportMetricsServiceRequest`` (protobuf, gzip or not) and
kept; ``POST /v1/traces`` is accepted and counted, so one endpoint can take a whole run's export
(``OTEL_EXPORTER_OTLP_ENDPOINT``). :func:`metric_points` flattens what arrived into plain data.
"""

from __future__ import annotations

import gzip
import http.server
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any, Iterable

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from support.otlp_receivers import attributes_to_dict

__all__ = ["HttpMetricsReceiver", "MetricPoint", "metric_points"]


@dataclass(frozen=True)
class MetricPoint:
    """One data point: histograms give count/sum/bounds, sums give value."""

    name: str
    unit: str
    kind: str  # histogram | sum | gauge
    attributes: dict[str, Any]
    count: int | None = None
    sum: float | None = None
    bounds: tuple[float, ...] | None = None
    bucket_counts: tuple[int, ...] | None = None
    value: float | None = None
    monotonic: bool | None = None


def metric_points(requests: Iterable[ExportMetricsServiceRequest]) -> list[MetricPoint]:
    out = []
    for request in requests:
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    if kind == "histogram":
                        for p in metric.histogram.data_points:
                            out.append(MetricPoint(metric.name, metric.unit, kind, attributes_to_dict(p.attributes),
                                                   count=p.count, sum=p.sum, bounds=tuple(p.explicit_bounds),
                                                   bucket_counts=tuple(p.bucket_counts)))
                    elif kind in ("sum", "gauge"):
                        data = getattr(metric, kind)
                        for p in data.data_points:
                            value = p.as_double if p.WhichOneof("value") == "as_double" else p.as_int
                            out.append(MetricPoint(metric.name, metric.unit, kind, attributes_to_dict(p.attributes),
                                                   value=value, monotonic=data.is_monotonic if kind == "sum" else None))
    return out


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    receiver: "HttpMetricsReceiver"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "deflate":
            raw = zlib.decompress(raw)
        path = self.path.split("?", 1)[0]
        if path == "/v1/metrics":
            request = ExportMetricsServiceRequest()
            request.ParseFromString(raw)
            self.server.receiver._add("metrics", request)
            body = ExportMetricsServiceResponse().SerializeToString()
        elif path == "/v1/traces":
            self.server.receiver._add("traces", raw)
            body = ExportTraceServiceResponse().SerializeToString()
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class HttpMetricsReceiver:
    """OTLP/HTTP on ``127.0.0.1:<free port>``: keeps metric requests, counts trace requests."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.metric_requests: list[ExportMetricsServiceRequest] = []
        self.trace_requests = 0
        self._server: _Server | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "receiver not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _add(self, signal: str, request: Any) -> None:
        with self._cond:
            if signal == "metrics":
                self.metric_requests.append(request)
            else:
                self.trace_requests += 1
            self._cond.notify_all()

    def points(self) -> list[MetricPoint]:
        with self._cond:
            return metric_points(list(self.metric_requests))

    def wait_for_metrics(self, n: int = 1, timeout: float = 5.0) -> list[ExportMetricsServiceRequest]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.metric_requests) < n and time.monotonic() < deadline:
                self._cond.wait(max(0.0, deadline - time.monotonic()))
            return list(self.metric_requests)

    def start(self) -> "HttpMetricsReceiver":
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.receiver = self
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "HttpMetricsReceiver":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
