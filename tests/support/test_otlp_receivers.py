"""Checks for the loopback OTLP receivers, using only the stock OpenTelemetry SDK
and the stock OTLP exporters (no otel-agents code).

Measured export costs against failing receivers, exporter timeout 2 s, are in
the docstring of ``otlp_receivers``; the bounds asserted here are looser.
"""

from __future__ import annotations

import gzip
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence

import grpc
import pytest

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span as ProtoSpan
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from .otlp_receivers import (
    GrpcTraceReceiver,
    HttpTraceReceiver,
    any_value_to_python,
    flatten_spans,
    unused_endpoint,
)

TIMEOUT_S = 2.0
SCOPE = "receiver-test-scope"


@pytest.fixture(autouse=True)
def _clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("OTEL_"):
            monkeypatch.delenv(key)


class RecordingExporter(SpanExporter):
    """Delegates to a real exporter and remembers what ``export`` returned."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.results: list[SpanExportResult] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        self.results.append(result)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _provider(exporter: SpanExporter, memory: InMemorySpanExporter | None = None) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "receiver-test", "deployment.n": 3}))
    if memory is not None:
        provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


ROOT_ATTRS = {
    "a.int": 42,
    "a.float": 1.5,
    "a.bool": True,
    "a.str": "hello",
    "a.strs": ["x", "y"],
    "a.ints": [1, 2, 3],
    "a.floats": [0.25, 2.0],
    "a.bools": [False, True],
}


def _emit(provider: TracerProvider) -> None:
    tracer = provider.get_tracer(SCOPE, "9.9.9")
    with tracer.start_as_current_span("root", kind=SpanKind.SERVER, attributes=ROOT_ATTRS) as root:
        root.add_event("started", {"ev.int": 7, "ev.float": 0.5, "ev.bool": False, "ev.str": "s"})
        with tracer.start_as_current_span("child", kind=SpanKind.CLIENT, attributes={"n": 0}) as child:
            child.set_status(Status(StatusCode.ERROR, "boom"))
            with tracer.start_as_current_span("grandchild", attributes={"zero.float": 0.0}):
                pass
        # a second root-level trace, linked from a span of the first
        other = tracer.start_span("other-trace", context=trace.set_span_in_context(trace.INVALID_SPAN))
        other.end()
        with tracer.start_as_current_span(
            "linked", links=[trace.Link(other.get_span_context(), {"link.int": 1})]
        ):
            pass


def _hex_trace(i: int) -> str:
    return format(i, "032x")


def _hex_span(i: int) -> str:
    return format(i, "016x")


def _plain(value):
    """SDK stores sequences as tuples; the receiver returns lists."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _assert_same_as_memory(received, memory: InMemorySpanExporter) -> None:
    expected = memory.get_finished_spans()
    assert len(expected) == 5
    assert len(received) == len(expected)

    exp_ids = {
        (
            _hex_trace(s.context.trace_id),
            _hex_span(s.context.span_id),
            _hex_span(s.parent.span_id) if s.parent else None,
            s.name,
        )
        for s in expected
    }
    got_ids = {(s.trace_id, s.span_id, s.parent_span_id, s.name) for s in received}
    assert got_ids == exp_ids

    by_name = {s.name: s for s in received}
    mem = {s.name: s for s in expected}
    for s in received:
        assert len(s.trace_id) == 32 and len(s.span_id) == 16
        assert s.attributes == {k: _plain(v) for k, v in mem[s.name].attributes.items()}
        assert s.resource_attributes["service.name"] == "receiver-test"
        assert s.resource_attributes["deployment.n"] == 3
        assert s.scope_name == SCOPE and s.scope_version == "9.9.9"
        assert s.start_time_unix_nano == mem[s.name].start_time
        assert s.end_time_unix_nano == mem[s.name].end_time

    root, child, grandchild = by_name["root"], by_name["child"], by_name["grandchild"]
    assert root.parent_span_id is None
    assert child.parent_span_id == root.span_id and child.trace_id == root.trace_id
    assert grandchild.parent_span_id == child.span_id and grandchild.trace_id == root.trace_id
    assert by_name["other-trace"].trace_id != root.trace_id

    # types are preserved, not just values (True == 1 and 1 == 1.0 in Python)
    attrs = root.attributes
    assert type(attrs["a.int"]) is int and attrs["a.int"] == 42
    assert type(attrs["a.float"]) is float and attrs["a.float"] == 1.5
    assert type(attrs["a.bool"]) is bool and attrs["a.bool"] is True
    assert type(attrs["a.str"]) is str
    assert attrs["a.strs"] == ["x", "y"]
    assert [type(v) for v in attrs["a.ints"]] == [int, int, int]
    assert [type(v) for v in attrs["a.floats"]] == [float, float]
    assert attrs["a.bools"] == [False, True] and all(type(v) is bool for v in attrs["a.bools"])
    assert type(grandchild.attributes["zero.float"]) is float
    assert type(child.attributes["n"]) is int

    assert root.kind == "SPAN_KIND_SERVER"
    assert child.kind == "SPAN_KIND_CLIENT"
    assert grandchild.kind == "SPAN_KIND_INTERNAL"
    assert child.status_code == "STATUS_CODE_ERROR" and child.status_message == "boom"
    assert root.status_code == "STATUS_CODE_UNSET"

    assert root.events == [("started", {"ev.int": 7, "ev.float": 0.5, "ev.bool": False, "ev.str": "s"})]
    ev_attrs = root.events[0][1]
    assert type(ev_attrs["ev.int"]) is int and type(ev_attrs["ev.float"]) is float
    assert type(ev_attrs["ev.bool"]) is bool

    (link,) = by_name["linked"].links
    assert link.trace_id == by_name["other-trace"].trace_id
    assert link.span_id == by_name["other-trace"].span_id
    assert link.attributes == {"link.int": 1} and type(link.attributes["link.int"]) is int


# --------------------------------------------------------------------------
# Round trips through the real exporters
# --------------------------------------------------------------------------


def test_grpc_roundtrip_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    with GrpcTraceReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20x,x-tenant=t1")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")  # seconds in the Python exporters
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        memory = InMemorySpanExporter()
        exporter = RecordingExporter(GrpcSpanExporter())
        provider = _provider(exporter, memory)
        _emit(provider)
        assert provider.force_flush()
        received = receiver.wait_for_spans(5, timeout=5)
        provider.shutdown()

        assert exporter.results == [SpanExportResult.SUCCESS]
        _assert_same_as_memory(received, memory)
        (headers,) = receiver.headers
        assert headers["authorization"] == "Bearer x"
        assert headers["x-tenant"] == "t1"
        assert "OTel-OTLP-Exporter-Python" in headers["user-agent"]


def test_grpc_roundtrip_constructor_headers() -> None:
    with GrpcTraceReceiver() as receiver:
        memory = InMemorySpanExporter()
        exporter = GrpcSpanExporter(
            endpoint=receiver.endpoint, headers={"authorization": "Bearer x"}, timeout=TIMEOUT_S
        )
        provider = _provider(exporter, memory)
        _emit(provider)
        provider.force_flush()
        _assert_same_as_memory(receiver.wait_for_spans(5, timeout=5), memory)
        provider.shutdown()
        assert [h["authorization"] for h in receiver.headers] == ["Bearer x"]
        assert [c.outcome for c in receiver.calls] == ["ok"]


@pytest.mark.parametrize("compression", ["gzip", "none"])
def test_http_roundtrip_env_base_endpoint(monkeypatch: pytest.MonkeyPatch, compression: str) -> None:
    with HttpTraceReceiver() as receiver:
        # base endpoint: the HTTP exporter appends /v1/traces itself
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", compression)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2")
        memory = InMemorySpanExporter()
        exporter = RecordingExporter(HttpSpanExporter(headers={"authorization": "Bearer x"}))
        provider = _provider(exporter, memory)
        _emit(provider)
        provider.force_flush()
        received = receiver.wait_for_spans(5, timeout=5)
        provider.shutdown()

        assert exporter.results == [SpanExportResult.SUCCESS]
        _assert_same_as_memory(received, memory)
        (headers,) = receiver.headers
        assert headers["authorization"] == "Bearer x"
        assert headers["content-type"] == "application/x-protobuf"
        assert headers.get("content-encoding") == (None if compression == "none" else "gzip")


def test_http_first_answer_delay_is_a_cold_backend() -> None:
    with HttpTraceReceiver(first_answer_delay=1.0) as receiver:
        exporter = RecordingExporter(HttpSpanExporter(endpoint=receiver.traces_url, timeout=0.5))
        provider = _provider(exporter)
        provider.get_tracer(SCOPE).start_span("first").end()
        started = time.monotonic()
        provider.force_flush()  # the client gives up after 0.5 s...
        assert time.monotonic() - started < 0.95 and exporter.results == [SpanExportResult.FAILURE]
        assert [s.name for s in receiver.wait_for_spans(1, timeout=3)] == ["first"]  # ...and it is stored late
        provider.get_tracer(SCOPE).start_span("second").end()
        provider.force_flush()  # later requests are answered at once
        provider.shutdown()
        assert exporter.results[-1] == SpanExportResult.SUCCESS
        assert [s.name for s in receiver.spans()] == ["first", "second"]


def test_http_constructor_endpoint_needs_full_path() -> None:
    with HttpTraceReceiver() as receiver:
        exporter = HttpSpanExporter(endpoint=receiver.traces_url, timeout=TIMEOUT_S)
        provider = _provider(exporter)
        provider.get_tracer(SCOPE).start_span("one").end()
        provider.force_flush()
        assert [s.name for s in receiver.wait_for_spans(1)] == ["one"]
        provider.shutdown()

        # without the path the exporter posts to "/" and the receiver answers 404
        bad = RecordingExporter(HttpSpanExporter(endpoint=receiver.endpoint, timeout=TIMEOUT_S))
        provider = _provider(bad)
        provider.get_tracer(SCOPE).start_span("two").end()
        provider.force_flush()
        provider.shutdown()
        assert bad.results == [SpanExportResult.FAILURE]
        assert [s.name for s in receiver.spans()] == ["one"]


# --------------------------------------------------------------------------
# Failing receivers: export fails, bounded in time, never raises into caller
# --------------------------------------------------------------------------

# (case, receiver mode kwargs, expected calls, min seconds, max seconds)
FAILURES = [
    ("down", None, None, 0.5, 3.5),  # connection refused, retried with backoff
    ("refuse-retryable", {"mode": "refuse"}, 2, 0.6, 3.5),  # UNAVAILABLE / 503
    ("refuse-fatal", {"mode": "refuse", "fatal": True}, 1, 0.0, 1.0),  # PERMISSION_DENIED / 403
    ("hang", {"mode": "hang"}, 1, 1.7, 3.5),  # answers after the client deadline
]


def _make_receiver(proto: str, spec: dict | None):
    if spec is None:
        return None
    kwargs = {"mode": spec["mode"]}
    if spec.get("fatal"):
        kwargs["refuse_code" if proto == "grpc" else "refuse_status"] = (
            grpc.StatusCode.PERMISSION_DENIED if proto == "grpc" else 403
        )
    cls = GrpcTraceReceiver if proto == "grpc" else HttpTraceReceiver
    return cls(**kwargs).start()


def _make_exporter(proto: str, endpoint: str) -> SpanExporter:
    if proto == "grpc":
        return GrpcSpanExporter(endpoint=endpoint, timeout=TIMEOUT_S, headers={"authorization": "Bearer x"})
    return HttpSpanExporter(endpoint=endpoint + "/v1/traces", timeout=TIMEOUT_S, headers={"authorization": "Bearer x"})


@pytest.mark.parametrize("proto", ["grpc", "http"])
@pytest.mark.parametrize(("case", "spec", "calls", "min_s", "max_s"), FAILURES, ids=[f[0] for f in FAILURES])
def test_failing_receiver_is_bounded(proto, case, spec, calls, min_s, max_s) -> None:
    receiver = _make_receiver(proto, spec)
    try:
        endpoint = receiver.endpoint if receiver else unused_endpoint()
        exporter = RecordingExporter(_make_exporter(proto, endpoint))
        provider = _provider(exporter)
        with provider.get_tracer(SCOPE).start_as_current_span("doomed"):
            pass  # no exception from span end
        t0 = time.monotonic()
        flushed = provider.force_flush()  # BatchSpanProcessor: True even on failure
        elapsed = time.monotonic() - t0
        t1 = time.monotonic()
        provider.shutdown()
        shutdown_s = time.monotonic() - t1

        assert flushed is True
        assert exporter.results == [SpanExportResult.FAILURE]
        assert min_s <= elapsed <= max_s, f"{proto}/{case}: export took {elapsed:.2f}s"
        assert shutdown_s < 0.5, f"{proto}/{case}: shutdown after flush took {shutdown_s:.2f}s"
        if receiver is not None:
            assert receiver.spans() == [] and receiver.requests == []
            assert len(receiver.calls) == calls, [c.outcome for c in receiver.calls]
            assert all(h["authorization"] == "Bearer x" for h in receiver.headers)
            # the refused/hung request is recorded and parseable
            assert flatten_spans([receiver.calls[0].request])[0].name == "doomed"
    finally:
        if receiver is not None:
            t2 = time.monotonic()
            receiver.stop()
            assert time.monotonic() - t2 < 2.5


@pytest.mark.parametrize("proto", ["grpc", "http"])
def test_retry_after_is_honoured_then_recovery(proto: str) -> None:
    """RetryInfo trailer / Retry-After header set the exporter backoff."""
    cls = GrpcTraceReceiver if proto == "grpc" else HttpTraceReceiver
    with cls("refuse", retry_after=0.05) as receiver:
        exporter = RecordingExporter(_make_exporter(proto, receiver.endpoint))
        provider = _provider(exporter)
        provider.get_tracer(SCOPE).start_span("s1").end()
        t0 = time.monotonic()
        provider.force_flush()
        elapsed = time.monotonic() - t0
        assert exporter.results == [SpanExportResult.FAILURE]
        assert len(receiver.calls) == 6  # the exporters' max attempts
        assert elapsed < 1.5

        receiver.set_mode("ok")
        provider.get_tracer(SCOPE).start_span("s2").end()
        provider.force_flush()
        provider.shutdown()
        assert exporter.results[-1] == SpanExportResult.SUCCESS
        assert [s.name for s in receiver.spans()] == ["s2"]
        assert [c.outcome for c in receiver.calls] == ["refused"] * 6 + ["ok"]


# --------------------------------------------------------------------------
# Receiver mechanics
# --------------------------------------------------------------------------


def _kv(key: str, **value) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def _request_with_all_value_types() -> ExportTraceServiceRequest:
    attrs = [
        _kv("s", string_value="v"),
        _kv("i", int_value=-3),
        _kv("d", double_value=2.0),
        _kv("b", bool_value=False),
        _kv("by", bytes_value=b"\x00\x01"),
        _kv("arr", array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue(string_value="a")])),
        _kv("kv", kvlist_value=KeyValueList(values=[_kv("inner", double_value=0.5)])),
        KeyValue(key="empty"),
    ]
    span = ProtoSpan(
        trace_id=bytes(range(16)),
        span_id=bytes(range(8)),
        name="manual",
        kind=ProtoSpan.SpanKind.SPAN_KIND_PRODUCER,
        attributes=attrs,
    )
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])])


def test_any_value_conversion_and_http_gzip_by_hand() -> None:
    request = _request_with_all_value_types()
    with HttpTraceReceiver() as receiver:
        req = urllib.request.Request(
            receiver.traces_url,
            data=gzip.compress(request.SerializeToString()),
            headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip", "X-Test": "1"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"] == "application/x-protobuf"
            ExportTraceServiceResponse().ParseFromString(resp.read())

        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(
                urllib.request.Request(
                    receiver.traces_url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST"
                ),
                timeout=5,
            )
        assert err.value.code == 415

        (span,) = receiver.spans()
        assert receiver.headers[0]["x-test"] == "1"
    assert span.trace_id == bytes(range(16)).hex() and span.span_id == bytes(range(8)).hex()
    assert span.parent_span_id is None
    assert span.kind == "SPAN_KIND_PRODUCER"
    assert span.attributes == {
        "s": "v",
        "i": -3,
        "d": 2.0,
        "b": False,
        "by": b"\x00\x01",
        "arr": [1, "a"],
        "kv": {"inner": 0.5},
        "empty": None,
    }
    assert type(span.attributes["d"]) is float and type(span.attributes["b"]) is bool
    assert type(span.attributes["by"]) is bytes
    assert any_value_to_python(AnyValue(int_value=5)) == 5


@pytest.mark.parametrize("proto", ["grpc", "http"])
def test_stop_releases_a_hung_call_quickly(proto: str) -> None:
    request = _request_with_all_value_types()
    outcome: dict[str, object] = {}

    if proto == "grpc":
        receiver = GrpcTraceReceiver("hang", hang_seconds=30).start()

        def call() -> None:
            with grpc.insecure_channel(receiver.endpoint.removeprefix("http://")) as channel:
                stub = trace_service_pb2_grpc.TraceServiceStub(channel)
                try:
                    outcome["result"] = stub.Export(request, timeout=20)
                except grpc.RpcError as exc:
                    outcome["result"] = exc.code()
    else:
        receiver = HttpTraceReceiver("hang", hang_seconds=30).start()

        def call() -> None:
            req = urllib.request.Request(
                receiver.traces_url,
                data=request.SerializeToString(),
                headers={"Content-Type": "application/x-protobuf"},
                method="POST",
            )
            try:
                with urllib.request.urlopen(req, timeout=20) as resp:
                    outcome["result"] = resp.status
            except Exception as exc:  # noqa: BLE001
                outcome["result"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    receiver.wait_for_calls(1, timeout=5)
    t0 = time.monotonic()
    receiver.stop()
    thread.join(5)
    assert time.monotonic() - t0 < 3.0
    assert not thread.is_alive()
    assert "result" in outcome
    assert receiver.calls[0].outcome == "hung" and receiver.spans() == []


def test_wait_for_spans_times_out_with_assertion() -> None:
    with GrpcTraceReceiver() as receiver:
        assert receiver.endpoint.startswith("http://127.0.0.1:")
        with pytest.raises(AssertionError, match="expected >= 1 spans"):
            receiver.wait_for_spans(1, timeout=0.1)


def test_set_mode_validates() -> None:
    receiver = HttpTraceReceiver()
    for mode in ("ok", "refuse", "hang"):
        receiver.set_mode(mode)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        receiver.set_mode("explode")  # type: ignore[arg-type]
