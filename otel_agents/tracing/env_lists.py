"""The OTEL_* list variables (OTLP headers, resource attributes) checked before the SDK parses them.

The SDK logs a malformed entry verbatim (a header list holds credentials) and goes on
without it; a bad list here is a one-line usage error that names the variable and the
expected form, and never the value.
"""

from __future__ import annotations

import os
import re
from typing import Mapping

from opentelemetry.util.re import parse_env_headers

# Every variable an exporter of ours reads (traces, metrics); the logs one is never read.
HEADER_VARIABLES = (
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
)
RESOURCE_VARIABLE = "OTEL_RESOURCE_ATTRIBUTES"
HEADERS_FORM = "key=value pairs separated by commas, values URL-encoded (e.g. authorization=Bearer%20TOKEN)"
RESOURCE_FORM = "key=value pairs separated by commas, values URL-encoded (e.g. deployment.environment.name=lab)"

# What opentelemetry.util.re.parse_env_headers(liberal=True) takes without a warning
# (the OTLP exporter spec's W3C-baggage form, plus unencoded spaces in values).
_OWS = r"[ \t]*"
_KEY = r"[\x21\x23-\x27\x2a\x2b\x2d\x2e\x30-\x39\x41-\x5a\x5e-\x7a\x7c\x7e]+"
_VALUE = r"[\x20\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*"
_HEADER = re.compile(rf"{_OWS}{_KEY}{_OWS}={_OWS}{_VALUE}{_OWS}")
_DELIMITER = re.compile(r"[ \t]*,[ \t]*")


class ListFormatError(ValueError):
    """A malformed list; the message names where it came from, never its value."""


def _bad_header_entry(text: str) -> int | None:
    """The 1-based position of the first entry parse_env_headers would log and drop, else None."""
    for position, entry in enumerate((e for e in _DELIMITER.split(text) if e), start=1):
        if not _HEADER.fullmatch(entry.strip()):
            return position
    return None


def parse_headers(text: str, source: str) -> dict[str, str]:
    """``text`` as the OTLP exporters read it; ListFormatError naming ``source`` if an entry is malformed."""
    position = _bad_header_entry(text)
    if position is not None:
        raise ListFormatError(f"{source} must be {HEADERS_FORM}; entry {position} is not (its value is not shown)")
    return dict(parse_env_headers(text, liberal=True))


def _bad_resource_entry(text: str) -> int | None:
    """The 1-based position of the first entry the SDK's resource detector would log and drop, else None."""
    for position, entry in enumerate(text.split(","), start=1):
        key, sep, _ = entry.partition("=")
        if not sep or not key.strip():
            return position
    return None


def check_env_lists(environ: Mapping[str, str] | None = None, *, resource: bool = True) -> None:
    """Every header variable that is set, and OTEL_RESOURCE_ATTRIBUTES with ``resource``, checked (ListFormatError)."""
    environ = os.environ if environ is None else environ
    for name in HEADER_VARIABLES:
        value = environ.get(name)
        if value:  # the SDK warns about a blank entry too (" ")
            parse_headers(value, name)
    value = environ.get(RESOURCE_VARIABLE) if resource else None
    if value:
        position = _bad_resource_entry(value)
        if position is not None:
            raise ListFormatError(
                f"{RESOURCE_VARIABLE} must be {RESOURCE_FORM}; entry {position} is not (its value is not shown)")
