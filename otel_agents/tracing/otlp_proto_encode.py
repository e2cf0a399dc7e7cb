"""SDK spans into the bytes of an OTLP ExportTraceServiceRequest: the stock encoder's output, written directly.

The stock path (``encode_spans(spans).SerializePartialToString()``) builds a protobuf
object for every span, event, key-value and value before serialising them: about 0.6 us
per key-value here, the floor of every OTLP export. This module writes the same wire
format in one pass, in field-number order and with proto3's omissions (a default scalar is
left out, a oneof or a set message is always written), so its bytes are the stock
encoder's bytes, byte for byte (``tests/tracing/test_otlp_proto_encode.py`` checks it on
generated spans and on a real session's), in a third of the time or less. An attribute the
stock encoder refuses (a value it cannot encode, an integer outside int64) is left out
and logged as it would be; anything else it refuses fails the whole request as it would.

A span may also arrive already written (:class:`EncodedSpan`, from the export filter's
one-pass check, ``export_unchanged.py``): its bytes are placed as they are.
"""

from __future__ import annotations

import logging
import struct
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from otel_agents.tracing.spandata import sdk_attributes

_logger = logging.getLogger(__name__)

_DOUBLE = struct.Struct("<d").pack
_FIXED64 = struct.Struct("<Q").pack
_FIXED32 = struct.Struct("<I").pack
_ONE_BYTE = [bytes((n,)) for n in range(128)]
_INT64 = (-(1 << 63), 1 << 63)
# SpanFlags: the context says whether it is remote (0x100), and it is (0x200).
_FLAGS_LOCAL = _FIXED32(0x100)
_FLAGS_REMOTE = _FIXED32(0x300)
_KIND = [_ONE_BYTE[kind + 1] for kind in range(5)]  # SpanKind.value 0..4 -> SPAN_KIND_INTERNAL (1)..CONSUMER (5)


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload."""
    size = len(payload)
    return tag + (_ONE_BYTE[size] if size < 0x80 else _varint(size)) + payload


_KEYS: dict[str, bytes] = {}  # KeyValue.key (field 1) of each attribute key seen: keys repeat on every span


def _key(key: str) -> bytes:
    encoded = _KEYS.get(key)
    if encoded is None:
        encoded = _field(b"\x0a", key.encode()) if key else b""  # proto3 leaves an empty string out
        if len(_KEYS) < 4096:  # a program inventing keys does not grow this without end
            _KEYS[key] = encoded
    return encoded


def _any_value(value: Any) -> bytes:
    """AnyValue's fields (a oneof: written even when default), the stock ``_encode_value``'s choices in its order."""
    kind = type(value)
    if kind is str:
        return _field(b"\x0a", value.encode())
    if kind is tuple or kind is list:
        return _field(b"\x2a", b"".join([_field(b"\x0a", _any_value(item)) for item in value]))
    if value is None:
        return b""  # an empty AnyValue
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _field(b"\x0a", value.encode())
    if isinstance(value, int):
        if not _INT64[0] <= value < _INT64[1]:
            raise ValueError(f"Value out of range: {value}")
        return b"\x18" + _varint(value & 0xFFFF_FFFF_FFFF_FFFF)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join([_field(b"\x0a", _any_value(item)) for item in value]))
    if isinstance(value, Mapping):
        return _field(b"\x32", b"".join([_field(b"\x0a", _key_value(str(k), v)) for k, v in value.items()]))
    raise Exception(f"Invalid type {type(value)} of value {value}")  # the stock encoder's words


def _key_value(key: str, value: Any) -> bytes:
    return _key(key) + _field(b"\x12", _any_value(value))


def attributes_field(tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
    """Repeated KeyValue under ``tag``; a value that cannot be encoded loses its key only, as in the stock encoder."""
    if not attributes:
        return b""
    return b"".join([attribute_field(tag, key, value) for key, value in attributes.items()])


def attribute_field(tag: bytes, key: str, value: Any) -> bytes:
    """One KeyValue under ``tag``; b"" (logged, as the stock ``_encode_attributes`` does) for a value it cannot encode."""
    try:
        kind = type(value)
        if kind is str:  # most values: KeyValue{key, AnyValue{string_value}} written here, without calls
            text = value.encode()
            size = len(text)
            any_value = b"\x0a" + (_ONE_BYTE[size] if size < 0x80 else _varint(size)) + text
        elif kind is int and 0 <= value < 0x80:
            any_value = b"\x18" + _ONE_BYTE[value]
        else:
            any_value = _any_value(value)
        size = len(any_value)
        key_value = (_KEYS.get(key) or _key(key)) + b"\x12" + (_ONE_BYTE[size] if size < 0x80 else _varint(size)) + any_value
    except Exception as error:  # noqa: BLE001
        _logger.exception("Failed to encode key %s: %s", key, error)
        return b""
    size = len(key_value)
    return tag + (_ONE_BYTE[size] if size < 0x80 else _varint(size)) + key_value


def _flags(context: Any) -> bytes:
    return _FLAGS_REMOTE if context is not None and context.is_remote else _FLAGS_LOCAL


AttributeWriter = Callable[[bytes, "Mapping[str, Any] | None"], bytes]


class EncodedSpan:
    """A span already written as its ScopeSpans.spans field, with what groups it into a request."""

    __slots__ = ("resource", "instrumentation_scope", "data")

    def __init__(self, resource: Any, instrumentation_scope: Any, data: bytes):
        self.resource = resource
        self.instrumentation_scope = instrumentation_scope
        self.data = data


def span_field(span: Any, attributes: AttributeWriter | None = None) -> bytes:
    """One span as the ScopeSpans.spans field (tag, length, Span message).

    ``attributes`` writes the span's and its events' attributes (``(tag, attributes) -> bytes``,
    :func:`attributes_field` by default): a caller that checks each attribute anyway writes them in the same pass.
    """
    return _field(b"\x12", _span(span, attributes or attributes_field))


def _span(span: Any, attributes: AttributeWriter) -> bytes:
    """A Span message's fields, 1 to 16 in order."""
    context = span.context
    parent = span.parent
    out = [b"\x0a\x10", context.trace_id.to_bytes(16, "big"), b"\x12\x08", context.span_id.to_bytes(8, "big")]
    state = context.trace_state
    if state:
        out.append(_field(b"\x1a", ",".join([f"{k}={v}" for k, v in state.items()]).encode()))
    if parent:
        out += (b"\x22\x08", parent.span_id.to_bytes(8, "big"))
    if span.name:
        out.append(_field(b"\x2a", span.name.encode()))
    out += (b"\x30", _KIND[span.kind.value])
    if span.start_time:
        out += (b"\x39", _FIXED64(span.start_time))
    if span.end_time:
        out += (b"\x41", _FIXED64(span.end_time))
    out.append(attributes(b"\x4a", sdk_attributes(span)))
    if span.dropped_attributes:
        out += (b"\x50", _varint(span.dropped_attributes))
    for event in span.events:
        body = b""
        if event.timestamp:
            body += b"\x09" + _FIXED64(event.timestamp)
        if event.name:
            body += _field(b"\x12", event.name.encode())
        body += attributes(b"\x1a", sdk_attributes(event))
        if event.dropped_attributes:
            body += b"\x20" + _varint(event.dropped_attributes)
        out.append(_field(b"\x5a", body))
    if span.dropped_events:
        out += (b"\x60", _varint(span.dropped_events))
    for link in span.links:
        linked = link.context
        body = (b"\x0a\x10" + linked.trace_id.to_bytes(16, "big") + b"\x12\x08" + linked.span_id.to_bytes(8, "big")
                + attributes_field(b"\x22", link.attributes))
        if link.dropped_attributes:
            body += b"\x28" + _varint(link.dropped_attributes)
        out.append(_field(b"\x6a", body + b"\x35" + _flags(linked)))
    if span.dropped_links:
        out += (b"\x70", _varint(span.dropped_links))
    status = span.status
    body = _field(b"\x12", status.description.encode()) if status.description else b""
    if status.status_code.value:
        body += b"\x18" + _ONE_BYTE[status.status_code.value]
    out.append(_field(b"\x7a", body))  # the stock encoder always sets a Status
    out += (b"\x85\x01", _flags(parent))
    return b"".join(out)


def _scope(scope: Any) -> bytes:
    if scope is None:
        return b""
    out = b""
    if scope.name:
        out += _field(b"\x0a", scope.name.encode())
    if scope.version:
        out += _field(b"\x12", scope.version.encode())
    return out + attributes_field(b"\x1a", getattr(scope, "attributes", None))


def encode_request(spans: Sequence[Any]) -> bytes:
    """The serialised ExportTraceServiceRequest of these ReadableSpans (or EncodedSpans), grouped by resource then scope as the stock encoder groups them."""
    grouped: dict[Any, dict[Any, list[bytes]]] = defaultdict(lambda: defaultdict(list))
    for span in spans:
        data = span.data if type(span) is EncodedSpan else _field(b"\x12", _span(span, attributes_field))
        grouped[span.resource][span.instrumentation_scope or None].append(data)
    out = []
    for resource, scopes in grouped.items():
        body = [_field(b"\x0a", attributes_field(b"\x0a", resource.attributes))]
        for scope, encoded in scopes.items():
            scope_spans = _field(b"\x0a", _scope(scope)) + b"".join(encoded)
            if scope is not None and scope.schema_url:
                scope_spans += _field(b"\x1a", scope.schema_url.encode())
            body.append(_field(b"\x12", scope_spans))
        if resource.schema_url:
            body.append(_field(b"\x1a", resource.schema_url.encode()))
        out.append(_field(b"\x0a", b"".join(body)))
    return b"".join(out)
