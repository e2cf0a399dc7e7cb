"""OTLP/HTTP ``POST /v1/traces`` (protobuf or JSON; gzip, deflate or neither) as a Starlette app over the writer."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator

from google.protobuf.json_format import MessageToJson
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from otel_agents.collect.otlp_request import MAX_REQUEST_BYTES, BadRequest, Decoded, decode_body
from otel_agents.collect.writer import Busy, Writer, rejection_message

RETRY_AFTER_S = 1  # what a 429 asks the sender to wait (OTLP/HTTP: the Retry-After header)
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def _encode(message, as_json: bool) -> Response:
    if as_json:
        return Response(MessageToJson(message, indent=None), media_type=JSON)
    return Response(message.SerializeToString(), media_type=PROTOBUF)


def _status(code: int, message: str, as_json: bool, headers: dict[str, str] | None = None) -> Response:
    response = _encode(Status(code=code, message=message), as_json)
    response.status_code = {3: 400, 8: 429, 14: 503}.get(code, 500)
    if headers:
        response.headers.update(headers)
    return response


class TooLarge(ValueError):
    """The body, as sent or decompressed, is over MAX_REQUEST_BYTES; one line."""


DRAIN_BYTES = 4 * MAX_REQUEST_BYTES  # read and dropped past the cap so that the sender sees the 413
TOO_LARGE = f"the request body is over {MAX_REQUEST_BYTES >> 20} MiB"


def _gunzip(raw: bytes) -> bytes:
    """gzip.decompress (all members), stopping at MAX_REQUEST_BYTES: a small bomb must not fill memory."""
    out, size = [], 0
    while raw:
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        raw, size = _inflate(member, raw, out, size, "gzip")
        raw = member.unused_data
    return b"".join(out)


def _deflate(raw: bytes) -> bytes:
    """HTTP deflate: a zlib stream (what the Python OTLP exporter sends, zlib.compress); a raw deflate
    stream without the zlib header, which some senders send, is read too. Capped as gzip is."""
    zlib_header = len(raw) >= 2 and raw[0] & 0x0F == 8 and (raw[0] << 8 | raw[1]) % 31 == 0
    stream = zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
    out: list[bytes] = []
    _inflate(stream, raw, out, 0, "deflate")
    if stream.unused_data:
        raise BadRequest("the deflate body is damaged: bytes follow the end of its stream")
    return b"".join(out)


def _inflate(stream, raw: bytes, out: list[bytes], size: int, name: str) -> tuple[bytes, int]:
    """One compressed stream into ``out``, a bounded piece at a time; the size so far after it."""
    while raw:
        chunk = stream.decompress(raw, MAX_REQUEST_BYTES + 1 - size)
        size += len(chunk)
        out.append(chunk)
        if size > MAX_REQUEST_BYTES:
            raise TooLarge(f"{TOO_LARGE} decompressed")
        raw = stream.unconsumed_tail
    if not stream.eof:
        raise BadRequest(f"the {name} body is cut or damaged: it ends mid-stream")
    return raw, size


def _body(raw: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    inflate = {"gzip": _gunzip, "deflate": _deflate}.get(encoding)
    if inflate is None:
        raise BadRequest(f"unsupported Content-Encoding {encoding!r}: send gzip, deflate or an uncompressed body")
    try:
        return inflate(raw)
    except zlib.error as exc:
        raise BadRequest(f"the {encoding} body is cut or damaged: {exc}") from None


def _decode(raw: bytes, content_type: str, encoding: str) -> Decoded:
    return decode_body(_body(raw, encoding), content_type)


async def _read(request: Request) -> bytes:
    """The body as sent, refused past MAX_REQUEST_BYTES before more of it is kept."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > DRAIN_BYTES:
        raise TooLarge(TOO_LARGE)  # not read at all: the connection is closed under the sender
    chunks, size, stream = [], 0, request.stream()
    async for chunk in stream:
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            await _drain(stream, size)
            raise TooLarge(TOO_LARGE)
        chunks.append(chunk)
    return b"".join(chunks)


async def _drain(stream: AsyncIterator[bytes], size: int) -> None:
    """Read on without keeping, to DRAIN_BYTES: a sender that answers only once it has sent the whole
    body (Python's requests, urllib) reads the 413 instead of a reset connection, which it would retry."""
    async for chunk in stream:
        size += len(chunk)
        if size > DRAIN_BYTES:
            return


def http_app(writer: Writer) -> Starlette:
    async def export(request: Request) -> Response:
        content_type = request.headers.get("content-type", PROTOBUF)
        as_json = JSON in content_type.lower()
        media_type = content_type.split(";", 1)[0].strip().lower()
        if media_type not in (PROTOBUF, JSON):  # OTLP/HTTP: an unsupported content type is 415, not a bad body
            response = _status(3, f"unsupported Content-Type {media_type!r}: send {PROTOBUF} or {JSON}", as_json)
            response.status_code = 415
            return response
        try:
            raw = await _read(request)
            decoded = await run_in_threadpool(_decode, raw, content_type, request.headers.get("content-encoding", ""))
        except ClientDisconnect:
            return Response(status_code=400)
        except TooLarge as exc:  # 413, which OTLP exporters do not retry; RESOURCE_EXHAUSTED as gRPC's cap answers
            writer.count_rejected(1)
            response = _status(8, str(exc), as_json)
            response.status_code = 413
            return response
        except BadRequest as exc:
            writer.count_rejected(1)
            return _status(3, str(exc), as_json)  # INVALID_ARGUMENT: the request is refused whole
        try:
            future = writer.submit(decoded.spans)
        except Busy as exc:
            return _status(8, str(exc), as_json, {"Retry-After": str(RETRY_AFTER_S)})
        try:
            accepted = await asyncio.wrap_future(future)
        except Exception as exc:  # the disk failed: nothing acknowledged, the sender retries
            return _status(14, f"cannot write: {exc}", as_json, {"Retry-After": str(RETRY_AFTER_S)})
        writer.count_rejected(decoded.rejected)
        response = ExportTraceServiceResponse()
        rejected = decoded.rejected + len(accepted.rejected)
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = decoded.message or rejection_message(accepted)
        return _encode(response, as_json)

    return Starlette(routes=[Route("/v1/traces", export, methods=["POST"])])
