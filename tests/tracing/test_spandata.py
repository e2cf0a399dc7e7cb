"""SpanReader: the recorder's from_readable, sharing what one provider's spans share."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agents.tracing import semconv as sc
from otel_agents.tracing.records import make_record, to_span_attributes
from otel_agents.tracing.spandata import EventData, LinkData, SpanData, SpanReader, from_readable
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


# ---------------------------------------------------------------- clean(): the short way for credential-free spans

class Named(str):
    """A str subclass, as a user's code may set."""


_plain_keys = st.sampled_from(["note", "count", sc.GEN_AI_AGENT_NAME, sc.SESSION_ID, "x.y", "tags"])
_keys = st.one_of(_plain_keys, _plain_keys, _plain_keys, _plain_keys,  # a secret key in one of five: most spans have none
                  st.sampled_from(["api_key", "Authorization", "http.request.header.x-api-key"]))
_flat = st.one_of(st.none(), st.integers(), st.booleans(), st.floats(), st.text(max_size=8),
                  st.text(max_size=8).map(Named), st.binary(max_size=4), st.just("sk-ant-" + "q" * 40))
_raw_values = st.one_of(
    _flat, st.tuples(_flat, _flat), st.lists(_flat, max_size=3).map(tuple), st.lists(_flat, max_size=3),
    st.tuples(st.sampled_from(["authorization", "note"]), st.text(max_size=5)),  # a pair led by a (secret) key
    st.dictionaries(_keys, _flat, max_size=2),  # a map
    st.tuples(st.tuples(st.sampled_from(["authorization", "note"]), _flat)),  # nested: a pair, a map
    st.tuples(st.dictionaries(_keys, _flat, max_size=2)),
)
_raw_values = st.one_of(_flat, _flat, _flat, _raw_values)  # most values flat, as on real spans
_raw_attributes = st.dictionaries(_keys, _raw_values, max_size=4)


@st.composite
def _raw_spans(draw):
    events = tuple(EventData(draw(st.sampled_from([sc.EVENT_LOG, "hook", sc.record_event_name("transcript_entry")])),
                             draw(st.integers(0, 3)), draw(_raw_attributes)) for _ in range(draw(st.integers(0, 2))))
    links = tuple(LinkData("a" * 32, "b" * 16, draw(_raw_attributes)) for _ in range(draw(st.integers(0, 1))))
    return SpanData("c" * 32, "d" * 16, None, draw(st.text(max_size=6)), "INTERNAL", 1, draw(st.sampled_from([None, 2])),
                    draw(_raw_attributes), events, links, "ERROR", draw(st.none() | st.text(max_size=6)),
                    {"service.name": "svc", "token": "t"}, "otel_agents")


@settings(max_examples=300, deadline=None)
@given(raw=_raw_spans(), start=_raw_spans(), patterns=st.booleans(), recorded_times=st.sets(st.integers(0, 3)))
def test_a_credential_free_span_read_the_short_way_is_the_span_read_the_long_way(raw, start, patterns, recorded_times):
    """No credential is known here, so every span is credential-free: both ways must agree, types included."""
    reader = SpanReader(redact_patterns=patterns)
    started = reader.clean(start)
    recorded = {(e.attributes.get(sc.EVENT_FIELD_PREFIX + "message_id"), e.time_ns) for e in raw.events
                if e.time_ns in recorded_times}
    for known in (None, started):
        long_way = reader.clean(raw, recorded, known)
        short_way = reader.clean(raw, recorded, known, credential_free=True)
        assert short_way == long_way
        assert repr(short_way) == repr(long_way)  # True is not 1, a list is not a tuple


_secret_or_plain = st.sampled_from(["authorization", "api_key", "note", "count"])
_any_values = st.one_of(
    _flat, st.lists(_flat, max_size=3).map(tuple), st.lists(_flat, max_size=3),
    st.tuples(_secret_or_plain, _flat), st.dictionaries(_secret_or_plain, _flat, max_size=2),
    st.tuples(st.tuples(_secret_or_plain, _flat)), st.tuples(st.dictionaries(_secret_or_plain, _flat, max_size=2)),
)


@settings(max_examples=400)
@given(st.dictionaries(_keys, _any_values, max_size=4))
def test_attributes_copied_without_secrets_are_the_scrubbed_copy_or_left_to_it(attributes):
    from otel_agents.tracing.spandata import _SCRUB, _plain_without_secrets, _redacted_plain

    short = _plain_without_secrets(attributes)
    if short is not None:
        assert repr(short) == repr(_redacted_plain(attributes, None, _SCRUB))


_exactly_flat = st.one_of(st.none(), st.integers(), st.booleans(), st.floats(), st.text(max_size=8), st.binary(max_size=4))


@given(st.dictionaries(_plain_keys, st.one_of(_exactly_flat, st.lists(_exactly_flat, max_size=3).map(tuple)), max_size=6))
def test_flat_attributes_under_keys_known_not_secret_take_the_short_way(attributes):
    from otel_agents.tracing.redaction import is_secret_key
    from otel_agents.tracing.spandata import _plain_without_secrets

    led_by_a_secret_key = any(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) and is_secret_key(v[0])
                              for v in attributes.values())
    assert (_plain_without_secrets(attributes) is None) == led_by_a_secret_key
