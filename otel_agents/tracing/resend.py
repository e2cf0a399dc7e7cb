"""Saved spans sent again to an OTLP endpoint, as a live export would send them (``otel-agents export``).

The spans keep their trace and span ids, so a backend that already holds some of them
deduplicates or overwrites them; they go through the same ``NetworkExportFilter`` as a
live run (redacted, capped, content switch, chunked) and the same stock OTLP exporter,
whose own retries and timeout apply. The target is resolved like a live run's:
``--endpoint``/``--headers`` when given, else the standard OTEL_* variables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence
from urllib.parse import urlparse

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otel_agents.tracing.env_lists import ListFormatError, parse_headers
from otel_agents.tracing.export_filter import NetworkExportFilter
from otel_agents.tracing.export_rules import ExportLimits
from otel_agents.tracing.setup import (
    ConfigError,
    TracingOptions,
    check_compression,
    check_endpoint,
    check_env_list_variables,
    export_timeout_s,
    otlp_exporter,
    otlp_protocol,
    quiet_exporter_loggers,
)
from otel_agents.tracing.spandata import SpanData

BATCH_SPANS = 512  # the batch processor's default batch: requests like a live run's
TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class ResendTarget:
    endpoint: str  # as the exporter takes it (HTTP: the full /v1/traces URL)
    protocol: str
    headers: dict[str, str] | None  # None: the exporter reads OTEL_EXPORTER_OTLP[_TRACES]_HEADERS
    timeout_s: float


@dataclass(frozen=True)
class ResendReport:
    spans: int  # spans offered
    delivered: int  # spans the endpoint accepted
    endpoint: str
    failure: str | None = None  # why the endpoint did not take the rest

    @property
    def complete(self) -> bool:
        return self.delivered == self.spans


def resolve_target(endpoint: str | None = None, headers: str | None = None) -> ResendTarget:
    """The endpoint, protocol, headers and timeout to send to; ConfigError (one line) when unusable."""
    protocol = otlp_protocol()
    if endpoint:
        url = endpoint.strip()
        check_endpoint(url, protocol)  # before urlparse below, which raises on "http://[::1"
        if protocol != "grpc" and urlparse(url).path in {"", "/"}:
            url = url.rstrip("/") + TRACES_PATH  # a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT
    elif os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        url = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].strip()  # used verbatim, as the exporters do
        check_endpoint(url, protocol, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    elif os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        base = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].strip()
        check_endpoint(base, protocol, "OTEL_EXPORTER_OTLP_ENDPOINT")  # as set, before the path is added
        url = base if protocol == "grpc" else base.rstrip("/") + TRACES_PATH
    else:
        raise ConfigError("no OTLP endpoint: give --endpoint URL or set OTEL_EXPORTER_OTLP_ENDPOINT")
    check_endpoint(url, protocol)
    check_compression()
    # The HTTP exporter parses the header variables even when --headers is given (saved spans keep
    # their resource: OTEL_RESOURCE_ATTRIBUTES is not read).
    check_env_list_variables(resource=False)
    parsed: dict[str, str] | None = None
    if headers is not None:
        try:
            parsed = parse_headers(headers, "--headers")
        except ListFormatError as exc:
            raise ConfigError(str(exc)) from None
    return ResendTarget(url, protocol, parsed, export_timeout_s())


def to_readable(span: SpanData) -> ReadableSpan:
    """The SDK span the OTLP encoders take, with the saved ids, times, status and resource."""
    flags = TraceFlags(TraceFlags.SAMPLED)
    trace_id = int(span.trace_id, 16)
    parent = SpanContext(trace_id, int(span.parent_span_id, 16), False, flags) if span.parent_span_id else None
    return ReadableSpan(
        name=span.name,
        context=SpanContext(trace_id, int(span.span_id, 16), False, flags),
        parent=parent,
        resource=Resource(span.resource),
        attributes=span.attributes,
        events=[Event(e.name, e.attributes, e.time_ns) for e in span.events],
        links=[Link(SpanContext(int(k.trace_id, 16), int(k.span_id, 16), False, flags), k.attributes)
               for k in span.links],
        kind=SpanKind[span.kind] if span.kind in SpanKind.__members__ else SpanKind.INTERNAL,
        status=Status(StatusCode[span.status] if span.status in StatusCode.__members__ else StatusCode.UNSET,
                      span.status_message),
        start_time=span.start_ns,
        end_time=span.end_ns,
        instrumentation_scope=InstrumentationScope(span.scope or ""),
    )


def resend(spans: Sequence[SpanData], target: ResendTarget, options: TracingOptions | None = None,
           **exporter_kwargs: Any) -> ResendReport:
    """Sends ``spans`` in batches; stops at the first batch the endpoint does not take after its retries."""
    options = options or TracingOptions()
    quiet_exporter_loggers()  # the report says what failed, once
    kwargs = dict(exporter_kwargs, endpoint=target.endpoint)
    if target.headers is not None:
        kwargs["headers"] = target.headers
    network = NetworkExportFilter(
        otlp_exporter(target.protocol, target.timeout_s, **kwargs),
        export_content=options.export_content,
        describe=f"OTLP endpoint {target.endpoint} ({target.protocol})",
        limits=ExportLimits(value_cap=options.value_cap, **options.span_limits),
        pause_after_failure_s=0.0,
    )
    try:
        for start in range(0, len(spans), BATCH_SPANS):
            batch = [to_readable(span) for span in spans[start:start + BATCH_SPANS]]
            if network.export(batch) is not SpanExportResult.SUCCESS:
                break
    finally:
        network.inner.shutdown()  # not network.shutdown(): a failed endpoint is not asked once more
    return ResendReport(len(spans), network.delivered, target.endpoint,
                        None if network.delivered == len(spans) else network.failure)
