"""The one thread that writes: a bounded queue of decoded requests, applied in batches, fsynced, then acknowledged.

A request's future resolves only after :meth:`SpanIntake.sync` made its spans durable, so the
receiver answers after the data is on disk; the requests that queued while one batch was
written share the next fsync. A full queue is :class:`Busy`: the receiver says when to retry.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

from otel_agents.persistence.span_intake import IntakeResult, SpanIntake
from otel_agents.tracing.spandata import SpanData

BATCH_REQUESTS = 64


class Busy(Exception):
    """The writer is behind: the queue of decoded requests is full."""


@dataclass
class Counters:
    """Since the last :meth:`Writer.take_counters`: what the per-minute log line says."""

    spans: int = 0
    sessions: set[str] = field(default_factory=set)
    rejected: int = 0
    ignored: int = 0  # spans dropped: their trace named no session within the hold bound
    held: int = 0  # spans waiting for their trace to name its session, now
    refused_busy: int = 0


def rejection_message(result: IntakeResult) -> str:
    """OTLP partial success's ``error_message``: the first reason, and how many spans it stands for."""
    if not result.rejected:
        return ""
    reason = result.rejected[0][1]
    more = len(result.rejected) - 1
    return reason + (f" (and {more} more span(s) not saved)" if more else "")


class Writer:
    def __init__(self, intake: SpanIntake, max_queued: int = 256, settle_s: float = 1.0, write_delay_s: float = 0.0):
        self.intake = intake
        self.settle_s = settle_s
        self.write_delay_s = write_delay_s  # a slow disk, for tests of backpressure
        self._queue: queue.Queue[tuple[list[SpanData], Future] | None] = queue.Queue(max_queued)
        self._accepting = True
        self._lock = threading.Lock()
        self._counters = Counters(ignored=intake.totals.ignored)  # expired while the start reloaded pending.jsonl
        self._said: set[str] = set()
        self._thread = threading.Thread(target=self._run, name="collect-writer", daemon=True)
        self._thread.start()

    def submit(self, spans: list[SpanData]) -> "Future[IntakeResult]":
        future: Future[IntakeResult] = Future()
        if not self._accepting:
            raise Busy("shutting down")
        try:
            self._queue.put_nowait((spans, future))
        except queue.Full:
            with self._lock:
                self._counters.refused_busy += 1
            raise Busy("the writer is behind") from None
        return future

    def count_rejected(self, n: int) -> None:
        with self._lock:
            self._counters.rejected += n

    def take_counters(self) -> Counters:
        with self._lock:
            counters, self._counters = self._counters, Counters()
        counters.held = self.intake.held_spans()
        return counters

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=min(self.settle_s, 0.5))
            except queue.Empty:
                self._settle()
                continue
            batch = [first]
            while len(batch) < BATCH_REQUESTS:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            done = [item for item in batch if item is not None]
            results = []
            for spans, future in done:
                try:
                    results.append((future, self.intake.take(spans), None))
                except Exception as exc:  # one bad request must not stop the writer
                    results.append((future, None, exc))
            if self.write_delay_s:
                time.sleep(self.write_delay_s)
            try:
                self.intake.sync()
            except OSError as exc:
                results = [(future, None, exc) for future, _, _ in results]
            for future, accepted, error in results:
                if error is not None:
                    future.set_exception(error)
                    continue
                with self._lock:
                    self._counters.spans += accepted.written
                    self._counters.sessions.update(accepted.sessions)
                    self._counters.rejected += len(accepted.rejected)
                    self._counters.ignored += accepted.ignored
                self._say_rejected(accepted)
                future.set_result(accepted)
            if len(done) < len(batch):  # the stop marker: everything before it is written
                self.intake.close(flush=False)  # spans of sessions not named yet stay spooled
                return
            self._settle()  # under steady load too: sessions quiet for settle_s

    def _settle(self) -> None:
        """Sessions quiet for ``settle_s`` written whole (tree, meta.json, ledger) and their locks given up."""
        try:
            result = self.intake.take([])  # also drops the traces held unnamed too long
            with self._lock:
                self._counters.ignored += result.ignored
        except Exception as exc:  # the journals hold everything: a derived file fails, the writer goes on
            self.intake.warn(f"collect: cannot write a session's tree or ledger records: {exc}")

    def _say_rejected(self, result: IntakeResult) -> None:
        """One error line per reason (a session a live run writes would otherwise say it at every request)."""
        for reason in sorted({reason for _, reason in result.rejected} - self._said)[:1]:
            if len(self._said) > 10_000:
                self._said.clear()  # reasons naming span ids are many: remembered for a while, not for ever
            self._said.update(reason for _, reason in result.rejected)
            self.intake.warn(f"collect: {len(result.rejected)} span(s) not saved: {reason}")

    def stop(self, timeout: float = 60.0) -> None:
        """Stop taking requests, write and acknowledge those queued, settle and close every session."""
        self._accepting = False
        self._queue.put(None)
        self._thread.join(timeout)
