"""The session recorder in a process of its own, so saving a session costs the run almost nothing.

A :class:`SessionRecorder` does real work per span (a redacted copy, two journal
lines, the tree's nodes, checkpoints): done in the run's thread it was most of the
cost of tracing. :func:`fork_recorder` forks after the recorder is built (a resumed
session's saved state included), and the child runs it on the other core. The run
keeps a :class:`RecorderLink`, a span processor and Telemetry listener that only
copies each span's fields and sends them down a pipe; the child rebuilds the span
and hands it to the recorder, so everything written is exactly what the recorder
would write in-process.

What this changes, and why it is safe:

- Crash: the pipe lives in the kernel, so if the run's process is killed, the child
  still reads every message sent and writes it before it exits. The child is in a
  session of its own (``setsid``), so Ctrl-C, a closed terminal or a kill of the
  process group does not stop it either.
- Readers: ``meta.json`` names the run's process as the writer and the child as its
  recorder; a session counts as written while either lives (:func:`writer_alive`).
- Secrets: credentials are scrubbed by Telemetry before they reach any span;
  the recorder's second pass over attributes happens in the child, and nothing is
  written anywhere before it. The pipe connects two processes of one program.
- Failures: the child's warnings come back through a second pipe and are said by
  the run's process (at each run's end and at close), so they land where the run's
  own output goes. If the child dies, the run goes on with one warning and nothing
  more is saved, as for a failed disk.
- Cost: the child polls the pipe rather than blocking on it, and in batches: it reads
  what a pause of up to 50 ms let gather (see :func:`_messages`). It defers a run's
  end writes until the pipe is empty, so the run's last run end and close write the
  tree once.
- ``close`` sends the last message, wakes the child from its pause (a third pipe) and
  waits for it: when the command returns, every file is written.

Only where ``os.fork`` is safe to use this way (Linux); elsewhere, and with
``OTEL_AGENTS_RECORDER=inline``, the recorder runs in the run's process as before.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
from typing import Any, Callable, Iterator, Mapping

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import INVALID_SPAN, Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.store import this_writer

MODE_ENV = "OTEL_AGENTS_RECORDER"
MODES = ("process", "inline")

_HEADER = struct.Struct("<I")
_ATOMIC_WRITE = 4096  # PIPE_BUF on Linux: a write this size or smaller is never split
_PIPE_BYTES = 1 << 20  # room for bursts while the child writes a checkpoint
_BLOCKED = {signal.SIGINT, signal.SIGTERM}
_DEFAULT_PIPE_BYTES = 65536  # where the pipe's size cannot be asked
# The child's pause while the pipe is empty: long, so that it reads many messages per
# wake-up; shorter while what gathers in one pause would fill half the pipe.
_PAUSE_MIN_S, _PAUSE_MAX_S = 0.002, 0.05

# Message kinds (first item of each pickled tuple).
_CONTEXT, _START, _END, _RECORD, _CLOSE = range(5)


class RecorderModeError(ValueError):
    """``OTEL_AGENTS_RECORDER`` names no mode (reported as a usage error)."""


def recorder_mode(environ: Mapping[str, str] = os.environ) -> str:
    """``process`` where fork is safe here (Linux), else ``inline``; the variable may choose."""
    raw = (environ.get(MODE_ENV) or "").strip().lower()
    if raw and raw not in MODES:
        raise RecorderModeError(f"{MODE_ENV} must be one of {', '.join(MODES)}, not {raw!r}")
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return "inline"  # macOS: forking a process that loaded system frameworks is not safe
    return raw or "process"


def fork_recorder(recorder: Any) -> "RecorderLink":
    """Run ``recorder`` (a built SessionRecorder) in a child process; return the run's side of it.

    The child's warnings come back through a second pipe and are said by the run's
    process with the recorder's own ``warn``, so they land where the run's own output goes.
    """
    read_fd, write_fd = os.pipe()
    notice_read, notice_write = os.pipe()
    wake_read, wake_write = os.pipe()  # close() wakes the child from its pause at once
    try:
        import fcntl

        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (OSError, AttributeError):
        pass  # the default 64 KiB works too: the run waits a little more while the child is busy
    run_pid = os.getpid()
    warn = recorder.warn
    sys.stdout.flush()
    sys.stderr.flush()
    collecting = gc.isenabled()
    gc.disable()  # no collection in the child before it has frozen what it inherited
    try:
        pid = os.fork()
    except BaseException:
        if collecting:
            gc.enable()
        for fd in (read_fd, write_fd, notice_read, notice_write, wake_read, wake_write):
            os.close(fd)
        raise
    if pid == 0:  # the child: never returns
        # The child never collects the run's objects, so it copies none of their pages.
        # Frozen here, not in the run before the fork: unfreezing there would also thaw
        # what the run had frozen itself (litellm's objects, see llm/litellm_loader.py).
        gc.freeze()
        if collecting:
            gc.enable()
        code = 1
        relay = _notice_writer(notice_write)
        try:
            os.close(write_fd)
            os.close(notice_read)
            os.close(wake_write)
            os.setsid()
            _leave_stdio()
            recorder.set_warn(relay)
            recorder.writer = {**this_writer(), "pid": run_pid, "recorder": os.getpid()}
            code = serve(recorder, read_fd, relay, wake_read)
        except BaseException as exc:  # noqa: BLE001  (anything: report it and end)
            try:
                relay(f"the session recorder stopped: {type(exc).__name__}: {exc}")
            except BaseException:  # noqa: BLE001
                pass
        finally:
            os._exit(code)  # no atexit hooks, no flushing of buffers copied from the run
    if collecting:
        gc.enable()
    os.close(read_fd)
    os.close(notice_write)
    os.close(wake_read)
    os.set_blocking(notice_read, False)
    return RecorderLink(write_fd, notice_read, pid, recorder.session_id, warn, wake_fd=wake_write)


def _leave_stdio() -> None:
    # The child says nothing on stdin or stdout: a pipeline reading the run's output must see
    # its end when the run's process ends, not when the recorder does.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        try:
            os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)


def _notice_writer(fd: int) -> Warn:
    def relay(message: str) -> None:
        data = (message.replace("\n", " ") + "\n").encode("utf-8", "replace")
        while data:
            data = data[os.write(fd, data):]

    return relay


# The child's status when something could not be saved (its warning says what).
EXIT_NOT_SAVED = 3


def serve(recorder: Any, read_fd: int, warn: Warn = stderr_warning, wake_fd: int | None = None) -> int:
    """The child's loop: rebuild each message and hand it to the recorder; 0 once closed."""
    resource, scope = Resource.get_empty(), None
    recorder.defer_run_end_writes = True
    for message in _messages(read_fd, recorder.idle, wake_fd):
        kind = message[0]
        if kind == _START:
            recorder.on_start(_started_span(message, resource, scope))
        elif kind == _END:
            recorder.on_end(_ended_span(message, resource, scope))
        elif kind == _RECORD:
            _, trace_id, span_id, record, ts_ns = message
            span = NonRecordingSpan(_context(trace_id, span_id)) if trace_id else INVALID_SPAN
            recorder.on_record(span, record, ts_ns)
        elif kind == _CONTEXT:
            _, attributes, schema_url, scope_fields = message
            resource = Resource(attributes, schema_url)
            scope = InstrumentationScope(*scope_fields) if scope_fields is not None else None
        elif kind == _CLOSE:
            recorder.close()
            return 0 if recorder.saved_everything else EXIT_NOT_SAVED
        else:
            warn(f"the session recorder received a message it does not know ({kind!r}); it stops")
            return 1
    recorder.idle()  # the run's process ended without closing (a crash): everything it sent is written
    return 0 if recorder.saved_everything else EXIT_NOT_SAVED


def _messages(read_fd: int, on_idle: Callable[[], bool | None], wake_fd: int | None = None) -> Iterator[tuple]:
    """Every whole message in the pipe, in order, until the writer's end is closed.

    ``on_idle`` is called each time the pipe is found empty after messages, and again at
    once (after another look at the pipe) while it returns True: idle work done in slices.

    The pipe is polled, not waited on, and the pause between looks is long. A reader
    blocked in ``read`` makes each of the run's writes wake it up (a cross-CPU wake-up,
    dear in a VM), and one that looks every millisecond reads a dozen messages a time.
    Either costs the run more than the messages do: on the overhead session (40
    alternating pairs), pauses of up to 50 ms instead of 1-20 ms took a fifth off the
    recorder's CPU and 3 % off the run's wall time. The pause is halved while what
    gathers in one would fill half the pipe (the run would wait on a full pipe), and
    grows back while it is small. ``wake_fd`` becomes readable when the run closes
    (or ends): the pause ends at once, so ``close`` waits for the writing only.
    """
    os.set_blocking(read_fd, False)
    capacity = _pipe_capacity(read_fd)
    waiting = _Pause(wake_fd)
    buffer = bytearray()
    pause = _PAUSE_MIN_S
    gathered = 0  # bytes read since the last pause
    fresh = True  # messages arrived since on_idle was last called (at first: a resumed session's idle work)
    more = False  # on_idle has more to do
    header = _HEADER.size
    try:
        while True:
            try:
                chunk = os.read(read_fd, _PIPE_BYTES)
            except BlockingIOError:
                if fresh or more:
                    fresh = False
                    more = bool(on_idle())
                    if more:
                        continue
                pause, gathered = _next_pause(pause, gathered, capacity), 0
                waiting.sleep(pause)
                continue
            if not chunk:
                return  # a half-sent last message (the run was killed while sending it) never happened
            fresh = True
            gathered += len(chunk)
            buffer += chunk
            start = 0
            while len(buffer) - start >= header:
                (size,) = _HEADER.unpack_from(buffer, start)
                end = start + header + size
                if end > len(buffer):
                    break
                yield pickle.loads(buffer[start + header:end])
                start = end
            del buffer[:start]
    finally:
        os.close(read_fd)
        waiting.close()


def _next_pause(pause: float, gathered: int, capacity: int) -> float:
    """The next pause, from the bytes that gathered in the pipe during the last one."""
    if gathered > capacity // 2:
        return max(pause / 2, _PAUSE_MIN_S)  # the run might fill the pipe and wait: look sooner
    if gathered < capacity // 8:
        return min(pause * 2, _PAUSE_MAX_S)
    return pause


class _Pause:
    """The child's sleep between looks at the pipe, which the run's close (or death) ends at once.

    ``poll``, not ``select``: a descriptor numbered past 1023 (a run with many files
    open) is fine.
    """

    def __init__(self, wake_fd: int | None):
        self.fd = wake_fd
        self._poll = select.poll()
        if wake_fd is not None:
            self._poll.register(wake_fd, select.POLLIN)

    def sleep(self, seconds: float) -> None:
        if self.fd is None:
            time.sleep(seconds)
        elif self._poll.poll(seconds * 1000) and not os.read(self.fd, 64):
            self.close()  # the run's end of it is closed, so is its data pipe: plain sleeps until that ends

    def close(self) -> None:
        if self.fd is not None:
            self._poll.unregister(self.fd)
            os.close(self.fd)
            self.fd = None


def _pipe_capacity(fd: int) -> int:
    try:
        import fcntl

        return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    except (OSError, AttributeError):
        return _DEFAULT_PIPE_BYTES


class RecorderLink(SpanProcessor):
    """The run's side: a span processor and Telemetry listener that sends everything to the child.

    Its hot path only reads the span's fields, pickles them and writes one frame.
    """

    def __init__(self, write_fd: int, notice_fd: int, pid: int, session_id: str, warn: Warn = stderr_warning,
                 wake_fd: int | None = None):
        self.fd = write_fd
        self.notice_fd = notice_fd  # the child's warnings, one per line (non-blocking)
        self.wake_fd = wake_fd  # a byte here ends the child's pause between looks at the pipe
        self._notices = b""
        self.pid = pid
        self.session_id = session_id
        self.warn = warn
        self._resource: Any = None  # the resource and scope the child was last told of
        self._scope: Any = None
        self._lost = False  # the child is gone: nothing more can be saved
        self._closed = False
        self.saved_everything = True  # False once the child is lost or ended saying it could not save
        self._lock = threading.Lock()  # spans may end on other threads: frames must not interleave

    # -------------------------------------------------------------- span processor
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self._lost:
            return
        self._send((_START, *self._head(span), _attributes_of(span), _links_of(span)))

    def on_end(self, span: ReadableSpan) -> None:
        if self._lost:
            return
        status = span.status
        self._send((
            _END, *self._head(span), span.end_time, _attributes_of(span),
            [(e.name, e.timestamp, _attributes_of(e)) for e in span.events],
            _links_of(span),
            status.status_code.value, status.description,
        ))
        if span.parent is None:  # a run's end: the child's warnings so far are said (the rest at close)
            self._say_notices()

    def _head(self, span: Any) -> tuple:
        """What a span's start and end messages both begin with; the context first, if it is new."""
        if span.resource is not self._resource or span.instrumentation_scope is not self._scope:
            self._send_context(span)
        context = span.get_span_context()
        parent = span.parent
        return (
            context.trace_id, context.span_id, (parent.trace_id, parent.span_id) if parent is not None else None,
            span.name, span.kind.value, span.start_time,
        )

    def shutdown(self) -> None:
        self.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every frame is in the kernel's pipe the moment it is sent

    # -------------------------------------------------------------- listener
    def on_record(self, span: Any, record: Mapping[str, Any], ts_ns: int) -> None:
        if self._lost:
            return
        context = span.get_span_context()
        record = record if type(record) is dict else dict(record)  # Telemetry's own copy: pickled at once
        if context.is_valid:
            self._send((_RECORD, context.trace_id, context.span_id, record, ts_ns))
        else:
            self._send((_RECORD, 0, 0, record, ts_ns))

    def on_log(self, span: Any, level: str, message: str, ts_ns: int) -> None:
        """Log lines are span events: they travel with their span's end."""

    # -------------------------------------------------------------- closing
    def close(self) -> None:
        """Send the last message and wait until the child has written everything; idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._lost:
            self._send((_CLOSE,))
        try:
            os.close(self.fd)
        except OSError:
            pass
        if self.wake_fd is not None:
            try:
                os.write(self.wake_fd, b"\0")
            except OSError:
                pass  # the child is gone: nothing to wake
            os.close(self.wake_fd)
        code = _wait(self.pid)
        self._say_notices(final=True)
        os.close(self.notice_fd)
        self.saved_everything = code == 0 and not self._lost
        if code not in (0, None, EXIT_NOT_SAVED) and not self._lost:
            self.warn(f"the session recorder of {self.session_id} ended with status {code}; "
                      "resume reads what it saved")

    # -------------------------------------------------------------- helpers
    def _say_notices(self, final: bool = False) -> None:
        """Say the child's warnings that have arrived (all of them once it has ended)."""
        try:
            chunk = os.read(self.notice_fd, 65536)
            while chunk:
                self._notices += chunk
                if not final:
                    break
                chunk = os.read(self.notice_fd, 65536)
        except BlockingIOError:
            pass
        except OSError:
            return
        *lines, self._notices = self._notices.split(b"\n")
        if final and self._notices:
            lines.append(self._notices)
            self._notices = b""
        for line in lines:
            self.warn(line.decode("utf-8", "replace"))

    def _send_context(self, span: Any) -> None:
        # Every span of a tracer shares these two objects: sent once, not with each span.
        self._resource, self._scope = resource, scope = span.resource, span.instrumentation_scope
        self._send((
            _CONTEXT, dict(resource.attributes) if resource is not None else {},
            resource.schema_url if resource is not None else "",
            (scope.name, scope.version, scope.schema_url) if scope is not None else None,
        ))

    def _send(self, message: tuple) -> None:
        try:
            payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
            frame = _HEADER.pack(len(payload)) + payload
        except Exception as exc:  # a value that cannot be sent: never into the run
            with self._lock:
                if self._lost:
                    return
                self._lost = True
            self.warn(f"the session recorder of {self.session_id} cannot be sent what the run recorded "
                      f"({type(exc).__name__}: {exc}); the run goes on without saving it")
            return
        with self._lock:
            if self._lost:
                return
            try:
                if len(frame) <= _ATOMIC_WRITE:
                    os.write(self.fd, frame)  # one write, whole or not at all
                else:
                    _write_whole(self.fd, frame)
                return
            except OSError as exc:  # BrokenPipeError: the child is gone
                self._lost = True
                reason = exc.strerror or exc
        self.warn(f"the session recorder of {self.session_id} is gone ({reason}); the run goes on without saving it")


def _attributes_of(holder: Any) -> Mapping[str, Any]:
    """A span's or event's attributes, to be pickled at once (never kept).

    The SDK keeps them in a ``BoundedAttributes`` over a plain dict; pickling that
    dict directly saves a Python-level copy per span and event on the run's thread.
    Anything else (another SDK version, a hand-made span) is copied the public way.
    """
    inner = getattr(holder, "_attributes", None)
    inner = getattr(inner, "_dict", inner)
    if isinstance(inner, dict):
        return inner
    return dict(holder.attributes or {})


def _links_of(span: Any) -> list[tuple[int, int, dict[str, Any]]]:
    return [(link.context.trace_id, link.context.span_id, dict(link.attributes or {})) for link in span.links]


def _write_whole(fd: int, frame: bytes) -> None:
    """A frame larger than the pipe's atomic size: Ctrl-C must not leave half of it in the pipe."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
    try:
        view = memoryview(frame)
        while view:
            view = view[os.write(fd, view):]
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _wait(pid: int) -> int | None:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)


# ------------------------------------------------------------------ the child's spans
def _context(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _parent(value: tuple[int, int] | None) -> SpanContext | None:
    return SpanContext(value[0], value[1], is_remote=False) if value is not None else None


def _links(links: list[tuple[int, int, dict[str, Any]]]) -> list[Link]:
    return [Link(_context(trace_id, span_id), attributes) for trace_id, span_id, attributes in links]


def _started_span(message: tuple, resource: Resource, scope: InstrumentationScope | None) -> ReadableSpan:
    _, trace_id, span_id, parent, name, kind, start_ns, attributes, links = message
    return ReadableSpan(
        name=name, context=_context(trace_id, span_id), parent=_parent(parent), resource=resource,
        attributes=attributes, links=_links(links), kind=SpanKind(kind), start_time=start_ns,
        instrumentation_scope=scope,
    )


def _ended_span(message: tuple, resource: Resource, scope: InstrumentationScope | None) -> ReadableSpan:
    (_, trace_id, span_id, parent, name, kind, start_ns, end_ns, attributes, events, links,
     status_code, status_description) = message
    return ReadableSpan(
        name=name, context=_context(trace_id, span_id), parent=_parent(parent), resource=resource,
        attributes=attributes,
        events=[Event(event_name, event_attributes, ts) for event_name, ts, event_attributes in events],
        links=_links(links),
        kind=SpanKind(kind),
        status=Status(StatusCode(status_code), status_description),
        start_time=start_ns, end_time=end_ns,
        instrumentation_scope=scope,
    )
