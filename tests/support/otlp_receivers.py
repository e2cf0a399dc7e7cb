"""Real OTLP trace receivers on loopback, for tests.

Both receivers are built on the official protobuf definitions shipped in
``opentelemetry-proto`` and speak the real wire protocols, so the stock
``OTLPSpanExporter`` classes (gRPC and HTTP/protobuf) can be pointed at them
unchanged:

* :class:`GrpcTraceReceiver` -- a ``grpc`` server implementing
  ``opentelemetry.proto.collector.trace.v1.TraceService/Export``.
* :class:`HttpTraceReceiver` -- an ``http.server`` accepting
  ``POST /v1/traces`` with ``Content-Type: application/x-protobuf``
  (``Content-Encoding: gzip`` / ``deflate`` handled).

Both bind ``127.0.0.1`` on a free port, run in background threads, are context
managers, and have a bounded :meth:`stop`. Each has three modes, switchable
at any time with ``set_mode``:

``"ok"``
    Store the request and answer with an (empty) ``ExportTraceServiceResponse``.
``"refuse"``
    Answer with an error: a gRPC status (``refuse_code``, default
    ``UNAVAILABLE``; e.g. ``PERMISSION_DENIED`` is not retried) or an HTTP
    status (``refuse_status``, default 503; e.g. 403 is not retried).
    ``retry_after`` (seconds) adds a ``google.rpc.RetryInfo`` trailer (gRPC)
    or a ``Retry-After`` header (HTTP), which the exporters honour as their
    backoff.
``"hang"``
    Do not answer for ``hang_seconds`` (default 30 s), which is meant to be
    longer than the client timeout. The wait ends early when the client gives
    up (gRPC deadline / HTTP connection closed) or the receiver stops, so a
    hanging receiver never blocks :meth:`stop` or interpreter exit.

``HttpTraceReceiver(first_answer_delay=S)`` is a cold backend: in ``"ok"`` mode
its first request is stored and answered only after ``S`` seconds, even if the
client gave up meanwhile (as a cold MLflow server did); later ones at once.

Only calls answered successfully in ``"ok"`` mode count as received data
(``requests`` / ``spans()``); every call, whatever its outcome, is recorded
in ``calls`` with its headers, so retries can be counted.

Gotchas with the stock Python exporters (opentelemetry-exporter-otlp 1.45)
---------------------------------------------------------------------------
* Endpoints. gRPC: ``endpoint=`` / ``OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT`` =
  ``"http://127.0.0.1:PORT"``; only the host:port is used, and the ``http``
  scheme selects an insecure channel (``https`` -> TLS). HTTP: the base
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` gets ``/v1/traces`` appended, but
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and the constructor ``endpoint=``
  are used verbatim and must already end in ``/v1/traces`` (use
  :attr:`HttpTraceReceiver.traces_url`).
* ``OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT`` is read as *seconds* by the Python
  exporters (the spec says milliseconds). The timeout is a deadline for the
  whole export call, retries included.
* Headers: ``OTEL_EXPORTER_OTLP[_TRACES]_HEADERS="authorization=Bearer%20x"``
  (URL-encoded, keys lower-cased). A constructor ``headers=`` dict is passed
  to gRPC as is, and gRPC metadata keys must be lower case: ``{"Authorization":
  ...}`` fails client-side with INTERNAL "Invalid metadata" (not retried,
  nothing reaches the receiver). The HTTP exporter lower-cases keys.
  The exporters add ``user-agent: OTel-OTLP-Exporter-Python/<version>``
  (gRPC prefixes it to grpc's own user agent).
* Compression: ``OTEL_EXPORTER_OTLP[_TRACES]_COMPRESSION=gzip`` (or
  ``compression=``). HTTP sends ``Content-Encoding: gzip``/``deflate`` which
  this receiver decodes; gRPC compression is transparent to the servicer.
* ``OTEL_EXPORTER_OTLP_PROTOCOL`` is *not* read by the exporter classes; only
  SDK auto-configuration uses it to choose the class.
* Retries: gRPC retries ``UNAVAILABLE``, ``DEADLINE_EXCEEDED``,
  ``RESOURCE_EXHAUSTED``, ``ABORTED``, ``CANCELLED``, ``OUT_OF_RANGE``,
  ``DATA_LOSS``; HTTP retries 429/502/503/504 and connection errors/timeouts.
  Backoff is 1 s, 2 s, 4 s ... (+-20 % jitter), at most 6 attempts, and a
  retry is only made if its backoff still fits before the deadline. So with
  a 2 s timeout a retryable refusal costs ~1 s (2 attempts); a hang costs the
  full 2 s (1 attempt); non-retryable codes fail at once.
* ``BatchSpanProcessor.force_flush()`` exports synchronously in the caller,
  ignores its ``timeout_millis`` and returns ``True`` even when the export
  failed; ``SimpleSpanProcessor`` exports synchronously inside ``span.end()``.
  Neither raises into the caller: failures are only logged.

Measured (this machine, exporter timeout 2 s, one batch, BatchSpanProcessor;
``flush`` = ``provider.force_flush()``, ``shutdown`` = ``provider.shutdown()``
right after that flush; see ``test_otlp_receivers.py`` for the bounds that
are asserted)::

    receiver                  grpc flush     http flush     Export calls seen
    ------------------------  -------------  -------------  -----------------
    ok                        0.01 s         0.01 s         1
    down (nothing listens)    1.02-1.04 s    0.87-1.06 s    -
    refuse UNAVAILABLE / 503  0.84-1.13 s    0.81-1.21 s    2
    refuse PERM_DENIED / 403  0.01 s         0.00 s         1
    hang (> timeout)          2.00 s         2.01 s         1
    refuse, retry_after=0.05  0.27 s         0.27 s         6 (max attempts)

    provider.shutdown() after a failed flush: 0.00 s in every case.
    provider.shutdown() with the span still queued (no flush) costs the same
    as the flush column (the worker exports the queue first); with
    SimpleSpanProcessor the same delay is paid inside span.end().
    receiver.stop(): <= 0.05 s, also while a call hangs.

    With the default 10 s timeout the same arithmetic gives ~7 s (5.6-8.4 s,
    4 attempts) for down/retryable refusals and 10 s for a hang.
"""

from __future__ import annotations

import gzip
import http.server
import select
import socket
import threading
import time
import zlib
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from google.rpc.status_pb2 import Status as RpcStatus

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status as ProtoStatus

__all__ = [
    "GrpcTraceReceiver",
    "HttpTraceReceiver",
    "ReceivedCall",
    "ReceivedLink",
    "ReceivedSpan",
    "any_value_to_python",
    "attributes_to_dict",
    "flatten_spans",
    "unused_endpoint",
]

Mode = Literal["ok", "refuse", "hang"]
_MODES = ("ok", "refuse", "hang")
_LOOPBACK = "127.0.0.1"


# --------------------------------------------------------------------------
# Plain-data view of received spans
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReceivedLink:
    trace_id: str
    span_id: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str  # 32 lowercase hex chars
    span_id: str  # 16 lowercase hex chars
    parent_span_id: str | None  # 16 hex chars, None for a root span
    name: str
    kind: str  # proto enum name, e.g. "SPAN_KIND_CLIENT"
    attributes: dict[str, Any]  # types preserved (int/float/bool/str/list/dict/bytes)
    events: list[tuple[str, dict[str, Any]]]
    links: list[ReceivedLink]
    status_code: str  # "STATUS_CODE_UNSET" / "STATUS_CODE_OK" / "STATUS_CODE_ERROR"
    status_message: str
    resource_attributes: dict[str, Any]
    scope_name: str
    scope_version: str = ""
    trace_state: str = ""
    start_time_unix_nano: int = 0
    end_time_unix_nano: int = 0


@dataclass(frozen=True)
class ReceivedCall:
    """One Export call as seen by a receiver, whatever its outcome."""

    request: ExportTraceServiceRequest | None  # None if the body could not be parsed
    headers: dict[str, Any]  # lower-cased keys; gRPC "-bin" values are bytes
    outcome: str  # "ok", "refused", "hung", "bad_request"
    at: float = field(default_factory=time.monotonic)


def any_value_to_python(value: AnyValue) -> Any:
    """Convert an OTLP ``AnyValue`` to a Python value, preserving its type."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value_to_python(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes_to_dict(value.kvlist_value.values)
    # string_value -> str, bool_value -> bool, int_value -> int,
    # double_value -> float, bytes_value -> bytes
    return getattr(value, which)


def attributes_to_dict(attributes: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: any_value_to_python(kv.value) for kv in attributes}


def _hex_or_none(raw: bytes) -> str | None:
    return raw.hex() if raw else None


def flatten_spans(requests: Iterable[ExportTraceServiceRequest]) -> list[ReceivedSpan]:
    """Flatten resource_spans / scope_spans / spans into :class:`ReceivedSpan`."""
    out: list[ReceivedSpan] = []
    for request in requests:
        for resource_spans in request.resource_spans:
            resource_attributes = attributes_to_dict(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    out.append(
                        ReceivedSpan(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=_hex_or_none(span.parent_span_id),
                            name=span.name,
                            kind=ProtoSpan.SpanKind.Name(span.kind),
                            attributes=attributes_to_dict(span.attributes),
                            events=[(e.name, attributes_to_dict(e.attributes)) for e in span.events],
                            links=[
                                ReceivedLink(
                                    trace_id=link.trace_id.hex(),
                                    span_id=link.span_id.hex(),
                                    attributes=attributes_to_dict(link.attributes),
                                )
                                for link in span.links
                            ],
                            status_code=ProtoStatus.StatusCode.Name(span.status.code),
                            status_message=span.status.message,
                            resource_attributes=dict(resource_attributes),
                            scope_name=scope_spans.scope.name,
                            scope_version=scope_spans.scope.version,
                            trace_state=span.trace_state,
                            start_time_unix_nano=span.start_time_unix_nano,
                            end_time_unix_nano=span.end_time_unix_nano,
                        )
                    )
    return out


def unused_endpoint() -> str:
    """``http://127.0.0.1:PORT`` for a port nothing listens on (a "down" collector).

    The port is bound and released, so it is free right now; another process
    could in principle grab it, which is good enough for tests.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_LOOPBACK, 0))
        port = sock.getsockname()[1]
    return f"http://{_LOOPBACK}:{port}"


# --------------------------------------------------------------------------
# Shared storage / mode handling
# --------------------------------------------------------------------------


class _ReceiverBase:
    def __init__(self, mode: Mode, hang_seconds: float, retry_after: float | None) -> None:
        self._cond = threading.Condition()
        self._calls: list[ReceivedCall] = []
        self._stopping = threading.Event()
        self._started = False
        self._stopped = False
        self.port: int | None = None
        self.mode: Mode = "ok"
        self.hang_seconds = hang_seconds
        self.retry_after = retry_after
        self.set_mode(mode)

    # -- configuration -----------------------------------------------------
    def set_mode(
        self,
        mode: Mode,
        *,
        hang_seconds: float | None = None,
        retry_after: float | None | Literal["keep"] = "keep",
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
        self.mode = mode
        if hang_seconds is not None:
            self.hang_seconds = hang_seconds
        if retry_after != "keep":
            self.retry_after = retry_after  # type: ignore[assignment]

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT`` (valid once started)."""
        if self.port is None:
            raise RuntimeError("receiver not started")
        return f"http://{_LOOPBACK}:{self.port}"

    # -- recorded data -----------------------------------------------------
    def _record(self, call: ReceivedCall) -> None:
        with self._cond:
            self._calls.append(call)
            self._cond.notify_all()

    @property
    def calls(self) -> list[ReceivedCall]:
        """Every Export call received, in arrival order, whatever its outcome."""
        with self._cond:
            return list(self._calls)

    @property
    def requests(self) -> list[ExportTraceServiceRequest]:
        """Requests that were accepted (answered successfully in "ok" mode)."""
        with self._cond:
            return [c.request for c in self._calls if c.outcome == "ok" and c.request is not None]

    @property
    def headers(self) -> list[dict[str, Any]]:
        """Headers / gRPC metadata of every call (all outcomes), in arrival order."""
        with self._cond:
            return [dict(c.headers) for c in self._calls]

    def spans(self) -> list[ReceivedSpan]:
        """All spans of all accepted requests, flattened, in arrival order."""
        return flatten_spans(self.requests)

    def clear(self) -> None:
        with self._cond:
            self._calls.clear()

    def wait_for_spans(self, n: int, timeout: float = 5.0) -> list[ReceivedSpan]:
        """Wait until at least ``n`` spans were accepted; return all of them.

        Raises ``AssertionError`` (with what did arrive) on timeout.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                spans = flatten_spans(
                    c.request for c in self._calls if c.outcome == "ok" and c.request is not None
                )
                if len(spans) >= n:
                    return spans
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"expected >= {n} spans within {timeout}s, got {len(spans)}: "
                        f"{[s.name for s in spans]} (calls: {[c.outcome for c in self._calls]})"
                    )
                self._cond.wait(remaining)

    def wait_for_calls(self, n: int, timeout: float = 5.0) -> list[ReceivedCall]:
        """Wait until at least ``n`` Export calls (any outcome) arrived."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._calls) < n:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"expected >= {n} calls within {timeout}s, got {len(self._calls)}")
                self._cond.wait(remaining)
            return list(self._calls)

    # -- lifecycle ---------------------------------------------------------
    def start(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def stop(self, timeout: float = 2.0) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __enter__(self):
        if not self._started:
            self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.endpoint if self.port is not None else "not started"
        return f"<{type(self).__name__} {where} mode={self.mode} calls={len(self._calls)}>"


# --------------------------------------------------------------------------
# gRPC
# --------------------------------------------------------------------------


def _grpc_status_code(code: grpc.StatusCode | str) -> grpc.StatusCode:
    if isinstance(code, grpc.StatusCode):
        return code
    return grpc.StatusCode[str(code).upper()]


class _TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: GrpcTraceReceiver) -> None:
        self._receiver = receiver

    def Export(self, request: ExportTraceServiceRequest, context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        r = self._receiver
        headers: dict[str, Any] = {}
        for key, value in context.invocation_metadata():
            headers[key.lower()] = value
        mode = r.mode
        if mode == "ok":
            r._record(ReceivedCall(request=request, headers=headers, outcome="ok"))
            return ExportTraceServiceResponse()
        if mode == "refuse":
            r._record(ReceivedCall(request=request, headers=headers, outcome="refused"))
            if r.retry_after is not None:
                seconds = int(r.retry_after)
                nanos = int(round((r.retry_after - seconds) * 1e9))
                info = RetryInfo(retry_delay=Duration(seconds=seconds, nanos=nanos))
                context.set_trailing_metadata((("google.rpc.retryinfo-bin", info.SerializeToString()),))
            context.abort(r.refuse_code, f"refused by test receiver ({r.refuse_code.name})")
        # hang: never store; wait until the client gives up, we stop, or hang_seconds pass
        r._record(ReceivedCall(request=request, headers=headers, outcome="hung"))
        deadline = time.monotonic() + r.hang_seconds
        while context.is_active() and not r._stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            r._stopping.wait(min(0.05, remaining))
        return ExportTraceServiceResponse()


class GrpcTraceReceiver(_ReceiverBase):
    """OTLP/gRPC trace receiver on ``127.0.0.1:<free port>``.

    ``refuse_code``: gRPC status used in "refuse" mode (``grpc.StatusCode`` or
    its name, e.g. ``"PERMISSION_DENIED"``); default ``UNAVAILABLE`` (retried
    by the exporter).
    """

    def __init__(
        self,
        mode: Mode = "ok",
        *,
        refuse_code: grpc.StatusCode | str = grpc.StatusCode.UNAVAILABLE,
        hang_seconds: float = 30.0,
        retry_after: float | None = None,
        max_workers: int = 8,
    ) -> None:
        self.refuse_code = _grpc_status_code(refuse_code)
        super().__init__(mode, hang_seconds, retry_after)
        self._max_workers = max_workers
        self._executor: ThreadPoolExecutor | None = None
        self._server: grpc.Server | None = None

    def set_mode(self, mode: Mode, *, refuse_code: grpc.StatusCode | str | None = None, **kwargs: Any) -> None:
        if refuse_code is not None:
            self.refuse_code = _grpc_status_code(refuse_code)
        super().set_mode(mode, **kwargs)

    def start(self) -> GrpcTraceReceiver:
        if self._started:
            return self
        self._executor = ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix="otlp-grpc-receiver")
        self._server = grpc.server(self._executor)
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceServicer(self), self._server)
        self.port = self._server.add_insecure_port(f"{_LOOPBACK}:0")
        if not self.port:
            raise RuntimeError("could not bind a loopback port for the gRPC receiver")
        self._server.start()
        self._started = True
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop serving; bounded by ``timeout`` seconds. Hung calls are released."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        assert self._server is not None and self._executor is not None
        self._server.stop(grace=timeout / 2).wait(timeout)
        self._executor.shutdown(wait=False, cancel_futures=True)


# --------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------


class _HttpServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    receiver: HttpTraceReceiver


class _TraceHandler(http.server.BaseHTTPRequestHandler):
    server: _HttpServer
    # HTTP/1.0: one request per connection, so no idle keep-alive handler threads.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def _reply(self, status: int, body: bytes = b"", content_type: str = "application/x-protobuf",
               extra: Mapping[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if body:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # client already gone (e.g. it timed out while we hung)

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        receiver = self.server.receiver
        headers = {k.lower(): v for k, v in self.headers.items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.split("?", 1)[0] != "/v1/traces":
            self._reply(404, b"not found", "text/plain")
            return
        content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if content_type != "application/x-protobuf":
            receiver._record(ReceivedCall(request=None, headers=headers, outcome="bad_request"))
            self._reply(415, b"only application/x-protobuf is supported", "text/plain")
            return
        try:
            encoding = (self.headers.get("Content-Encoding") or "").strip().lower()
            if encoding == "gzip":
                raw = gzip.decompress(raw)
            elif encoding == "deflate":
                raw = zlib.decompress(raw)
            elif encoding not in ("", "identity"):
                raise ValueError(f"unsupported Content-Encoding {encoding!r}")
            request = ExportTraceServiceRequest()
            request.ParseFromString(raw)
        except Exception as exc:  # noqa: BLE001 - report any decode problem as 400
            receiver._record(ReceivedCall(request=None, headers=headers, outcome="bad_request"))
            self._reply(400, RpcStatus(code=3, message=str(exc)).SerializeToString())
            return

        mode = receiver.mode
        if mode == "ok":
            delay = receiver._first_delay()
            if delay:
                receiver._stopping.wait(delay)
            receiver._record(ReceivedCall(request=request, headers=headers, outcome="ok"))
            self._reply(200, ExportTraceServiceResponse().SerializeToString())
            return
        if mode == "refuse":
            receiver._record(ReceivedCall(request=request, headers=headers, outcome="refused"))
            extra = {}
            if receiver.retry_after is not None:
                extra["Retry-After"] = f"{receiver.retry_after:g}"
            status = receiver.refuse_status
            body = RpcStatus(code=14 if status == 503 else 7, message=f"refused by test receiver ({status})")
            self._reply(status, body.SerializeToString(), extra=extra)
            return
        # hang
        receiver._record(ReceivedCall(request=request, headers=headers, outcome="hung"))
        deadline = time.monotonic() + receiver.hang_seconds
        while not receiver._stopping.is_set() and not self._client_gone():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            receiver._stopping.wait(min(0.05, remaining))
        self._reply(200, ExportTraceServiceResponse().SerializeToString())


class HttpTraceReceiver(_ReceiverBase):
    """OTLP/HTTP (protobuf) trace receiver on ``127.0.0.1:<free port>``.

    ``refuse_status``: HTTP status used in "refuse" mode; default 503
    (retried by the exporter), 403 is not retried.
    """

    def __init__(
        self,
        mode: Mode = "ok",
        *,
        refuse_status: int = 503,
        hang_seconds: float = 30.0,
        retry_after: float | None = None,
        first_answer_delay: float = 0.0,
    ) -> None:
        self.refuse_status = refuse_status
        self.first_answer_delay = first_answer_delay
        self._delayed_once = False
        super().__init__(mode, hang_seconds, retry_after)
        self._server: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    def set_mode(self, mode: Mode, *, refuse_status: int | None = None, **kwargs: Any) -> None:
        if refuse_status is not None:
            self.refuse_status = refuse_status
        super().set_mode(mode, **kwargs)

    def _first_delay(self) -> float:
        with self._cond:
            if self._delayed_once:
                return 0.0
            self._delayed_once = True
            return self.first_answer_delay

    @property
    def traces_url(self) -> str:
        """Full signal URL (``endpoint + "/v1/traces"``), for ``endpoint=`` /
        ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, which are used verbatim."""
        return self.endpoint + "/v1/traces"

    def start(self) -> HttpTraceReceiver:
        if self._started:
            return self
        self._server = _HttpServer((_LOOPBACK, 0), _TraceHandler)
        self._server.receiver = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="otlp-http-receiver",
            daemon=True,
        )
        self._thread.start()
        self._started = True
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop serving; bounded by ``timeout`` seconds. Hung calls are released."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout)

