"""`otel-agents collect` as a process: the writer, the HTTP and gRPC receivers, signals, the log line."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass

import uvicorn

from otel_agents.collect.grpc_receiver import grpc_server
from otel_agents.collect.http_receiver import http_app
from otel_agents.collect.writer import Writer
from otel_agents.persistence.intake_state import HoldPolicy
from otel_agents.persistence.ownership import Ownership, SessionBusy, take
from otel_agents.persistence.paths import Paths
from otel_agents.persistence.span_intake import SpanIntake, unchanged
from otel_agents.persistence.store import NotALedger

STATE_DIR = ".collect"  # under the sessions directory: the receiver's lock, held spans, unsettled sessions


class CollectError(Exception):
    """A set-up problem (an address that cannot be bound, a sessions directory that cannot be written): one line."""


@dataclass(frozen=True)
class CollectOptions:
    paths: Paths
    http: str | None = "127.0.0.1:4318"
    grpc: str | None = None
    json_log: bool = False
    log_every_s: float = 60.0
    max_queued: int = 256
    settle_s: float = 1.0
    write_delay_s: float = 0.0
    hold: HoldPolicy = HoldPolicy()  # how long a trace naming no session is held


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    # 1-65535: a larger port overflowed in bind (a traceback) or was wrapped by grpcio onto another port;
    # 0 (any free port) is refused too, since exporters must be told the port and the log line names the given one.
    if not sep or not port.isascii() or not port.isdigit() or not host or not 1 <= int(port) <= 65535:
        raise CollectError(f"invalid address {address!r}: expected HOST:PORT, PORT 1-65535")
    return host.strip("[]"), int(port)


def _log(options: CollectOptions, fields: dict) -> None:
    if options.json_log:
        line = json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields})
    else:
        line = "collect: " + " ".join(f"{k}={v}" for k, v in fields.items())
    print(line, file=sys.stderr, flush=True)


def _bind(address: str) -> socket.socket:
    host, port = split_address(address)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # connections queue from now on, before uvicorn's loop starts accepting
    except OSError as exc:
        sock.close()
        raise CollectError(f"cannot listen on {address}: {exc.strerror or exc}") from None
    return sock


def run_collect(options: CollectOptions) -> None:
    """Receive until SIGTERM/SIGINT; then stop accepting, write what was acknowledged, return."""
    if not options.http and not options.grpc:
        raise CollectError("nothing to listen on: give --http or --grpc")
    http_socket = _bind(options.http) if options.http else None  # bound first: a busy port fails before anything runs
    if options.grpc:
        try:
            _bind(options.grpc).close()  # grpcio binds it later; a busy port says so here, as HTTP's does
        except CollectError:
            if http_socket is not None:
                http_socket.close()
            raise
    lock = None
    try:
        lock = _own_sessions_dir(options.paths)
        intake = _intake(options)
    except (OSError, CollectError, NotALedger) as exc:
        if lock is not None:
            lock.release()
        if http_socket is not None:
            http_socket.close()
        if isinstance(exc, NotALedger):
            raise CollectError(str(exc)) from None
        if isinstance(exc, CollectError):
            raise
        raise CollectError(f"cannot write {options.paths.sessions_dir}: {exc}") from None
    writer = Writer(intake, options.max_queued, options.settle_s, options.write_delay_s)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    grpc = http = http_thread = None
    if options.grpc:
        try:
            grpc = grpc_server(writer, options.grpc)
        except RuntimeError as exc:  # taken since the check above: undo the start quietly, the error is the line
            writer.stop()
            lock.release()
            if http_socket is not None:
                http_socket.close()
            raise CollectError(str(exc)) from None
    started = time.monotonic()
    try:
        if http_socket is not None:
            config = uvicorn.Config(http_app(writer), log_level="warning", lifespan="off", access_log=False)
            http = uvicorn.Server(config)
            http_thread = threading.Thread(target=http.run, kwargs={"sockets": [http_socket]}, daemon=True)
            http_thread.start()
        _log(options, {"listening": True, "http": options.http, "grpc": options.grpc,
                       "sessions_dir": str(options.paths.sessions_dir)})
        started = time.monotonic()
        while not stop.wait(options.log_every_s):
            _minute_line(options, writer, time.monotonic() - started)
            started = time.monotonic()
    finally:
        # In-flight requests finish (the writer still runs) before the writer drains and closes.
        if http is not None:
            http.should_exit = True
            http_thread.join(30)
        if grpc is not None:
            grpc.stop(grace=30).wait()
        writer.stop()
        # What came since the last line (the requests just finished included): the lines add up to the whole run.
        _minute_line(options, writer, time.monotonic() - started)
        lock.release()
        _log(options, {"stopped": True})


def _intake(options: CollectOptions) -> SpanIntake:
    """The one span intake, as the receiver uses it: only spans of named sessions (others wait, spooled),
    taken as they are (our own spans), trees written when a session is quiet for ``settle_s``."""
    paths = options.paths
    return SpanIntake(paths.sessions_dir, paths.billing_file, shape=unchanged, named_only=True,
                      state_dir=paths.sessions_dir / STATE_DIR, checkpoint_each_batch=False,
                      hold_s=options.settle_s, hold=options.hold, writer={"command": "collect", "pid": os.getpid()}, from_wire=True)


def _own_sessions_dir(paths: Paths) -> Ownership:
    """One receiver per sessions directory: it alone writes the held spans and settles what a crash left."""
    try:
        return take(paths.sessions_dir / STATE_DIR, create=True)
    except SessionBusy as exc:
        holder = f"pid {exc.holder['pid']}" if "pid" in exc.holder else "another process"
        raise CollectError(f"{paths.sessions_dir} is being collected into by {holder} "
                           "(another `otel-agents collect`)") from None


def _minute_line(options: CollectOptions, writer: Writer, elapsed_s: float) -> None:
    counters = writer.take_counters()
    _log(options, {
        "spans_per_s": round(counters.spans / max(elapsed_s, 1e-9), 1),
        "sessions": len(counters.sessions),
        "rejected": counters.rejected,
        "ignored": counters.ignored,
        "held": counters.held,
        "busy": counters.refused_busy,
    })
