"""The run's side of the recorder process: SDK spans of the session as SpanData fields, framed into a pipe.

Each message is one tuple behind a 4-byte length (:func:`encode_frame`). A span start or end is sent
as the fields of :class:`~otel_agents.tracing.spandata.SpanData`, in its order, with
the SDK's values as they are (:func:`span_fields`); the resource and scope, shared by
every span of a tracer, are sent once (``CONTEXT``). The child builds the SpanData and
feeds its sink: no SDK class is rebuilt on the other side.
"""

from __future__ import annotations

import marshal
import os
import pickle
import signal
import struct
import threading
from typing import Any, Callable, Mapping

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.recorder import SessionTraces
from otel_agents.tracing.spandata import KIND_NAMES, STATUS_NAMES, hex_span_id, hex_trace_id, sdk_attributes

HEADER = struct.Struct("<I")  # the payload's length
# A payload's first byte says how the rest is encoded. Spans and records hold built-in
# values only, which marshal writes and reads about twice as fast as pickle; pickle
# takes anything marshal refuses (a str subclass, another class), so nothing changes type.
_MARSHAL, _PICKLE = b"m", b"p"
_MARSHAL_TAG = _MARSHAL[0]
_ATOMIC_WRITE = 4096  # PIPE_BUF on Linux: a write this size or smaller is never split
_BLOCKED = {signal.SIGINT, signal.SIGTERM}

# Message kinds (first item of each message tuple).
CONTEXT, START, END, RECORD, CLOSE = range(5)
# The child's status when something could not be saved (its warning says what).
EXIT_NOT_SAVED = 3


def encode_frame(message: tuple) -> bytes:
    """One message as the pipe carries it: length, encoding tag, payload."""
    try:
        body, tag = marshal.dumps(message), _MARSHAL
    except ValueError:  # a type marshal does not write exactly
        body, tag = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL), _PICKLE
    return b"".join((HEADER.pack(len(body) + 1), tag, body))


def decode_frame(payload: Any) -> tuple:
    """The message in one frame's payload (bytes or a memoryview of them: what follows the length)."""
    if payload[0] == _MARSHAL_TAG:
        return marshal.loads(payload[1:])
    return pickle.loads(payload[1:])


def span_fields(span: Any, ended: bool) -> tuple:
    """SpanData's fields up to ``status_message`` (resource and scope travel as CONTEXT).

    Values are the SDK's own (attribute dicts, tuples): the child reads them into the
    session's form, so the run's thread only copies references into a frame.
    """
    context = span.get_span_context()
    parent = span.parent
    if not ended:
        return (hex_trace_id(context.trace_id), hex_span_id(context.span_id),
                hex_span_id(parent.span_id) if parent is not None and parent.is_valid else None,
                span.name, KIND_NAMES.get(span.kind, "INTERNAL"), span.start_time or 0, None,
                sdk_attributes(span), (), _links_of(span), "UNSET", None)
    status = span.status
    return (hex_trace_id(context.trace_id), hex_span_id(context.span_id),
            hex_span_id(parent.span_id) if parent is not None and parent.is_valid else None,
            span.name, KIND_NAMES.get(span.kind, "INTERNAL"), span.start_time or 0, span.end_time,
            sdk_attributes(span), tuple((e.name, e.timestamp, sdk_attributes(e)) for e in span.events),
            _links_of(span), STATUS_NAMES.get(status.status_code, "UNSET"), status.description)


class RecorderLink(SpanProcessor):
    """The run's side: a span processor and Telemetry listener that sends the session's spans to the child.

    Its hot path only picks the span's fields, encodes them and writes one frame. Spans
    and records of other sessions are not sent (:class:`SessionTraces`).
    """

    def __init__(self, write_fd: int, notice_fd: int, pid: int, session_id: str, warn: Warn = stderr_warning,
                 wake_fd: int | None = None, on_lost: Callable[[str], None] | None = None):
        self.fd = write_fd
        # Told once the child is lost: the ledger is written only by it, so whoever runs the session
        # can stop spending (session_recording halts the session's model calls). None: the run goes on.
        self.on_lost = on_lost
        self.notice_fd = notice_fd  # the child's warnings, one per line (non-blocking)
        self.wake_fd = wake_fd  # a byte here ends the child's pause between looks at the pipe
        self._notices = b""
        self.pid = pid
        self.session_id = session_id
        self.warn = warn
        self._traces = SessionTraces(session_id)
        self._resource: Any = None  # the resource and scope the child was last told of
        self._scope: Any = None
        self._lost = False  # the child is gone: nothing more can be saved
        self._closed = False
        self.saved_everything = True  # False once the child is lost or ended saying it could not save
        self._lock = threading.Lock()  # spans may end on other threads: frames must not interleave

    # -------------------------------------------------------------- span processor
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self._lost or not self._traces.admit_start(span):
            return
        self._check_context(span)
        self._send((START, span_fields(span, ended=False)))

    def on_end(self, span: ReadableSpan) -> None:
        if self._lost or not self._traces.admits(span.get_span_context().trace_id):
            return
        self._check_context(span)
        self._send((END, span_fields(span, ended=True)))
        if span.parent is None:  # a run's end: the child's warnings so far are said (the rest at close)
            self._say_notices()

    def shutdown(self) -> None:
        self.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every frame is in the kernel's pipe the moment it is sent

    # -------------------------------------------------------------- listener
    def on_record(self, span: Any, record: Mapping[str, Any], ts_ns: int) -> None:
        if self._lost:
            return
        context = span.get_span_context()
        record = record if type(record) is dict else dict(record)  # Telemetry's own copy: encoded at once
        if not context.is_valid:
            self._send((RECORD, None, None, record, ts_ns))
        elif self._traces.admits(context.trace_id):
            self._send((RECORD, hex_trace_id(context.trace_id), hex_span_id(context.span_id), record, ts_ns))

    def on_log(self, span: Any, level: str, message: str, ts_ns: int) -> None:
        """Log lines are span events: they travel with their span's end."""

    # -------------------------------------------------------------- closing
    def close(self) -> None:
        """Send the last message and wait until the child has written everything; idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._lost:
            self._send((CLOSE,))
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

    def _check_context(self, span: Any) -> None:
        # Every span of a tracer shares these two objects: sent once, not with each span.
        if span.resource is self._resource and span.instrumentation_scope is self._scope:
            return
        self._resource, self._scope = resource, scope = span.resource, span.instrumentation_scope
        self._send((CONTEXT, dict(resource.attributes) if resource is not None else {},
                    scope.name if scope is not None else None))

    def _send(self, message: tuple) -> None:
        try:
            frame = encode_frame(message)
        except Exception as exc:  # a value that cannot be sent: never into the run
            with self._lock:
                if self._lost:
                    return
                self._lost = True
            self._lose(f"the session recorder of {self.session_id} cannot be sent what the run recorded "
                       f"({type(exc).__name__}: {exc})")
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
        self._lose(f"the session recorder of {self.session_id} is gone ({reason})")

    def _lose(self, what: str) -> None:
        if self.on_lost is None:
            self.warn(f"{what}; the run goes on without saving it")
            return
        self.warn(f"{what}; no further model call is made, since nothing more could be saved or billed "
                  "(`otel-agents sessions repair` bills what was saved)")
        self.on_lost(what)


def _links_of(span: Any) -> tuple:
    return tuple((hex_trace_id(link.context.trace_id), hex_span_id(link.context.span_id), dict(link.attributes or {}))
                 for link in span.links)


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
