"""Upper bounds of a span's OTLP protobuf encoding, computed without encoding it.

The network export must keep each span and each request under a byte budget, but
encoding a span with the OTLP exporters' own encoder only to measure it costs as
much as the export itself. Protobuf sizes are simple to bound from above: every
field is a tag, at most a length prefix, and its payload. Each bound here takes
the largest tag (2 bytes: the Span message has field 16), the largest length
prefix (5 bytes) and the largest varint (10 bytes), so it is never below the
true size. The exact encoder is only needed when a bound says a budget may be
exceeded (see ``export_filter``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from opentelemetry.sdk.trace import ReadableSpan

from otel_agents.tracing.otlp_proto_encode import encode_request

TAG = 2
LENGTH = 5
VARINT = 10
FIELD = TAG + LENGTH  # a length-delimited field (string, bytes, sub-message) before its payload
SCALAR = TAG + VARINT
# trace_id, span_id, parent_span_id, kind, start, end, the three dropped counts, status
# (code and message prefix), flags, and each repeated-field prefix of the span within its ScopeSpans.
SPAN_FIXED = (FIELD + 16) + 2 * (FIELD + 8) + SCALAR + 2 * (TAG + 8) + 3 * SCALAR + (FIELD + SCALAR) + (TAG + 4) + FIELD
EVENT_FIXED = FIELD + (TAG + 8) + SCALAR  # the event's prefix, time, dropped count
LINK_FIXED = FIELD + (FIELD + 16) + (FIELD + 8) + SCALAR + (TAG + 4)
MAX_BATCH_BYTES = 3 * 1024 * 1024  # a request's default budget: room under the collectors' 4 MiB gRPC default


def encoded_size(spans: Sequence[ReadableSpan]) -> int:
    """Bytes of the OTLP ``ExportTraceServiceRequest`` the exporters would send (the stock encoder's, written directly)."""
    return len(encode_request(spans))


class Unbounded(Exception):
    """A value of no OTLP type, which this module does not bound."""


def text_bytes(text: str) -> int:
    # isascii() is O(1) on CPython's compact strings: no copy for the common case.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def value_bound(value: Any) -> int:
    """Bytes of an ``AnyValue`` message holding ``value``, at most."""
    kind = type(value)
    if kind is str:
        return FIELD + text_bytes(value)
    if kind is int or kind is bool:
        return SCALAR
    if kind is float:
        return TAG + 8
    if value is None:
        return 0
    if isinstance(value, (bytes, bytearray)):
        return FIELD + len(value)
    if isinstance(value, str):
        return FIELD + text_bytes(value)
    if isinstance(value, (list, tuple)):
        return FIELD + sum(FIELD + value_bound(v) for v in value)
    if isinstance(value, (int, float)):
        return SCALAR
    if isinstance(value, Mapping):  # a KeyValueList: a KeyValue per entry, its key as the encoder writes it
        return FIELD + sum(attribute_bound(str(k), v) for k, v in value.items())
    raise Unbounded(type(value).__name__)


def attribute_bound(key: str, value: Any) -> int:
    """Bytes of one ``KeyValue`` as an element of a repeated field, at most."""
    return FIELD + FIELD + text_bytes(key) + FIELD + value_bound(value)


def attributes_bound(attributes: Mapping[str, Any] | None) -> int:
    return sum(attribute_bound(k, v) for k, v in (attributes or {}).items())


def _trace_state_bound(trace_state: Any) -> int:
    if not trace_state:
        return FIELD
    return FIELD + sum(text_bytes(k) + text_bytes(v) + 2 for k, v in trace_state.items())


def span_bound(
    span: ReadableSpan,
    attributes: int | None = None,
    events: Sequence[int] | None = None,
) -> int:
    """Bytes the span adds to a request, at most.

    ``attributes`` and ``events`` are bounds already known (of the span's own
    attributes, and of each event), so a caller that just built them pays no second walk.
    """
    size = SPAN_FIXED + FIELD + text_bytes(span.name) + _trace_state_bound(span.context.trace_state)
    size += attributes_bound(span.attributes) if attributes is None else attributes
    if events is None:
        events = [EVENT_FIXED + FIELD + text_bytes(e.name) + attributes_bound(e.attributes) for e in span.events]
    size += sum(events)
    for link in span.links or ():
        size += LINK_FIXED + _trace_state_bound(link.context.trace_state) + attributes_bound(link.attributes)
    if span.status is not None and span.status.description:
        size += text_bytes(span.status.description)
    return size


class EnvelopeSizes:
    """Exact bytes of a request's resource and scope around one span, cached per pair.

    Keyed by identity: hashing a ``Resource`` serialises its attributes each time, and
    a process exports from one resource and a few scopes.
    """

    def __init__(self) -> None:
        self._known: dict[tuple[int, int], tuple[Any, Any, int]] = {}

    def __call__(self, span: ReadableSpan) -> int:
        key = (id(span.resource), id(span.instrumentation_scope))
        known = self._known.get(key)
        if known is not None and known[0] is span.resource and known[1] is span.instrumentation_scope:
            return known[2]
        bare = ReadableSpan(name="", context=span.context, resource=span.resource,
                            instrumentation_scope=span.instrumentation_scope)
        # The bare span's own bytes are counted once more: an over-estimate, never under.
        size = encoded_size([bare]) + 2 * LENGTH  # ResourceSpans and ScopeSpans prefixes may grow
        if len(self._known) > 64:  # resources and scopes come and go only in tests
            self._known.clear()
        self._known[key] = (span.resource, span.instrumentation_scope, size)
        return size


def chunk_by_size(
    spans: Sequence[ReadableSpan], limit: int = MAX_BATCH_BYTES, sizes: Sequence[int] | None = None
) -> list[list[ReadableSpan]]:
    """Consecutive groups whose encoded requests each stay within ``limit`` bytes.

    Each span is measured as a request of its own, so a group's true size (which
    shares the resource and scope) is never larger than the sum used here.
    ``sizes``: an upper bound of each span's request size, known already (else each is encoded).
    """
    chunks: list[list[ReadableSpan]] = []
    used = 0
    for number, span in enumerate(spans):
        size = encoded_size([span]) if sizes is None else sizes[number]
        if chunks and used + size <= limit:
            chunks[-1].append(span)
            used += size
        else:
            chunks.append([span])
            used = size
    return chunks
