"""The gRPC receiver over loopback: a body that does not parse is INVALID_ARGUMENT with a google.rpc.Status."""

from __future__ import annotations

import grpc
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from support.collector import Collector, assert_same_session, run_session, session_id_in

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _request() -> bytes:
    span = Span(trace_id=bytes(range(1, 17)), span_id=bytes(range(1, 9)), name="chat x",
                start_time_unix_nano=1, end_time_unix_nano=2)
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])]
                                     ).SerializeToString()


def test_a_body_that_does_not_parse_is_invalid_argument_with_a_status_and_a_good_one_is_taken(tmp_path):
    with Collector(tmp_path / "central", "--http", "off", grpc=True) as collector:
        with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
            export = channel.unary_unary(EXPORT, request_serializer=lambda b: b, response_deserializer=lambda b: b)
            good = _request()
            for body in (b"garbage!!!", good[: len(good) // 2]):
                try:
                    export(body, timeout=30)
                except grpc.RpcError as error:
                    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
                    assert "not an OTLP protobuf request" in error.details()
                    details = dict(error.trailing_metadata())["grpc-status-details-bin"]
                    status = Status.FromString(details)
                    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0] and status.message == error.details()
                else:
                    raise AssertionError(f"{body!r} was taken")
            answer = ExportTraceServiceResponse.FromString(export(good, timeout=30))
            assert answer.partial_success.rejected_spans == 0
        assert collector.stop() == 0


def test_runs_exporting_over_grpc_with_deflate_or_none_are_collected_whole(tmp_path):
    # The gRPC exporter, reading the variable itself, takes only gzip: deflate and none, which the
    # sender's own check passes, were a traceback at start and no run at all.
    with Collector(tmp_path / "central", grpc=True) as collector:
        endpoint = f"http://127.0.0.1:{collector.grpc_port}"
        runs = {compression: run_session(tmp_path / compression, endpoint, "grpc",
                                         env={"OTEL_EXPORTER_OTLP_COMPRESSION": compression,
                                              "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": compression})
                for compression in ("deflate", "none")}
        errs = {compression: proc.communicate(timeout=300)[1] for compression, proc in runs.items()}
        assert collector.stop() == 0
    for compression, err in errs.items():
        assert runs[compression].returncode == 0 and "could not send" not in err, err
        assert_same_session(tmp_path / compression, tmp_path / "central", session_id_in(err))
