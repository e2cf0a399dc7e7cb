"""`otel-agents collect` ingest over HTTP/protobuf against `import` of the same spans (benchmarks/run.py runs it).

    python benchmarks/bench_collect.py [SPANS]      # default 20,000; prints one JSON line

The synthetic sessions of bench_import.py (the demo's spans repeated with new ids) are sent,
256 spans a request, by two senders to a `collect` process on loopback pinned to one core,
each sender waiting for its acknowledgement (durable: fsynced) before the next. Figures:
``collect_spans_per_s`` (spans over the time from the first request to the last
acknowledgement), the same spans imported from a file by an ``otel-agents import`` process
on the same core (``import_spans_per_s``, the whole process), ``collect_vs_import`` (import's
seconds over collect's, its SIGTERM included: both have then written the same trees, meta.json
and ledger records; at least 0.8 is the target), and ``collect_ack_p99_ms`` with the senders
paced at half the sustained rate.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_import import record_demo, repeat_export, time_import  # noqa: E402

SENDERS = 2


def one_core() -> None:
    """A child process's CPUs: the last one alone (the senders, in this process, keep the others)."""
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})


def protobuf_requests(trace_file: Path, per_request: int = 256) -> list[tuple[int, bytes]]:
    """(spans, body) of ``per_request`` spans each (an SDK batch is up to 512): hex ids become protobuf's bytes."""
    out = []
    lines = trace_file.read_text().splitlines()
    for first in range(0, len(lines), per_request):
        doc = {"resourceSpans": [rs for line in lines[first:first + per_request]
                                 for rs in json.loads(line)["resourceSpans"]]}
        count = 0
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    count += 1
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if span.get(key):
                            span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
                    for link in span.get("links", []):
                        for key in ("traceId", "spanId"):
                            link[key] = base64.b64encode(bytes.fromhex(link[key])).decode()
        out.append((count, ParseDict(doc, ExportTraceServiceRequest()).SerializeToString()))
    return out


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _send(url: str, requests: list[tuple[int, bytes]], pace_s: float, latencies: list[float]) -> None:
    for _, body in requests:
        started = time.perf_counter()
        request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/x-protobuf"})
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
        latencies.append(time.perf_counter() - started)
        if pace_s:
            time.sleep(max(0.0, pace_s - latencies[-1]))


def time_collect(requests: list[tuple[int, bytes]], home: Path, pace_s: float = 0.0) -> tuple[float, list[float], float]:
    """(seconds to the last acknowledgement, per-request latencies, seconds SIGTERM took)."""
    port = _port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = subprocess.Popen([sys.executable, "-m", "otel_agents", "collect", "--http", f"127.0.0.1:{port}",
                             "--sessions-dir", str(home / "sessions"), "--billing-file", str(home / "billing.jsonl")],
                            env=env, stderr=subprocess.PIPE, text=True, preexec_fn=one_core)
    assert "listening" in proc.stderr.readline()
    url = f"http://127.0.0.1:{port}/v1/traces"
    latencies: list[float] = []
    threads = [threading.Thread(target=_send, args=(url, requests[i::SENDERS], pace_s, latencies))
               for i in range(SENDERS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    stopping = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    if proc.wait(300) != 0:
        raise RuntimeError(proc.stderr.read())
    return elapsed, latencies, time.perf_counter() - stopping


def measure(spans: int, root: Path) -> dict:
    """Every figure (see the module's text) for about ``spans`` spans, working under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    big = root / "big.jsonl"
    count = repeat_export(record_demo(root), big, spans)
    requests = protobuf_requests(big)
    import_s = time_import(big, root / "import", preexec_fn=one_core)
    collect_s, _, stop_s = time_collect(requests, root / "collect")
    # Half the sustained rate: each sender paced to one request per 2 * (its share of the time).
    pace = 2 * collect_s / (len(requests) / SENDERS)
    _, latencies, _ = time_collect(requests, root / "paced", pace)
    return {
        "spans": count, "requests": len(requests), "collect_s": collect_s, "collect_stop_s": stop_s, "import_s": import_s,
        "collect_spans_per_s": count / collect_s, "import_spans_per_s": count / import_s,
        "collect_vs_import": import_s / (collect_s + stop_s),
        "collect_ack_p50_ms": statistics.median(latencies) * 1000,
        "collect_ack_p99_ms": statistics.quantiles(latencies, n=100)[98] * 1000 if len(latencies) > 1 else latencies[0] * 1000,
        "paced_request_interval_s": pace,
    }


def report(spans: int, root: Path, add) -> None:
    """The three figures of benchmarks/run.py, each with its details, through its ``add(name, value, **details)``."""
    figures = measure(spans, root)
    details = {k: v for k, v in figures.items() if not k.startswith(("collect_vs", "collect_ack_p99", "collect_spans"))}
    add("collect_spans_per_s", figures["collect_spans_per_s"], **details)
    add("collect_vs_import", figures["collect_vs_import"], import_s=figures["import_s"],
        collect_s=figures["collect_s"], collect_stop_s=figures["collect_stop_s"])
    add("collect_ack_p99_ms", figures["collect_ack_p99_ms"], p50_ms=figures["collect_ack_p50_ms"],
        request_interval_s=figures["paced_request_interval_s"], note="senders paced at half the sustained rate")


def main() -> None:
    spans = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    with tempfile.TemporaryDirectory() as tmp:
        figures = measure(spans, Path(tmp))
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()
