"""env_lists: a header list or OTEL_RESOURCE_ATTRIBUTES is refused exactly when the SDK would log and drop part of it."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.resources import OTELResourceDetector
from opentelemetry.util.re import parse_env_headers

from otel_agents.tracing.env_lists import ListFormatError, check_env_lists, parse_headers

SECRET = "sk-live-SECRET1234567890"
HEADER_LISTS = [
    "authorization=Bearer%20tok", "a=b,c=d", " a = b , c=d ,", "x-a=b c", "a=", "a=b=c", "",
    f"Authorization: Bearer {SECRET}", "garbage", "a=b,,c", "a=b;c", "=b", "a b=c", " ", "a=b,\tx",
]
RESOURCE_LISTS = [
    "service.name=x", "a=b%2Cc, d = e", "a=b=c", "a=",
    "service.name=x,bad entry", "a=b,", " ", "=x", f"token {SECRET}",
]


@pytest.mark.parametrize("text", HEADER_LISTS)
def test_a_header_list_is_refused_exactly_when_the_sdk_would_log_it(text, caplog):
    with caplog.at_level(logging.WARNING, logger="opentelemetry.util.re"):
        expected = dict(parse_env_headers(text, liberal=True))
    if caplog.records:
        with pytest.raises(ListFormatError) as caught:
            parse_headers(text, "--headers")
        assert str(caught.value).startswith("--headers must be key=value pairs") and SECRET not in str(caught.value)
    else:
        assert parse_headers(text, "--headers") == expected


@pytest.mark.parametrize("text", RESOURCE_LISTS)
def test_resource_attributes_are_refused_exactly_when_the_sdk_would_log_them(text, caplog, monkeypatch):
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", text)
    with caplog.at_level(logging.WARNING, logger="opentelemetry.sdk.resources"):
        OTELResourceDetector().detect()
    # An empty key is taken silently by the SDK, but names nothing: refused too.
    if caplog.records or text.strip().startswith("="):
        with pytest.raises(ListFormatError) as caught:
            check_env_lists({"OTEL_RESOURCE_ATTRIBUTES": text})
        assert str(caught.value).startswith("OTEL_RESOURCE_ATTRIBUTES must be") and SECRET not in str(caught.value)
    else:
        check_env_lists({"OTEL_RESOURCE_ATTRIBUTES": text})


def test_every_header_variable_is_checked_and_named_with_the_bad_entry():
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS"):
        with pytest.raises(ListFormatError, match=rf"^{name} must be .*; entry 2 is not \(its value is not shown\)$"):
            check_env_lists({name: f"a=b,Authorization: Bearer {SECRET}"})
    check_env_lists({"OTEL_EXPORTER_OTLP_LOGS_HEADERS": "never read"})  # no logs exporter of ours reads it
    check_env_lists({"OTEL_RESOURCE_ATTRIBUTES": "bad entry"}, resource=False)  # export: saved spans keep theirs
