"""OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG as a per-trace decision on what leaves over the network.

The provider itself samples nothing out (``ALWAYS_ON``): the session recorder, the
ledger and ``--otlp-file`` need every span. The standard sampler, built from the SDK's
own classes, only decides which traces the exporters named by OTEL_TRACES_EXPORTER
receive (``network_export.NetworkExportProcessor``). A trace is decided once, at the
span that starts it in this process (no parent, or a remote one); every other span of
the trace follows that decision, so a backend gets whole traces or none.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)

SAMPLER_VARIABLE = "OTEL_TRACES_SAMPLER"
ARG_VARIABLE = "OTEL_TRACES_SAMPLER_ARG"
_FIXED = {
    "always_on": ALWAYS_ON,
    "always_off": ALWAYS_OFF,
    "parentbased_always_on": DEFAULT_ON,
    "parentbased_always_off": DEFAULT_OFF,
}
_RATIO = {"traceidratio": TraceIdRatioBased, "parentbased_traceidratio": ParentBasedTraceIdRatio}
# Traces whose decision is remembered; an older trace's late span is decided again from its
# trace id, which gives the same answer for every standard sampler but a remote parent's flag.
REMEMBERED_TRACES = 4096


class SamplerConfigError(ValueError):
    """A sampler variable that names no standard sampler or carries a bad ratio (one line)."""


def sampler_from_env() -> Sampler | None:
    """The network sampler the variables name; None when unset (every trace is sent)."""
    name = (os.environ.get(SAMPLER_VARIABLE) or "").strip().lower()
    if not name:
        return None
    if name in _FIXED:
        return _FIXED[name]
    if name not in _RATIO:
        known = ", ".join([*_FIXED, *_RATIO])
        raise SamplerConfigError(f"unsupported {SAMPLER_VARIABLE} {name!r} (use one of {known})")
    raw = (os.environ.get(ARG_VARIABLE) or "").strip()
    if not raw:
        return _RATIO[name](1.0)  # the specification's default ratio
    try:
        ratio = float(raw)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:  # also catches NaN
        raise SamplerConfigError(f"{ARG_VARIABLE} must be a ratio between 0 and 1 for {name}, not {raw!r}")
    return _RATIO[name](ratio)


class TraceSampling:
    """Which traces a sampler keeps, decided once per trace and remembered by trace id."""

    def __init__(self, sampler: Sampler, remembered: int = REMEMBERED_TRACES):
        self.sampler = sampler
        self._remembered = remembered
        self._decisions: OrderedDict[int, bool] = OrderedDict()
        self._lock = threading.Lock()  # spans of several threads start and end at once

    def on_start(self, span: Any, parent_context: Any = None) -> bool:
        """Decides the span's trace when the span starts it here; returns whether the trace is kept."""
        trace_id = span.context.trace_id
        parent = span.parent
        if parent is not None and not parent.is_remote:
            known = self._decisions.get(trace_id)
            if known is not None:
                return known
        return self._decide(trace_id, span, parent_context)

    def keeps(self, span: Any) -> bool:
        known = self._decisions.get(span.context.trace_id)
        return known if known is not None else self._decide(span.context.trace_id, span, None)

    def _decide(self, trace_id: int, span: Any, parent_context: Any) -> bool:
        result = self.sampler.should_sample(
            parent_context, trace_id, span.name, span.kind, span.attributes, span.links
        )
        keep = result.decision.is_sampled()
        with self._lock:
            self._decisions[trace_id] = keep
            self._decisions.move_to_end(trace_id)
            while len(self._decisions) > self._remembered:
                self._decisions.popitem(last=False)
        return keep
