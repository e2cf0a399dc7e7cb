"""A real OTLP/HTTP receiver on loopback, in a process of its own, for the network export figure.

The receiver is ``tests/support/otlp_receivers.HttpTraceReceiver`` (protobuf
decoding included), run in a child process so that its CPU is not counted as the
session's: the session's process pays only for what its exporter does. The child
is started before the timed runs and reaped after them, so its CPU never enters
the timed runs' children CPU either. :func:`exporting` points the tracing set-up
(``OTEL_TRACES_EXPORTER``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, http/protobuf)
at it for the sessions run meanwhile.

Whole sessions cannot resolve the export's cost (their CPU moves by up to a second
between runs of the same code, 2 ms per call). :func:`replay_figure` can: one traced
session's spans are sent again through the same chain, alone in this process.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

SUPPORT = Path(__file__).resolve().parents[1] / "tests" / "support"

# Prints the URL, then answers each line on stdin with the number of spans received so far.
_RECEIVER = f"""
import sys
sys.path.insert(0, {str(SUPPORT)!r})
from otlp_receivers import HttpTraceReceiver
receiver = HttpTraceReceiver().start()
print(receiver.traces_url, flush=True)
for _ in sys.stdin:
    print(sum(len(ss.spans) for r in receiver.requests for rs in r.resource_spans for ss in rs.scope_spans), flush=True)
receiver.stop()
"""


class Receiver:
    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", _RECEIVER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise RuntimeError(f"the OTLP receiver did not start (said {self.url!r})")

    def spans_received(self) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("count\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


@contextmanager
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    try:
        yield running
    finally:
        running.close()


@contextmanager
def exporting(url: str) -> Iterator[None]:
    """Sessions configured meanwhile export over OTLP/HTTP (protobuf) to ``url``."""
    settings = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    }
    previous = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# --- the export alone, resolved: a session's spans replayed through the CLI's export chain ---


@dataclass(frozen=True)
class Spans:
    spans: list  # every span of one traced session, as the SDK ended them
    llm_calls: int


def capture_spans(script: Path, prompts: tuple[str, ...], home: Path) -> Spans:
    """Run one traced session, keeping every span it ended."""
    import bench_session
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    run = bench_session.run_session(script, prompts, home, traced=True,
                                    before_run=lambda tracing: tracing.add_processor(SimpleSpanProcessor(memory)))
    return Spans(list(memory.get_finished_spans()), run.llm_calls)


def replay(captured: Spans, running: Receiver) -> float:
    """CPU seconds of this process to send ``captured`` through the network chain ``configure_tracing``
    builds for OTLP/HTTP (sampling processor, batch processor, export filter, exporter) to ``running``."""
    from otel_agents.tracing.setup import TracingOptions, configure_tracing

    with exporting(running.url):
        tracing = configure_tracing(TracingOptions())
    (network,) = tracing.network_processors
    before = running.spans_received()
    gc.collect()
    started = time.process_time()
    for span in captured.spans:
        network.on_start(span, None)
        network.on_end(span)
    network.shutdown()  # the batch processor sends what it holds and stops its thread
    seconds = time.process_time() - started
    if tracing.provider is not None:
        tracing.provider.shutdown()
    if running.spans_received() - before != len(captured.spans):
        raise AssertionError("the loopback receiver did not get every replayed span")
    return seconds


def replay_figure(script: Path, prompts: tuple[str, ...], home: Callable[[], Path], add: Callable[..., None], *,
                  replays: int) -> None:
    """``otlp_export_replay_us_per_call``: the least disturbed of ``replays`` replays, given to ``add``."""
    captured = capture_spans(script, prompts, home())
    with receiver() as running:
        per_call = [replay(captured, running) / captured.llm_calls * 1e6 for _ in range(replays)]
    add("otlp_export_replay_us_per_call", min(per_call), runs_us=per_call, llm_calls=captured.llm_calls,
        spans=len(captured.spans),
        note="CPU of this process sending one traced session's spans through the CLI's OTLP/HTTP chain; the minimum")
