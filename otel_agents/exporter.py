"""``SessionExporter``: a standard OpenTelemetry span exporter that writes session directories and ledger records.

Any application adds it to its ``TracerProvider``::

    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from otel_agents.exporter import SessionExporter
    provider.add_span_processor(BatchSpanProcessor(SessionExporter()))

or, with opentelemetry-distro, ``OTEL_TRACES_EXPORTER=otlp,otel_agents opentelemetry-instrument
python app.py`` (the ``opentelemetry_traces_exporter`` entry point ``otel_agents``). Its GenAI
spans (ours, or other instrumentations' put in our shape and priced as ``import`` does) become
sessions under ``$OTEL_AGENTS_HOME`` (or ``home``/``sessions_dir``/``billing_file``), equal to an
``otel-agents import`` of the same spans; spans of other software are ignored and counted.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_agents.llm.import_pricing import priced
from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.paths import Paths
from otel_agents.persistence.span_intake import IntakeResult, SpanIntake
from otel_agents.tracing.foreign import understood
from otel_agents.tracing.spandata import SpanReader

__all__ = ["SessionExporter"]


class SessionExporter(SpanExporter):
    """Writes the GenAI sessions among exported spans; every argument optional (entry-point use).

    ``home`` stands for ``$OTEL_AGENTS_HOME``; ``sessions_dir``/``billing_file`` override its parts.
    A trace is written once its root span has been exported (or after ``hold_s`` seconds of
    quiet, or at :meth:`force_flush`/:meth:`shutdown`), so batches in any order give one session.
    A daemon thread, started by the first export and stopped by :meth:`shutdown`, closes and bills
    what has been quiet for ``hold_s``: an application gone idle is billed without any call (the
    SDK's span processors never call an exporter's ``force_flush``).
    """

    def __init__(self, home: str | Path | None = None, *, sessions_dir: str | Path | None = None,
                 billing_file: str | Path | None = None, hold_s: float = 30.0, warn: Warn | None = None):
        if home is not None:
            home = Path(home).expanduser()
            sessions_dir = sessions_dir or home / "sessions"
            billing_file = billing_file or home / "billing.jsonl"
        paths = Paths.resolve(Path(sessions_dir) if sessions_dir else None, Path(billing_file) if billing_file else None)
        self.sessions_dir = paths.sessions_dir
        self.billing_file = paths.billing_file
        warn = warn or stderr_warning
        self._intake = SpanIntake(paths.sessions_dir, paths.billing_file, shape=understood, price=priced,
                                  warn=warn, hold_s=hold_s)
        # The session directory keeps content as sent, credentials scrubbed (as the live recorder).
        self._reader = SpanReader(redact_patterns=False)
        self._lock = threading.Lock()
        self._shut = False
        self._warned: set[str] = set()
        self.warn = warn
        self._hold_s = hold_s
        self._stop = threading.Event()
        self._closer: threading.Thread | None = None

    @property
    def totals(self) -> IntakeResult:
        """Spans written, ignored and rejected since the start (``held`` is of the last batch)."""
        return self._intake.totals

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            if self._shut:
                return SpanExportResult.FAILURE
            if self._closer is None:
                self._closer = threading.Thread(target=self._close_quiet, name="otel-agents-session-closer", daemon=True)
                self._closer.start()
            try:
                result = self._intake.take([self._reader.read(span) for span in spans])
            except Exception as exc:  # never into the application
                self.warn(f"otel_agents exporter: cannot write {len(spans)} span(s): {type(exc).__name__}: {exc}")
                return SpanExportResult.FAILURE
        reasons = {reason for _, reason in result.rejected} - self._warned
        if reasons:  # once per reason: a session a live run writes would otherwise warn at every batch
            reason = min(reasons)
            self._warned |= reasons
            self.warn(f"otel_agents exporter: {len(result.rejected)} span(s) not saved, e.g. {reason}")
        return SpanExportResult.SUCCESS

    def _close_quiet(self) -> None:
        """Until shutdown: now and then, what has been quiet for ``hold_s`` is written and billed (as an export would)."""
        interval = min(max(self._hold_s / 4, 0.05), 5.0)
        while not self._stop.wait(interval):
            with self._lock:
                if self._shut:
                    return
                try:
                    self._intake.take([])  # quiet held traces released, quiet sessions closed and billed
                except Exception as exc:  # never into the application; the next export or tick tries again
                    self.warn(f"otel_agents exporter: cannot close quiet sessions: {type(exc).__name__}: {exc}")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Write every held trace now."""
        with self._lock:
            if self._shut:
                return True
            try:
                self._intake.flush()
            except Exception as exc:
                self.warn(f"otel_agents exporter: cannot flush: {type(exc).__name__}: {exc}")
                return False
            return True

    def shutdown(self) -> None:
        self._stop.set()
        closer = self._closer
        if closer is not None and closer is not threading.current_thread():
            closer.join(timeout=30)  # it takes the lock: joined outside it
        with self._lock:
            if self._shut:
                return
            self._shut = True
            try:
                self._intake.close()
            except Exception as exc:
                self.warn(f"otel_agents exporter: cannot close: {type(exc).__name__}: {exc}")
