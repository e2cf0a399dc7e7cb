"""The bounded exit: spans and metrics flushed side by side, each within the whole bound, and what was not confirmed said once."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from opentelemetry.sdk.trace import SpanProcessor


class ShutdownOnce(SpanProcessor):
    """The metrics processor as the tracer provider sees it: ``bounded_exit`` shuts it down in a
    thread of its own, so the provider's call (after the span exporters') returns at once rather
    than waiting a second time, or starting the export after the spans used up the bound."""

    def __init__(self, inner: SpanProcessor):
        self.inner = inner
        self._lock = threading.Lock()
        self._started = False

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: Any) -> None:
        self.inner.on_end(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self.inner.shutdown()


def _start(target: Callable[[], Any], name: str) -> threading.Thread:
    worker = threading.Thread(target=target, name=name, daemon=True)
    worker.start()
    return worker


def bounded_exit(provider: Any, metrics: ShutdownOnce | None, bound_s: float) -> tuple[bool, bool]:
    """Shut down the tracer provider and the metrics processor concurrently; wait at most ``bound_s``.

    Returns (spans finished, metrics finished). A side still running goes on in a daemon
    thread that dies with the process (only network copies can be lost)."""
    deadline = time.monotonic() + bound_s
    # Metrics first: their final export is their only one in a short run, and must not wait
    # behind span exports to an endpoint that is down.
    metrics_worker = _start(metrics.shutdown, "otel-agents-metrics-shutdown") if metrics is not None else None
    spans_worker = _start(provider.shutdown, "otel-agents-shutdown")
    spans_worker.join(max(0.0, deadline - time.monotonic()))
    if metrics_worker is not None:
        metrics_worker.join(max(0.0, deadline - time.monotonic()))
    return not spans_worker.is_alive(), metrics_worker is None or not metrics_worker.is_alive()
