"""Plain span data: what every persistence function consumes.

Finished SDK spans, OTLP/JSON documents and Jaeger JSON all decode into these
dataclasses, so tree building is one pure function whatever the trace's route.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Container, Mapping

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.credentials import scrub_text
from otel_agents.tracing.redaction import (
    KNOWN_SAFE_KEYS, MARKER, is_secret_key, known_safe_key, redact, redact_text, scrub,
)

KIND_NAMES = {
    SpanKind.INTERNAL: "INTERNAL",
    SpanKind.SERVER: "SERVER",
    SpanKind.CLIENT: "CLIENT",
    SpanKind.PRODUCER: "PRODUCER",
    SpanKind.CONSUMER: "CONSUMER",
}
STATUS_NAMES = {StatusCode.UNSET: "UNSET", StatusCode.OK: "OK", StatusCode.ERROR: "ERROR"}
_MESSAGE_ID_KEY = sc.EVENT_FIELD_PREFIX + "message_id"  # how a record event names its record
_MISSING = object()
_SCALARS = (str, int, float, bool)
# (text, any value): what a copy of a span goes through; pattern redaction or the source's scrub.
_REDACT = (redact_text, redact)
_SCRUB = (scrub_text, scrub)


# Spans and events are frozen dataclasses with hand-written constructors: the generated
# ones set each field through object.__setattr__ (the frozen class refuses its own), which
# made building one SpanData cost 2.2 us against 0.5 here. The recorder process builds two
# per span message, readers one per saved span. Defaults are the fields' (a fresh dict).
_FRESH: Any = object()  # a dict field left out: a new empty dict, as field(default_factory=dict) gives


@dataclass(frozen=True, init=False)
class EventData:
    name: str
    time_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)

    def __init__(self, name: str, time_ns: int, attributes: dict[str, Any] = _FRESH) -> None:
        fields = self.__dict__
        fields["name"] = name
        fields["time_ns"] = time_ns
        fields["attributes"] = {} if attributes is _FRESH else attributes


@dataclass(frozen=True)
class LinkData:  # links are few: the generated constructor is fine
    trace_id: str
    span_id: str
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, init=False)
class SpanData:
    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits
    parent_span_id: str | None
    name: str
    kind: str  # INTERNAL | CLIENT | SERVER | PRODUCER | CONSUMER
    start_ns: int
    end_ns: int | None  # None: the span never ended (crash) and is known only by its start
    attributes: dict[str, Any] = field(default_factory=dict)
    events: tuple[EventData, ...] = ()
    links: tuple[LinkData, ...] = ()
    status: str = "UNSET"  # UNSET | OK | ERROR
    status_message: str | None = None
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str | None = None

    def __init__(
        self, trace_id: str, span_id: str, parent_span_id: str | None, name: str, kind: str, start_ns: int,
        end_ns: int | None, attributes: dict[str, Any] = _FRESH, events: tuple[EventData, ...] = (),
        links: tuple[LinkData, ...] = (), status: str = "UNSET", status_message: str | None = None,
        resource: dict[str, Any] = _FRESH, scope: str | None = None,
    ) -> None:
        fields = self.__dict__
        fields["trace_id"] = trace_id
        fields["span_id"] = span_id
        fields["parent_span_id"] = parent_span_id
        fields["name"] = name
        fields["kind"] = kind
        fields["start_ns"] = start_ns
        fields["end_ns"] = end_ns
        fields["attributes"] = {} if attributes is _FRESH else attributes
        fields["events"] = events
        fields["links"] = links
        fields["status"] = status
        fields["status_message"] = status_message
        fields["resource"] = {} if resource is _FRESH else resource
        fields["scope"] = scope


def sdk_attributes(holder: Any) -> dict[str, Any]:
    """A span's or event's attributes as the SDK holds them, to be read at once (never kept or changed).

    The SDK keeps them in a ``BoundedAttributes`` over a plain dict, behind a read-only proxy
    on ended spans; iterating either goes through Python item by item, under a lock. Their
    dict is read directly (the recorder link's frames, the OTLP encoder). Anything else
    (another SDK version, a hand-made span) is copied the public way.
    """
    inner = getattr(holder, "_attributes", None)
    inner = getattr(inner, "_dict", inner)
    if isinstance(inner, dict):
        return inner
    return dict(holder.attributes or {})


def hex_trace_id(value: int) -> str:
    return format(value, "032x")


def hex_span_id(value: int) -> str:
    return format(value, "016x")


def from_readable(span: ReadableSpan) -> SpanData:
    """Plain data of a finished (or open) SDK span, secrets redacted (a copy that leaves: ``--otlp-file``).

    Redaction here catches what never went through Telemetry: the SDK's own exception
    events (``exception.message``/``exception.stacktrace``), ``set_status`` descriptions
    and direct ``set_attribute`` calls. It is idempotent, so already-redacted data is unchanged.
    """
    return SpanReader().read(span)


class SpanReader:
    """:func:`from_readable` for a consumer that copies many spans of one provider (the recorder).

    Every span of a provider holds the same Resource object: its redacted copy is made
    once and shared (read it, do not change it). Record events that the consumer was
    handed by Telemetry, already redacted, can be named so they are only copied.

    ``redact_patterns=False`` (the session directory's copy) only scrubs credentials
    (``redaction.scrub``), keeping content as the model was sent it.
    """

    def __init__(self, redact_patterns: bool = True) -> None:
        self._how = _REDACT if redact_patterns else _SCRUB
        self._resource: Any = None
        self._resource_plain: dict[str, Any] = {}

    def read(
        self, span: ReadableSpan, redacted_events: Container[tuple[str, int]] = (), started: SpanData | None = None,
    ) -> SpanData:
        """``redacted_events``: ``(message_id, time_ns)`` of record events Telemetry handed over (scrubbed),
        copied as they are by a scrubbing reader.

        ``started``: this span as read at its start. An attribute still equal to its value
        there keeps that value without being redacted again: redaction is idempotent, so
        redacting a value equal to a redacted one gives that same value.
        """
        if self._how is _REDACT:
            redacted_events = ()  # Telemetry only scrubbed what it handed over: pattern secrets remain
        resource = span.resource
        if resource is not self._resource:
            self._resource = resource
            self._resource_plain = _redacted_plain(resource.attributes, None, self._how) if resource else {}
        return _plain_span(span, self._resource_plain, redacted_events, started, self._how)

    def clean(
        self, raw: SpanData, redacted_events: Container[tuple[str, int]] = (), started: SpanData | None = None,
        credential_free: bool = False,
    ) -> SpanData:
        """:meth:`read` of a span that arrived as raw SpanData fields (the recorder process's pipe).

        ``raw`` holds the SDK's values as they were (ids already hex): the same redaction
        applies, and a resource dict shared by many spans is redacted once.

        ``credential_free``: the caller found no known credential in the bytes ``raw`` came in
        (:func:`~otel_agents.tracing.credentials.credential_free`). Scrubbing can then only
        replace secret keys' values and make sequences lists, so a span whose keys are all
        known not to be secret is copied the short way (:func:`_plain_without_secrets`), to
        the same SpanData. A redacting reader (``redact_patterns``) takes the long way.
        """
        if self._how is _REDACT:
            redacted_events = ()
            credential_free = False
        if raw.resource is not self._resource:
            self._resource = raw.resource
            self._resource_plain = _redacted_plain(raw.resource, None, self._how)
        if credential_free:
            short = _copied_without_secrets(raw, self._resource_plain)
            if short is not None:
                return short
        text = self._how[0]
        return SpanData(
            trace_id=raw.trace_id,
            span_id=raw.span_id,
            parent_span_id=raw.parent_span_id,
            name=started.name if started is not None and raw.name == started.name else text(raw.name),
            kind=raw.kind,
            start_ns=raw.start_ns,
            end_ns=raw.end_ns,
            attributes=_redacted_plain(raw.attributes, started.attributes if started is not None else None, self._how),
            events=tuple(_plain_event_of(e.name, e.time_ns, e.attributes, redacted_events, self._how)
                         for e in raw.events),
            links=tuple(LinkData(link.trace_id, link.span_id, _redacted_plain(link.attributes, None, self._how))
                        for link in raw.links),
            status=raw.status,
            status_message=text(raw.status_message) if raw.status_message else raw.status_message,
            resource=self._resource_plain,
            scope=raw.scope,
        )


def _copied_without_secrets(raw: SpanData, resource: dict[str, Any]) -> SpanData | None:
    """``raw`` read by a scrubbing reader, when no text of it holds a known credential; None: take the long way."""
    attributes = _plain_without_secrets(raw.attributes)
    events = _copies_without_secrets(raw.events) if raw.events else ()  # most spans have neither
    links = _copies_without_secrets(raw.links) if raw.links else ()
    if attributes is None or events is None or links is None:
        return None
    if events:
        events = tuple(EventData(e.name, e.time_ns, copy) for e, copy in zip(raw.events, events))
    if links:
        links = tuple(LinkData(link.trace_id, link.span_id, copy) for link, copy in zip(raw.links, links))
    return SpanData(raw.trace_id, raw.span_id, raw.parent_span_id, raw.name, raw.kind, raw.start_ns, raw.end_ns,
                    attributes, events, links, raw.status, raw.status_message, resource, raw.scope)


def _copies_without_secrets(holders: tuple) -> list[dict[str, Any]] | None:
    """Each event's or link's attributes copied by :func:`_plain_without_secrets`; None if one cannot be."""
    copies = []
    for holder in holders:
        copy = _plain_without_secrets(holder.attributes)
        if copy is None:
            return None
        copies.append(copy)
    return copies


# Keys found not to be secret (the project's own, then others as they are met), up to a bound.
_NOT_SECRET: set[str] = set(KNOWN_SAFE_KEYS)
_NOT_SECRET_MAX = 4096
_FLAT = frozenset({str, int, float, bool, type(None), bytes})


def _plain_without_secrets(attributes: Mapping[str, Any]) -> dict[str, Any] | None:
    """``_redacted_plain(attributes, None, _SCRUB)`` of attributes no text of which holds a known credential.

    Such a scrub changes only the values of secret keys, pairs led by one, maps, and
    the type of sequences (lists): with no key secret, it is a copy with sequences
    of flat values made lists. None where the long way is needed (a secret or
    non-text key, a map, a pair led by a secret key, a nested value).
    """
    if not attributes:
        return {}
    keys = attributes.keys()
    if not keys <= _NOT_SECRET:
        for key in keys - _NOT_SECRET:
            if not isinstance(key, str) or is_secret_key(key):
                return None
            if len(_NOT_SECRET) < _NOT_SECRET_MAX:
                _NOT_SECRET.add(key)
    plain = dict(attributes)
    for key, value in plain.items():
        if type(value) in _FLAT:
            continue
        if isinstance(value, (tuple, list)):
            if len(value) == 2 and isinstance(value[0], str) and is_secret_key(value[0]):
                return None
            for item in value:
                if type(item) not in _FLAT:
                    return None
            plain[key] = list(value)
        elif isinstance(value, dict):
            return None
    return plain


def _plain_span(
    span: ReadableSpan, resource: dict[str, Any], redacted_events: Container[tuple[str, int]],
    started: SpanData | None = None, how: tuple = _REDACT,
) -> SpanData:
    text = how[0]
    ctx = span.context
    parent = span.parent
    status = span.status
    name = span.name
    return SpanData(
        trace_id=hex_trace_id(ctx.trace_id),
        span_id=hex_span_id(ctx.span_id),
        parent_span_id=hex_span_id(parent.span_id) if parent is not None and parent.is_valid else None,
        name=started.name if started is not None and name == started.name else text(name),
        kind=KIND_NAMES.get(span.kind, "INTERNAL"),
        start_ns=span.start_time or 0,
        end_ns=span.end_time,
        attributes=_redacted_plain(span.attributes, started.attributes if started is not None else None, how),
        events=tuple(_plain_event(e, redacted_events, how) for e in span.events),
        links=tuple(
            LinkData(hex_trace_id(link.context.trace_id), hex_span_id(link.context.span_id),
                     _redacted_plain(link.attributes, None, how))
            for link in span.links
        ),
        status=STATUS_NAMES.get(status.status_code, "UNSET"),
        status_message=text(status.description) if status.description else status.description,
        resource=resource,
        scope=span.instrumentation_scope.name if span.instrumentation_scope else None,
    )


def _plain_event(event: Any, redacted_events: Container[tuple[str, int]], how: tuple = _REDACT) -> EventData:
    return _plain_event_of(event.name, event.timestamp, event.attributes, redacted_events, how)


def _plain_event_of(
    name: str, time_ns: int, attributes: Mapping[str, Any], redacted_events: Container[tuple[str, int]],
    how: tuple = _REDACT,
) -> EventData:
    if (
        redacted_events
        and name in sc.SESSION_EVENT_NAMES
        and (attributes.get(_MESSAGE_ID_KEY), time_ns) in redacted_events
    ):
        plain = {k: list(v) if type(v) is tuple else v for k, v in attributes.items()}
        return EventData(name, time_ns, plain)
    return EventData(how[0](name), time_ns, _redacted_plain(attributes, None, how))


def _redacted_plain(attributes: Any, known: Mapping[str, Any] | None = None, how: tuple = _REDACT) -> dict[str, Any]:
    """Attributes as a plain dict (sequences as lists), secrets redacted: ``redact_attributes`` in one pass.

    ``known``: redacted values of the same attributes read before; a scalar equal to its
    known value is that value redacted (redaction is idempotent) and is taken as it is.
    """
    out: dict[str, Any] = {}
    if not attributes:
        return out
    text, value_of = how
    for key, value in attributes.items():
        kind = type(value)
        if known is not None:
            before = known.get(key, _MISSING)
            if type(before) is kind and before == value and kind in _SCALARS:
                out[key] = before
                continue
        if not known_safe_key(key) and is_secret_key(key):
            out[key] = MARKER
        elif kind is str:
            out[key] = text(value)
        elif kind is tuple or kind is list:
            out[key] = value_of(list(value))
        elif kind is int or kind is float or kind is bool:
            out[key] = value
        else:
            out[key] = value_of(value)
    return out
