"""The peer: the benchmark session's ``litellm.acompletion`` requests replayed with litellm's own OpenTelemetry callback.

:func:`capture_requests` runs the scripted session once (untraced) and keeps a copy
of every ``litellm.acompletion`` call's keyword arguments, in order. :func:`replay`
sends them through litellm again, on one event loop, each answered by the same
scripted provider (its answers depend only on the request). With ``callback``,
litellm's ``OpenTelemetry`` integration (litellm/integrations/opentelemetry.py) is
registered with an ``InMemorySpanExporter`` on a private ``TracerProvider``, so
what is measured is what that instrumentation records, without any network. CPU
time of the whole process (all threads: litellm logs on a thread pool too) is
measured until every span it makes has arrived.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Replay:
    cpu_seconds: float
    seconds: float
    calls: int
    spans: int  # exported by litellm's callback (0 without it)
    span_bytes: int  # their attributes and events as JSON, roughly what they carry


def capture_requests(script_path: Path, prompts: tuple[str, ...], home: Path) -> list[dict[str, Any]]:
    """The keyword arguments of every ``litellm.acompletion`` call the session makes, in order."""
    from bench_session import run_session

    from otel_agents.llm.litellm_loader import load_litellm

    litellm = load_litellm()
    original = litellm.acompletion
    captured: list[dict[str, Any]] = []

    async def capturing(**kwargs: Any) -> Any:
        captured.append(copy.deepcopy(kwargs))
        return await original(**kwargs)

    litellm.acompletion = capturing
    try:
        run_session(script_path, prompts, home, traced=False)
    finally:
        litellm.acompletion = original
    return captured


def _otel_callback() -> tuple[Any, Any]:
    from litellm.integrations.opentelemetry import OpenTelemetry, OpenTelemetryConfig
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    # It warns on every construction that litellm's proxy server is not installed; nothing here needs it.
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    return OpenTelemetry(config=OpenTelemetryConfig(exporter=exporter, skip_set_global=True)), exporter


async def _send(litellm: Any, requests: list[dict[str, Any]], exporter: Any) -> int:
    for kwargs in requests:
        try:
            await litellm.acompletion(**kwargs)
        except Exception:  # the script's scripted transient failures fail here as they did in the session
            pass
    return 0 if exporter is None else await _settled(exporter)


async def _settled(exporter: Any, quiet_s: float = 0.3, bound_s: float = 30.0) -> int:
    """Wait until the exporter has had no new span for ``quiet_s``: litellm logs in tasks of
    this loop and on its thread pool. Sleeping costs no CPU; some of litellm's tasks never end."""
    deadline = time.monotonic() + bound_s
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = len(exporter.get_finished_spans())
        if count != seen:
            seen, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        await asyncio.sleep(0.02)
    return seen


def replay(requests: list[dict[str, Any]], *, callback: bool) -> Replay:
    """Send every request again; with litellm's OpenTelemetry callback when ``callback``."""
    import orjson

    from otel_agents.llm.litellm_loader import load_litellm

    litellm = load_litellm()
    litellm.logging_callback_manager._reset_all_callbacks()
    otel, exporter = _otel_callback() if callback else (None, None)
    if otel is not None:
        litellm.callbacks = [otel]
    requests = copy.deepcopy(requests)  # litellm may add to what it is given
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        spans = asyncio.run(_send(litellm, requests, exporter))
        cpu_seconds = time.process_time() - cpu_started
        seconds = time.perf_counter() - started
    finally:
        litellm.logging_callback_manager._reset_all_callbacks()
    size = 0
    if exporter is not None:
        for span in exporter.get_finished_spans():
            size += len(orjson.dumps(dict(span.attributes or {}), default=str))
            size += sum(len(orjson.dumps(dict(e.attributes or {}), default=str)) for e in span.events)
        exporter.shutdown()
        otel._tracer_provider.shutdown()  # its own provider; nothing else uses it
    return Replay(cpu_seconds, seconds, len(requests), spans, size)
