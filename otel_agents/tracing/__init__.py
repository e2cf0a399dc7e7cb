"""Spans: their contract, encodings, provider set-up and what leaves the process."""

from otel_agents.tracing.span_limits import import_sdk_despite_a_bad_span_count

import_sdk_despite_a_bad_span_count()  # before any module here imports the SDK
