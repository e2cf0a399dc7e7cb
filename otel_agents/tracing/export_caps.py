"""Capping for the network copy: string values cut to a byte cap with a marker, spans shrunk to a byte budget.

The rules are described in ``export_filter``'s docstring; this module holds the
value-level cuts and the (rare) shrinking of one span that is over its budget.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import Status

from otel_agents.tracing.export_size import encoded_size

TRUNCATION_MARKER = "…[truncated {dropped} bytes by otel-agents; full value in the local session]"
_MARKED = re.compile(re.escape(TRUNCATION_MARKER).replace(re.escape("{dropped}"), r"\d+") + r"\Z")
# A span over budget never has its strings cut below this many bytes.
MIN_SHARED_CAP = 512


# --- values ---


def _marker_room(total: int) -> int:
    # The marker for ``total`` dropped bytes is never shorter than for fewer.
    return len(TRUNCATION_MARKER.format(dropped=total).encode("utf-8"))


def _head(raw: bytes, room: int) -> str:
    return raw[: max(0, room)].decode("utf-8", "ignore")  # never split a character


def value_bytes(value: Any) -> int:
    """Bytes a value's payload takes (strings as UTF-8; arrays summed)."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, (list, tuple)):
        return sum(value_bytes(v) for v in value)
    return 8


def cap_value(value: Any, cap: int) -> Any:
    """``value`` with at most ``cap`` bytes of string payload, marker included.

    A string array is capped as a whole: elements are kept while they fit, the
    element that crosses the cap is cut, and its marker counts every byte left
    out (of it and of the elements after it).
    """
    if isinstance(value, str):
        raw = value.encode("utf-8")
        if len(raw) <= cap:
            return value
        head = _head(raw, cap - _marker_room(len(raw)))
        return head + TRUNCATION_MARKER.format(dropped=len(raw) - len(head.encode("utf-8")))
    if isinstance(value, bytes):
        return value[:cap]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        total = value_bytes(value)
        if total <= cap:
            return list(value)
        room = _marker_room(total)
        out: list[str] = []
        used = 0
        for item in value:
            size = value_bytes(item)
            if used + size + room <= cap:
                out.append(item)
                used += size
                continue
            head = _head(item.encode("utf-8"), cap - used - room)
            out.append(head + TRUNCATION_MARKER.format(dropped=total - used - value_bytes(head)))
            break
        return out
    return list(value) if isinstance(value, tuple) else value


def is_text(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, str) for v in value)
    )


# --- attributes ---


def bounded_attributes(attributes: Mapping[str, Any], dropped: int) -> BoundedAttributes:
    bounded = BoundedAttributes(maxlen=None, attributes=dict(attributes), immutable=True)
    bounded.dropped = dropped  # read by the OTLP encoder as dropped_attributes_count
    return bounded


def dropped_count(attributes: Any) -> int:
    return getattr(attributes, "dropped", 0) or 0


# --- spans over budget ---


def rebuild_span(
    span: ReadableSpan, attributes: Any, events: Sequence[Event], dropped_events: int = 0, status: Status | None = None,
    name: str | None = None, links: Any = None,
) -> ReadableSpan:
    bounded_events = BoundedList(None)
    bounded_events.extend(events)
    bounded_events.dropped = span.dropped_events + dropped_events  # OTLP dropped_events_count
    if links is None and span.dropped_links:  # span.links is a plain tuple: the count goes in a BoundedList
        links = BoundedList(None)
        links.extend(span.links)
        links.dropped = span.dropped_links
    return ReadableSpan(
        name=span.name if name is None else name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=bounded_events,
        links=span.links if links is None else links,
        kind=span.kind,
        status=status or span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _recap(attributes: BoundedAttributes, cap: int) -> BoundedAttributes:
    return bounded_attributes({k: cap_value(v, cap) for k, v in attributes.items()}, dropped_count(attributes))


def _longest_strings(span: ReadableSpan) -> list[int]:
    sizes = [value_bytes(v) for v in (span.attributes or {}).values() if is_text(v)]
    for event in span.events:
        sizes += [value_bytes(v) for v in (event.attributes or {}).values() if is_text(v)]
    return sizes


def fit_span(span: ReadableSpan, span_bytes: int, value_cap: int) -> ReadableSpan:
    """Shrink the longest strings of an over-budget span to one shared cap."""
    return fit_span_counted(span, span_bytes, value_cap)[0]


def _cut_anew(value: Any, cap: int) -> bool:
    # Cut at ``cap`` and not cut already (by the value cap, its marker at the end).
    if not is_text(value) or value_bytes(value) <= cap:
        return False
    last = value if isinstance(value, str) else value[-1]
    return not _MARKED.search(last)


def fit_span_counted(span: ReadableSpan, span_bytes: int, value_cap: int) -> tuple[ReadableSpan, int]:
    """:func:`fit_span`, and how many of the span's values it cut that were whole before."""
    size = encoded_size([span])
    if size <= span_bytes:
        return span, 0
    sizes = _longest_strings(span)
    excess = size - span_bytes

    def saved(cap: int) -> int:
        # Bytes saved by capping every string at ``cap`` (the marker is inside the cap).
        return sum(s - cap for s in sizes if s > cap)

    low, high = MIN_SHARED_CAP, value_cap
    if saved(low) >= excess:
        while high - low > 64:
            mid = (low + high) // 2
            if saved(mid) >= excess:
                low = mid
            else:
                high = mid
        cap = low
    else:
        cap = MIN_SHARED_CAP
    cut = sum(_cut_anew(v, cap) for v in (span.attributes or {}).values())
    cut += sum(_cut_anew(v, cap) for event in span.events for v in (event.attributes or {}).values())
    shrunk = rebuild_span(
        span,
        _recap(span.attributes, cap),
        [Event(e.name, _recap(e.attributes, cap), e.timestamp) for e in span.events],
    )
    if encoded_size([shrunk]) <= span_bytes:
        return shrunk, cut
    # Too many events even at the floor: keep the earliest that fit, count the rest.
    events = list(shrunk.events)
    empty = encoded_size([rebuild_span(shrunk, {}, [])])
    used = encoded_size([rebuild_span(shrunk, shrunk.attributes, [])])
    kept: list[Event] = []
    for event in events:
        used += encoded_size([rebuild_span(shrunk, {}, [event])]) - empty
        if used > span_bytes:
            break
        kept.append(event)
    # A dropped event (a record among them) is as lost to a session built from the copy as a value cut.
    return rebuild_span(span, shrunk.attributes, kept, dropped_events=len(events) - len(kept)), cut + len(events) - len(kept)
