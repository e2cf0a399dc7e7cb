"""Spans the export filter would send as they are, checked and written as OTLP bytes in one pass.

Most exported spans carry no secret and nothing over a cap, so the filter hands them
on unchanged and the encoder then walks every attribute a second time. When the
exporter behind the filter writes OTLP requests itself (``HttpSpanExporter``), a span is
instead checked attribute by attribute *while* it is written (``otlp_proto_encode.span_field``
with this module's attribute writer), and within one export each (key, value) pair is
checked and written once: a batch's spans repeat most of their pairs (ids, names, models,
counts). The first attribute the filter would change abandons the span, which then takes
the filter's copying path (``export_rules.network_copy``) as before.

The rule is the filter's own, never restated here: a pair is unchanged when
``keeps(key, value, is_event)`` says so (``export_rules.keeps_attribute``, the verdict of
the filter's attribute pass on that one pair). What
this module adds is only what holds for a whole span: no more attributes, events or links than
the filter keeps, names redaction leaves alone, no status message (the filter rewrites those).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from otel_agents.tracing.otlp_proto_encode import EncodedSpan, attribute_field, span_field

_SPAN_ATTRIBUTES = b"\x4a"  # Span.attributes; events' attributes are Event.attributes (b"\x1a")


class _Changed(Exception):
    """The filter would change this span: it takes the copying path."""


class UnchangedSpans:
    """For one export: each span the filter would leave as it is, already written.

    ``keeps(key, value, is_event)``: the filter leaves this attribute of a span (or of an
    event) as it is. ``same_name(text)``: redaction leaves this span or event name as it is.
    ``max_attributes``: the filter's count limit (a span or event over it is changed), events'
    own when ``max_event_attributes`` is given. ``within_counts(span)``: its events and links are
    within the standard limits (span_limits.py), else the filter would cut them.
    """

    def __init__(self, keeps: Callable[[str, Any, bool], bool], same_name: Callable[[str], bool], max_attributes: int,
                 max_event_attributes: int | None = None, within_counts: Callable[[Any], bool] | None = None):
        self._keeps = keeps
        self._same_name = same_name
        self._max = max_attributes
        self._max_event = max_attributes if max_event_attributes is None else max_event_attributes
        self._within_counts = within_counts
        self._written: dict[bytes, dict[tuple, bytes]] = {}  # tag -> (key, value[, type]) -> its field

    def write(self, span: Any) -> EncodedSpan | None:
        """The span as its ScopeSpans.spans field, or None when the filter would change it."""
        status = span.status
        if status is not None and status.description:
            return None
        if not self._same_name(span.name) or not all(self._same_name(e.name) for e in span.events):
            return None
        if self._within_counts is not None and not self._within_counts(span):
            return None
        try:
            data = span_field(span, self._attributes)
        except _Changed:
            return None
        return EncodedSpan(span.resource, span.instrumentation_scope, data)

    def _attributes(self, tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
        if not attributes:
            return b""
        if len(attributes) > (self._max if tag == _SPAN_ATTRIBUTES else self._max_event):
            raise _Changed
        written = self._written.get(tag)
        if written is None:
            written = self._written[tag] = {}
        out = []
        for key, value in attributes.items():
            kind = type(value)
            if kind is str:
                known = (key, value)
            elif kind is int or kind is bool or value is None or (kind is float and value):
                known = (key, value, kind)  # 1 == True == 1.0 and 0.0 == -0.0, yet each encodes differently
            elif kind is tuple and all(type(item) is str for item in value):
                known = (key, value, kind)  # names of tools, finish reasons: (True,) == (1,) excluded
            else:  # zeros as floats, other sequences: checked each time
                out.append(self._checked(tag, key, value))
                continue
            field = written.get(known)
            if field is None:
                field = written[known] = self._checked(tag, key, value)
            out.append(field)
        return b"".join(out)

    def _checked(self, tag: bytes, key: str, value: Any) -> bytes:
        if not self._keeps(key, value, tag != _SPAN_ATTRIBUTES):
            raise _Changed
        return attribute_field(tag, key, value)
