"""The standard OTEL_*_LIMIT variables, read and checked: what they bound in the network copy (``ExportLimits``).

The session directory and ``--otlp-file`` keep every span whole (the provider is built
with no limits, setup.py); these bound only what leaves the process (export_rules.py).
Spec semantics: a count (``OTEL_ATTRIBUTE_COUNT_LIMIT``) or length
(``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``) applies to span, event and link attributes alike,
and the span-, event- or link-specific variable wins over it for its own. A variable unset
(or ``unset``, as the SDK reads it) keeps the export's own bounds: 128 attributes per span
and per event, no length but the byte cap, no event or link count but the span budget.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping

GENERAL_LENGTH = "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"
GENERAL_COUNT = "OTEL_ATTRIBUTE_COUNT_LIMIT"
SPAN_LENGTH = "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT"
SPAN_COUNT = "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT"
EVENT_COUNT = "OTEL_SPAN_EVENT_COUNT_LIMIT"
EVENT_ATTRIBUTES = "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT"
LINK_COUNT = "OTEL_SPAN_LINK_COUNT_LIMIT"
LINK_ATTRIBUTES = "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT"
VARIABLES = (GENERAL_LENGTH, GENERAL_COUNT, SPAN_LENGTH, SPAN_COUNT, EVENT_COUNT, EVENT_ATTRIBUTES, LINK_COUNT,
             LINK_ATTRIBUTES)


class LimitError(ValueError):
    """A limit variable that is not a whole number >= 0 (one line, naming it)."""


def _read(environ: Mapping[str, str], name: str) -> int | None:
    raw = (environ.get(name) or "").strip()
    if not raw or raw.lower() == "unset":
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise LimitError(f"{name} must be a whole number of at least 0, not {raw!r}")
    return value


def export_limits_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``ExportLimits`` keyword arguments the standard variables set (only those set); LimitError on a bad value."""
    environ = os.environ if environ is None else environ
    read = {name: _read(environ, name) for name in VARIABLES}

    def first(*names: str) -> int | None:
        return next((read[n] for n in names if read[n] is not None), None)

    limits = {
        "max_attributes": first(SPAN_COUNT, GENERAL_COUNT),
        "max_event_attributes": first(EVENT_ATTRIBUTES, GENERAL_COUNT),
        "max_link_attributes": first(LINK_ATTRIBUTES, GENERAL_COUNT),
        "span_value_length": first(SPAN_LENGTH, GENERAL_LENGTH),
        "value_length": read[GENERAL_LENGTH],
        "max_events": read[EVENT_COUNT],
        "max_links": read[LINK_COUNT],
    }
    return {key: value for key, value in limits.items() if value is not None}


def import_sdk_despite_a_bad_span_count() -> None:
    """Import the SDK's trace module without letting it read a bad ``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT``.

    The SDK reads that variable at import and raises on a bad value: a traceback before any
    command could say it in one line. Hidden while the SDK loads, it is checked (exit 2) when
    tracing is configured, as every other limit is.
    """
    if "opentelemetry.sdk.trace" in sys.modules:
        return
    try:
        _read(os.environ, SPAN_COUNT)
    except LimitError:
        value = os.environ.pop(SPAN_COUNT)
        try:
            import opentelemetry.sdk.trace  # noqa: F401
        finally:
            os.environ[SPAN_COUNT] = value
