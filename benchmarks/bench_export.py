"""A real OTLP/HTTP receiver on loopback, in a process of its own, for the network export figure.

The receiver is ``tests/support/otlp_receivers.HttpTraceReceiver`` (protobuf
decoding included), run in a child process so that its CPU is not counted as the
session's: the session's process pays only for what its exporter does. The child
is started before the timed runs and reaped after them, so its CPU never enters
the timed runs' children CPU either. :func:`exporting` points the tracing set-up
(``OTEL_TRACES_EXPORTER``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, http/protobuf)
at it for the sessions run meanwhile.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

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
