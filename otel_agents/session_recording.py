"""Recording set-up shared by the CLI and the Python API: tracing, session directory, lock, recorder.

``configure`` builds the tracing provider from the standard OTEL_* variables, or adopts
the application's own SDK ``TracerProvider``; ``start_recording`` creates the session
directory, takes its single-writer lock and attaches the (forked) recorder. Failures are
:class:`RecordingError` subclasses with a one-line message: the CLI maps them to exit
codes, the API raises them as they are.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from otel_agents.persistence.paths import Paths
from otel_agents.tracing.setup import TRACER_NAME, Tracing, TracingOptions
from otel_agents.version import __version__


class RecordingError(ValueError):
    """Recording cannot start; the message is one line and names the problem."""


class RecordingConfigError(RecordingError):
    """A bad OTEL_* or OTEL_AGENTS_* setting (the CLI's usage error)."""


class StorageUnwritable(RecordingError):
    """The home cannot take the session: said before any LLM call."""


class SessionBusyError(RecordingError):
    """Another live process writes the session (the message names it)."""


class NoSuchSession(RecordingError):
    """The session directory to own does not exist."""


class SessionExists(RecordingError):
    """A new session given the id of a saved one: its records would be mixed into the saved session's."""


class _Detachable(SpanProcessor):
    """Processors on a provider that cannot remove them (the SDK's cannot): once detached they see
    nothing more, so a closed recorder never hears later spans (the app's, or another session's)."""

    def __init__(self) -> None:
        self.processors: list[SpanProcessor] = []
        self.attached = True

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.attached:
            for processor in self.processors:
                processor.on_start(span, parent_context=parent_context)

    def on_end(self, span: Any) -> None:
        if self.attached:
            for processor in self.processors:
                processor.on_end(span)

    def shutdown(self) -> None:
        self.detach()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(p.force_flush(timeout_millis) for p in self.processors) if self.attached else True

    def detach(self, shutdown: bool = True) -> None:
        if self.attached:
            self.force_flush()
            self.attached = False
            if shutdown:
                for processor in self.processors:
                    processor.shutdown()


@dataclass
class AdoptedTracing(Tracing):
    """Tracing on the application's provider: ours are added, and shutting down detaches only ours."""

    gate: _Detachable | None = None

    def add_processor(self, processor: SpanProcessor) -> None:
        if self.gate is not None:
            self.gate.processors.append(processor)

    def shutdown(self, bound_s: float = 0.0) -> bool:
        if self.gate is not None:
            self.gate.detach()  # the application's own processors and exporters go on untouched
        return True


def application_provider() -> TracerProvider | None:
    """The SDK provider the application set globally, if any (the default proxy is not one)."""
    provider = trace.get_tracer_provider()
    return provider if isinstance(provider, TracerProvider) else None


def configure(otlp_file: Path | None = None, *, adopt: TracerProvider | None = None, batch: bool = True) -> Tracing:
    """Tracing from OTEL_*; with ``adopt``, our processors join that provider instead (its exporters
    already carry our spans, so no OTLP exporter is added twice)."""
    from otel_agents.tracing.setup import ConfigError, check_env_list_variables, configure_tracing, sdk_disabled
    from otel_agents.tracing.telemetry import Telemetry

    from otel_agents.tracing.metrics_setup import configure_metrics

    try:
        options = TracingOptions(otlp_file=otlp_file, batch=batch)
        if adopt is None or sdk_disabled():
            return configure_tracing(options)
        check_env_list_variables()  # our meter provider reads them as the tracer provider would
        metrics = configure_metrics(otlp_file)  # ours, from OTEL_*: the application's provider has no meters of ours
    except ConfigError as exc:
        raise RecordingConfigError(str(exc)) from None
    gate = _Detachable()
    adopt.add_span_processor(gate)
    tracing = AdoptedTracing(adopt, Telemetry(adopt.get_tracer(TRACER_NAME, __version__)), options, gate=gate)
    if otlp_file is not None:
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        from otel_agents.tracing.otlp_json import OtlpJsonFileExporter

        tracing.add_processor(SimpleSpanProcessor(OtlpJsonFileExporter(otlp_file)))
    if metrics is not None:
        tracing.add_processor(metrics)  # detaching the gate shuts it down: the last export
    return tracing


def own_session(directory: Path, *, create: bool = False):
    """Take the session's single-writer lock (persistence/ownership.py)."""
    from otel_agents.persistence.ownership import SessionBusy, take

    try:
        # Named in the lock file only once it writes (start_recording): a refused command changes nothing.
        return take(directory, create=create, announce=False)
    except SessionBusy as exc:
        raise SessionBusyError(str(exc)) from None
    except FileNotFoundError:
        raise NoSuchSession(f"no session {directory.name!r} in {directory.parent}") from None
    except OSError as exc:
        raise StorageUnwritable(f"cannot lock session directory {directory}: {exc.strerror or exc}") from None


@dataclass
class Recording:
    """The recorder attached to the provider and the session lock it writes under."""

    recorder: Any
    ownership: Any
    gate: _Detachable | None = None
    telemetry: Any = None

    def close(self) -> bool:
        """Write everything, then give the lock up; False when something could not be saved.

        The recorder leaves the provider and the listeners first: spans that end later (the
        application's, or another session's in the same process) never reach a closed recorder.
        """
        if self.gate is not None:
            self.gate.detach(shutdown=False)
        if self.telemetry is not None and self.recorder in self.telemetry.listeners:
            self.telemetry.listeners.remove(self.recorder)
        try:
            self.recorder.close()
        finally:
            self.ownership.release()
        return self.recorder.saved_everything


def _warn(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def start_recording(tracing: Tracing, paths: Paths, session_id: str, ownership=None,
                    warn: Callable[[str], None] = _warn, **recorder_kwargs: Any) -> Recording:
    """Create (or reopen) the session directory and attach the recorder to the provider.

    Runs before the first LLM call, so an unwritable home costs nothing but the message.
    ``ownership``: the session's lock when the caller took it already (resume takes it
    before loading); otherwise it is taken here, for a new session. On failure the lock
    this call took is released; the tracing is the caller's, which shuts it down.
    """
    from otel_agents.persistence.recorder import SessionRecorder
    from otel_agents.persistence.recorder_process import RecorderModeError, fork_recorder, recorder_mode
    from otel_agents.persistence.store import SessionStore, StoreError, check_ledger_writable

    try:
        mode = recorder_mode()
    except RecorderModeError as exc:
        raise RecordingConfigError(str(exc)) from None
    try:
        check_ledger_writable(paths.billing_file)
        store = SessionStore.create(paths.sessions_dir, session_id)
    except StoreError as exc:
        raise StorageUnwritable(str(exc)) from None
    if ownership is None:
        ownership = own_session(store.directory, create=True)
        if store.holds_session():  # checked under the lock: a concurrent start of the same id sees it too
            ownership.release()
            raise SessionExists(f"session {session_id} already exists in {store.directory}: resume it "
                                f"(otel_agents.resume, otel-agents resume) or give the new session another id")
    try:
        recorder = SessionRecorder(store, session_id, billing_file=paths.billing_file, **recorder_kwargs)
    except BaseException:
        ownership.release()
        raise
    ownership.announce()
    if mode == "process":
        recorder = fork_recorder(recorder)  # the recorder's work moves to the other core; it holds the lock too
        ownership.name_recorder(recorder.pid)
        # The ledger is the child's to write: once it is lost, the session spends no more.
        recorder.on_lost = lambda why: tracing.telemetry.halt(session_id, why)
    gate = _Detachable()
    gate.processors.append(recorder)
    tracing.add_processor(gate)
    tracing.add_listener(recorder)
    return Recording(recorder, ownership, gate, tracing.telemetry)
