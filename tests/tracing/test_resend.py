"""Saved spans back into SDK spans, and where ``otel-agents export`` sends them."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agents.tracing.resend import resolve_target, to_readable
from otel_agents.tracing.setup import ConfigError
from otel_agents.tracing.spandata import EventData, LinkData, SpanData, from_readable

_hex = lambda n: st.integers(1, 16**n - 1).map(lambda v: format(v, f"0{n}x"))  # noqa: E731
# Plain words: nothing the redaction patterns would rewrite, so the round trip must be exact.
_text = st.text("abcdefgh ijk-é語", max_size=12)
_values = st.one_of(_text, st.integers(-(2**63), 2**63 - 1), st.booleans(),
                    st.floats(allow_nan=False, allow_infinity=False), st.lists(_text, max_size=3))  # lists, as the journal decodes them
_attributes = st.dictionaries(st.sampled_from(["a", "gen_ai.x", "otel_agents.n", "b.c", "d"]), _values, max_size=5)


@st.composite
def saved_spans(draw) -> SpanData:
    start = draw(st.integers(1, 2**62))
    return SpanData(
        trace_id=draw(_hex(32)), span_id=draw(_hex(16)), parent_span_id=draw(st.none() | _hex(16)),
        name=draw(_text), kind=draw(st.sampled_from(["INTERNAL", "CLIENT", "SERVER", "PRODUCER", "CONSUMER"])),
        start_ns=start, end_ns=start + draw(st.integers(0, 10**12)), attributes=draw(_attributes),
        events=tuple(EventData(draw(_text), start + i, draw(_attributes)) for i in range(draw(st.integers(0, 2)))),
        links=tuple(LinkData(draw(_hex(32)), draw(_hex(16)), draw(_attributes)) for _ in range(draw(st.integers(0, 1)))),
        status=draw(st.sampled_from(["UNSET", "OK", "ERROR"])),
        status_message=None, resource={"service.name": draw(_text)}, scope=draw(st.none() | st.just("otel_agents")),
    )


@settings(max_examples=60, deadline=None)
@given(saved_spans())
def test_a_saved_span_becomes_the_sdk_span_it_was(span):
    back = from_readable(to_readable(span))
    plain = lambda s: {**s.__dict__, "attributes": dict(s.attributes), "scope": s.scope or None}  # noqa: E731
    assert plain(back) == plain(span)


@pytest.fixture
def clean_env(monkeypatch):
    for var in list(os.environ):
        if var.startswith("OTEL_"):
            monkeypatch.delenv(var)
    return monkeypatch


@pytest.mark.parametrize(
    "option, variables, expected",
    [
        ("http://h:4318", {}, "http://h:4318/v1/traces"),  # a base URL gets the signal path
        ("http://h:4318/", {}, "http://h:4318/v1/traces"),
        ("http://h:4318/custom/path", {}, "http://h:4318/custom/path"),  # a path is used verbatim
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:4318"}, "http://base:4318/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/v1/traces"}, "http://t:4318/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://g:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http://g:4317"),
    ],
)
def test_the_target_is_the_option_else_the_standard_variables(clean_env, option, variables, expected):
    for name, value in variables.items():
        clean_env.setenv(name, value)
    clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "7")
    target = resolve_target(option, "x-tenant=acme,authorization=Bearer%20t")
    assert target.endpoint == expected and target.timeout_s == 7
    assert target.headers == {"x-tenant": "acme", "authorization": "Bearer t"}
    assert resolve_target(option).headers is None  # the exporter reads OTEL_EXPORTER_OTLP_HEADERS itself


def test_no_endpoint_is_a_configuration_error(clean_env):
    with pytest.raises(ConfigError, match="no OTLP endpoint"):
        resolve_target()


@pytest.mark.parametrize("option", ["http://[::1", "http://::1]:4318", "[::1"])
def test_a_malformed_endpoint_is_a_configuration_error(clean_env, option):
    """urlparse's ValueError ("Invalid IPv6 URL") escaped as a traceback."""
    with pytest.raises(ConfigError, match="invalid OTLP endpoint"):
        resolve_target(option)
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", option)
    with pytest.raises(ConfigError, match="invalid OTLP endpoint"):
        resolve_target()
