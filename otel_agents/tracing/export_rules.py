"""One span's network copy: content switch, redaction, value cap, attribute count and span budget, in one pass.

Local artifacts (``--otlp-file``, session directories) get every span whole. A Collector or
Jaeger gets this copy (export_filter.py sends it), redacted (spans hold content as the model
was sent it, pattern-labelled secrets included) and shaped so that no single giant value can
make a receiver reject a whole batch:

1. Content switch: with ``export_content=False`` message contents, tool
   arguments and results (``semconv.CONTENT_ATTRIBUTES`` on spans,
   ``CONTENT_EVENT_FIELDS`` on events, a failed tool's status message) are left out,
   and each run's root says so (``otel_agents.run.redacted_save``).
2. Value cap: no string value (and no string array, counted as a whole) is
   longer than ``value_cap`` UTF-8 bytes, the truncation marker included. The
   marker says how many bytes were dropped and that the full value is local, and
   the span says how many of its values were cut (``otel_agents.export.truncated``),
   so a session collect or import builds from it is known to hold markers, not values.
3. Attribute count: at most ``max_attributes`` (128, the OpenTelemetry default
   Jaeger and most backends expect) per span and per event; the first ones set
   are kept, because the runtime sets the identifying attributes at span start.
   The number dropped travels as OTLP ``dropped_attributes_count``.
4. Span budget: one span, events included, encodes to at most ``span_bytes``.
   A span over budget (say a ``discuss`` whose dozens of replies each sit just
   under the value cap) has its longest strings shortened to one common length,
   found by bisection, so short values (ids, names, counts) stay intact. Only if
   that is not enough are its last events dropped, counted as OTLP
   ``dropped_events_count``.

The standard OTEL_*_LIMIT variables (span_limits.py), when set, bound the copy further: string
lengths in characters (cut, no marker, counted in ``otel_agents.export.truncated``), attribute
counts per span, event and link, events and links per span (the first kept, the rest counted).

Cost: one pass over a span's attributes and events (content switch, redaction, count and
cap together) that also sums an upper bound of its encoded size (``export_size``); the OTLP
encoder measures a span only when that bound exceeds the span budget. A span the rules leave
unchanged (most: no secret, nothing over a cap) is returned as it is, not copied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import Link, Status

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.credentials import MARKER
from otel_agents.tracing.export_caps import (
    MIN_SHARED_CAP,
    bounded_attributes,
    cap_value,
    dropped_count,
    fit_span_counted,
    rebuild_span,
    value_bytes,
    is_text,
)
from otel_agents.tracing.export_size import (
    EVENT_FIXED,
    FIELD,
    MAX_BATCH_BYTES,
    EnvelopeSizes,
    attribute_bound,
    encoded_size,
    span_bound,
    text_bytes,
)
from otel_agents.tracing.redaction import is_secret_key, known_safe_key, redact, redact_text, redact_text_once

DEFAULT_VALUE_CAP = 64 * 1024
MIN_VALUE_CAP = 256  # below this the marker itself would not fit
MAX_ATTRIBUTES = 128
MAX_SPAN_BYTES = 1024 * 1024

_SCALARS = frozenset({int, float, bool, type(None)})
# attribute_bound of a string or scalar attribute, less its key's and text's bytes.
_STRING_ATTRIBUTE = attribute_bound("", "")
_SCALAR_ATTRIBUTE = attribute_bound("", 0)
CONTENT_EVENT_KEYS = frozenset(sc.EVENT_FIELD_PREFIX + f for f in sc.CONTENT_EVENT_FIELDS) | sc.CONTENT_ATTRIBUTES


@dataclass(frozen=True)
class ExportLimits:
    """Bounds on what one span and one request may carry over the network."""

    value_cap: int = DEFAULT_VALUE_CAP
    max_attributes: int = MAX_ATTRIBUTES
    span_bytes: int = MAX_SPAN_BYTES
    batch_bytes: int = MAX_BATCH_BYTES
    # The standard OTEL_*_LIMIT variables (span_limits.py); None: no such bound but the ones above.
    max_event_attributes: int | None = None  # None: max_attributes
    max_link_attributes: int | None = None
    span_value_length: int | None = None  # characters of a span attribute's string (each, in an array)
    value_length: int | None = None  # the same for event and link attributes
    max_events: int | None = None
    max_links: int | None = None

    def __post_init__(self) -> None:
        if self.value_cap < MIN_VALUE_CAP:
            raise ValueError(f"the export value cap must be at least {MIN_VALUE_CAP} bytes, not {self.value_cap}")
        counts = (self.max_attributes, self.max_event_attributes, self.max_link_attributes, self.span_value_length,
                  self.value_length, self.max_events, self.max_links)
        if any(n is not None and n < 0 for n in counts):
            raise ValueError("attribute, event and link limits must be at least 0")
        if self.span_bytes < 4 * MIN_SHARED_CAP or self.batch_bytes < self.span_bytes:
            raise ValueError("need span_bytes >= 2048 and batch_bytes >= span_bytes")


# The ids a receiver places a span by (collect, import: its session): never cut to a standard length limit, and
# kept within a count limit by the last other attribute giving way. Cut, two sessions merged under one cut id.
PLACING_KEYS = frozenset({sc.SESSION_ID, sc.GEN_AI_CONVERSATION_ID})


def export_attributes(
    attributes: Mapping[str, Any] | None,
    limits: ExportLimits,
    export_content: bool,
    content_keys: frozenset[str],
    already_dropped: int,
    seen: dict[str, str],
    on_event: bool = False,
) -> tuple[dict[str, Any], int, bool, int, int]:
    """One pass over a span's or event's attributes: content switch, redaction, count, cap.

    Returns (attributes, dropped, changed, size bound, values cut): ``changed`` is False when the
    result would encode exactly as the original, so the original can be sent as is.
    ``seen``: texts already redacted in this export, each redacted once. ``on_event``: an event's
    attributes (the event limits apply), else a span's.
    """
    out: dict[str, Any] = {}
    dropped = already_dropped
    changed = False
    size = 0
    cut = 0
    cap = limits.value_cap
    most = _most(limits, on_event)
    length = limits.value_length if on_event else limits.span_value_length
    for key, value in (attributes or {}).items():
        if not export_content and key in content_keys:
            changed = True
            continue
        if len(out) >= most:
            changed = True
            if key not in PLACING_KEYS:
                dropped += 1
                continue
            dropped += _give_way(out)  # none to give way (a limit of 0): kept over it, as the truncation mark is
        if not known_safe_key(key) and is_secret_key(key):
            new: Any = MARKER
        elif type(value) is str:
            new = redact_text_once(value, seen)
            shortened = length is not None and len(new) > length and key not in PLACING_KEYS
            if shortened:
                new = new[:length]  # the standard limit: characters, no marker (the span counts it)
            encoded = len(new) if new.isascii() else text_bytes(new)  # isascii: O(1), no copy
            if encoded > cap:
                new = cap_value(new, cap)
                encoded = text_bytes(new)
                shortened = True
            if shortened:
                changed = True
                cut += 1
            elif new is not value and new != value:
                changed = True
            out[key] = new
            # attribute_bound, inlined: this loop runs for every attribute of every exported span
            size += _STRING_ATTRIBUTE + encoded + (len(key) if key.isascii() else text_bytes(key))
            continue
        elif type(value) in _SCALARS:
            out[key] = value
            size += _SCALAR_ATTRIBUTE + (len(key) if key.isascii() else text_bytes(key))
            continue
        else:
            whole, shortened = shorten(redact(value), length)
            new = cap_value(whole, cap)
            cut += shortened or ((is_text(whole) or isinstance(whole, bytes)) and value_bytes(whole) > cap)
            if isinstance(value, tuple) and isinstance(new, list) and new == list(value):
                new = value
        if new is not value and new != value:
            changed = True
        out[key] = new
        size += attribute_bound(key, new)
    return out, dropped, changed, size, cut


def _give_way(out: dict[str, Any]) -> bool:
    """Drop the last attribute kept that places no span (its count is the caller's), so a placing one fits."""
    for key in reversed(out):
        if key not in PLACING_KEYS:
            del out[key]
            return True
    return False


def _most(limits: ExportLimits, on_event: bool) -> int:
    if on_event and limits.max_event_attributes is not None:
        return limits.max_event_attributes
    return limits.max_attributes


def shorten(value: Any, length: int | None) -> tuple[Any, bool]:
    """``value`` within the standard length limit (a string, or each string of an array), and whether it was cut."""
    if length is None:
        return value, False
    if isinstance(value, (str, bytes)):
        return (value[:length], True) if len(value) > length else (value, False)
    if isinstance(value, (list, tuple)) and any(isinstance(v, (str, bytes)) and len(v) > length for v in value):
        return [v[:length] if isinstance(v, (str, bytes)) else v for v in value], True
    return value, False


def keeps_attribute(
    key: str, value: Any, limits: ExportLimits, export_content: bool, content_keys: frozenset[str], seen: dict[str, str],
    on_event: bool = False,
) -> bool:
    """Whether :func:`export_attributes` leaves this one attribute as it is: its loop's verdict, building nothing.

    Strings and scalars (nearly every attribute) are judged here as the loop judges them
    (``test_export_unchanged`` checks that the two agree on any attribute); anything else by the pass itself.
    """
    if not export_content and key in content_keys:
        return False
    if not known_safe_key(key) and is_secret_key(key):
        return False
    kind = type(value)
    if kind is str:
        new = redact_text_once(value, seen)
        length = limits.value_length if on_event else limits.span_value_length
        return ((new is value or new == value) and (length is None or len(value) <= length or key in PLACING_KEYS)
                and (len(value) if value.isascii() else text_bytes(value)) <= limits.value_cap)
    if kind in _SCALARS:
        return True
    return not export_attributes({key: value}, limits, export_content, content_keys, 0, seen, on_event)[2]


def _attributes_with_count(attributes: dict[str, Any], dropped: int) -> Any:
    # Only a BoundedAttributes carries a dropped count to the encoder; building one
    # validates every value again, so a plain dict goes when nothing was dropped.
    return bounded_attributes(attributes, dropped) if dropped else attributes


def filter_span(span: ReadableSpan, limits: ExportLimits | int = ExportLimits(), export_content: bool = True) -> ReadableSpan:
    """The network copy of one span (see the module docstring for the rules)."""
    return network_copy(span, limits if isinstance(limits, ExportLimits) else ExportLimits(value_cap=limits),
                        export_content, EnvelopeSizes())[0]


def network_copy(
    span: ReadableSpan, limits: ExportLimits, export_content: bool, envelope: EnvelopeSizes,
    seen: dict[str, str] | None = None,
) -> tuple[ReadableSpan, int]:
    """The network copy of one span and a bound of its encoded request size.

    The span itself when the copy would encode the same: most spans carry no secret
    and nothing over the caps, and copying them is most of what the filter would cost.
    ``seen``: texts redacted for the spans exported with this one (a batch's spans repeat
    the same tool definitions, prices, ids and names), each redacted once.
    """
    seen = {} if seen is None else seen
    changed = False
    events: list[tuple[str, dict[str, Any], int, int | None]] = []  # made Events only for a copy
    event_sizes: list[int] = []
    cut = 0
    kept_events = span.events
    if limits.max_events is not None and len(kept_events) > limits.max_events:
        kept_events = kept_events[:limits.max_events]  # the first ones, as for attributes and the span budget
        changed = True
        cut += len(span.events) - len(kept_events)  # a dropped record is lost to a session built from the copy
    for e in kept_events:
        name = redact_text_once(e.name, seen)
        attributes, dropped, event_changed, size, event_cut = export_attributes(
            e.attributes, limits, export_content, CONTENT_EVENT_KEYS, dropped_count(e.attributes), seen, True
        )
        changed = changed or event_changed or name != e.name
        cut += event_cut
        events.append((name, attributes, dropped, e.timestamp))
        event_sizes.append(EVENT_FIXED + FIELD + text_bytes(name) + size)
    attributes, dropped, attributes_changed, size, attributes_cut = export_attributes(
        span.attributes, limits, export_content, sc.CONTENT_ATTRIBUTES, span.dropped_attributes, seen
    )
    cut += attributes_cut
    links, links_cut = limited_links(span, limits)
    cut += links_cut
    changed = changed or links is not None
    if not export_content and sc.RUN_SOURCE in attributes:
        # What collect or import builds from this copy has no contents: marked as --redacted-save
        # runs are, it is never resumed by sending the model empty messages.
        dropped += _mark(attributes, sc.RUN_REDACTED_SAVE, True, limits)
        attributes_changed = True
    status = span.status
    if status.description and not export_content and span.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL:
        # A failed tool's status is its result as the model read it (a hook's reason, the tool's error): content.
        status = Status(status.status_code, str(span.attributes.get(sc.ERROR_TYPE) or "error"))
    if status.description:  # set_status and SDK exception text never went through Telemetry
        status = Status(status.status_code, redact_text(status.description))
        if value_bytes(status.description) > limits.value_cap:
            status = Status(status.status_code, cap_value(status.description, limits.value_cap))
            cut += 1
        changed = changed or status.description != span.status.description
    if cut:
        # What collect or import builds from this copy holds markers where values were: never resumed from.
        dropped += _mark(attributes, sc.EXPORT_TRUNCATED, _count_after(attributes, cut), limits)
        size += attribute_bound(sc.EXPORT_TRUNCATED, cut)
        attributes_changed = True
    name = redact_text_once(span.name, seen)
    if changed or attributes_changed or name != span.name:
        copied = [Event(n, _attributes_with_count(a, d), t) for n, a, d, t in events]
        span = rebuild_span(span, _attributes_with_count(attributes, dropped), copied, status=status, name=name,
                            dropped_events=len(span.events) - len(kept_events), links=links)
    bound = envelope(span) + span_bound(span, size, event_sizes)
    if bound <= limits.span_bytes:
        return span, bound
    # Room kept for the count of values cut, set (or raised) once the fit has cut more.
    fitted, fit_cut = fit_span_counted(span, limits.span_bytes - 64, limits.value_cap)
    if fit_cut:
        fitted = _with_count(fitted, _count_after(fitted.attributes, fit_cut), limits)
    return fitted, encoded_size([fitted])


def within_counts(span: ReadableSpan, limits: ExportLimits) -> bool:
    """The span's events and links, and the links' attributes, are within the standard count and length limits."""
    if limits.max_events is not None and len(span.events) > limits.max_events:
        return False
    return limited_links(span, limits)[0] is None


def limited_links(span: ReadableSpan, limits: ExportLimits) -> tuple[BoundedList | None, int]:
    """The span's links within the link limits, their attributes redacted (None: all are as they were) and how
    many values were cut."""
    links = span.links
    most, length = limits.max_link_attributes, limits.value_length
    if not links or (limits.max_links is None and not any(link.attributes for link in links)):
        return None, 0
    kept = links if limits.max_links is None else links[:limits.max_links]
    changed = len(kept) < len(links)
    cut = 0
    out = []
    for link in kept:
        attributes = _redacted_link_attributes(link.attributes)
        dropped = dropped_count(link.attributes)
        if most is not None and len(attributes) > most:
            dropped += len(attributes) - most
            attributes = dict(list(attributes.items())[:most])
        for key, value in attributes.items():
            attributes[key], shortened = shorten(value, length)
            cut += shortened
        if dropped != dropped_count(link.attributes) or attributes != dict(link.attributes or {}):
            changed = True
        out.append(Link(link.context, bounded_attributes(attributes, dropped)))
    if not changed:
        return None, 0
    bounded = BoundedList(None)
    bounded.extend(out)
    bounded.dropped = span.dropped_links + len(links) - len(kept)  # OTLP dropped_links_count
    return bounded, cut


def _redacted_link_attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    """A link's attributes as every exported value is: secret keys' values and secrets in text replaced (an
    application's own links may carry any); a value redaction leaves alone is kept as it was (a tuple stays one)."""
    out = {}
    for key, value in (attributes or {}).items():
        new = redact({key: value})[key]
        out[key] = value if new == (list(value) if isinstance(value, tuple) else value) else new
    return out


def _mark(attributes: dict[str, Any], key: str, value: Any, limits: ExportLimits) -> int:
    """Set a mark the receiver must see, within the attribute count: the last other attribute gives way (1 dropped)."""
    dropped = 0
    if key not in attributes and attributes and len(attributes) >= limits.max_attributes:
        dropped = int(_give_way(attributes))  # never a placing id: the span would lose its session
    attributes[key] = value
    return dropped


def _count_after(attributes: Mapping[str, Any], cut: int) -> int:
    # A span sent on again (``otel-agents export`` of a collected session) keeps the cuts it came with.
    before = attributes.get(sc.EXPORT_TRUNCATED)
    return cut + (before if type(before) is int and before > 0 else 0)


def _with_count(span: ReadableSpan, cut: int, limits: ExportLimits) -> ReadableSpan:
    attributes = dict(span.attributes or {})
    dropped = dropped_count(span.attributes) + _mark(attributes, sc.EXPORT_TRUNCATED, cut, limits)
    return rebuild_span(span, _attributes_with_count(attributes, dropped), list(span.events), status=span.status)
