"""The processor in front of each network exporter: the sampler's per-trace choice, and the count at exit.

Composition rather than the provider's sampler: the provider records every span for
the session directory, the ledger and ``--otlp-file``; this wrapper hands the batch
processor only the spans of the traces ``OTEL_TRACES_SAMPLER`` keeps (``sampling.py``)
and counts them. What the exporter's results confirm (``NetworkExportFilter.delivered``)
against that count is the exact number of spans a backend never got, said once at exit.
"""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor

from otel_agents.tracing.export_filter import NetworkExportFilter
from otel_agents.tracing.sampling import TraceSampling


class NetworkExportProcessor(SpanProcessor):
    """Forwards the sampled traces' spans to ``inner`` (the exporter's batch processor) and counts them."""

    def __init__(self, inner: SpanProcessor, exporter: Any, sampling: TraceSampling | None = None):
        self.inner = inner
        self.exporter = exporter
        self.sampling = sampling
        self.offered = 0  # spans handed on for sending
        self.sampled_out = 0  # spans of traces the sampler left out (never meant to be sent)
        self._lock = threading.Lock()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.sampling is not None and not self.sampling.on_start(span, parent_context):
            return
        self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: Any) -> None:
        if self.sampling is not None and not self.sampling.keeps(span):
            with self._lock:
                self.sampled_out += 1
            return
        with self._lock:
            self.offered += 1
        self.inner.on_end(span)

    def begin_exit(self) -> None:
        if isinstance(self.exporter, NetworkExportFilter):
            self.exporter.begin_exit()

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)

    @property
    def undelivered(self) -> int:
        """Spans offered that the endpoint has not accepted (held, failed, dropped, still queued)."""
        if not isinstance(self.exporter, NetworkExportFilter):
            return 0
        return max(0, self.offered - self.exporter.delivered)

    def exit_report(self, finished: bool, waited_s: float) -> str | None:
        """The one warning at exit, or None when every span offered was delivered."""
        missing = self.undelivered
        if not missing:
            return None
        exporter = self.exporter
        if not finished and exporter.busy:
            why = f"no answer within {waited_s:g} s at exit"
        else:
            why = exporter.failure or "not sent before exit"
        return (
            f"warning: could not send spans to the {exporter.describe} ({why}): {missing} of {self.offered} "
            "spans not delivered (`otel-agents export SESSION` sends a saved session again); "
            "the local session artifacts are complete"
        )
