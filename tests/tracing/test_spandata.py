"""SpanReader: the recorder's from_readable, sharing what one provider's spans share."""

from __future__ import annotations

import pytest

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import make_record, to_span_attributes
from otel_agents.tracing.spandata import SpanReader, from_readable
from otel_agents.tracing.telemetry import Telemetry

SECRET = "sk-ant-" + "x" * 40


class Listener:
    def __init__(self):
        self.seen = set()

    def on_record(self, span, record, ts_ns):
        self.seen.add((record["message_id"], ts_ns))

    def on_log(self, span, level, message, ts_ns):
        pass


def test_records_handed_over_redacted_are_copied_and_anything_else_is_redacted(memory_tracing):
    listener = Listener()
    telemetry = Telemetry(memory_tracing.telemetry.tracer, [listener])
    with telemetry.tracer.start_as_current_span("op", attributes={"note": f"key {SECRET}"}) as span:
        telemetry.record(make_record("transcript_entry", "msg_000001", agent_id="agent_001", role="user",
                                     content=f"key {SECRET}"))
        # The same record type written past Telemetry: never taken as redacted, whatever it claims.
        forged = to_span_attributes(make_record("piece_of_text", "msg_000001", agent_id="agent_001",
                                                content=f"key {SECRET}"))
        span.add_event("piece_of_text", forged, timestamp=next(iter(listener.seen))[1] + 1)
        span.add_event(f"note {SECRET}", {"detail": f"key {SECRET}"})
    (finished,) = memory_tracing.spans()
    reader = SpanReader()
    data = reader.read(finished, listener.seen)
    assert data == from_readable(finished)
    assert SECRET not in repr(data) and repr(data).count("[REDACTED]") == 5
    # One resource copy for every span of the provider.
    assert reader.read(finished).resource is data.resource and data.resource == from_readable(finished).resource


def test_a_record_event_is_only_copied_when_its_id_and_time_were_handed_over(memory_tracing):
    listener = Listener()
    telemetry = Telemetry(memory_tracing.telemetry.tracer, [listener])
    with telemetry.tracer.start_as_current_span("op"):
        telemetry.record(make_record("piece_of_text", "msg_000002", agent_id="agent_001", content="plain words"))
    (finished,) = memory_tracing.spans()
    ((message_id, ts),) = listener.seen
    (event,) = SpanReader().read(finished, {(message_id, ts)}).events
    assert event.attributes[sc.EVENT_FIELD_PREFIX + "content"] == "plain words"
    assert event == from_readable(finished).events[0]


def test_reading_an_end_takes_unchanged_values_from_the_start_and_redacts_the_rest(memory_tracing):
    """The recorder reads a span at its start and again at its end: values that did not change
    are not redacted twice, and what the end read gives is what a fresh read gives."""
    tracer = memory_tracing.telemetry.tracer
    reader = SpanReader()
    with tracer.start_as_current_span("op", attributes={
        "note": f"key {SECRET}", "plain": "nothing secret in this text", "count": 3,
        "http.request.header.authorization": "Bearer abc", "later": "to be changed",
    }) as span:
        started = reader.read(span)
        span.set_attribute("later", f"token={SECRET}")  # changed to a secret: redacted afresh
        span.set_attribute("count", 3.0)  # equal, but another type: not taken from the start
        span.set_attribute("added", "a new value")
    (finished,) = memory_tracing.spans()
    ended = reader.read(finished, started=started)
    assert ended == from_readable(finished)
    assert SECRET not in repr(ended) and ended.attributes["later"] == "token=[REDACTED]"
    assert type(ended.attributes["count"]) is float
    # An unchanged value with nothing to redact is the start's own object; one holding a secret
    # differs from its redacted start value, so it is redacted again, to the same result.
    assert ended.attributes["plain"] is started.attributes["plain"]
    assert ended.attributes["note"] == started.attributes["note"] == "key [REDACTED]"
    assert ended.attributes["note"] is not started.attributes["note"]


@pytest.mark.parametrize("start_extra", [{}, {"tools": ("task", "discuss")}, {"flag": True}])
def test_an_end_whose_start_values_are_all_unchanged_reads_as_a_fresh_read(memory_tracing, start_extra):
    """The usual end: the start's attributes untouched, new ones set since: the same as a fresh read,
    in the SDK's order, the unchanged values the start's own objects."""
    tracer = memory_tracing.telemetry.tracer
    reader = SpanReader()
    with tracer.start_as_current_span("op", attributes={"a": "text", "n": 1, **start_extra}) as span:
        started = reader.read(span)
        span.set_attribute("tokens", 12)
        span.set_attribute("said", f"key {SECRET}")
    (finished,) = memory_tracing.spans()
    ended = reader.read(finished, started=started)
    assert ended == from_readable(finished)
    assert list(ended.attributes) == ["a", "n", *start_extra, "tokens", "said"]
    assert ended.attributes["said"] == "key [REDACTED]" and ended.attributes["a"] is started.attributes["a"]


# ---------------------------------------------------------------- the shapes' own constructors

import dataclasses  # noqa: E402

from hypothesis import given, strategies as st  # noqa: E402

from otel_agents.tracing.spandata import EventData, LinkData, SpanData  # noqa: E402

_values = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@pytest.mark.parametrize("cls", [SpanData, EventData, LinkData])
@given(data=st.data())
def test_a_shape_built_by_position_or_keyword_holds_each_field_and_stays_frozen(cls, data):
    fields = dataclasses.fields(cls)
    values = [data.draw(_values, label=f.name) for f in fields]
    by_position = cls(*values)
    by_keyword = cls(**{f.name: v for f, v in zip(fields, values)})
    for f, value in zip(fields, values):
        assert getattr(by_position, f.name) is value  # None too: given is given, as the generated constructor kept it
    assert by_position == by_keyword
    assert dataclasses.replace(by_position) == by_position
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(by_position, fields[0].name, "changed")


@pytest.mark.parametrize("cls, required", [
    (SpanData, ("t", "s", None, "n", "INTERNAL", 1, None)), (EventData, ("e", 1)), (LinkData, ("t", "s")),
])
def test_defaults_are_the_fields_defaults_and_no_two_shapes_share_a_dict(cls, required):
    first, second = cls(*required), cls(*required)
    for f in dataclasses.fields(cls)[len(required):]:
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        assert getattr(first, f.name) == default
        if f.default_factory is dict:
            assert getattr(first, f.name) is not getattr(second, f.name)
