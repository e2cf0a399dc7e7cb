"""The session recorder in a process of its own, so saving a session costs the run almost nothing.

A :class:`SessionRecorder` does real work per span (a redacted copy, two journal
lines, the tree's nodes, checkpoints): done in the run's thread it was most of the
cost of tracing. :func:`fork_recorder` forks after the recorder is built (a resumed
session's saved state included), and the child runs it on the other core. The run
keeps a :class:`~otel_agents.persistence.recorder_link.RecorderLink`, a span
processor and Telemetry listener that only sends each span's SpanData fields down a
pipe; the child builds the SpanData and feeds the recorder's sink through the same
intake as in-process (``SessionRecorder.take_start`` ...), so everything written is
exactly what the recorder would write in-process. This module is only transport.

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
  what a pause of up to 50 ms let gather (see :func:`_batches`) and hands each batch's
  lines to the kernel once (``SessionSink.batch``: until then the pipe holds them). It
  defers a run's end writes until the pipe is empty, so the run's last run end and
  close write the tree once.
- ``close`` sends the last message, wakes the child from its pause (a third pipe) and
  waits for it: when the command returns, every file is written.

Only where ``os.fork`` is safe to use this way (Linux); elsewhere, and with
``OTEL_AGENTS_RECORDER=inline``, the recorder runs in the run's process as before.
"""

from __future__ import annotations

import gc
import os
import select
import sys
import time
from typing import Any, Callable, Iterator, Mapping

from otel_agents.persistence.notices import Warn, stderr_warning
from otel_agents.persistence.recorder_link import (
    CLOSE, CONTEXT, END, EXIT_NOT_SAVED, HEADER, RECORD, START, RecorderLink, decode_frame,
)
from otel_agents.persistence.session_meta import this_writer
from otel_agents.tracing.credentials import credential_free
from otel_agents.tracing.spandata import EventData, LinkData, SpanData

__all__ = ["EXIT_NOT_SAVED", "RecorderLink", "RecorderModeError", "fork_recorder", "recorder_mode", "serve"]

MODE_ENV = "OTEL_AGENTS_RECORDER"
MODES = ("process", "inline")

_PIPE_BYTES = 1 << 20  # room for bursts while the child writes a checkpoint
_DEFAULT_PIPE_BYTES = 65536  # where the pipe's size cannot be asked
# The child's pause while the pipe is empty: long, so that it reads many messages per
# wake-up; shorter while what gathers in one pause would fill half the pipe.
_PAUSE_MIN_S, _PAUSE_MAX_S = 0.002, 0.05


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
    for stream in (sys.stdout, sys.stderr):  # None when closed (`>&-`); the child must not write it again
        if stream is not None:
            try:
                stream.flush()
            except (OSError, ValueError):  # unwritable: its owner says so when it next writes
                pass
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


def serve(recorder: Any, read_fd: int, warn: Warn = stderr_warning, wake_fd: int | None = None) -> int:
    """The child's loop: each message's SpanData (or record) into the recorder's sink; 0 once closed."""
    resource: dict[str, Any] = {}
    scope = None
    recorder.defer_run_end_writes = True
    for batch, free in _batches(read_fd, recorder.idle, wake_fd):
        with recorder.batch():  # lines reach the kernel once per batch: until then the pipe holds them
            for message in batch:
                kind = message[0]
                if kind == START:
                    recorder.take_start(_span_data(message[1], resource, scope), free)
                elif kind == END:
                    recorder.take_end(_span_data(message[1], resource, scope), free)
                elif kind == RECORD:
                    _, trace_id, span_id, record, ts_ns = message
                    recorder.take_record(record, ts_ns, trace_id, span_id)
                elif kind == CONTEXT:
                    _, resource, scope = message
                elif kind == CLOSE:
                    recorder.close()
                    return 0 if recorder.saved_everything else EXIT_NOT_SAVED
                else:
                    warn(f"the session recorder received a message it does not know ({kind!r}); it stops")
                    return 1
    recorder.idle()  # the run's process ended without closing (a crash): everything it sent is written
    return 0 if recorder.saved_everything else EXIT_NOT_SAVED


def _span_data(fields: tuple, resource: dict[str, Any], scope: str | None) -> SpanData:
    """The SpanData whose fields the run sent (``recorder_link.span_fields``), values as the SDK held them."""
    (trace_id, span_id, parent_span_id, name, kind, start_ns, end_ns, attributes, events, links,
     status, status_message) = fields
    return SpanData(
        trace_id, span_id, parent_span_id, name, kind, start_ns, end_ns, attributes,
        tuple(EventData(*event) for event in events), tuple(LinkData(*link) for link in links),
        status, status_message, resource, scope,
    )


def _batches(read_fd: int, on_idle: Callable[[], bool | None],
             wake_fd: int | None = None) -> Iterator[tuple[list[tuple], bool]]:
    """Every whole message in the pipe, in order, until the writer's end is closed: a list per read,
    with whether their bytes hold no known credential (``credentials.credential_free``: one search
    of the batch, so the recorder copies them the short way).

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
    header = HEADER.size
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
            batch = []
            with memoryview(buffer) as view:  # payloads decoded in place, not copied out first
                while len(buffer) - start >= header:
                    (size,) = HEADER.unpack_from(buffer, start)
                    end = start + header + size
                    if end > len(buffer):
                        break
                    batch.append(decode_frame(view[start + header:end]))
                    start = end
            free = bool(batch) and credential_free(buffer, start)
            del buffer[:start]
            if batch:
                yield batch, free
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
