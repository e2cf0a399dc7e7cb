"""OTLP/gRPC ``TraceService/Export`` with grpcio and opentelemetry-proto's service definition."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from otel_agents.collect.otlp_request import MAX_REQUEST_BYTES, BadRequest, decode_body
from otel_agents.collect.writer import Busy, Writer, rejection_message

RETRY_DELAY_S = 1  # RESOURCE_EXHAUSTED carries it as google.rpc.RetryInfo, which OTLP exporters read


SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


class TraceService:
    def __init__(self, writer: Writer):
        self.writer = writer

    def Export(self, request: bytes, context):  # noqa: N802 (the service definition's name)
        # The raw bytes, parsed here: grpcio's own deserializer answers INTERNAL with no google.rpc.Status.
        try:
            decoded = decode_body(request, "application/x-protobuf")
        except BadRequest as exc:
            self.writer.count_rejected(1)  # as the HTTP receiver counts a body refused whole
            # The google.rpc.Status in grpc-status-details-bin, as grpcio-status's to_status puts it.
            status = Status(code=grpc.StatusCode.INVALID_ARGUMENT.value[0], message=str(exc))
            context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        try:
            future = self.writer.submit(decoded.spans)
        except Busy as exc:
            retry = RetryInfo(retry_delay=Duration(seconds=RETRY_DELAY_S))
            context.set_trailing_metadata((("google.rpc.retryinfo-bin", retry.SerializeToString()),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        try:
            accepted = future.result()
        except Exception as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"cannot write: {exc}")
        self.writer.count_rejected(decoded.rejected)
        response = ExportTraceServiceResponse()
        rejected = decoded.rejected + len(accepted.rejected)
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = decoded.message or rejection_message(accepted)
        return response


def grpc_server(writer: Writer, address: str) -> grpc.Server:
    """Bound and started; raises RuntimeError when the address cannot be bound."""
    # 16 MiB as Jaeger takes: grpcio's 4 MiB default refuses a batch of large LLM spans with no retry delay.
    # SO_REUSEPORT off: grpcio sets it by default, so a second collect would share a busy port (the kernel
    # splitting connections, and so sessions and billing, between two homes) instead of failing to bind.
    server = grpc.server(ThreadPoolExecutor(max_workers=8, thread_name_prefix="collect-grpc"),
                         options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES), ("grpc.so_reuseport", 0)])
    export = grpc.unary_unary_rpc_method_handler(TraceService(writer).Export,  # bytes in, so Export parses them
                                                 response_serializer=ExportTraceServiceResponse.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Export": export}),))
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:  # grpcio >= 1.60 raises "Failed to bind ..." where older ones returned 0
        bound = 0
    if bound == 0:
        raise RuntimeError(f"cannot listen on {address}")
    server.start()
    return server
